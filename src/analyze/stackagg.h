/*
 * stackagg.h: totals per (thread, stack), the first step of every table:
 * blocks are added here as they come, and folded into functions, files or
 * sites only at the end, once per unique stack instead of once per block.
 */
#ifndef MTL_ANALYZE_STACKAGG_H
#define MTL_ANALYZE_STACKAGG_H

#include <stddef.h>
#include <stdint.h>

struct mtl_stackagg_entry {
    uint32_t thread, stack;
    double calls, bytes;   /* weights: exact counts in full mode */
    double extra;          /* a third total a command may use */
};

struct mtl_stackagg {
    struct mtl_stackagg_entry *e; /* open addressing; calls < 0: empty */
    size_t cap, count;
    int per_thread;               /* 0: thread is always 0 */
    struct mtl_stackagg_entry *last; /* the entry added to last */
    /* Without threads, stack ids (dense, from 0) index an array directly. */
    struct mtl_stackagg_entry *dense;
    size_t dense_cap;
};

/* Adds to (thread, stack).  Returns 0 or MTL_ENOMEM. */
int mtl_stackagg_add(struct mtl_stackagg *a, uint32_t thread, uint32_t stack,
                     double calls, double bytes, double extra);

/* Calls fn for each entry, in no particular order. */
void mtl_stackagg_each(const struct mtl_stackagg *a,
                       void (*fn)(const struct mtl_stackagg_entry *e, void *arg),
                       void *arg);

void mtl_stackagg_release(struct mtl_stackagg *a);

#endif
