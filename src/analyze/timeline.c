/*
 * timeline.c: live bytes, allocation rate and RSS over time.  Events go
 * into at most FINE buckets whose width doubles (merging neighbours)
 * whenever the trace outgrows them, so memory stays fixed however long the
 * trace; the buckets are then gathered into the points asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "memtally/errors.h"

#define FINE 4096

struct bucket {
    double alloc_bytes, alloc_calls, live;
    uint64_t rss;
    uint8_t has_live, has_rss;
};

struct line_scan {
    uint64_t width;          /* microseconds per fine bucket */
    struct bucket b[FINE];
    double live;
};

static void merge_pairs(struct line_scan *t)
{
    for (size_t i = 0; i < FINE / 2; i++) {
        struct bucket a = t->b[2 * i], b = t->b[2 * i + 1], m = a;
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
        t->b[i] = m;
    }
    memset(&t->b[FINE / 2], 0, sizeof t->b[0] * (FINE / 2));
    t->width *= 2;
}

static struct bucket *bucket_at(struct line_scan *t, uint64_t us)
{
    while (us / t->width >= FINE)
        merge_pairs(t);
    return &t->b[us / t->width];
}

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct line_scan *t = arg;
    struct bucket *k = bucket_at(t, ev->time_us);
    if (ev->type == MTL_EV_RSS) {
        k->rss = ev->size;
        k->has_rss = 1;
        return 0;
    }
    if (!b || !passes)
        return 0;
    if (ev->type == MTL_EV_ALLOC) {
        t->live += b->weight_bytes;
        k->alloc_bytes += b->weight_bytes;
        k->alloc_calls += b->weight_count;
    } else if (ev->type == MTL_EV_FREE) {
        t->live -= b->weight_bytes;
    }
    k->live = t->live;
    k->has_live = 1;
    return 0;
}

int mtl_timeline(struct mtl_engine *e, const struct mtl_filter *f, size_t points,
                 struct mtl_timeline *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    if (points == 0)
        return MTL_EINVAL;
    struct line_scan *t = calloc(1, sizeof *t);
    if (!t)
        return MTL_ENOMEM;
    t->width = 1000;
    struct mtl_scan_ops ops = { .event = on_event };
    struct mtl_scan_result res;
    int rc = mtl_engine_scan(e, f, &ops, t, &res);
    struct mtl_timeline_point *p = rc == 0 ? calloc(points, sizeof *p) : NULL;
    if (rc == 0 && !p)
        rc = MTL_ENOMEM;
    if (rc == 0) {
        uint64_t end = res.end_us ? res.end_us : 1;
        size_t n = points;
        for (size_t k = 0; k < n; k++)
            p[k].time_us = (uint64_t)((double)end * (double)(k + 1) / (double)n + 0.5);
        double live = 0;
        uint64_t rss = 0;
        size_t k = 0;
        for (size_t i = 0; i < FINE; i++) {
            uint64_t start = i * t->width;
            if (start > end)
                break;
            while (k < n - 1 && start >= p[k].time_us) {
                p[k].live = live;
                p[k].rss = rss;
                k++;
            }
            p[k].alloc_bytes += t->b[i].alloc_bytes;
            p[k].alloc_calls += t->b[i].alloc_calls;
            if (t->b[i].has_live)
                live = t->b[i].live;
            if (t->b[i].has_rss)
                rss = t->b[i].rss;
        }
        for (; k < n; k++) {
            p[k].live = live;
            p[k].rss = rss;
        }
        out->points = p;
        out->n = n;
    }
    free(t);
    return rc;
}

void mtl_timeline_release(struct mtl_timeline *t)
{
    free(t->points);
    t->points = NULL;
    t->n = 0;
}
