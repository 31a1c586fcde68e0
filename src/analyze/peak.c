/*
 * peak.c: the moment the live bytes of the blocks that pass the filters
 * were highest, and what was live then.  The first scan follows the live
 * bytes event by event and keeps the event after which they were highest
 * (the first such); the second sums the blocks live right after it.
 */
#include <string.h>

#include "analyze/internal.h"
#include "memtally/errors.h"

struct peak_scan {
    double live, peak;
    uint64_t peak_seq, peak_us;
    int found;
    struct mtl_stackagg agg;
};

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct peak_scan *p = arg;
    if (!b || !passes)
        return 0;
    if (ev->type == MTL_EV_ALLOC) {
        p->live += b->weight_bytes;
        if (p->live > p->peak) {
            p->peak = p->live;
            p->peak_seq = b->alloc_seq;
            p->peak_us = ev->time_us;
            p->found = 1;
        }
    } else if (ev->type == MTL_EV_FREE) {
        p->live -= b->weight_bytes;
    }
    return 0;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct peak_scan *p = arg;
    return mtl_stackagg_add(&p->agg, 0, b->stack, b->weight_count, b->weight_bytes, 0);
}

int mtl__peak_stacks(struct mtl_engine *e, const struct mtl_filter *f,
                     struct mtl_stackagg *agg, double *peak, uint64_t *peak_us, int *found)
{
    struct peak_scan p = { .agg = MTL_STACKAGG_INIT(0) };
    struct mtl_scan_ops first = { .event = on_event };
    int rc = mtl_engine_scan(e, f, &first, &p, NULL);
    if (rc == 0 && p.found)
        rc = mtl_engine_live_after(e, f, p.peak_seq, on_block, &p);
    *agg = p.agg;
    *peak = p.peak;
    *peak_us = p.peak_us;
    *found = p.found;
    return rc;
}

int mtl_peak(struct mtl_engine *e, const struct mtl_filter *f,
             const struct mtl_peak_options *o, struct mtl_peak *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    struct mtl_stackagg agg;
    int rc = mtl__peak_stacks(e, f, &agg, &out->peak_bytes, &out->peak_time_us, &out->found);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = mtl_rows_fold(&out->rows, &agg, v, mtl_engine_defs(e), MTL_BY_FUNCTION, 0,
                           MTL_ALL_THREADS);
    if (rc == 0) {
        mtl_rows_sort(&out->rows, MTL_SORT_BYTES, 1);
        mtl_rows_truncate(&out->rows, o ? o->top : 0);
        if (o && o->stacks)
            rc = mtl_rows_paths(&out->rows, &agg, v, 0, MTL_ALL_THREADS, o->stacks, 0);
    }
    mtl_stackagg_release(&agg);
    if (rc < 0)
        mtl_peak_release(out);
    return rc;
}

void mtl_peak_release(struct mtl_peak *p)
{
    mtl_rows_release(&p->rows);
}
