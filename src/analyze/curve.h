/*
 * curve.h: the live bytes of the blocks that pass a filter, event by
 * event: their peak (what peak starts from) and, in buckets of time, what
 * was allocated and what was live (what timeline draws).
 *
 * Buckets: MTL_CURVE_FINE of them, each width_us wide, the width the
 * smallest power of two microseconds that fits the whole trace: a program
 * that ran 6 ms gets buckets of 2 us, not six of 1 ms.  A reader that does
 * not know the trace's length yet starts at 1 us and doubles the width,
 * merging neighbours, as the trace outgrows it; one that knows it (an
 * index) starts at the right width: both end alike.
 */
#ifndef MTL_ANALYZE_CURVE_H
#define MTL_ANALYZE_CURVE_H

#include <stddef.h>
#include <stdint.h>

#define MTL_CURVE_FINE 4096
#define MTL_CURVE_FIRST_WIDTH 1 /* the trace's microsecond */

struct mtl_curve_bucket {
    double alloc_bytes, alloc_calls;
    double live;          /* after the last event in the bucket */
    uint64_t rss;         /* the last sample in the bucket */
    uint64_t gc_heap;     /* the collector's heap after the bucket's last
                             collection (--heap gc) */
    uint8_t has_live, has_rss, has_gc_heap;
};

struct mtl_curve {
    int buckets;          /* in: fill b (else only the peak) */
    int no_peak;          /* in: the buckets only (timeline): an index then
                             sums them block by block, in parallel, without
                             walking the events in order */
    uint64_t width_us;
    struct mtl_curve_bucket b[MTL_CURVE_FINE];
    double peak;          /* the highest live bytes (0 when none) */
    uint64_t peak_seq;    /* the event after which they were highest, the first */
    uint64_t peak_us;
    int found;
};

/* The width for a trace of end_us. */
static inline uint64_t mtl_curve_width(uint64_t end_us)
{
    uint64_t w = MTL_CURVE_FIRST_WIDTH;
    while (end_us / w >= MTL_CURVE_FINE)
        w *= 2;
    return w;
}

/* Doubles the width of the buckets, merging neighbours. */
void mtl_curve_widen(struct mtl_curve *c);

struct mtl_engine;
struct mtl_filter;

/* The curve from a stream of the trace (the engine's way without an
 * index; mtl_engine_curve chooses). */
int mtl__curve_scan(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_curve *c);

#endif
