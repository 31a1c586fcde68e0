/*
 * digest.h: what the views of one filter are made of, from one pass over
 * the index: the sums per (thread, stack) (the tables, the flame graph),
 * allocations and frees by time (the timeline) and blocks by allocation
 * time and lifetime (the lifetimes grid).  The viewer asks for every view
 * of a filter at once; the engine makes them in one parallel pass and
 * keeps the last (engine.h, opt.digest).
 */
#ifndef MTL_ANALYZE_DIGEST_H
#define MTL_ANALYZE_DIGEST_H

#include <stdint.h>

#include "analyze/curve.h"
#include "analyze/stackagg.h"

/* Lifetime rows, as the lifetimes analysis has them (analyses.h). */
#define MTL_DIGEST_LIFE_ROWS 40

/* The lifetimes grid has columns of its own, fewer than the curve's
 * buckets: enough for the lifetimes analysis's at most (512), and small
 * enough to stay in a core's cache as blocks land anywhere in it. */
#define MTL_DIGEST_LIFE_COLS 512

struct mtl_digest_cell {
    double calls, bytes;
};

struct mtl_digest {
    struct mtl_stackagg sums;         /* per (thread, stack) */
    uint64_t width_us;                /* of a time bucket: the curve's */
    /* by time bucket (MTL_CURVE_FINE of them) */
    struct mtl_digest_cell alloc[MTL_CURVE_FINE];
    double freed[MTL_CURVE_FINE];     /* bytes freed */
    uint8_t event[MTL_CURVE_FINE];    /* an allocation or free in it */
    /* lifetimes, by column of allocation time (life_width_us wide: the
     * smallest power of two microseconds that fits the trace in
     * MTL_DIGEST_LIFE_COLS): life[row * MTL_DIGEST_LIFE_COLS + column],
     * and the blocks never freed */
    uint64_t life_width_us;
    struct mtl_digest_cell life[MTL_DIGEST_LIFE_ROWS * MTL_DIGEST_LIFE_COLS];
    struct mtl_digest_cell live[MTL_DIGEST_LIFE_COLS];
    double calls, bytes;              /* of every block that passes */
};

/* The lifetime row of a block that lived life microseconds: 0 under 1 us,
 * k for [2^(k-1), 2^k), the last for all longer. */
static inline int mtl_digest_life_row(uint64_t life)
{
    int k = life ? 64 - __builtin_clzll(life) : 0;
    return k < MTL_DIGEST_LIFE_ROWS ? k : MTL_DIGEST_LIFE_ROWS - 1;
}

/* The curve's buckets (timeline, curve.h) from the digest: what was live
 * at the end of a bucket is what was allocated up to then less what was
 * freed up to then.  The RSS samples are not in it. */
void mtl_digest_curve(const struct mtl_digest *g, struct mtl_curve *c);

void mtl_digest_release(struct mtl_digest *d);

#endif
