/*
 * api.c: starting, pausing, resuming, restarting, dumping and stopping a
 * recording while the program runs: the control operations of control.h,
 * behind both the in-program API (include/memtally.h) and the control
 * socket (control.c).
 *
 * One mutex serialises the operations; the hooks never take it.  They
 * read only mtl__pl.state, which each operation changes last when it
 * turns recording on and first when it turns it off.
 */
#include "preload/control.h"
#include "preload/preload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ctlsock.h"
#include "memtally.h"
#include "trace/format.h"

#define EXPORT __attribute__((visibility("default")))

static struct {
    pthread_mutex_t mu;
    int traces;                 /* traces begun in this process */
    char configured[4096];      /* the path given at start-up, if any */
    int have_configured;
} api = { .mu = PTHREAD_MUTEX_INITIALIZER };

int mtl__begin_trace(const char *path, int start_thread)
{
    mtl__calls_drop();
    char expanded[sizeof mtl__pl.opt.output];
    int clobber;
    if (!api.have_configured && mtl__pl.opt.output[0]) {
        /* The exact path memtally record chose for this process. */
        mtl__fmt(api.configured, sizeof api.configured, "%s", mtl__pl.opt.output);
        api.have_configured = 1;
    }
    char rel[sizeof mtl__pl.opt.output];
    if (path) {
        mtl__expand_pattern(rel, sizeof rel, path);
        clobber = 1; /* the caller named it */
    } else if (api.have_configured) {
        mtl__fmt(rel, sizeof rel, "%s", api.configured);
        clobber = api.traces == 0; /* later traces keep earlier ones */
    } else {
        mtl__expand_pattern(rel, sizeof rel, mtl__pl.opt.pattern);
        clobber = 0;
    }
    /* Absolute, so that status reports a path that holds wherever the
     * program goes, and a later trace lands beside the first. */
    char cwd[2048];
    if (rel[0] != '/' && getcwd(cwd, sizeof cwd))
        mtl__fmt(expanded, sizeof expanded, "%s/%s", cwd, rel);
    else
        mtl__fmt(expanded, sizeof expanded, "%s", rel);
    mtl__set_start(mtl__monotonic_ns());
    mtl__events_begin_trace();
    mtl__sampled_clear();
    int rc = mtl__writer_begin(expanded, clobber, start_thread);
    if (rc == 0) {
        api.traces++;
        /* Under memtally record nothing needs flushing at a fatal signal:
         * memtally record has every event. */
        if (mtl__pl.region != mtl__pl.shared)
            mtl__install_signal_handlers();
    }
    return rc;
}

static int state(void)
{
    return atomic_load(mtl__pl.state);
}

int mtl__ctl_start(const char *path, uint64_t sample_rate, unsigned depth)
{
    if (!mtl__pl.ready)
        return -ENOTSUP;
    int rc = 0;
    mtl__tls.in_hook++;
    pthread_mutex_lock(&api.mu);
    int st = state();
    if (st == MTL_RECORDING) {
        rc = -EBUSY;
    } else if (st == MTL_PAUSED) {
        if (path)
            rc = -EBUSY; /* a trace is open: stop it first */
        else
            atomic_store(mtl__pl.state, MTL_RECORDING);
    } else {
        mtl__pl.opt.sample_rate = sample_rate;
        if (depth)
            mtl__pl.opt.depth = depth > MTL_MAX_DEPTH ? MTL_MAX_DEPTH : depth;
        rc = mtl__begin_trace(path, 1);
        if (rc == 0) {
            atomic_store(mtl__pl.state, MTL_RECORDING);
            mtl__control_start();
        }
    }
    pthread_mutex_unlock(&api.mu);
    mtl__tls.in_hook--;
    return rc;
}

void mtl__api_atfork_child(void)
{
    pthread_mutex_init(&api.mu, NULL);
}

int mtl__ctl_pause(void)
{
    int expected = MTL_RECORDING;
    return atomic_compare_exchange_strong(mtl__pl.state, &expected, MTL_PAUSED)
               ? 0 : -EINVAL;
}

int mtl__ctl_resume(void)
{
    int expected = MTL_PAUSED;
    return atomic_compare_exchange_strong(mtl__pl.state, &expected, MTL_RECORDING)
               ? 0 : -EINVAL;
}

/* With api.mu held: ends the open trace; the state is OFF after. */
static int stop_locked(int reason)
{
    int st = state();
    if (st != MTL_RECORDING && st != MTL_PAUSED)
        return -EINVAL;
    mtl__calls_flush_all(); /* while recording: events are taken */
    mtl__attach_end();
    atomic_store(mtl__pl.state, MTL_OFF);
    mtl__writer_finish(reason, 0, 10000);
    mtl__attach_done();
    return 0;
}

int mtl__ctl_stop(void)
{
    mtl__tls.in_hook++;
    pthread_mutex_lock(&api.mu);
    int rc = stop_locked(MTL_END_STOP);
    pthread_mutex_unlock(&api.mu);
    mtl__tls.in_hook--;
    return rc;
}

int mtl__ctl_restart(void)
{
    mtl__tls.in_hook++;
    pthread_mutex_lock(&api.mu);
    int st = state();
    char path[sizeof mtl__pl.opt.output];
    mtl__fmt(path, sizeof path, "%s", mtl__pl.opt.output);
    int rc = stop_locked(MTL_END_STOP);
    if (rc == 0) {
        /* The same file, from its first byte. */
        mtl__set_start(mtl__monotonic_ns());
        mtl__events_begin_trace();
        mtl__sampled_clear();
        rc = mtl__writer_begin(path, 1, 1);
        if (rc == 0)
            atomic_store(mtl__pl.state, st);
    }
    pthread_mutex_unlock(&api.mu);
    mtl__tls.in_hook--;
    return rc;
}

int mtl__ctl_dump(const char *path)
{
    if (!path || !*path)
        return -EINVAL;
    mtl__tls.in_hook++;
    pthread_mutex_lock(&api.mu);
    int st = state();
    if (st == MTL_RECORDING)
        mtl__calls_flush_all();
    int rc = st == MTL_RECORDING || st == MTL_PAUSED ? mtl__writer_dump(path) : -EINVAL;
    pthread_mutex_unlock(&api.mu);
    mtl__tls.in_hook--;
    return rc;
}

int mtl__ctl_status(char *buf, size_t cap)
{
    struct mtl__counts c;
    mtl__writer_counts(&c);
    int st = state();
    struct mtl_region *r = mtl__pl.region;
    struct mtl_ctl_status s = {
        .state = st, .trace = st == MTL_OFF ? "" : mtl__pl.opt.output,
        .sample_rate = mtl__pl.opt.sample_rate, .pid = (int)getpid(),
        .allocations = c.allocations, .frees = c.frees, .bytes = c.bytes,
        /* Known where memtally record writes the trace (it tracks blocks). */
        .have_live = r && atomic_load(&r->live_known),
        .live_bytes = r ? atomic_load(&r->live_bytes) : 0,
    };
    mtl_ctl_format_status(buf, cap, &s);
    return 0;
}

/* --- the public API (include/memtally.h) ------------------------------- */

EXPORT int mtl_start(const char *path, const struct mtl_options *opt)
{
    if (!path || !*path)
        return -EINVAL;
    mtl__hooks_first_use();
    return mtl__ctl_start(path, opt ? opt->sample_rate : 0, opt ? opt->depth : 0);
}

EXPORT int mtl_stop(void)
{
    return mtl__ctl_stop();
}

EXPORT int mtl_pause(void)
{
    return mtl__ctl_pause();
}

EXPORT int mtl_resume(void)
{
    return mtl__ctl_resume();
}

EXPORT int mtl_reset(void)
{
    return mtl__ctl_restart();
}

EXPORT int mtl_recording(void)
{
    return state() == MTL_RECORDING;
}

EXPORT int mtl_trace_if_requested(void)
{
    const char *path = getenv("MEMTALLY");
    if (!path || !*path)
        return 0;
    if (state() == MTL_RECORDING || state() == MTL_PAUSED)
        return 0; /* already recorded, by memtally record */
    struct mtl_options opt = { 0, 0 };
    const char *rate = getenv("MEMTALLY_SAMPLE");
    if (rate && *rate) {
        char *end;
        unsigned long long r = strtoull(rate, &end, 10);
        if (*end || r == 0)
            return -EINVAL;
        opt.sample_rate = r;
    }
    return mtl_start(path, &opt);
}

/* The in-program API's codes are in the one table of memtally/errors.h. */
EXPORT const char *mtl_api_strerror(int code)
{
    return mtl_strerror(code);
}
