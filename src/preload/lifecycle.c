/*
 * lifecycle.c: when recording starts and how it ends.
 *
 * Start: the first hook call (often before main, from ld.so or another
 * library's constructor) runs mtl__init: options from the environment,
 * the region (memtally record's, shared, or a private one), the trace and
 * its header, the module map.  Events from then on are buffered.  Our
 * constructor then registers the fork handlers, tidies the environment so
 * that children run without memtally unless asked to follow exec, and,
 * only for a program that writes its own trace, starts the writer thread
 * and installs the fatal-signal handlers.
 *
 * End, under memtally record: nothing to do.  The program notes an exit
 * or an exec in the region; memtally record writes the end when the
 * process is gone (or the exec took place), with every event of any death.
 * A program that writes its own trace: the destructor (exit from any
 * thread), the _exit hook, a fatal signal (with the default disposition:
 * signals.c) or exec write what is buffered and the END record; killed
 * with SIGKILL, it leaves a trace that reads back to its last whole block.
 *
 * Recording starts by itself when memtally record (or a plain LD_PRELOAD
 * of the library) asked for it; a program that merely links libmemtally
 * records only once it calls mtl_start (api.c).
 *
 * Options: from the block `memtally record` appends to the environment
 * (common/recenv.h has the names; environ.c reads them and takes them out
 * again), or, for a plain LD_PRELOAD of the library, from the same names
 * in the environment itself:
 *   MEMTALLY_OUTPUT, MEMTALLY_OUTPUT_PID  exact path for that one process
 *   MEMTALLY_PATTERN   path for the others, %p pid, %e program (default
 *                      %e.%p.mtly)
 *   MEMTALLY_DEPTH     frames kept per stack
 *   MEMTALLY_SAMPLE_RATE  sampled mode: mean bytes between samples
 *   MEMTALLY_SEED      the sampler's random seed (tests)
 *   MEMTALLY_IDLE      "1": start paused, until `memtally ctl PID start`
 *   MEMTALLY_FOLLOW_FORK, MEMTALLY_FOLLOW_EXEC  "1" to follow
 * and from the environment always:
 *   MEMTALLY_DISABLE   "1": the library stays loaded but records nothing
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/recenv.h"
#include "common/region.h"
#include "preload/control.h"
#include "trace/format.h"

/* The state before there is a region to hold it. */
static atomic_int early_state;

struct mtl__preload mtl__pl = { .fd = -1, .state = &early_state };

static int inited;
static int late_done;
static int requested;   /* the environment asked for recording */
static int from_record; /* by memtally record's block (common/recenv.h) */

static long env_long(const char *name, long def)
{
    const char *s = mtl__env_get(name);
    if (!s || !*s)
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    return *end ? def : v;
}

static void read_options(void)
{
    struct mtl__options *o = &mtl__pl.opt;
    const char *out = mtl__env_get(MTL_ENV_OUTPUT);
    long out_pid = env_long(MTL_ENV_OUTPUT_PID, -1);
    const char *pattern = mtl__env_get(MTL_ENV_PATTERN);
    if (out && *out && out_pid == (long)getpid())
        mtl__fmt(o->output, sizeof o->output, "%s", out);
    mtl__fmt(o->pattern, sizeof o->pattern, "%s",
             pattern && *pattern ? pattern : MTL_TRACE_PATTERN);
    long depth = env_long(MTL_ENV_DEPTH, MTL_DEFAULT_DEPTH);
    o->depth = (uint32_t)(depth < 1 ? 1 : depth > MTL_MAX_DEPTH ? MTL_MAX_DEPTH : depth);
    o->follow_fork = env_long(MTL_ENV_FOLLOW_FORK, 0) == 1;
    o->follow_exec = env_long(MTL_ENV_FOLLOW_EXEC, 0) == 1;
    o->idle = env_long(MTL_ENV_IDLE, 0) == 1;
    const char *handover = mtl__env_get(MTL_ENV_HANDOVER);
    mtl__fmt(o->handover, sizeof o->handover, "%s", handover ? handover : "");
    long rate = env_long(MTL_ENV_SAMPLE_RATE, 0);
    o->sample_rate = rate > 0 ? (uint64_t)rate : 0;
    long seed = env_long(MTL_ENV_SEED, 0);
    o->seed = seed > 0 ? (uint64_t)seed : 0;
    o->time_resolution_us = mtl_time_resolution(env_long(MTL_ENV_TIME_RESOLUTION, 1));
    /* Not an option of memtally record's: a knob to rule our walker out
     * (or check it) when a stack looks wrong.  Read, never removed. */
    const char *unwind = getenv("MEMTALLY_UNWIND");
    o->unwinder = !unwind ? MTL_UNWIND_OWN
                  : !strcmp(unwind, "libunwind") ? MTL_UNWIND_LIBUNWIND
                  : !strcmp(unwind, "check") ? MTL_UNWIND_CHECK : MTL_UNWIND_OWN;
    mtl__calls_init(mtl__env_get(MTL_ENV_CALLS));
}

/* memtally record writes this process's traces from region r and serves
 * its control socket. */
static void share_with_record(struct mtl_region *r)
{
    mtl__pl.shared = r;
    mtl__pl.mailbox = r;
    mtl__pl.mailbox_pid = getpid();
}

/* The region memtally record made for this process (common/region.h):
 * mapped, and its descriptor closed at once, so that the program never has
 * it.  memtally record writes the trace from it. */
static void take_region(void)
{
    long fd = env_long(MTL_ENV_REGION, -1);
    if (fd < 0 || env_long(MTL_ENV_OUTPUT_PID, -1) != (long)getpid())
        return;
    size_t size = mtl_region_size();
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, (int)fd, 0);
    close((int)fd);
    if (p == MAP_FAILED)
        return;
    struct mtl_region *r = p;
    if (r->magic != MTL_REGION_MAGIC || r->size != size || atomic_exchange(&r->attached, 1)) {
        munmap(p, size);
        return;
    }
    share_with_record(r);
}

/* Whether our library is in LD_PRELOAD: a plain preload records too. */
static int preloaded(void)
{
    const char *v = getenv(MTL_ENV_PRELOAD);
    return v && strstr(v, "libmemtally.so") != NULL;
}

void mtl__init(void)
{
    if (inited)
        return;
    inited = 1;
    struct mtl__tls *tls = &mtl__tls;
    tls->in_hook++;
    int saved = errno;
    const char *disable = getenv("MEMTALLY_DISABLE");
    if (disable && !strcmp(disable, "1")) {
        /* Nothing of ours stays behind: not the region's descriptor either. */
        long fd = mtl__env_find() ? env_long(MTL_ENV_REGION, -1) : -1;
        if (fd >= 0)
            close((int)fd);
        goto out;
    }
    mtl__clock_init();
    mtl__set_start(mtl__monotonic_ns());
    mtl__pl.pid = getpid();
    from_record = mtl__env_find();
    read_options();
    if (from_record)
        take_region();
    /* A program exec'd by one that memtally record follows: a region of
     * its own, handed to memtally record (handover.c). */
    struct mtl_region *handed = from_record && !mtl__pl.shared ? mtl__handover_region() : NULL;
    if (handed)
        share_with_record(handed);
    struct mtl_region *r = mtl__pl.shared ? mtl__pl.shared : mtl_region_new_private();
    mtl__pl.fast_owners = mtl_region_barrier_register();
    if (r)
        mtl__events_use_region(r);
    if (!r || mtl__events_init() < 0 || mtl__stacks_init() < 0 ||
        mtl__modules_init() < 0) {
        mtl__say("cannot set up recording (out of memory); the program runs unprofiled");
        goto out;
    }
    mtl__pl.ready = 1;
    requested = from_record || getenv(MTL_ENV_PATTERN) || getenv(MTL_ENV_OUTPUT) ||
                preloaded();
    if (!requested)
        goto out;
    /* The writer thread starts in our constructor: threads are best not
     * made this early, inside whatever allocated first.  --idle opens the
     * trace but records nothing until `memtally ctl PID start`. */
    if (mtl__begin_trace(NULL, 0) == 0)
        atomic_store(mtl__pl.state, mtl__pl.opt.idle ? MTL_PAUSED : MTL_RECORDING);
out:
    errno = saved;
    tls->in_hook--;
}

void mtl__stop_recording(const char *why, int err)
{
    int expected = MTL_RECORDING;
    if (!atomic_compare_exchange_strong(mtl__pl.state, &expected, MTL_FINISHED))
        return;
    if (why)
        mtl__say("%s%s%s; recording stopped, the program runs on", why,
                 err ? ": " : "", err ? strerror(err) : "");
}

/* --- fork -------------------------------------------------------------- */

static void atfork_prepare(void)
{
    mtl__tls.in_hook++;
    mtl__gc_atfork(0);
    mtl__modules_atfork(0);
    mtl__stacks_atfork(0);
    mtl__events_atfork(0);
    mtl__sampled_atfork(0);
}

static void atfork_parent(void)
{
    mtl__sampled_atfork(1);
    mtl__events_atfork(1);
    mtl__stacks_atfork(1);
    mtl__modules_atfork(1);
    mtl__gc_atfork(1);
    mtl__tls.in_hook--;
}

static void atfork_child(void)
{
    /* memtally record's region is the parent's: the child goes on in one
     * of its own (recording or not, it must not touch the parent's); one
     * that memtally record then writes from, when it follows the child. */
    int on_shared = mtl__pl.region == mtl__pl.shared;
    int follows = atomic_load(mtl__pl.state) == MTL_RECORDING && mtl__pl.opt.follow_fork;
    /* A new process: registered anew for the claims' barrier (an exec
     * ends a registration; a fork may not carry it), before any region is
     * taken up. */
    mtl__pl.fast_owners = mtl_region_barrier_register();
    mtl__gc_atfork(2);
    mtl__clock_atfork_child();
    struct mtl_region *handed = follows ? mtl__handover_region() : NULL;
    if (handed) {
        mtl__events_move_to(handed);
        share_with_record(handed);
    } else if (on_shared && mtl__events_move_to(NULL) < 0) {
        atomic_store(&early_state, MTL_OFF); /* not the parent's word */
        mtl__pl.state = &early_state;
        mtl__tls.in_hook--; /* the child never records: leave it all */
        return;
    }
    mtl__sampled_atfork(2);
    mtl__events_atfork(2);
    mtl__stacks_atfork(2);
    mtl__modules_atfork(2);
    mtl__api_atfork_child();
    int was = atomic_load(mtl__pl.state);
    atomic_store(mtl__pl.state, MTL_OFF);
    if (was == MTL_RECORDING && mtl__pl.opt.follow_fork) {
        mtl__pl.pid = getpid();
        mtl__set_start(mtl__monotonic_ns());
        mtl__pl.opt.output[0] = '\0'; /* children use the pattern */
        atomic_store(mtl__pl.state, MTL_RECORDING);
        mtl__events_after_fork_child();
        mtl__writer_after_fork_child();
        mtl__control_start(); /* a socket of its own */
    }
    mtl__tls.in_hook--;
}

/* --- exec, _exit -------------------------------------------------------- */

static int ours(void)
{
    /* A vfork child shares our memory but must not touch our trace. */
    int st = atomic_load(mtl__pl.state);
    return (st == MTL_RECORDING || st == MTL_PAUSED) && getpid() == mtl__pl.pid;
}

static int exec_pending;

void mtl__before_exec(void)
{
    exec_pending = ours();
    if (!exec_pending)
        return;
    mtl__control_stop(); /* the new image makes its own, if it records */
    mtl__tls.in_hook++;
    mtl__calls_flush_all();
    mtl__writer_exec_begin();
    mtl__tls.in_hook--;
}

void mtl__after_failed_exec(void)
{
    if (!exec_pending)
        return;
    exec_pending = 0;
    mtl__writer_exec_end();
    mtl__control_start();
}

/* Under memtally record the region outlives us: what happens until the
 * process is gone is recorded, and memtally record writes the end. */
static int writer_outside(void)
{
    return mtl__pl.region && mtl__pl.region == mtl__pl.shared;
}

void mtl__before_exit_now(void)
{
    mtl__control_stop();
    if (!ours())
        return;
    mtl__tls.in_hook++;
    mtl__calls_flush_all();
    mtl__writer_finish(MTL_END_EXIT, 0, 5000);
    if (!writer_outside())
        atomic_store(mtl__pl.state, MTL_FINISHED);
    mtl__tls.in_hook--;
}

/* --- fatal signals (signals.c installs the handlers) ------------------- */

int mtl__recording_here(void)
{
    return ours();
}

void mtl__finish_on_signal(int sig)
{
    if (ours()) {
        mtl__tls.in_hook++;
        mtl__writer_finish(MTL_END_SIGNAL, sig, 3000);
        atomic_store(mtl__pl.state, MTL_FINISHED);
    }
    mtl__control_stop(); /* recording or not, the socket goes */
}

/* --- environment ------------------------------------------------------- */

/* Blanks our own entry of LD_PRELOAD in place (no allocation), so that
 * programs this one starts run without memtally. */
static void remove_self_from_ld_preload(void)
{
    char *v = getenv("LD_PRELOAD");
    if (!v)
        return;
    for (char *s = v; *s;) {
        while (*s == ' ' || *s == ':')
            s++;
        char *e = s;
        while (*e && *e != ' ' && *e != ':')
            e++;
        size_t n = (size_t)(e - s);
        const char *base = s;
        for (char *q = s; q < e; q++)
            if (*q == '/')
                base = q + 1;
        if (n > 0 && (size_t)(e - base) >= 14 &&
            strncmp(base, "libmemtally.so", 14) == 0)
            memset(s, ' ', n);
        s = e;
    }
    /* Ours was the only entry: the variable goes, as if never set. */
    if (strspn(v, " :") == strlen(v))
        unsetenv("LD_PRELOAD");
}

/* Programs this one starts run without memtally unless it follows exec:
 * memtally record's block goes (every trace of it, environ.c); the
 * variables of a plain LD_PRELOAD are unset.  Following exec, the block
 * stays after the program's own entries, so that every child inherits
 * it, however started (system() and popen() cannot be hooked). */
static void tidy_environment(void)
{
    if (from_record) {
        if (!mtl__pl.opt.follow_exec) {
            mtl__env_hide();
            return;
        }
        /* This process's own path: the image after an exec (same pid)
         * takes a new one, from the pattern. */
        mtl__env_drop(MTL_ENV_OUTPUT);
        mtl__env_drop(MTL_ENV_OUTPUT_PID);
        mtl__env_drop(MTL_ENV_REGION);
        return;
    }
    unsetenv("MEMTALLY_OUTPUT");
    unsetenv("MEMTALLY_OUTPUT_PID");
    if (mtl__pl.opt.follow_exec)
        return;
    remove_self_from_ld_preload();
    unsetenv("MEMTALLY_PATTERN");
    unsetenv("MEMTALLY_DEPTH");
    unsetenv("MEMTALLY_FOLLOW_FORK");
    unsetenv("MEMTALLY_FOLLOW_EXEC");
}

/* --- constructor and destructor ---------------------------------------- */

__attribute__((constructor)) static void memtally_constructor(void)
{
    mtl__hooks_first_use();
    if (late_done)
        return;
    late_done = 1;
    mtl__tls.in_hook++;
    int saved = errno;
    tidy_environment();
    if (mtl__pl.ready)
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    int st = atomic_load(mtl__pl.state);
    if ((st == MTL_RECORDING || st == MTL_PAUSED) && !writer_outside()) {
        if (mtl__writer_start() < 0)
            mtl__say("cannot start the writer thread; events are written at exit");
        mtl__install_signal_handlers();
    }
    if (requested)
        mtl__control_start();
    errno = saved;
    mtl__tls.in_hook--;
}

/* libstdc++'s emergency exception pool (72 KiB, malloc'd when it loads)
 * is never freed: __gnu_cxx::__freeres frees it, as valgrind calls it at
 * exit, so that it is not reported as a leak (docs/ANALYSIS.md, leaks). */
static void free_cxx_pool(void)
{
    mtl__tls.in_hook++;
    void (*freeres)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv");
    mtl__tls.in_hook--;
    if (freeres)
        freeres(); /* its free is the program's: recorded */
}

/* The end of a process that exits: after every destructor and exit
 * handler, ours last. */
static void finish_at_exit(void *unused)
{
    (void)unused;
    mtl__control_stop();
    if (!ours())
        return;
    if (atomic_load(mtl__pl.state) == MTL_RECORDING)
        free_cxx_pool();
    mtl__tls.in_hook++;
    mtl__calls_flush_all();
    mtl__stacks_report();
    mtl__writer_finish(MTL_END_EXIT, 0, 10000);
    if (!writer_outside())
        atomic_store(mtl__pl.state, MTL_FINISHED);
    mtl__tls.in_hook--;
}

extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

/* Objects whose destructors run after ours free blocks too.  exit() runs
 * the handlers registered while it runs after the one running (the
 * destructors run from such a handler), so registering one now puts our
 * end after all of them.  Registered for no object (dso NULL): atexit
 * would tie it to ours, whose own finalizer runs it at once. */
__attribute__((destructor)) static void memtally_destructor(void)
{
    if (!ours()) {
        mtl__control_stop();
        return;
    }
    if (__cxa_atexit(finish_at_exit, NULL, NULL) != 0)
        finish_at_exit(NULL);
}
