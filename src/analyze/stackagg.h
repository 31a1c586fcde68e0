/*
 * stackagg.h: totals per (thread, stack), the first step of every table:
 * blocks are added here as they come, and folded into functions, files or
 * sites only at the end, once per unique stack instead of once per block.
 */
#ifndef MTL_ANALYZE_STACKAGG_H
#define MTL_ANALYZE_STACKAGG_H

#include <stddef.h>
#include <stdint.h>

#include "common/hmap.h"

struct mtl_stackagg_entry {
    uint32_t thread, stack;
    double calls, bytes;   /* weights: exact counts in full mode */
    double extra;          /* a third total an analysis may use */
};

/* Entries are kept in an array in order of first addition.  For each of
 * the first MTL_STACKAGG_DENSE_THREADS thread indexes (all of them without
 * threads: per_thread 0 makes every entry's thread 0), a stack id indexes
 * a dense table of entry numbers; the entries of later threads are found
 * through a hash map of (thread, stack).  Stack ids are handed out in the
 * order stacks are first seen, so the allocations of a loop or a
 * recursion touch a dense table in order, where a hash would miss the
 * cache on each; most programs' allocations come from a few threads. */
#define MTL_STACKAGG_DENSE_THREADS 8

struct mtl_stackagg {
    int per_thread;                    /* set before the first add */
    struct mtl_stackagg_entry *e;
    size_t n, cap;
    uint32_t *dense[MTL_STACKAGG_DENSE_THREADS]; /* stack -> entry + 1 */
    size_t dense_cap[MTL_STACKAGG_DENSE_THREADS];
    struct mtl_hmap others;            /* (thread << 32 | stack) -> entry */
};

#define MTL_STACKAGG_INIT(per_thread) { (per_thread), NULL, 0, 0, { NULL }, { 0 }, MTL_HMAP_INIT }

/* Adds to (thread, stack).  Returns 0 or MTL_ENOMEM. */
int mtl_stackagg_add(struct mtl_stackagg *a, uint32_t thread, uint32_t stack,
                     double calls, double bytes, double extra);

/* Adds every entry of from into a.  0 or MTL_ENOMEM. */
int mtl_stackagg_merge(struct mtl_stackagg *a, const struct mtl_stackagg *from);

/* The totals of all entries. */
void mtl_stackagg_totals(const struct mtl_stackagg *a, double *calls, double *bytes,
                         double *extra);

void mtl_stackagg_release(struct mtl_stackagg *a);

#endif
