/*
 * record_ring.h: memtally record's side of the ring through which the
 * recorder hands it the trace (common/ring.h; record_ring.c says more).
 */
#ifndef MTL_CLI_RECORD_RING_H
#define MTL_CLI_RECORD_RING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/ring.h"

struct record_ring {
    struct mtl_ring *r;
    int memfd;              /* for the child to inherit; closed at start */
    int out;                /* the trace file */
    const char *path;
    pthread_t thread;
    int running;
    atomic_int child_done;  /* the program has ended: empty the ring, stop */
    int err;                /* errno of a failed write, 0 if none */
    uint64_t written;
    uint64_t allocations;   /* the recorder's count, at the end */
};

/* Before the child is started: the ring, and its descriptor (rr->memfd)
 * for the child's environment.  0 or a negative errno. */
int record_ring_create(struct record_ring *rr);

/* In memtally record once the child runs: creates the trace at path (as
 * the recorder would: common/tracefile.h) and starts writing what comes.
 * 0, or -1 after saying why (the recorder is then told not to wait). */
int record_ring_start(struct record_ring *rr, const char *path);

/* After the child has ended: writes the rest, closes the file; when no
 * recorder ever took the ring, removes the empty file.  0, or -1 when the
 * trace is incomplete (said already). */
int record_ring_finish(struct record_ring *rr);

#endif
