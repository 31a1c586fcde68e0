/*
 * attach.c: the recorder's side of `memtally attach PID`.  memtally stops
 * one thread of the running program with ptrace, makes it dlopen this
 * library and call mtl_attach_begin, and lets it go (src/cli/inject.c).
 * Here, in the program: a trace begins as mtl_start begins one (a writer
 * thread, the control socket), and every loaded object's references to
 * the functions we hook are pointed at our hooks, as LD_PRELOAD would
 * have bound them (redirect.c, which keeps each slot's old value).
 *
 * The trace ends as any does: `memtally ctl PID stop` (what memtally
 * attach sends at Ctrl-C or --duration), or the program's exit.  A stop
 * puts every slot back first, then ends the trace and lets our threads
 * go: the program runs on as before, with our library loaded but inert.
 * No fatal-signal handler is installed while attached (it would change
 * the program's signal dispositions): a crash loses the last round.
 */
#include "preload/preload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/recenv.h"
#include "preload/control.h"

#define EXPORT __attribute__((visibility("default")))

/* options: the trace's path, the sample rate (0: full), the depth and the
 * times' resolution in microseconds (absent: 1), one a line.  0, or a
 * negative errno. */
EXPORT int mtl_attach_begin(const char *options)
{
    char path[4096];
    const char *nl = options ? strchr(options, '\n') : NULL;
    if (!nl || (size_t)(nl - options) >= sizeof path)
        return -EINVAL;
    memcpy(path, options, (size_t)(nl - options));
    path[nl - options] = '\0';
    char *end;
    unsigned long long rate = strtoull(nl + 1, &end, 10);
    unsigned long depth = *end == '\n' ? strtoul(end + 1, &end, 10) : 0;
    long long step = *end == '\n' ? strtoll(end + 1, NULL, 10) : 1;
    mtl__hooks_first_use();
    if (!mtl__pl.ready)
        return -ENOTSUP;
    if (mtl__attached || atomic_load(mtl__pl.state) != MTL_OFF)
        return -EBUSY;
    mtl__attached = 1;
    mtl__pl.opt.time_resolution_us = mtl_time_resolution(step);
    int rc = mtl__ctl_start(path, rate, (unsigned)depth);
    if (rc < 0) {
        mtl__attached = 0;
        return rc;
    }
    mtl__redirect_loaded();
    mtl__modules_rescan();
    return 0;
}

/* From a stop while attached, before the trace ends: the program's own
 * bindings back. */
void mtl__attach_end(void)
{
    if (!mtl__attached)
        return;
    mtl__redirect_restore();
}

/* After the trace ended: our threads go (the writer's was joined). */
void mtl__attach_done(void)
{
    if (!mtl__attached)
        return;
    mtl__control_stop();
    mtl__attached = 0;
}
