/*
 * parallel.h: running one job on several threads, each taking its own
 * share: fn(arg, k) for k = 0 .. n - 1, k = 0 on the calling thread.
 * Shares are fixed by k, not taken as they come, so that what each thread
 * computes does not depend on timing.
 */
#ifndef MTL_COMMON_PARALLEL_H
#define MTL_COMMON_PARALLEL_H

#define MTL_MAX_THREADS 16

/* Returns the first failure (non-zero) of the shares in order of k, or 0.
 * A share whose thread cannot start runs on the caller's thread. */
int mtl_parallel(unsigned n, int (*fn)(void *arg, unsigned k), void *arg);

/* The cores of this machine (at least 1). */
unsigned mtl_cores(void);

#endif
