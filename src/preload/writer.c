/*
 * writer.c: where the trace goes, for the recorder in the program.
 *
 * Under memtally record (the region is shared: common/region.h), memtally
 * record is the writer: this file only tells it, through the region, when
 * a trace begins (with its path) and when it is stopped, and waits for its
 * answer.  An exit, an exec or any death needs no word: memtally record
 * sees them and writes the end itself, with every event appended before.
 *
 * A program that records by itself (MEMTALLY=, mtl_start, a followed
 * child) has a private region and a writer thread here that runs the
 * encoder (trace/encoder.h) every MTL_ROUND_MS, or sooner when chunks fill,
 * into a file it opens.  The thread marks itself as inside memtally, so
 * zstd's own allocations pass straight through the hooks unrecorded.
 */
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/tracefile.h"
#include "trace/encoder.h"
#include "trace/format.h"

#define MTL_BLOCK_MAX_AGE_MS 250
#define ANSWER_WAIT_MS 10000

int mtl__writer_running;

static struct {
    pthread_mutex_t wmu;       /* one round at a time */
    pthread_t thread;
    atomic_int finish_reason;  /* -1, or the END reason requested */
    int finish_detail;
    atomic_int done;           /* the END record is written */
    struct mtl_encoder enc;
    dev_t dev;                 /* the trace file's identity, to notice */
    ino_t ino;                 /* the program closing our descriptor */
    unsigned rounds;
    int shared_open;           /* memtally record writes a trace of ours */
} w = {
    .wmu = PTHREAD_MUTEX_INITIALIZER,
    .finish_reason = -1,
};

#define R (mtl__pl.region)

/* memtally record writes our traces. */
static int shared(void)
{
    return R && R == mtl__pl.shared;
}

/* --- the region's header: what the trace's header record says ----------- */

static void fill_info(void)
{
    struct mtl_region_info *in = &R->info;
    ssize_t n = readlink("/proc/self/exe", in->exe, sizeof in->exe - 1);
    in->exe[n > 0 ? n : 0] = '\0';
    size_t clen = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while (clen < sizeof in->cmdline &&
               (r = read(fd, in->cmdline + clen, sizeof in->cmdline - clen)) > 0)
            clen += (size_t)r;
        close(fd);
    }
    while (clen > 0 && in->cmdline[clen - 1] == '\0')
        clen--;
    for (size_t i = 0; i < clen; i++)
        if (in->cmdline[i] == '\0')
            in->cmdline[i] = ' ';
    in->cmdline_len = (uint32_t)clen;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    in->pid = getpid();
    in->ppid = getppid();
    in->start_unix_us = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
    in->sample_rate = mtl__pl.opt.sample_rate;
    in->depth = mtl__pl.opt.depth;
    in->calls = mtl__calls_patterns() != NULL;
    in->attached = mtl__attached != 0;
    in->time_resolution_us = mtl__pl.opt.time_resolution_us;
    atomic_store(&R->start_ns, mtl__pl.start_ns);
}

/* --- memtally record: requests through the region ------------------------ */

/* Asks memtally record to begin or end a trace and waits for its answer:
 * 0 or a negative errno. */
static int ask(int kind, const char *path, int clobber)
{
    if (atomic_load(&R->gone))
        return -EPIPE;
    R->req_kind = kind;
    R->req_clobber = clobber;
    if (path)
        mtl__fmt(R->req_path, sizeof R->req_path, "%s", path);
    uint32_t seq = atomic_load(&R->req_seq) + 1;
    atomic_store(&R->req_seq, seq);
    mtl_region_wake(R);
    for (unsigned ms = 0; ms < ANSWER_WAIT_MS; ms++) {
        uint32_t ack = atomic_load(&R->ack_seq);
        if (ack == seq)
            return R->ack_rc;
        if (atomic_load(&R->gone))
            break;
        mtl_region_wait_answer(R, ack, 1); /* woken by the answer */
    }
    atomic_store(&R->gone, 1); /* never wait for it again */
    return -EPIPE;
}

/* --- a file of our own ---------------------------------------------------- */

/* Expands %p (pid) and %e (executable name) of the pattern into out. */
void mtl__expand_pattern(char *out, size_t cap, const char *pattern)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    size_t o = 0;
    for (const char *s = pattern; *s && o + 1 < cap; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            o += mtl__fmt(out + o, cap - o, "%d", (int)getpid());
            s++;
        } else if (s[0] == '%' && s[1] == 'e') {
            o += mtl__fmt(out + o, cap - o, "%s", base);
            s++;
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
}

/* Opens path for a new trace: replacing it when clobber, else never
 * overwriting another trace (path.1, path.2, ...).  Sets opt.output to the
 * name used.  Returns a descriptor or a negative errno. */
static int open_output(const char *path, int clobber)
{
    char base[sizeof mtl__pl.opt.output]; /* path may be opt.output itself */
    mtl__fmt(base, sizeof base, "%s", path);
    return mtl_trace_create_named(base, clobber, mtl__pl.opt.output, sizeof mtl__pl.opt.output);
}

static int file_sink(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    struct stat st;
    if (fstat(mtl__pl.fd, &st) < 0 || st.st_dev != w.dev || st.st_ino != w.ino) {
        mtl__say("the program closed the trace file's descriptor; recording stopped");
        return -EBADF;
    }
    int rc = mtl_write_all(mtl__pl.fd, p, n);
    if (rc < 0)
        mtl__say("cannot write %s: %s; recording stopped", mtl__pl.opt.output,
                 strerror(-rc));
    return rc;
}

static int open_file(const char *path, int clobber)
{
    int fd = open_output(path, clobber);
    if (fd < 0) {
        mtl__say("cannot create trace %s: %s; the program runs unprofiled", path,
                 mtl_trace_create_error(fd));
        return fd;
    }
    /* A high descriptor number, out of the way of programs that expect
     * the lowest free one (dup2 onto 0-2, "close everything above 3"). */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    struct stat st;
    if (fstat(fd, &st) == 0) {
        w.dev = st.st_dev;
        w.ino = st.st_ino;
    }
    mtl__pl.fd = fd;
    return 0;
}

static void close_file(void)
{
    if (mtl__pl.fd >= 0)
        close(mtl__pl.fd);
    mtl__pl.fd = -1;
}

/* --- beginning ------------------------------------------------------------ */

int mtl__writer_begin(const char *path, int clobber, int start_thread)
{
    atomic_store(&w.finish_reason, -1);
    atomic_store(&w.done, 0);
    fill_info();
    if (shared()) {
        int rc = ask(MTL_REQ_BEGIN, path, clobber);
        if (rc == 0) {
            /* The name memtally record chose (path.1... when taken). */
            mtl__fmt(mtl__pl.opt.output, sizeof mtl__pl.opt.output, "%s", R->req_path);
            w.shared_open = 1;
        }
        return rc;
    }
    mtl__tls.in_hook++;
    int rc = mtl_encoder_setup(&w.enc);
    mtl__tls.in_hook--;
    if (rc < 0)
        return rc;
    if ((rc = open_file(path, clobber)) < 0)
        return rc;
    pthread_mutex_lock(&w.wmu);
    rc = mtl_encoder_begin(&w.enc, R, 0, file_sink, NULL);
    if (rc == 0)
        mtl_encoder_refresh_names(&w.enc);
    pthread_mutex_unlock(&w.wmu);
    if (rc < 0) {
        close_file();
        return rc;
    }
    if (start_thread && mtl__writer_start() < 0) {
        close_file();
        return -EAGAIN;
    }
    return 0;
}

/* --- the writer thread ------------------------------------------------- */

/* One round; with wmu held.  final: every event and the END record. */
static void round_locked(int final, unsigned trylock_spins)
{
    if (w.enc.failed || atomic_load(&w.done) || mtl__pl.fd < 0)
        return;
    /* Before collecting: an object loaded before any collected event used
     * its addresses is then in the map (see modules.c). */
    if (mtl__modules_changed())
        mtl__modules_rescan();
    mtl__tls.in_hook++;
    mtl_encoder_round(&w.enc, final, UINT64_MAX, trylock_spins, MTL_BLOCK_MAX_AGE_MS);
    if (final) {
        mtl_encoder_end(&w.enc, (unsigned)atomic_load(&w.finish_reason), w.finish_detail);
        atomic_store(&w.done, 1);
        syscall(SYS_futex, &w.done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    }
    mtl__tls.in_hook--;
    if (w.enc.failed)
        mtl__stop_recording(NULL, 0);
}

static void *writer_main(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    mtl__tls.in_hook = 1; /* nothing this thread allocates is the program's */
    mtl__tls.writer = 1;
    uint32_t wakes = mtl_region_wakes(R);
    for (;;) {
        if (atomic_load(&w.finish_reason) < 0)
            mtl_region_sleep(R, wakes, MTL_ROUND_MS);
        /* Before the round looks at the finish and the chunks: a wake
         * that comes while it works ends the next sleep at once. */
        wakes = mtl_region_wakes(R);
        int finish = atomic_load(&w.finish_reason) >= 0;
        pthread_mutex_lock(&w.wmu);
        if (finish || ++w.rounds % (1000 / MTL_ROUND_MS) == 0)
            mtl_encoder_refresh_names(&w.enc);
        round_locked(finish, finish ? 200000 : 0);
        pthread_mutex_unlock(&w.wmu);
        if (finish || w.enc.failed)
            break;
    }
    return NULL;
}

int mtl__writer_start(void)
{
    if (shared() || mtl__writer_running)
        return 0; /* memtally record writes */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    mtl__tls.in_hook++;
    int rc = pthread_create(&w.thread, &attr, writer_main, NULL);
    mtl__tls.in_hook--;
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return -1;
    mtl__writer_running = 1;
    return 0;
}

void mtl__writer_wake(void)
{
    if (R)
        mtl_region_wake(R);
}

void mtl__writer_counts(struct mtl__counts *c)
{
    /* Published by the writer each round: a status line may be a round
     * behind. */
    c->allocations = R ? atomic_load(&R->allocations) : 0;
    c->frees = R ? atomic_load(&R->frees) : 0;
    c->bytes = R ? atomic_load(&R->bytes) : 0;
}

int mtl__writer_dump(const char *path)
{
    if (shared())
        return -ENOTSUP; /* memtally record answers dumps itself */
    int rc = 0, out = -1;
    pthread_mutex_lock(&w.wmu);
    if (atomic_load(&w.done) || mtl__pl.fd < 0) {
        rc = -EINVAL;
        goto out;
    }
    if ((out = mtl_trace_create(path)) < 0) {
        rc = out;
        goto out;
    }
    mtl__tls.in_hook++;
    rc = mtl_encoder_dump(&w.enc, mtl__pl.fd, out);
    mtl__tls.in_hook--;
out:
    pthread_mutex_unlock(&w.wmu);
    if (out >= 0 && close(out) < 0 && rc == 0)
        rc = -errno;
    return rc;
}

/* --- the end ------------------------------------------------------------- */

static int exec_locked;

void mtl__writer_exec_begin(void)
{
    if (shared()) {
        /* memtally record ends the trace once the exec took place. */
        atomic_store(&R->exec_ns, mtl__now_ns() | 1);
        return;
    }
    pthread_mutex_lock(&w.wmu);
    exec_locked = 1;
    if (atomic_load(&w.done) || mtl__pl.fd < 0)
        return;
    /* Everything up to now, then END: the trace is whole if exec works.
     * wmu stays held so that the writer adds nothing after END. */
    mtl__tls.in_hook++;
    mtl_encoder_round(&w.enc, 0, UINT64_MAX, 0, 0);
    mtl_encoder_round(&w.enc, 0, UINT64_MAX, 0, 0);
    mtl_encoder_end(&w.enc, MTL_END_EXEC, 0);
    w.enc.ended = 0; /* exec may fail: the trace then goes on */
    mtl__tls.in_hook--;
}

void mtl__writer_exec_end(void)
{
    if (shared()) {
        atomic_store(&R->exec_ns, 0);
        return;
    }
    if (exec_locked) {
        exec_locked = 0;
        pthread_mutex_unlock(&w.wmu);
    }
}

void mtl__writer_finish(int reason, int detail, unsigned timeout_ms)
{
    if (shared()) {
        if (!w.shared_open)
            return;
        if (reason == MTL_END_STOP) {
            w.shared_open = 0;
            atomic_store(&R->end_ns, mtl__now_ns());
            ask(MTL_REQ_END, NULL, 0);
        } else {
            /* Exit: memtally record writes the end once the process is
             * gone, with whatever later destructors free meanwhile. */
            atomic_store(&R->end_reason, reason);
        }
        return;
    }
    int expected = -1;
    if (!atomic_compare_exchange_strong(&w.finish_reason, &expected, reason))
        goto wait; /* someone else is finishing: wait for them */
    w.finish_detail = detail;
    if (mtl__writer_running && !pthread_equal(pthread_self(), w.thread)) {
        mtl__writer_wake();
        goto wait;
    }
    /* No writer thread (it failed to start, or we are early): finish here,
     * unless we are in a signal handler, where zstd may not allocate. */
    if (reason != MTL_END_SIGNAL) {
        pthread_mutex_lock(&w.wmu);
        round_locked(1, 200000);
        pthread_mutex_unlock(&w.wmu);
    }
wait:
    /* Woken when the END record is written (round_locked): a sleep of a
     * millisecond at a time made every exit wait for the next one. */
    int saved = errno;
    for (uint64_t until = mtl__monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
         !atomic_load(&w.done);) {
        uint64_t now = mtl__monotonic_ns();
        if (now >= until)
            break;
        struct timespec left = { (time_t)((until - now) / 1000000000u),
                                 (long)((until - now) % 1000000000u) };
        syscall(SYS_futex, &w.done, FUTEX_WAIT_PRIVATE, 0, &left, NULL, 0);
    }
    errno = saved;
    if (atomic_load(&w.done) && mtl__writer_running && reason != MTL_END_SIGNAL &&
        !pthread_equal(pthread_self(), w.thread)) {
        pthread_join(w.thread, NULL);
        mtl__writer_running = 0;
    }
    if (atomic_load(&w.done))
        close_file();
}

/* Child of fork that records on (in a private region by now): a new trace
 * that repeats the definitions the parent had written to its own, and a
 * writer thread of its own. */
void mtl__writer_after_fork_child(void)
{
    pthread_mutex_init(&w.wmu, NULL);
    mtl__writer_running = 0;
    w.shared_open = 0;
    exec_locked = 0;
    /* The parent's trace is the parent's. */
    close_file();
    char path[sizeof mtl__pl.opt.output];
    mtl__expand_pattern(path, sizeof path, mtl__pl.opt.pattern);
    if (mtl__writer_begin(path, 0, 1) < 0)
        mtl__stop_recording(NULL, 0);
}
