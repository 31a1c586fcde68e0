/*
 * timeline.c: live bytes, allocation rate and RSS over time: the live
 * curve's fine buckets (curve.h), gathered into the points asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/curve.h"
#include "analyze/internal.h"
#include "memtally/errors.h"
#include "trace/defs.h"

int mtl_timeline(struct mtl_engine *e, const struct mtl_filter *f, size_t points,
                 struct mtl_timeline *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    if (points == 0)
        return MTL_EINVAL;
    struct mtl_curve *c = calloc(1, sizeof *c);
    if (!c)
        return MTL_ENOMEM;
    c->buckets = 1;
    c->no_peak = 1;
    int rc = mtl_engine_curve(e, f, c);
    struct mtl_timeline_point *p = rc == 0 ? calloc(points, sizeof *p) : NULL;
    if (rc == 0 && !p)
        rc = MTL_ENOMEM;
    if (rc == 0) {
        const struct mtl_trace_info *in = &mtl_engine_defs(e)->info;
        uint64_t end = in->duration_us, step = in->time_resolution_us ? in->time_resolution_us : 1;
        if (!end)
            end = 1;
        size_t n = points;
        /* No closer than the trace tells times apart (a microsecond, or
         * record --time-resolution): finer points would repeat a time,
         * which a point's time must not (export --format sqlite keys the
         * timeline by it). */
        if (n > end / step)
            n = end / step ? (size_t)(end / step) : 1;
        for (size_t k = 0; k < n; k++)
            p[k].time_us = (uint64_t)((double)end * (double)(k + 1) / (double)n + 0.5);
        double live = 0;
        uint64_t rss = 0, gc_heap = 0;
        size_t k = 0;
        for (size_t i = 0; i < MTL_CURVE_FINE; i++) {
            uint64_t start = i * c->width_us;
            if (start > end)
                break;
            while (k < n - 1 && start >= p[k].time_us) {
                p[k].live = live;
                p[k].rss = rss;
                p[k].gc_heap = gc_heap;
                k++;
            }
            p[k].alloc_bytes += c->b[i].alloc_bytes;
            p[k].alloc_calls += c->b[i].alloc_calls;
            if (c->b[i].has_live)
                live = c->b[i].live;
            if (c->b[i].has_rss)
                rss = c->b[i].rss;
            if (c->b[i].has_gc_heap)
                gc_heap = c->b[i].gc_heap;
        }
        for (; k < n; k++) {
            p[k].live = live;
            p[k].rss = rss;
            p[k].gc_heap = gc_heap;
        }
        out->points = p;
        out->n = n;
        out->gc = mtl_engine_heaps(e) == MTL_HEAPS_GC;
    }
    free(c);
    return rc;
}

void mtl_timeline_release(struct mtl_timeline *t)
{
    free(t->points);
    t->points = NULL;
    t->n = 0;
}
