/*
 * index_scan.h: scans answered from a trace's index (see index_scan.c):
 * what engine.c runs instead of scan.c once a trace has an index.
 */
#ifndef MTL_ANALYZE_INDEX_SCAN_H
#define MTL_ANALYZE_INDEX_SCAN_H

#include "analyze/index.h"
#include "analyze/scan.h"

struct mtl_view;

/* As mtl_scan: blocks that pass f to ops->block (in allocation order; no
 * address); with ops->event, every allocation and free in trace order
 * and the RSS samples.  0 or a negative code. */
int mtl__index_scan(const struct mtl_index *ix, const struct mtl_defs *d,
                    struct mtl_view *v, const struct mtl_filter *f,
                    const struct mtl_scan_ops *ops, void *arg, struct mtl_scan_result *res);

/* The blocks that pass f and are live right after event number seq. */
int mtl__index_live_after(const struct mtl_index *ix, const struct mtl_defs *d,
                          struct mtl_view *v, const struct mtl_filter *f, uint64_t seq,
                          int (*block)(void *arg, const struct mtl_block *b), void *arg);

#endif
