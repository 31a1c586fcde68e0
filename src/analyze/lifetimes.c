/*
 * lifetimes.c: the blocks by allocation time and lifetime, a grid to show
 * what a flat total hides: a queue that backs up (lifetimes growing with
 * time), a cache that never lets go (a band of blocks still live), the
 * temporaries of one phase.
 *
 * The trace's duration is not known before its end when it is read as a
 * stream, so the columns start narrow and double in width (merging in
 * pairs) whenever a block comes past the last one, as curve.c does for
 * the live curve; the blocks may come in any order.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/scan.h"
#include "memtally/errors.h"

#define FIRST_WIDTH_US 1000

struct grid {
    struct mtl_lifetimes *out;
    size_t cols;                /* the most columns */
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

static int row_of(uint64_t life)
{
    int k = life ? 64 - __builtin_clzll(life) : 0;
    return k < MTL_LIFETIME_ROWS ? k : MTL_LIFETIME_ROWS - 1;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct grid *g = arg;
    struct mtl_lifetimes *l = g->out;
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
        size_t i = (size_t)row_of(life) * g->cols + c;
        l->cell_calls[i] += b->weight_count;
        l->cell_bytes[i] += b->weight_bytes;
    }
    l->calls += b->weight_count;
    l->bytes += b->weight_bytes;
    return 0;
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

int mtl_lifetimes(struct mtl_engine *e, const struct mtl_filter *f, size_t cols,
                  struct mtl_lifetimes *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    if (cols < 2)
        cols = 2;
    out->width_us = FIRST_WIDTH_US;
    out->cell_calls = calloc(MTL_LIFETIME_ROWS * cols, sizeof *out->cell_calls);
    out->cell_bytes = calloc(MTL_LIFETIME_ROWS * cols, sizeof *out->cell_bytes);
    out->live_calls = calloc(cols, sizeof *out->live_calls);
    out->live_bytes = calloc(cols, sizeof *out->live_bytes);
    if (!out->cell_calls || !out->cell_bytes || !out->live_calls || !out->live_bytes) {
        mtl_lifetimes_release(out);
        return MTL_ENOMEM;
    }
    struct grid g = { out, cols };
    out->ncols = 1;
    struct mtl_scan_ops ops = {
        .block = on_block,
        .needs = MTL_NEED_ALLOC_TIME | MTL_NEED_FREE_TIME | MTL_NEED_SIZE,
    };
    struct mtl_scan_result res = { 0 };
    int rc = mtl_engine_scan(e, f, &ops, &g, &res);
    if (rc < 0) {
        mtl_lifetimes_release(out);
        return rc;
    }
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
