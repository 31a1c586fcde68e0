/*
 * report.c: the hprof table (docs/ANALYSIS.md, report): blocks summed per
 * (thread, stack) in one scan, then folded per thread and for all
 * threads together.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "memtally/errors.h"
#include "trace/defs.h"

void mtl__result_head(struct mtl_engine *e, struct mtl_result_head *h)
{
    h->estimated = mtl_engine_estimated(e, &h->sample_rate);
    if (!h->estimated)
        h->sample_rate = 0;
    h->attached = mtl_engine_defs(e)->info.attached;
}

/* Folds, sorts, cuts and adds paths to one table. */
static int table(struct mtl_engine *e, struct mtl_view *v, const struct mtl_stackagg *a,
                 const struct mtl_report_options *o, uint32_t thread, struct mtl_rows *out)
{
    int rc = mtl_rows_fold(out, a, v, mtl_engine_defs(e), o->by, o->inclusive, thread);
    if (rc < 0)
        return rc;
    mtl_rows_sort(out, o->sort, o->descending);
    mtl_rows_truncate(out, o->top);
    if (o->stacks && o->by == MTL_BY_FUNCTION)
        rc = mtl_rows_paths(out, a, v, o->inclusive, thread, o->stacks, 0);
    return rc;
}

void mtl__report_thread_made(struct mtl_report *out, const struct mtl_defs *d, uint32_t t)
{
    struct mtl_thread_rows *tr = &out->threads[out->nthreads++];
    const struct mtl_thread *th = mtl_defs_thread(d, t);
    tr->index = t;
    tr->tid = th ? th->tid : 0;
    tr->name = th && th->name ? th->name : "";
    tr->percent = out->total.bytes > 0 ? 100.0 * tr->rows.bytes / out->total.bytes : 0;
}

int mtl_report(struct mtl_engine *e, const struct mtl_filter *f,
               const struct mtl_report_options *o, struct mtl_report *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    if (o->by == MTL_BY_FUNCTION && !o->inclusive &&
        mtl_engine_defs(e)->info.calls_counted) {
        int rc = mtl__calls_report(e, f, o, out);
        if (rc < 0)
            mtl_report_release(out);
        if (rc <= 0)
            return rc;
    }
    int per_thread = !o->total_only && o->by != MTL_BY_THREAD;
    struct mtl_stackagg a = MTL_STACKAGG_INIT(per_thread || o->by == MTL_BY_THREAD);
    int rc = o->by == MTL_BY_TYPE ? mtl__type_sums(e, f, &a) : mtl_engine_sums(e, f, &a);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = table(e, v, &a, o, MTL_ALL_THREADS, &out->total);
    const struct mtl_defs *d = mtl_engine_defs(e);
    if (rc == 0 && per_thread && d->nthreads) {
        out->threads = calloc(d->nthreads, sizeof *out->threads);
        if (!out->threads)
            rc = MTL_ENOMEM;
    }
    for (uint32_t t = 0; rc == 0 && per_thread && t < d->nthreads; t++) {
        struct mtl_thread_rows *tr = &out->threads[out->nthreads];
        if ((rc = table(e, v, &a, o, t, &tr->rows)) < 0)
            break;
        if (tr->rows.calls <= 0)
            mtl_rows_release(&tr->rows);
        else
            mtl__report_thread_made(out, d, t);
    }
    mtl_stackagg_release(&a);
    if (rc < 0)
        mtl_report_release(out);
    return rc;
}

void mtl_report_release(struct mtl_report *r)
{
    mtl_rows_release(&r->total);
    for (size_t i = 0; i < r->nthreads; i++)
        mtl_rows_release(&r->threads[i].rows);
    free(r->threads);
    r->threads = NULL;
    r->nthreads = 0;
}
