/*
 * cmd_top.c: `memtally top PID`: a live view of a process that runs under
 * `memtally record`, like top(1): its counts and rates, and the functions
 * that allocated most since the trace began.
 *
 * The process tells us (control socket, `status`) its state, its counts
 * and where its trace is; we read that trace as it grows (the reader's
 * follow mode), adding each allocation to per-stack totals, and at each
 * refresh fold them into functions (self: the function that called the
 * allocator) with the symbol view opened on the same reader, so stacks
 * are known as they come.
 *
 * The trace may start anew under us: `restart` rewrites the same file,
 * `stop` then `start` writes another.  A changed path, a different first
 * block, or a block that does not decode where the last one ended mean
 * that: the trace is read again from its start.
 *
 * On a terminal the screen is redrawn every interval and `q` quits (the
 * terminal is put back on exit, and on SIGINT and SIGTERM).  Elsewhere,
 * one plain snapshot per interval, --iterations of them (1 by default).
 * When the process ends, a last snapshot from the whole trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "analyze/filter.h"
#include "analyze/ptrmap.h"
#include "analyze/rows.h"
#include "analyze/stackagg.h"
#include "analyze/view.h"
#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally top [options] PID\n"
    "\n"
    "Watches a process that runs under `memtally record`: its state, counts\n"
    "and rates, and the functions that allocated most since its trace began\n"
    "(what each allocated itself).  On a terminal, q quits.\n"
    "\n"
    "  --interval S       seconds between refreshes (default 1)\n"
    "  --iterations N     stop after N refreshes (default: 1 when the output is\n"
    "                     not a terminal, else until q or the process ends)\n"
    "  --top N            at most N functions (default: what fits the terminal,\n"
    "                     else 20)\n";

#define HEAD_LINES 5   /* the lines above the table's rows */
#define PROBE_BYTES 256

struct top {
    int pid;
    double interval;
    long iterations;
    size_t top;
    int tty;

    /* From the process's last status. */
    char state[32];
    char trace[PATH_MAX];
    int have_status;
    double allocations, frees, bytes, live_bytes;

    /* Rates between the last two refreshes. */
    double prev_allocs, prev_bytes, prev_t;
    double rate_allocs, rate_bytes;
    int have_prev, have_rate;

    /* The trace being followed. */
    char path[PATH_MAX + 64];
    struct mtl_reader *r;
    struct mtl_view *v;
    struct mtl_filter filter;
    struct mtl_stackagg agg;
    struct mtl_ptrmap live;      /* for the counts once the process is gone */
    double t_allocs, t_frees, t_bytes, t_live;
    int probe_fd;
    unsigned char probe[PROBE_BYTES];
    size_t nprobe;
    dev_t dev;
    ino_t ino;
    char program[256];
    uint64_t start_unix_us;
    char note[PATH_MAX + 256];   /* why no trace is shown, or "" */
    char warning[512];           /* the first symbol warning */
};

/* --- the terminal ------------------------------------------------------- */

static struct termios saved_tio;
static int tio_saved;
static volatile sig_atomic_t got_signal;

static void restore_terminal(void)
{
    if (tio_saved) {
        tcsetattr(0, TCSANOW, &saved_tio);
        tio_saved = 0;
    }
}

static void on_signal(int sig)
{
    got_signal = sig;
}

static void setup_terminal(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the wait ends at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (isatty(0) && tcgetattr(0, &saved_tio) == 0) {
        struct termios raw = saved_tio;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(0, TCSANOW, &raw) == 0)
            tio_saved = 1;
    }
}

static int terminal_rows(void)
{
    struct winsize ws;
    if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
        return ws.ws_row;
    return 24;
}

static int terminal_cols(void)
{
    struct winsize ws;
    if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits until the deadline.  Returns 1 to quit (q, or a signal). */
static int wait_until(struct top *t, double deadline)
{
    for (;;) {
        if (got_signal)
            return 1;
        double left = deadline - now_s();
        if (left <= 0)
            return 0;
        struct pollfd p = { .fd = 0, .events = POLLIN };
        int ms = (int)(left * 1000) + 1;
        int rc = poll(&p, tio_saved ? 1 : 0, ms);
        if (rc > 0 && (p.revents & POLLIN)) {
            char c;
            ssize_t n = read(0, &c, 1);
            if (n == 1 && (c == 'q' || c == 'Q'))
                return 1;
            if (n == 0)
                restore_terminal(); /* end of input: keep time only */
        } else if (rc > 0) {
            restore_terminal(); /* stdin went away: keep time only */
        }
    }
}

/* --- the process's status ----------------------------------------------- */

/* Asks for the status.  Returns CTL_OK or the failure (err says why). */
static int query_status(struct top *t, char *err, size_t errcap)
{
    char answer[PATH_MAX + 2048];
    int rc = ctl_request(t->pid, "status", answer, sizeof answer, err, errcap);
    if (rc != CTL_OK)
        return rc;
    struct ctl_field f[32];
    size_t n = ctl_parse_status(answer, f, 32);
    const char *s;
    snprintf(t->state, sizeof t->state, "%s", (s = ctl_field(f, n, "state")) ? s : "?");
    snprintf(t->trace, sizeof t->trace, "%s", (s = ctl_field(f, n, "trace")) ? s : "");
    t->allocations = (s = ctl_field(f, n, "allocations")) ? strtod(s, NULL) : 0;
    t->frees = (s = ctl_field(f, n, "frees")) ? strtod(s, NULL) : 0;
    t->bytes = (s = ctl_field(f, n, "bytes")) ? strtod(s, NULL) : 0;
    t->live_bytes = (s = ctl_field(f, n, "live_bytes")) ? strtod(s, NULL) : 0;
    t->have_status = 1;
    return CTL_OK;
}

/* --- the trace ------------------------------------------------------------ */

static void warn_symbols(const char *message, void *arg)
{
    struct top *t = arg;
    if (!t->warning[0])
        snprintf(t->warning, sizeof t->warning, "%s", message);
}

static void close_trace(struct top *t)
{
    if (t->v)
        mtl_view_close(t->v);
    if (t->r)
        mtl_reader_close(t->r);
    if (t->probe_fd >= 0)
        close(t->probe_fd);
    t->v = NULL;
    t->r = NULL;
    t->probe_fd = -1;
    mtl_stackagg_release(&t->agg);
    memset(&t->agg, 0, sizeof t->agg);
    mtl_ptrmap_release(&t->live);
    struct mtl_ptrmap empty = MTL_PTRMAP_INIT;
    t->live = empty;
    t->t_allocs = t->t_frees = t->t_bytes = t->t_live = 0;
}

/* The first bytes of the trace: they change when it starts anew. */
static size_t read_probe(int fd, unsigned char *buf)
{
    ssize_t n = pread(fd, buf, PROBE_BYTES, 0);
    return n > 0 ? (size_t)n : 0;
}

static void open_trace(struct top *t)
{
    close_trace(t);
    if (!t->trace[0]) {
        snprintf(t->note, sizeof t->note, "no trace (state %s)", t->state);
        return;
    }
    /* A relative path is the program's: from its working directory. */
    if (t->trace[0] == '/')
        snprintf(t->path, sizeof t->path, "%s", t->trace);
    else
        snprintf(t->path, sizeof t->path, "/proc/%d/cwd/%s", t->pid, t->trace);
    int rc = mtl_reader_open(&t->r, t->path);
    if (rc < 0) {
        t->r = NULL;
        snprintf(t->note, sizeof t->note, "%s: %s", t->trace, mtl_strerror(rc));
        return;
    }
    mtl_reader_follow(t->r, 1);
    rc = mtl_view_open(&t->v, t->r, &t->filter, NULL, warn_symbols, t);
    if (rc < 0) {
        t->v = NULL;
        snprintf(t->note, sizeof t->note, "%s: %s", t->trace, mtl_strerror(rc));
        close_trace(t);
        return;
    }
    struct stat st;
    t->probe_fd = open(t->path, O_RDONLY | O_CLOEXEC);
    if (t->probe_fd >= 0 && fstat(t->probe_fd, &st) == 0) {
        t->dev = st.st_dev;
        t->ino = st.st_ino;
        t->nprobe = read_probe(t->probe_fd, t->probe);
    }
    t->agg.per_thread = 0;
    const struct mtl_trace_info *in = mtl_reader_info(t->r);
    const char *base = strrchr(in->program, '/');
    snprintf(t->program, sizeof t->program, "%s", base ? base + 1 : in->program);
    t->start_unix_us = in->start_unix_us;
    t->note[0] = '\0';
}

/* Has the trace at t->path started anew since we opened it? */
static int trace_replaced(struct top *t)
{
    struct stat st;
    unsigned char now[PROBE_BYTES];
    if (t->probe_fd < 0 || stat(t->path, &st) < 0)
        return 0; /* gone: keep what we have */
    if (st.st_dev != t->dev || st.st_ino != t->ino)
        return 1;
    size_t n = read_probe(t->probe_fd, now);
    return n < t->nprobe || memcmp(now, t->probe, t->nprobe) != 0;
}

/* Reads what was added to the trace.  Returns 0, or -1 when it does not
 * decode (rewritten under us). */
static int read_new(struct top *t)
{
    struct mtl_event ev;
    int rc;
    while ((rc = mtl_reader_next(t->r, &ev)) > 0) {
        if (ev.type == MTL_EV_ALLOC) {
            if (mtl_stackagg_add(&t->agg, 0, ev.stack, ev.weight_count,
                                 ev.weight_bytes, 0) < 0)
                return -1;
            struct mtl_ptrmap_val v = { .size = ev.size,
                                        .weight_count = ev.weight_count,
                                        .weight_bytes = ev.weight_bytes };
            struct mtl_ptrmap_val old;
            if (mtl_ptrmap_put(&t->live, ev.ptr, &v, &old) == 1)
                t->t_live -= old.weight_bytes;
            t->t_allocs += ev.weight_count;
            t->t_bytes += ev.weight_bytes;
            t->t_live += ev.weight_bytes;
        } else if (ev.type == MTL_EV_FREE) {
            struct mtl_ptrmap_val old;
            if (mtl_ptrmap_take(&t->live, ev.ptr, &old) == 1) {
                t->t_frees += old.weight_count;
                t->t_live -= old.weight_bytes;
            }
        }
    }
    return rc < 0 ? -1 : 0;
}

static void follow_trace(struct top *t)
{
    if (t->r && trace_replaced(t))
        open_trace(t);
    if (!t->r) {
        open_trace(t);
        if (!t->r)
            return;
    }
    if (read_new(t) < 0) {
        open_trace(t); /* it was rewritten: read it again from its start */
        if (t->r && read_new(t) < 0) {
            snprintf(t->note, sizeof t->note, "%s: does not decode", t->trace);
            close_trace(t);
        }
    }
}

/* --- drawing ---------------------------------------------------------------- */

static void fmt_count(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, "%.0f", v);
}

static void draw(struct top *t, int final, int alive)
{
    FILE *f = stdout;
    const char *eol = t->tty ? "\033[K\n" : "\n";
    int cols = t->tty ? terminal_cols() : 100;
    if (t->tty)
        fputs("\033[H", f);

    /* The header. */
    const struct mtl_trace_info *in = t->r ? mtl_reader_info(t->r) : NULL;
    double elapsed = 0;
    if (in && (final || !alive))
        elapsed = in->duration_us / 1e6;
    else if (t->start_unix_us) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        double now_us = (double)tv.tv_sec * 1e6 + tv.tv_usec;
        elapsed = now_us > (double)t->start_unix_us ? (now_us - t->start_unix_us) / 1e6 : 0;
    }
    fprintf(f, "memtally top: pid %d (%s), %s, %.1f s%s%s", t->pid,
            t->program[0] ? t->program : "?", alive ? t->state : "ended", elapsed,
            t->tty && !final ? "   (q quits)" : "", eol);
    /* Live: the process's own counts; at the end: the whole trace's. */
    int from_trace = !alive && t->r;
    double allocs = from_trace ? t->t_allocs : t->allocations;
    double frees = from_trace ? t->t_frees : t->frees;
    double live = t->r ? t->t_live : t->live_bytes; /* the trace knows sizes */
    double bytes = from_trace ? t->t_bytes : t->bytes;
    char a[32], b[32], c[32], d[32];
    fmt_count(a, sizeof a, allocs);
    fmt_count(b, sizeof b, frees);
    fprintf(f, "allocations %s   frees %s   allocated %s   live %s%s", a, b,
            human_bytes(c, sizeof c, bytes), human_bytes(d, sizeof d, live), eol);
    if (t->have_rate && alive)
        fprintf(f, "rate %.0f allocations/s   %s/s%s", t->rate_allocs,
                human_bytes(a, sizeof a, t->rate_bytes), eol);
    else
        fprintf(f, "rate -%s", eol);
    fprintf(f, "trace %s%s", t->trace[0] ? t->trace : "-", eol);
    fputs(eol, f);

    /* The table. */
    struct mtl_rows rows = {0};
    int have_rows = 0;
    if (t->r && t->v && !t->note[0]) {
        if (mtl_rows_fold(&rows, &t->agg, t->v, t->r, MTL_BY_FUNCTION, 0,
                          MTL_ALL_THREADS) == 0) {
            mtl_rows_sort(&rows, t->r, MTL_SORT_BYTES, 1);
            have_rows = 1;
        }
    }
    if (!have_rows) {
        fprintf(f, "%s%s", t->note[0] ? t->note : "no allocations read yet", eol);
    } else {
        size_t max = t->top ? t->top : 20;
        if (t->tty && !t->top) {
            int room = terminal_rows() - HEAD_LINES - 4; /* the last line stays empty: no scroll */
            max = room > 1 ? (size_t)room : 1;
        }
        size_t n = rows.n < max ? rows.n : max;
        int width = cols - (1 + 10 + 1 + 14 + 1 + 10 + 1 + 7);
        if (width > 72)
            width = 72;
        if (width < 16)
            width = 16;
        fprintf(f, "%-*s %10s %14s %10s %7s%s", width, "FUNCTION", "CALLS", "BYTES",
                "PER CALL", "%", eol);
        for (size_t i = 0; i < n; i++) {
            const struct mtl_row *row = &rows.row[i];
            char name[1024];
            row_label(t->r, row, name, sizeof name);
            if ((int)strlen(name) > width)
                memcpy(name + width - 3, "...", 4);
            fprintf(f, "%-*s %10.0f %14.0f %10.0f %7.2f%s", width, name, row->calls,
                    row->bytes, row->calls > 0 ? row->bytes / row->calls : 0,
                    row->percent, eol);
        }
        if (n < rows.n)
            fprintf(f, "%-*s%s", width, "...", eol);
        fprintf(f, "%-*s %10.0f %14.0f %10.0f %7.2f%s", width, "total", rows.calls,
                rows.bytes, rows.calls > 0 ? rows.bytes / rows.calls : 0,
                rows.bytes > 0 ? 100.0 : 0.0, eol);
        mtl_rows_release(&rows);
    }
    if (t->tty)
        fputs("\033[J", f);
    else if (!final)
        fputs("\n", f);
    fflush(f);
}

/* --- the loop ----------------------------------------------------------------- */

static int alive(int pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

/* One refresh: the status (if the process still answers), the trace. */
static void refresh(struct top *t)
{
    char err[PATH_MAX + 512];
    char old_trace[PATH_MAX];
    snprintf(old_trace, sizeof old_trace, "%s", t->trace);
    if (query_status(t, err, sizeof err) == CTL_OK) {
        double now = now_s();
        int anew = t->allocations < t->prev_allocs;
        if (t->have_prev && now > t->prev_t && !anew) {
            t->rate_allocs = (t->allocations - t->prev_allocs) / (now - t->prev_t);
            t->rate_bytes = (t->bytes - t->prev_bytes) / (now - t->prev_t);
            t->have_rate = 1;
        } else {
            t->have_rate = 0;
        }
        t->prev_allocs = t->allocations;
        t->prev_bytes = t->bytes;
        t->prev_t = now;
        t->have_prev = 1;
        if (strcmp(old_trace, t->trace) || anew)
            open_trace(t); /* another trace, or the same started anew */
    }
    follow_trace(t);
}

static int parse_args(struct top *t, int argc, char **argv, int *code)
{
    const char *pid = NULL;
    int iterations_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            *code = 0;
            return 1;
        }
        if (!strcmp(a, "--interval") || !strcmp(a, "--iterations") || !strcmp(a, "--top")) {
            if (i + 1 >= argc) {
                cli_error("top: %s needs a value", a);
                return *code = 2, 1;
            }
            val = argv[++i];
        } else if (!strncmp(a, "--interval=", 11) || !strncmp(a, "--iterations=", 13) ||
                   !strncmp(a, "--top=", 6)) {
            val = strchr(a, '=') + 1;
        } else if (a[0] == '-' && a[1]) {
            cli_error("top: unknown option '%s' (see memtally top --help)", a);
            return *code = 2, 1;
        } else if (!pid) {
            pid = a;
            continue;
        } else {
            cli_error("top: unexpected argument '%s'", a);
            return *code = 2, 1;
        }
        char *end;
        errno = 0;
        if (!strncmp(a, "--interval", 10)) {
            double s = strtod(val, &end);
            if (errno || !*val || *end || !(s >= 0.05 && s <= 3600)) {
                cli_error("top: --interval takes seconds, from 0.05 to 3600");
                return *code = 2, 1;
            }
            t->interval = s;
        } else {
            long n = strtol(val, &end, 10);
            if (errno || !*val || *end || n < 1) {
                cli_error("top: %s takes a positive number",
                          !strncmp(a, "--top", 5) ? "--top" : "--iterations");
                return *code = 2, 1;
            }
            if (!strncmp(a, "--top", 5)) {
                t->top = (size_t)n;
            } else {
                t->iterations = n;
                iterations_set = 1;
            }
        }
    }
    if (!pid) {
        cli_error("top: no pid given (see memtally top --help)");
        return *code = 2, 1;
    }
    char *end;
    errno = 0;
    long n = strtol(pid, &end, 10);
    if (errno || !*pid || *end || n < 1 || n > INT_MAX) {
        cli_error("top: '%s' is not a pid", pid);
        return *code = 2, 1;
    }
    t->pid = (int)n;
    if (!iterations_set)
        t->iterations = t->tty ? 0 : 1;
    return 0;
}

int cmd_top(int argc, char **argv)
{
    static struct top t; /* large: not on the stack */
    memset(&t, 0, sizeof t);
    t.interval = 1.0;
    t.probe_fd = -1;
    t.tty = isatty(1);
    int code;
    if (parse_args(&t, argc, argv, &code))
        return code;

    char err[PATH_MAX + 512];
    if (query_status(&t, err, sizeof err) != CTL_OK) {
        cli_error("%s", err);
        return 1;
    }
    t.prev_allocs = t.allocations;
    t.prev_bytes = t.bytes;
    t.prev_t = now_s();
    t.have_prev = 1;
    open_trace(&t);
    if (t.r)
        read_new(&t);

    if (t.tty) {
        setup_terminal();
        fputs("\033[?25l\033[H\033[2J", stdout); /* hide the cursor, clear */
        draw(&t, 0, 1);
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    double next = now_s();
    for (long done = 0; !t.iterations || done < t.iterations;) {
        next += t.interval;
        if (wait_until(&t, next))
            break;
        if (!alive(t.pid)) {
            follow_trace(&t);
            draw(&t, 1, 0);
            break;
        }
        refresh(&t);
        done++;
        int last = t.iterations && done >= t.iterations;
        draw(&t, last, 1);
    }
    if (t.tty) {
        restore_terminal();
        fputs("\033[?25h", stdout);
        fflush(stdout);
    }
    close_trace(&t);
    if (t.warning[0])
        cli_error("%s", t.warning);
    if (got_signal) {
        signal(got_signal, SIG_DFL);
        raise(got_signal);
    }
    return 0;
}
