/*
 * lifetimes.c: the blocks by allocation time and lifetime, a grid to show
 * what a flat total hides: a queue that backs up (lifetimes growing with
 * time), a cache that never lets go (a band of blocks still live), the
 * temporaries of one phase.
 *
 * The trace's duration is not known before its end when it is read as a
 * stream, so the columns start narrow and double in width (merging in
 * pairs) whenever a block comes past the last one, as curve.c does for
 * the live curve; the blocks may come in any order.  An index hands them
 * out on every core, into a grid per thread, added up at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/digest.h"
#include "analyze/internal.h"
#include "analyze/scan.h"
#include "common/parallel.h"
#include "memtally/errors.h"
#include "trace/defs.h"

#define MTL_LIFETIME_PARTS MTL_MAX_THREADS /* as many as a query has threads */

struct grid {
    struct mtl_lifetimes *part[MTL_LIFETIME_PARTS]; /* made when first used */
    size_t cols;                /* the most columns */
    _Atomic int oom;       /* set by any thread */
};

/* Doubles the columns' width: column c takes columns 2c and 2c+1.  Rows
 * lie cols apart. */
static void widen(struct mtl_lifetimes *l, size_t cols)
{
    size_t n = l->ncols;
    for (size_t r = 0; r <= MTL_LIFETIME_ROWS; r++) {
        double *calls = r < MTL_LIFETIME_ROWS ? l->cell_calls + r * cols : l->live_calls;
        double *bytes = r < MTL_LIFETIME_ROWS ? l->cell_bytes + r * cols : l->live_bytes;
        for (size_t c = 0; c < n; c++) {
            double cc = calls[c], bb = bytes[c];
            calls[c] = bytes[c] = 0;
            calls[c / 2] += cc;
            bytes[c / 2] += bb;
        }
    }
    l->ncols = (n + 1) / 2;
    l->width_us *= 2;
}

/* One grid of rows for the digest and for this. */
_Static_assert(MTL_LIFETIME_ROWS == MTL_DIGEST_LIFE_ROWS, "the lifetime rows differ");

static int make(struct mtl_lifetimes *l, size_t cols)
{
    l->width_us = MTL_CURVE_FIRST_WIDTH; /* as the digest's columns */
    l->ncols = 1;
    l->cell_calls = calloc(MTL_LIFETIME_ROWS * cols, sizeof *l->cell_calls);
    l->cell_bytes = calloc(MTL_LIFETIME_ROWS * cols, sizeof *l->cell_bytes);
    l->live_calls = calloc(cols, sizeof *l->live_calls);
    l->live_bytes = calloc(cols, sizeof *l->live_bytes);
    return l->cell_calls && l->cell_bytes && l->live_calls && l->live_bytes ? 0 : MTL_ENOMEM;
}

/* Block b into its part's grid (a part is one thread's at a time). */
static int on_block(void *arg, unsigned part, const struct mtl_block *b)
{
    struct grid *g = arg;
    struct mtl_lifetimes *l = g->part[part];
    if (!l) {
        if (!(l = calloc(1, sizeof *l)) || make(l, g->cols) < 0) {
            if (l)
                mtl_lifetimes_release(l);
            free(l);
            g->oom = 1;
            return 1;
        }
        g->part[part] = l;
    }
    while (b->alloc_us / l->width_us >= g->cols)
        widen(l, g->cols);
    size_t c = (size_t)(b->alloc_us / l->width_us);
    if (c + 1 > l->ncols)
        l->ncols = c + 1;
    if (b->free_us == MTL_NEVER) {
        l->live_calls[c] += b->weight_count;
        l->live_bytes[c] += b->weight_bytes;
    } else {
        uint64_t life = b->free_us > b->alloc_us ? b->free_us - b->alloc_us : 0;
        size_t i = (size_t)mtl_digest_life_row(life) * g->cols + c;
        l->cell_calls[i] += b->weight_count;
        l->cell_bytes[i] += b->weight_bytes;
    }
    l->calls += b->weight_count;
    l->bytes += b->weight_bytes;
    return 0;
}

/* Adds part p into out, both brought to the wider of their widths. */
static void add(struct mtl_lifetimes *out, struct mtl_lifetimes *p, size_t cols)
{
    while (out->width_us < p->width_us)
        widen(out, cols);
    while (p->width_us < out->width_us)
        widen(p, cols);
    if (p->ncols > out->ncols)
        out->ncols = p->ncols;
    for (size_t i = 0; i < MTL_LIFETIME_ROWS * cols; i++) {
        out->cell_calls[i] += p->cell_calls[i];
        out->cell_bytes[i] += p->cell_bytes[i];
    }
    for (size_t c = 0; c < cols; c++) {
        out->live_calls[c] += p->live_calls[c];
        out->live_bytes[c] += p->live_bytes[c];
    }
    out->calls += p->calls;
    out->bytes += p->bytes;
}

/* The cells laid out for ncols columns instead of cols (rows closer). */
static void pack(struct mtl_lifetimes *l, size_t cols)
{
    for (size_t r = 1; r < MTL_LIFETIME_ROWS; r++) {
        memmove(l->cell_calls + r * l->ncols, l->cell_calls + r * cols,
                l->ncols * sizeof *l->cell_calls);
        memmove(l->cell_bytes + r * l->ncols, l->cell_bytes + r * cols,
                l->ncols * sizeof *l->cell_bytes);
    }
}

/* The grid from the engine's digest (opt.digest), whose columns are the
 * narrowest that fit MTL_DIGEST_LIFE_COLS over the trace, merged into the
 * narrowest that fit cols (at most that many: no finer than the digest). */
static int from_digest(struct mtl_lifetimes *out, const struct mtl_digest *g, size_t cols,
                       uint64_t end_us)
{
    if (make(out, cols) < 0)
        return MTL_ENOMEM;
    out->width_us = g->life_width_us;
    while (end_us / out->width_us >= cols)
        out->width_us *= 2;
    out->ncols = (size_t)(end_us / out->width_us) + 1;
    for (size_t i = 0; i < MTL_DIGEST_LIFE_COLS; i++) {
        size_t c = (size_t)(i * g->life_width_us / out->width_us);
        if (c >= out->ncols)
            break;
        for (size_t r = 0; r < MTL_LIFETIME_ROWS; r++) {
            const struct mtl_digest_cell *d = &g->life[r * MTL_DIGEST_LIFE_COLS + i];
            out->cell_calls[r * out->ncols + c] += d->calls;
            out->cell_bytes[r * out->ncols + c] += d->bytes;
        }
        out->live_calls[c] += g->live[i].calls;
        out->live_bytes[c] += g->live[i].bytes;
    }
    out->calls = g->calls;
    out->bytes = g->bytes;
    return 0;
}

int mtl_lifetimes(struct mtl_engine *e, const struct mtl_filter *f, size_t cols,
                  struct mtl_lifetimes *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    if (cols < 2)
        cols = 2;
    const struct mtl_digest *dg;
    int drc = mtl_engine_digest(e, f, &dg);
    if (drc == 0) {
        int rc = from_digest(out, dg, cols, mtl_engine_defs(e)->info.duration_us);
        if (rc < 0)
            mtl_lifetimes_release(out);
        return rc;
    }
    if (drc != MTL_EINVAL)
        return drc;
    struct mtl_result_head head = out->head;
    struct grid g = { .cols = cols };
    int rc = make(out, cols);
    struct mtl_scan_ops ops = {
        .part_block = on_block,
        .parts = MTL_LIFETIME_PARTS,
        .needs = MTL_NEED_ALLOC_TIME | MTL_NEED_FREE_TIME | MTL_NEED_SIZE,
    };
    struct mtl_scan_result res = { 0 };
    if (rc == 0)
        rc = mtl_engine_scan(e, f, &ops, &g, &res);
    if (g.oom)
        rc = MTL_ENOMEM;
    for (unsigned p = 0; p < MTL_LIFETIME_PARTS; p++) {
        if (g.part[p] && rc == 0)
            add(out, g.part[p], cols);
        if (g.part[p])
            mtl_lifetimes_release(g.part[p]);
        free(g.part[p]);
    }
    if (rc < 0) {
        mtl_lifetimes_release(out);
        return rc;
    }
    out->head = head;
    /* The columns span the whole trace, as the live curve does. */
    while (res.end_us / out->width_us >= cols)
        widen(out, cols);
    if (res.end_us / out->width_us + 1 > out->ncols)
        out->ncols = (size_t)(res.end_us / out->width_us) + 1;
    pack(out, cols);
    return 0;
}

void mtl_lifetimes_release(struct mtl_lifetimes *l)
{
    free(l->cell_calls);
    free(l->cell_bytes);
    free(l->live_calls);
    free(l->live_bytes);
    l->cell_calls = l->cell_bytes = l->live_calls = l->live_bytes = NULL;
    l->ncols = 0;
}
