/*
 * heapsnap.c: a running process's live heap (memtally heap), from a trace
 * of it so far: the blocks never freed by the trace's end, grouped by site,
 * type, thread or size with the analyses that group anything, and its
 * largest blocks one by one, with their addresses (which only the trace
 * has: a raw scan), for the caller to peek at.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/view.h"
#include "memtally/errors.h"
#include "trace/defs.h"

struct largest {
    struct mtl_block *b;       /* the n largest so far, a min-heap by size */
    size_t n, cap;
};

/* Smaller: less bytes, or as many and younger (the older goes first). */
static int smaller(const struct mtl_block *x, const struct mtl_block *y)
{
    return x->size != y->size ? x->size < y->size : x->alloc_us > y->alloc_us;
}

static void sift_down(struct largest *l, size_t i)
{
    for (;;) {
        size_t m = i, a = 2 * i + 1, c = a + 1;
        if (a < l->n && smaller(&l->b[a], &l->b[m]))
            m = a;
        if (c < l->n && smaller(&l->b[c], &l->b[m]))
            m = c;
        if (m == i)
            return;
        struct mtl_block t = l->b[i];
        l->b[i] = l->b[m];
        l->b[m] = t;
        i = m;
    }
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct largest *l = arg;
    if (l->n < l->cap) {
        size_t i = l->n++;
        l->b[i] = *b;
        while (i && smaller(&l->b[i], &l->b[(i - 1) / 2])) {
            struct mtl_block t = l->b[i];
            l->b[i] = l->b[(i - 1) / 2];
            l->b[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
    } else if (smaller(&l->b[0], b)) {
        l->b[0] = *b;
        sift_down(l, 0);
    }
    return 0;
}

static int by_size_desc(const void *a, const void *b)
{
    const struct mtl_block *x = a, *y = b;
    return smaller(x, y) ? 1 : smaller(y, x) ? -1 : 0;
}

/* The largest live blocks, described. */
static int largest_blocks(struct mtl_engine *e, const struct mtl_filter *live, size_t top,
                          struct mtl_heap_snapshot *out)
{
    struct largest l = { calloc(top, sizeof *l.b), 0, top };
    if (!l.b)
        return MTL_ENOMEM;
    struct mtl_scan_ops ops = { .block = on_block, .raw = 1 };
    int rc = mtl_engine_scan(e, live, &ops, &l, NULL);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, live) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    if (rc == 0 && l.n && !(out->largest = calloc(l.n, sizeof *out->largest)))
        rc = MTL_ENOMEM;
    qsort(l.b, l.n, sizeof *l.b, by_size_desc);
    const struct mtl_defs *d = mtl_engine_defs(e);
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        struct mtl_live_block *x = &out->largest[out->nlargest++];
        const struct mtl_block *b = &l.b[i];
        const struct mtl_thread *t = mtl_defs_thread(d, b->thread);
        x->ptr = b->ptr;
        x->size = b->size;
        x->alloc_us = b->alloc_us;
        x->thread = b->thread;
        x->tid = t ? t->tid : 0;
        x->type = b->tag ? mtl_defs_string(d, b->tag) : NULL;
        const uint32_t *locs;
        size_t n;
        if ((rc = mtl_view_frames(v, b->stack, &locs, &n)) < 0)
            break;
        for (size_t k = 0; k < n && x->nframes < MTL_HEAP_FRAMES; k++)
            x->frames[x->nframes++] = *mtl_view_location(v, locs[k]);
    }
    free(l.b);
    return rc;
}

/* The grouping: the report's table of the live blocks (calls: blocks). */
static int group_rows(struct mtl_engine *e, const struct mtl_filter *live,
                      const struct mtl_heap_options *o, struct mtl_heap_snapshot *out)
{
    if (o->by == MTL_HEAP_BY_SIZE)
        return mtl_histogram(e, live, &out->sizes);
    struct mtl_report_options ro = {
        .total_only = 1, .sort = MTL_SORT_BYTES, .descending = 1, .top = o->top,
        .stacks = o->by == MTL_HEAP_BY_SITE ? o->stacks : 0,
        .by = o->by == MTL_HEAP_BY_TYPE     ? MTL_BY_TYPE
              : o->by == MTL_HEAP_BY_THREAD ? MTL_BY_THREAD
                                            : MTL_BY_FUNCTION,
    };
    struct mtl_report r;
    int rc = mtl_report(e, live, &ro, &r);
    if (rc < 0)
        return rc;
    out->rows = r.total; /* taken: the rest is empty with total_only */
    memset(&r.total, 0, sizeof r.total);
    mtl_report_release(&r);
    return 0;
}

int mtl_heap_snapshot(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_heap_options *o, struct mtl_heap_snapshot *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    out->by = o->by;
    struct mtl_filter live = *f;
    live.never_freed = 1;
    size_t top = o->top ? o->top : 10;
    int rc = group_rows(e, &live, o, out);
    if (rc == 0)
        rc = largest_blocks(e, &live, top, out);
    if (rc == 0) {
        int sizes = o->by == MTL_HEAP_BY_SIZE;
        out->live_bytes = sizes ? out->sizes.bytes : out->rows.bytes;
        out->live_blocks = sizes ? out->sizes.calls : out->rows.calls;
        out->at_us = mtl_engine_defs(e)->info.duration_us;
    }
    if (rc < 0)
        mtl_heap_snapshot_release(out);
    return rc;
}

void mtl_heap_snapshot_release(struct mtl_heap_snapshot *h)
{
    mtl_rows_release(&h->rows);
    free(h->largest);
    h->largest = NULL;
    h->nlargest = 0;
}
