/*
 * peak.c: the moment the live bytes of the blocks that pass the filters
 * were highest, and what was live then: the live curve gives the event
 * after which they were highest (the first such), then the blocks live
 * right after it are summed per stack.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/curve.h"
#include "analyze/internal.h"
#include "memtally/errors.h"
#include "trace/defs.h"

/* Per thread: agg->per_thread set by the caller. */
static int peak_sums(struct mtl_engine *e, const struct mtl_filter *f,
                     struct mtl_stackagg *agg, double *peak, uint64_t *peak_us, int *found)
{
    struct mtl_curve *c = calloc(1, sizeof *c);
    if (!c)
        return MTL_ENOMEM;
    mtl_engine_prefetch_symbols(e); /* beside finding the peak */
    int rc = mtl_engine_curve(e, f, c);
    if (rc == 0 && c->found)
        rc = mtl_engine_live_sums(e, f, c->peak_seq, agg);
    *peak = c->peak;
    *peak_us = c->peak_us;
    *found = c->found;
    free(c);
    return rc;
}

int mtl__peak_stacks(struct mtl_engine *e, const struct mtl_filter *f,
                     struct mtl_stackagg *agg, double *peak, uint64_t *peak_us, int *found)
{
    *agg = (struct mtl_stackagg)MTL_STACKAGG_INIT(0);
    return peak_sums(e, f, agg, peak, peak_us, found);
}

static int more_bytes(const void *a, const void *b)
{
    const struct mtl_peak_thread *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The sums at the peak (made per thread) added up per thread. */
static int peak_threads(struct mtl_engine *e, const struct mtl_stackagg *agg,
                        struct mtl_peak *out)
{
    const struct mtl_defs *d = mtl_engine_defs(e);
    uint32_t nthreads = d->nthreads;
    struct mtl_peak_thread *t = calloc(nthreads ? nthreads : 1, sizeof *t);
    int rc = t ? 0 : MTL_ENOMEM;
    for (size_t i = 0; rc == 0 && i < agg->n; i++) {
        uint32_t th = agg->e[i].thread;
        if (th < nthreads) {
            t[th].bytes += agg->e[i].bytes;
            t[th].blocks += agg->e[i].calls;
        }
    }
    size_t n = 0;
    for (uint32_t i = 0; rc == 0 && i < nthreads; i++)
        if (t[i].blocks > 0) {
            t[n] = t[i];
            t[n].index = i;
            t[n].tid = d->threads[i].tid;
            t[n++].name = d->threads[i].name ? d->threads[i].name : "";
        }
    if (rc == 0)
        qsort(t, n, sizeof *t, more_bytes);
    out->threads = t;
    out->nthreads = n;
    return rc;
}

int mtl_peak(struct mtl_engine *e, const struct mtl_filter *f,
             const struct mtl_peak_options *o, struct mtl_peak *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    /* Per thread too when asked: the tables add every thread up. */
    struct mtl_stackagg agg = MTL_STACKAGG_INIT(o && o->by_thread);
    int rc = peak_sums(e, f, &agg, &out->peak_bytes, &out->peak_time_us, &out->found);
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
    if (rc == 0 && o && o->by_thread)
        rc = peak_threads(e, &agg, out);
    mtl_stackagg_release(&agg);
    if (rc < 0)
        mtl_peak_release(out);
    return rc;
}

void mtl_peak_release(struct mtl_peak *p)
{
    mtl_rows_release(&p->rows);
    free(p->threads);
    p->threads = NULL;
}
