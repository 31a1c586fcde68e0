/*
 * cmd_record.c: `memtally record [options] -- PROGRAM ARGS`.
 *
 * Runs PROGRAM as a child with libmemtally.so in LD_PRELOAD and the
 * options in a block of variables after the environment's own
 * (common/recenv.h; the recorder takes it out before main), writes the
 * trace from the events the program leaves in shared memory
 * (record_writer.c), serves the program's control socket
 * (record_control.c), waits for it, and exits the way it did: with its
 * exit code, or by the same signal.  Terminal signals (SIGINT, SIGQUIT) reach the child
 * directly as it is in our process group; we ignore them meanwhile and
 * pass on the ones sent to us alone (SIGTERM, SIGHUP, SIGUSR1, SIGUSR2).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyze/filter.h"
#include "common/recenv.h"
#include "cli/analysis.h"
#include "cli/record_control.h"
#include "cli/record_followers.h"
#include "cli/record_writer.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage_text[] =
    "usage: memtally record [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM and records every allocation and free with its stack,\n"
    "thread and time into PROGRAM.PID.mtly (one trace per process).\n"
    "\n"
    "  -o, --output FILE   trace path; %p becomes the pid, %e the program name\n"
    "  --depth N           frames kept per stack (1-256, default 64)\n"
    "  --sample[=BYTES]    sampled mode: one allocation per BYTES allocated on\n"
    "                      average (default 512K), weighted to unbiased estimates;\n"
    "                      cheap enough for production\n"
    "  --time-resolution T times in steps of T (like 1ms or 10ms; default 1us):\n"
    "                      a smaller trace, with times that much coarser\n"
    "  --idle              start with recording paused (memtally ctl PID start)\n"
    "  --follow-fork       record forked children too, each into its own trace\n"
    "  --follow-exec       record programs this one execs, each into its own trace\n"
    "  --calls             count true calls of the functions of a program built\n"
    "                      with -finstrument-functions (report shows them)\n"
    "  --pattern GLOB      with --calls: count the functions whose symbol\n"
    "                      matches GLOB (* and ?; repeatable; default: all)\n"
    "  --exclude GLOB      with --calls: not those (the last match decides)\n"
    "  -q, --quiet         do not print the trace's name at the end\n"
    "  --max-peak SIZE     fail (exit 86) if the peak of live bytes exceeds SIZE\n"
    "  --max-leak SIZE     fail (exit 86) if the bytes live at the end exceed SIZE\n"
    "                      (SIZE: bytes, or with K, M, G)\n";

/* The exit status of a run that passed a --max-peak or --max-leak limit. */
#define EXIT_LIMIT 86

static pid_t child;

static void forward_signal(int sig)
{
    if (child > 0)
        kill(child, sig);
}

/* Once the child has ended, memtally record may still wait for processes
 * it follows: an interrupt then ends their traces, and the wait. */
static struct record_followers *waiting_for;

static void interrupt_wait(int sig)
{
    (void)sig;
    if (waiting_for)
        record_followers_interrupt(waiting_for);
}

static int parse_uint(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Checks the finished trace against the limits.  Returns 0 when within
 * them, EXIT_LIMIT after saying which was passed, 1 if the trace cannot
 * be read. */
static int check_limits(const char *trace, int have_peak, uint64_t max_peak,
                        int have_leak, uint64_t max_leak)
{
    struct analysis a = { .name = "record" };
    struct mtl_engine *e = analysis_open(&a, trace);
    if (!e)
        return 1;
    struct mtl_totals t;
    int bad = analysis_done(&a, e, mtl_totals(e, &t));
    mtl_engine_close(e);
    if (bad)
        return 1;
    char x[32], y[32], z[32];
    if (have_peak && t.peak_live_bytes > max_peak) {
        cli_error("peak live bytes %s exceed --max-peak %s by %s (trace kept: %s)",
                  mtl_human_bytes(x, sizeof x, (double)t.peak_live_bytes),
                  mtl_human_bytes(y, sizeof y, (double)max_peak),
                  mtl_human_bytes(z, sizeof z, (double)(t.peak_live_bytes - max_peak)), trace);
        return EXIT_LIMIT;
    }
    if (have_leak && t.live_bytes > max_leak) {
        cli_error("bytes live at the end %s exceed --max-leak %s by %s (trace kept: %s)",
                  mtl_human_bytes(x, sizeof x, (double)t.live_bytes),
                  mtl_human_bytes(y, sizeof y, (double)max_leak),
                  mtl_human_bytes(z, sizeof z, (double)(t.live_bytes - max_leak)), trace);
        return EXIT_LIMIT;
    }
    return 0;
}

/* What the recorder in the child is told (common/recenv.h). */
struct record_env {
    const char *pattern, *lib;
    long depth;
    uint64_t sample;
    uint64_t time_resolution_us;
    int idle, follow_fork, follow_exec;
    const char *calls;        /* --calls: its patterns, or NULL */
    int region_fd;            /* the region's descriptor (common/region.h), or -1 */
    const char *handover;     /* where followed processes hand their regions, or NULL */
};

/* In the child, before exec: our environment, unchanged, with the
 * recorder's block after it (common/recenv.h); NULL when out of memory. */
static char **child_environment(const struct record_env *re, const char *program)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char out[PATH_MAX + 64];
    cli_expand_pattern(out, sizeof out, re->pattern, getpid(), program);
    const char *seed = getenv(MTL_ENV_SEED); /* tests: repeatable sampling */
    struct mtl_env_opts o = {
        .output = out, .output_pid = getpid(), .pattern = re->pattern,
        .depth = (unsigned long long)re->depth, .sample_rate = re->sample,
        .time_resolution_us = re->time_resolution_us,
        .seed = seed ? strtoull(seed, NULL, 10) : 0, .idle = re->idle,
        .follow_fork = re->follow_fork, .follow_exec = re->follow_exec,
        .region_fd = re->region_fd, .handover = re->handover, .calls = re->calls,
        .library = re->lib, .their_preload = getenv(MTL_ENV_PRELOAD),
    };
    size_t cap = 3 * PATH_MAX + (o.their_preload ? strlen(o.their_preload) : 0) + 512;
    char **env = calloc(n + MTL_ENV_MAX_BLOCK + 1, sizeof *env);
    char *strings = malloc(cap); /* until exec: never freed */
    if (!env || !strings)
        return NULL;
    memcpy(env, environ, n * sizeof *env);
    return mtl_env_block_make(&o, strings, cap, env + n) ? env : NULL;
}

/* Whether ulimit -v limits the address space, which the recorder in the
 * program may then not have room in: said when no trace came. */
static int address_space_limited(void)
{
    struct rlimit as;
    return getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
}

int cmd_record(int argc, char **argv)
{
    const char *output = NULL;
    long depth = 64;
    int follow_fork = 0, follow_exec = 0, quiet = 0;
    uint64_t max_peak = 0, max_leak = 0, sample = 0, time_resolution_us = 1;
    int idle = 0;
    int calls = 0;
    static char call_patterns[4096]; /* +GLOB and -GLOB, split by MTL_CALLS_SEP */
    size_t call_len = 0;
    int have_max_peak = 0, have_max_leak = 0;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i >= argc) {
                cli_error("record: %s needs a file name", a);
                return 2;
            }
            output = argv[i];
        } else if (!strncmp(a, "--output=", 9)) {
            output = a + 9;
        } else if (!strcmp(a, "--depth") || !strncmp(a, "--depth=", 8)) {
            const char *v = a[7] == '=' ? a + 8 : (++i < argc ? argv[i] : NULL);
            if (!v || parse_uint(v, 1, 256, &depth) < 0) {
                cli_error("record: --depth takes a number from 1 to 256");
                return 2;
            }
        } else if (!strcmp(a, "--max-peak") || !strcmp(a, "--max-leak") ||
                   !strncmp(a, "--max-peak=", 11) || !strncmp(a, "--max-leak=", 11)) {
            int peak = !strncmp(a, "--max-peak", 10);
            const char *v = a[10] == '=' ? a + 11 : (++i < argc ? argv[i] : NULL);
            if (!v || mtl_parse_size(v, peak ? &max_peak : &max_leak) < 0) {
                cli_error("record: %s takes a size (like 64M)", peak ? "--max-peak" : "--max-leak");
                return 2;
            }
            *(peak ? &have_max_peak : &have_max_leak) = 1;
        } else if (!strcmp(a, "--sample") || !strncmp(a, "--sample=", 9)) {
            sample = 512 * 1024;
            if (a[8] == '=' && (mtl_parse_size(a + 9, &sample) < 0 || sample == 0)) {
                cli_error("record: --sample= takes a size in bytes (like 512K)");
                return 2;
            }
        } else if (!strcmp(a, "--time-resolution") || !strncmp(a, "--time-resolution=", 18)) {
            const char *v = a[17] == '=' ? a + 18 : (++i < argc ? argv[i] : NULL);
            if (cli_parse_time_resolution(v, &time_resolution_us) < 0) {
                cli_error("record: --time-resolution takes a time from 1us to 1s (like 10ms)");
                return 2;
            }
        } else if (!strcmp(a, "--calls")) {
            calls = 1;
        } else if (!strcmp(a, "--pattern") || !strcmp(a, "--exclude") ||
                   !strncmp(a, "--pattern=", 10) || !strncmp(a, "--exclude=", 10)) {
            const char *v = a[9] == '=' ? a + 10 : (++i < argc ? argv[i] : NULL);
            size_t n = v ? strlen(v) : 0;
            if (!n || memchr(v, MTL_CALLS_SEP, n) || call_len + n + 5 >= sizeof call_patterns) {
                cli_error("record: %.9s takes a function name pattern (like 'parse_*')", a);
                return 2;
            }
            if (call_len)
                call_patterns[call_len++] = MTL_CALLS_SEP;
            call_patterns[call_len++] = a[2] == 'p' ? '+' : '-';
            memcpy(call_patterns + call_len, v, n + 1);
            call_len += n;
        } else if (!strcmp(a, "--idle")) {
            idle = 1;
        } else if (!strcmp(a, "--follow-fork")) {
            follow_fork = 1;
        } else if (!strcmp(a, "--follow-exec")) {
            follow_exec = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else {
            cli_error("record: unknown option '%s' (see memtally record --help)", a);
            return 2;
        }
    }
    if (i >= argc) {
        cli_error("record: no program to run (memtally record -- PROGRAM ARGS)");
        return 2;
    }
    if (call_len && !calls) {
        cli_error("record: --pattern and --exclude choose the functions --calls counts: "
                  "add --calls");
        return 2;
    }
    if (call_len && call_patterns[0] == '-') {
        /* Only exclusions: every other function is counted. */
        memmove(call_patterns + 3, call_patterns, call_len + 1);
        memcpy(call_patterns, "+*\x1e", 3);
    }
    if (output && !*output) {
        cli_error("record: empty output file name");
        return 2;
    }
    char **prog = argv + i;

    char lib[PATH_MAX];
    if (cli_find_library(lib, sizeof lib) < 0) {
        cli_error("record: cannot find libmemtally.so beside the memtally "
                  "executable (set MEMTALLY_LIBRARY to its path)");
        return 1;
    }
    char file[PATH_MAX];
    const char *why = cli_unpreloadable(prog[0], file, sizeof file);
    if (why) {
        cli_error("record: %s %s; nothing would be recorded", file, why);
        return 1;
    }
    /* Fail early and clearly when the trace cannot be written. */
    char probe[PATH_MAX];
    cli_expand_pattern(probe, sizeof probe, output ? output : MTL_TRACE_PATTERN, getpid(), prog[0]);
    char *dir = strdup(probe);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    const char *d = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
    if (access(d, W_OK | X_OK) < 0) {
        cli_error("record: cannot write a trace in %s: %s", d, strerror(errno));
        free(dir);
        return 1;
    }
    free(dir);
    /* The recorder refuses these too (without following the link); said
     * here, before the program runs, and once. */
    struct stat lst;
    if (output && !strchr(output, '%') && lstat(probe, &lst) == 0) {
        if (S_ISLNK(lst.st_mode)) {
            cli_error("record: %s is a symbolic link; memtally does not write through one", probe);
            return 1;
        }
        if (S_ISREG(lst.st_mode) && lst.st_uid != geteuid()) {
            cli_error("record: %s belongs to another user; memtally does not replace it", probe);
            return 1;
        }
    }

    const char *pattern = output ? output : MTL_TRACE_PATTERN;
    int sync_pipe[2];
    if (pipe2(sync_pipe, O_CLOEXEC) < 0) {
        cli_error("record: pipe: %s", strerror(errno));
        return 1;
    }
    /* The program records into shared memory and the trace is written
     * here (record_writer.c); without it, the recorder writes the file
     * itself. */
    static struct record_writer writer;
    int have_region = record_writer_create(&writer) == 0;
    if (writer.discard_events)
        fputs("memtally: record: MEMTALLY_WRITER=discard: events are dropped, not written (a "
              "measurement of the writer; the trace holds none)\n",
              stderr);
    /* And of the processes it follows (record_followers.h). */
    static struct record_followers followers = { .fd = -1 };
    if (have_region && (follow_fork || follow_exec))
        record_followers_start(&followers);
    child = fork();
    if (child < 0) {
        cli_error("record: fork: %s", strerror(errno));
        return 1;
    }
    if (child == 0) {
        close(sync_pipe[0]);
        struct record_env re = { .pattern = pattern, .lib = lib, .depth = depth,
                                 .sample = sample, .time_resolution_us = time_resolution_us,
                                 .idle = idle,
                                 .follow_fork = follow_fork, .follow_exec = follow_exec,
                                 .calls = calls ? call_patterns : NULL,
                                 .region_fd = have_region ? writer.memfd : -1,
                                 .handover = followers.fd >= 0 ? followers.path : NULL };
        char **env = child_environment(&re, prog[0]);
        if (env)
            execvpe(prog[0], prog, env);
        else
            errno = ENOMEM;
        int e = errno;
        /* Tell the parent why, so that it can say so and exit like a shell. */
        if (write(sync_pipe[1], &e, sizeof e) < 0) {
        }
        _exit(e == ENOENT ? 127 : 126);
    }
    close(sync_pipe[1]);
    char trace[PATH_MAX + 64];
    cli_expand_pattern(trace, sizeof trace, pattern, child, prog[0]);
    int writer_ok = 1;
    if (have_region && record_writer_start(&writer, trace, child) < 0)
        writer_ok = 0;
    record_followers_child(&followers, child);
    /* The program's control socket is ours to serve (record_control.c). */
    struct record_control control = { .running = 0 };
    if (have_region)
        record_control_start(&control, &writer, child);

    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);

    int status;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            cli_error("record: waitpid: %s", strerror(errno));
            return 1;
        }
    }
    record_control_stop(&control);
    if (have_region && record_writer_finish(&writer, status, NULL) < 0)
        writer_ok = 0;
    waiting_for = &followers;
    sa.sa_handler = interrupt_wait;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (record_followers_finish(&followers, status, quiet) < 0)
        writer_ok = 0;
    int exec_errno = 0;
    ssize_t got = read(sync_pipe[0], &exec_errno, sizeof exec_errno);
    close(sync_pipe[0]);
    if (got == (ssize_t)sizeof exec_errno) {
        cli_error("record: cannot run %s: %s", prog[0], strerror(exec_errno));
        return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
    }

    if (!writer_ok) {
        /* Said already; the program's own failure, if any, comes first. */
        if (WIFEXITED(status) && WEXITSTATUS(status))
            return WEXITSTATUS(status);
        return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    }
    if (!quiet) {
        struct stat st;
        if (stat(trace, &st) == 0 && followers.traces)
            fprintf(stderr, "memtally: wrote %s and %u trace%s of followed processes\n", trace,
                    followers.traces, followers.traces == 1 ? "" : "s");
        else if (stat(trace, &st) == 0)
            fprintf(stderr, "memtally: wrote %s\n", trace);
        else
            fprintf(stderr, "memtally: no trace was written to %s%s\n", trace,
                    address_space_limited() ? " (ulimit -v limits the program's address space; "
                                              "the recorder maps about 850 MiB of it)"
                                            : "");
    }
    /* A program that allocates without libc's malloc (an allocator of its
     * own on mmap, or none): an empty trace would puzzle.  Not sampled or
     * idle: nothing recorded is no sign there. */
    if (calls && have_region && writer.written && !writer.calls_records)
        cli_error("record: --calls: no call was counted: %s has no function built with "
                  "-finstrument-functions (or none matched --pattern); recorded as usual",
                  prog[0]);
    if (!quiet && !sample && !idle && have_region && writer.written && !writer.allocations)
        cli_error("record: no allocation of %s went through malloc or operator new; "
                  "it allocates by other means, or not at all", prog[0]);
    if (have_max_peak || have_max_leak) {
        int over = check_limits(trace, have_max_peak, max_peak, have_max_leak, max_leak);
        if (over)
            return over;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core); /* the child dumped core already */
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return 128 + sig;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
