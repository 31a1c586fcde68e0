/* curve.c: see curve.h. */
#include "analyze/curve.h"

#include <string.h>

void mtl_curve_widen(struct mtl_curve *c)
{
    for (size_t i = 0; i < MTL_CURVE_FINE / 2; i++) {
        struct mtl_curve_bucket a = c->b[2 * i], b = c->b[2 * i + 1], m = a;
        m.alloc_bytes += b.alloc_bytes;
        m.alloc_calls += b.alloc_calls;
        if (b.has_live) {
            m.live = b.live;
            m.has_live = 1;
        }
        if (b.has_rss) {
            m.rss = b.rss;
            m.has_rss = 1;
        }
        if (b.has_gc_heap) {
            m.gc_heap = b.gc_heap;
            m.has_gc_heap = 1;
        }
        c->b[i] = m;
    }
    memset(&c->b[MTL_CURVE_FINE / 2], 0, sizeof c->b[0] * (MTL_CURVE_FINE / 2));
    c->width_us *= 2;
}

/* ---- from a scan of the trace -------------------------------------------- */

#include "analyze/engine.h"
#include "memtally/errors.h"

struct curve_scan {
    struct mtl_curve *c;
    double live;
};

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct curve_scan *s = arg;
    struct mtl_curve *c = s->c;
    struct mtl_curve_bucket *k = NULL;
    if (ev->type != MTL_EV_ALLOC && ev->type != MTL_EV_FREE && ev->type != MTL_EV_RSS &&
        ev->type != MTL_EV_GC_HEAP)
        return 0;
    if (c->buckets) {
        while (ev->time_us / c->width_us >= MTL_CURVE_FINE)
            mtl_curve_widen(c);
        k = &c->b[ev->time_us / c->width_us];
    }
    if (ev->type == MTL_EV_RSS) {
        if (k) {
            k->rss = ev->size;
            k->has_rss = 1;
        }
        return 0;
    }
    if (ev->type == MTL_EV_GC_HEAP) {
        if (k) {
            k->gc_heap = ev->size;
            k->has_gc_heap = 1;
        }
        return 0;
    }
    if (!b || !passes)
        return 0;
    if (ev->type == MTL_EV_ALLOC) {
        s->live += b->weight_bytes;
        if (k) {
            k->alloc_bytes += b->weight_bytes;
            k->alloc_calls += b->weight_count;
        }
        if (s->live > c->peak) {
            c->peak = s->live;
            c->peak_seq = b->alloc_seq;
            c->peak_us = ev->time_us;
            c->found = 1;
        }
    } else {
        s->live -= b->weight_bytes;
    }
    if (k) {
        k->live = s->live;
        k->has_live = 1;
    }
    return 0;
}

int mtl__curve_scan(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_curve *c)
{
    struct curve_scan s = { c, 0 };
    struct mtl_scan_ops ops = { .event = on_event, .needs = MTL_NEED_ALLOC_TIME |
                                MTL_NEED_FREE_TIME | MTL_NEED_SIZE };
    struct mtl_scan_result res;
    int rc = mtl_engine_scan(e, f, &ops, &s, &res);
    while (rc == 0 && c->buckets && res.end_us / c->width_us >= MTL_CURVE_FINE)
        mtl_curve_widen(c);
    return rc;
}
