/*
 * totals.h: the totals of a whole trace, as valgrind's "total heap usage"
 * counts them, with the peak of live bytes: what `memtally info` prints and
 * what `memtally record --max-peak/--max-leak` checks.
 */
#ifndef MTL_ANALYZE_TOTALS_H
#define MTL_ANALYZE_TOTALS_H

#include <stddef.h>
#include <stdint.h>

struct mtl_reader;

struct mtl_totals {
    uint64_t allocations, frees, unmatched_frees, bytes_allocated;
    uint64_t live_bytes, live_blocks;    /* at the end */
    uint64_t peak_live_bytes, peak_time_us;
    uint64_t events, peak_rss;
    /* weighted (in sampled mode, estimates; in full mode, the same) */
    double est_allocations, est_bytes, est_frees;
    double est_live_bytes, est_peak_live_bytes;
    uint64_t est_peak_time_us;
    uint32_t threads_allocating;
    uint32_t unique_stacks;              /* distinct stacks of allocations */
};

/* Reads r to its end.  Returns 0, a negative MTL_E* code for a corrupt
 * trace (totals hold what came before), or MTL_ENOMEM. */
int mtl_totals_compute(struct mtl_reader *r, struct mtl_totals *t);

#endif
