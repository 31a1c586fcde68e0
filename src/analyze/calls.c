/*
 * calls.c: the hprof table of a trace that counted true calls (memtally
 * record --calls): per function that was counted, its calls (the CALLS
 * events' sums), and the allocations and bytes made while it was the
 * innermost counted function of the stack; an allocation in code not
 * counted goes to its nearest counted caller, as hprof gives it, and one
 * with none in its stack to "(outside counted functions)".
 *
 * A CALLS event names its function by a one-frame stack of the function's
 * entry address; the view resolves it as any frame, so a counted function
 * and the frames of allocation stacks meet at the view's function id,
 * inlined frames included.  Allocations are summed per (thread, stack) in
 * the same pass and folded afterwards, once per stack.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/view.h"
#include "memtally/errors.h"
#include "trace/defs.h"

#define NO_FUNCTION UINT32_MAX   /* the row of allocations outside counted code */
#define ALL UINT32_MAX           /* the thread of the total table */

struct sums {
    struct mtl_stackagg allocs;  /* per (thread, stack): count, bytes */
    struct mtl_stackagg calls;   /* per (thread, function's stack): calls */
    const struct mtl_filter *f;
    struct mtl_engine *e;
};

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct sums *s = arg;
    if (ev->type == MTL_EV_ALLOC && b && passes)
        return mtl_stackagg_add(&s->allocs, b->thread, b->stack, b->weight_count,
                                b->weight_bytes, 0);
    if (ev->type != MTL_EV_CALLS)
        return 0;
    const struct mtl_filter *f = s->f;
    if (f->thread_set) {
        const struct mtl_thread *t = mtl_defs_thread(mtl_engine_defs(s->e), ev->thread);
        if (f->thread != (f->thread_is_index ? ev->thread : t ? t->tid : 0))
            return 0;
    }
    return mtl_stackagg_add(&s->calls, ev->thread, ev->stack, (double)ev->size, 0, 0);
}

/* One row per (thread, function), found through a map. */
struct table {
    struct mtl_hmap at;          /* thread << 32 | function -> entry + 1 */
    struct cell { uint32_t thread, fid, loc; double calls, allocs, bytes; } *c;
    size_t n, cap;
};

static struct cell *cell_of(struct table *t, uint32_t thread, uint32_t fid, uint32_t loc)
{
    int created;
    uint64_t *slot = mtl_hmap_slot(&t->at, (uint64_t)thread << 32 | fid, &created);
    if (!slot)
        return NULL;
    if (!created)
        return &t->c[*slot];
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct cell *c = realloc(t->c, cap * sizeof *c);
        if (!c) {
            mtl_hmap_take(&t->at, (uint64_t)thread << 32 | fid, NULL);
            return NULL;
        }
        t->c = c;
        t->cap = cap;
    }
    *slot = t->n;
    t->c[t->n] = (struct cell){ thread, fid, loc, 0, 0, 0 };
    return &t->c[t->n++];
}

/* The function a CALLS event's stack names: its single address's own
 * location (the last of the frame's inlined expansion), or
 * MTL_NO_LOCATION. */
static uint32_t function_location(struct mtl_view *v, uint32_t stack, int *rc)
{
    const uint32_t *locs;
    size_t n;
    *rc = mtl_view_frames_all(v, stack, &locs, &n);
    return *rc < 0 || n == 0 ? MTL_NO_LOCATION : locs[n - 1];
}

/* The innermost counted function of a stack's frames (its location in
 * *loc), or NO_FUNCTION. */
static uint32_t innermost_counted(struct mtl_view *v, uint32_t stack, const uint8_t *counted,
                                  size_t ncounted, uint32_t *loc, int *rc)
{
    const uint32_t *locs;
    size_t n;
    *rc = mtl_view_frames_all(v, stack, &locs, &n);
    for (size_t i = 0; *rc == 0 && i < n; i++) {
        uint32_t fid = mtl_view_location(v, locs[i])->function_id;
        if (fid < ncounted && counted[fid]) {
            *loc = locs[i];
            return fid;
        }
    }
    return NO_FUNCTION;
}

/* The rows of one thread (or ALL) into out. */
static int make_rows(const struct table *t, uint32_t thread, struct mtl_view *v,
                     const struct mtl_report_options *o, struct mtl_rows *out)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->c[i].thread == thread;
    memset(out, 0, sizeof *out);
    if (n && !(out->row = calloc(n, sizeof *out->row)))
        return MTL_ENOMEM;
    for (size_t i = 0; i < t->n; i++) {
        const struct cell *c = &t->c[i];
        if (c->thread != thread)
            continue;
        struct mtl_row *r = &out->row[out->n++];
        if (c->fid == NO_FUNCTION) {
            r->function = "(outside counted functions)";
        } else {
            const struct mtl_location *l = mtl_view_location(v, c->loc);
            r->function = l->function;
            r->file = l->file;
            r->module = l->module;
        }
        r->location = c->loc;
        r->key = c->fid;
        r->calls = c->calls;
        r->bytes = c->bytes;
        r->extra = c->allocs;
        out->calls += c->calls;
        out->bytes += c->bytes;
        out->extra += c->allocs;
    }
    for (size_t i = 0; i < out->n; i++)
        out->row[i].percent = out->bytes > 0 ? 100.0 * out->row[i].bytes / out->bytes : 0;
    mtl_rows_sort(out, o->sort, o->descending);
    mtl_rows_truncate(out, o->top);
    return 0;
}

int mtl__calls_report(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_report_options *o, struct mtl_report *out)
{
    struct sums s = { MTL_STACKAGG_INIT(1), MTL_STACKAGG_INIT(1), f, e };
    struct mtl_scan_ops ops = { .event = on_event, .raw = 1 };
    struct table t = { MTL_HMAP_INIT, NULL, 0, 0 };
    uint8_t *counted = NULL;
    size_t ncounted = 0;
    out->calls_counted = 1;
    int rc = mtl_engine_scan(e, f, &ops, &s, NULL);
    if (rc == 0 && s.calls.n == 0)
        rc = 1; /* none counted (not built with -finstrument-functions) */
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    /* The counted functions, and their calls per thread and in all. */
    for (size_t i = 0; rc == 0 && i < s.calls.n; i++) {
        const struct mtl_stackagg_entry *c = &s.calls.e[i];
        uint32_t loc = function_location(v, c->stack, &rc);
        if (rc < 0 || loc == MTL_NO_LOCATION)
            continue;
        uint32_t fid = mtl_view_location(v, loc)->function_id;
        if (fid >= ncounted) {
            size_t cap = fid + 1 > 2 * ncounted ? fid + 1 : 2 * ncounted;
            uint8_t *p = realloc(counted, cap);
            if (!p) {
                rc = MTL_ENOMEM;
                break;
            }
            memset(p + ncounted, 0, cap - ncounted);
            counted = p;
            ncounted = cap;
        }
        counted[fid] = 1;
        struct cell *mine = cell_of(&t, c->thread, fid, loc);
        size_t at = mine ? (size_t)(mine - t.c) : 0; /* all may move the array */
        struct cell *all = mine ? cell_of(&t, ALL, fid, loc) : NULL;
        if (!all) {
            rc = MTL_ENOMEM;
            break;
        }
        t.c[at].calls += c->calls;
        all->calls += c->calls;
    }
    /* Each allocation to its innermost counted function. */
    struct mtl_hmap memo = MTL_HMAP_INIT; /* stack -> (loc << 32 | fid) + 1 */
    for (size_t i = 0; rc == 0 && i < s.allocs.n; i++) {
        const struct mtl_stackagg_entry *a = &s.allocs.e[i];
        uint64_t m;
        uint32_t fid, loc = MTL_NO_LOCATION;
        if (mtl_hmap_get(&memo, a->stack, &m)) {
            fid = (uint32_t)(m - 1);
            loc = (uint32_t)((m - 1) >> 32);
        } else {
            fid = innermost_counted(v, a->stack, counted, ncounted, &loc, &rc);
            if (rc < 0 ||
                mtl_hmap_put(&memo, a->stack, ((uint64_t)loc << 32 | fid) + 1, NULL) < 0) {
                rc = rc < 0 ? rc : MTL_ENOMEM;
                break;
            }
        }
        struct cell *mine = cell_of(&t, a->thread, fid, loc);
        size_t at = mine ? (size_t)(mine - t.c) : 0;
        struct cell *all = mine ? cell_of(&t, ALL, fid, loc) : NULL;
        if (!all) {
            rc = MTL_ENOMEM;
            break;
        }
        t.c[at].allocs += a->calls;
        t.c[at].bytes += a->bytes;
        all->allocs += a->calls;
        all->bytes += a->bytes;
    }
    mtl_hmap_release(&memo);
    if (rc == 0)
        rc = make_rows(&t, ALL, v, o, &out->total);
    else if (rc > 0)
        out->calls_counted = 0;
    const struct mtl_defs *d = mtl_engine_defs(e);
    if (rc == 0 && !o->total_only && d->nthreads &&
        !(out->threads = calloc(d->nthreads, sizeof *out->threads)))
        rc = MTL_ENOMEM;
    for (uint32_t th = 0; rc == 0 && !o->total_only && th < d->nthreads; th++) {
        struct mtl_thread_rows *tr = &out->threads[out->nthreads];
        if ((rc = make_rows(&t, th, v, o, &tr->rows)) < 0)
            break;
        if (!tr->rows.n)
            mtl_rows_release(&tr->rows);
        else
            mtl__report_thread_made(out, d, th);
    }
    free(counted);
    free(t.c);
    mtl_hmap_release(&t.at);
    mtl_stackagg_release(&s.allocs);
    mtl_stackagg_release(&s.calls);
    return rc;
}

