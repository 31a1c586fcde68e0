/*
 * control.h: the operations that change what the recorder does while the
 * program runs, shared by the in-program API (api.c, include/memtally.h)
 * and the control socket (control.c, `memtally ctl` and `memtally top`).
 *
 * Each returns 0 or a negative errno.  They take memtally's own locks
 * only, and call the program's allocator only through paths marked as
 * inside memtally, so they may run on any thread but a malloc hook.
 *
 * States: OFF (no trace open) -> start -> RECORDING <-> PAUSED
 *         RECORDING/PAUSED -> stop -> OFF (a later start writes a new trace)
 */
#ifndef MTL_PRELOAD_CONTROL_H
#define MTL_PRELOAD_CONTROL_H

#include <stddef.h>
#include <stdint.h>

/* Starts recording into path (NULL: the path given at start-up, from
 * `memtally record` or the pattern), or resumes when paused.
 * sample_rate 0: full mode.  -EBUSY when recording already. */
int mtl__ctl_start(const char *path, uint64_t sample_rate, unsigned depth);

int mtl__ctl_pause(void);       /* -EINVAL unless recording */
int mtl__ctl_resume(void);      /* -EINVAL unless paused */

/* Throws away what was recorded: the same trace file starts anew, in
 * the same state (recording or paused). */
int mtl__ctl_restart(void);

/* Writes what was recorded so far to path as a complete trace (ending in
 * END), while recording goes on in the original. */
int mtl__ctl_dump(const char *path);

/* Finishes the trace (END record, file closed): state OFF. */
int mtl__ctl_stop(void);

/* One line without a newline: "state=recording|paused|off trace=PATH
 * mode=full|sampled rate=N pid=N events=N allocations=N frees=N bytes=N"
 * (counts written to the trace since it began; PATH is absolute). */
int mtl__ctl_status(char *buf, size_t cap);

/* control.c: starts the control socket's thread, if MEMTALLY_CONTROL is not
 * "0".  Called once recording is set up (and again in a forked child that
 * records).  Returns 0 or a negative errno; failure only means no control. */
int mtl__control_start(void);
void mtl__control_stop(void);   /* at exit: removes the socket file */

#endif
