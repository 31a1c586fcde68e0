/*
 * index_scan.h: scans answered from a trace's index (see index_scan.c):
 * what engine.c runs instead of scan.c once a trace has an index.
 */
#ifndef MTL_ANALYZE_INDEX_SCAN_H
#define MTL_ANALYZE_INDEX_SCAN_H

#include "analyze/index.h"
#include "analyze/scan.h"
#include "analyze/stackagg.h"

struct mtl_view;

/* As mtl_scan: blocks that pass f to ops->block (in allocation order; no
 * address); with ops->event, every allocation and free in trace order
 * and the RSS samples.  0 or a negative code. */
int mtl__index_scan(const struct mtl_index *ix, const struct mtl_defs *d,
                    struct mtl_view *v, const struct mtl_filter *f, unsigned threads,
                    const struct mtl_scan_ops *ops, void *arg, struct mtl_scan_result *res);

/* Sums per (thread, stack) into out (out->per_thread says whether threads
 * are apart) of the blocks that pass f, on threads threads. */
int mtl__index_sums(const struct mtl_index *ix, const struct mtl_defs *d, struct mtl_view *v,
                    const struct mtl_filter *f, unsigned threads, struct mtl_stackagg *out);

/* The same of the blocks that pass f and are live right after event seq. */
int mtl__index_live_sums(const struct mtl_index *ix, const struct mtl_defs *d,
                         struct mtl_view *v, const struct mtl_filter *f, uint64_t seq,
                         unsigned threads, struct mtl_stackagg *out);

struct mtl_curve;
/* The live curve (curve.h) of the blocks that pass f, on threads threads. */
int mtl__index_curve(const struct mtl_index *ix, const struct mtl_defs *d, struct mtl_view *v,
                     const struct mtl_filter *f, unsigned threads, struct mtl_curve *c);

struct mtl_digest;
/* Every view of the blocks that pass f (digest.h) in one pass, on threads
 * threads; out zeroed by the caller. */
int mtl__index_digest(const struct mtl_index *ix, const struct mtl_defs *d, struct mtl_view *v,
                      const struct mtl_filter *f, unsigned threads, struct mtl_digest *out);

/* The RSS samples into c's buckets (c->width_us set).  0, or MTL_ECORRUPT
 * for a sample past the buckets. */
int mtl__index_rss(const struct mtl_index *ix, struct mtl_curve *c);

#endif
