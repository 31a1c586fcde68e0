/*
 * stackfigs.c: figures per stack, with each stack's frames kept whole
 * (addresses, modules, inlined functions): what pprof and DHAT files are
 * made of.  Allocated and in-use figures are sums the engine gives per
 * stack (an index answers them on every core); DHAT's figures (lifetimes,
 * each stack's own highest, live at the peak and at the end) take one
 * pass over the trace's events in order.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/stackagg.h"
#include "analyze/view.h"
#include "common/grow.h"
#include "common/hmap.h"
#include "memtally/errors.h"
#include "trace/defs.h"

/* ---- the per-stack state of the pass for DHAT's figures ------------------ */

struct stack_live {
    double live_calls, live_bytes, max_calls, max_bytes;
    double life_us;                 /* of blocks freed */
    double open_calls, open_start;  /* blocks never freed: count and the sum
                                       of their allocation times (weighted) */
};

struct life_pass {
    struct stack_live *s;
    size_t cap;
    int failed;
};

static struct stack_live *stack_state(struct life_pass *p, uint32_t stack)
{
    if (mtl_grow_zeroed((void **)&p->s, &p->cap, (size_t)stack + 1, sizeof *p->s, 1024) < 0) {
        p->failed = 1;
        return NULL;
    }
    return &p->s[stack];
}

static int life_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                      int passes)
{
    struct life_pass *p = arg;
    if (!b || !passes || (ev->type != MTL_EV_ALLOC && ev->type != MTL_EV_FREE))
        return 0;
    struct stack_live *s = stack_state(p, b->stack);
    if (!s)
        return MTL_ENOMEM;
    if (ev->type == MTL_EV_ALLOC) {
        s->live_calls += b->weight_count;
        s->live_bytes += b->weight_bytes;
        if (s->live_bytes > s->max_bytes) {
            s->max_bytes = s->live_bytes;
            s->max_calls = s->live_calls;
        }
    } else {
        s->live_calls -= b->weight_count;
        s->live_bytes -= b->weight_bytes;
    }
    return 0;
}

/* At a block's fate: its lifetime, or, never freed, what its lifetime to
 * the end will need once the end is known. */
static int life_block(void *arg, const struct mtl_block *b)
{
    struct life_pass *p = arg;
    struct stack_live *s = stack_state(p, b->stack);
    if (!s)
        return MTL_ENOMEM;
    if (b->free_us == MTL_NEVER) {
        s->open_calls += b->weight_count;
        s->open_start += (double)b->alloc_us * b->weight_count;
    } else {
        s->life_us += (double)(b->free_us - b->alloc_us) * b->weight_count;
    }
    return 0;
}

/* ---- frames: a stack's nodes as frames, hidden ones left out ------------- */

struct frame_builder {
    struct mtl_stack_figures *out;
    struct mtl_view *v;
    const struct mtl_defs *d;
    uint32_t *memo;         /* node -> 0 unknown, 1 no frame, frame + 2 */
    size_t frames_cap, locs_cap;
    uint32_t *path;         /* nodes on the way up, not yet known */
    size_t path_cap;
};

/* The frame of a node whose parent's frame is parent: a new frame with
 * its visible functions, or parent when it has none. */
static int node_frame(struct frame_builder *fb, uint32_t node, uint32_t parent, uint32_t *out)
{
    struct mtl_stack_figures *o = fb->out;
    uint32_t first, n;
    int rc = mtl_view_node(fb->v, node, &first, &n);
    if (rc < 0)
        return rc;
    size_t start = o->nlocs;
    for (uint32_t i = first; i < first + n; i++) {
        const struct mtl_location *w = mtl_view_location(fb->v, i);
        if (w->hidden)
            continue;
        if (mtl_grow_zeroed((void **)&o->locs, &fb->locs_cap, o->nlocs + 1, sizeof *o->locs,
                            256) < 0)
            return MTL_ENOMEM;
        o->locs[o->nlocs++] = *w;
    }
    if (o->nlocs == start) {
        *out = parent;
        return 0;
    }
    if (mtl_grow_zeroed((void **)&o->frames, &fb->frames_cap, o->nframes + 1,
                        sizeof *o->frames, 256) < 0)
        return MTL_ENOMEM;
    struct mtl_frame fr = mtl_defs_frame(fb->d, node);
    o->frames[o->nframes] = (struct mtl_stack_frame){
        .addr = fr.kind == MTL_FRAME_NATIVE ? fr.addr : 0,
        .module = fr.kind == MTL_FRAME_NATIVE ? fr.module : UINT32_MAX,
        .parent = parent, .first = start, .nlocs = o->nlocs - start };
    *out = (uint32_t)o->nframes++;
    return 0;
}

/* The innermost frame of stack: the nodes above it are walked up to the
 * first whose frame is known, then given theirs on the way down. */
static int stack_frame(struct frame_builder *fb, uint32_t stack, uint32_t *out)
{
    size_t n = 0;
    uint32_t node = stack, known = MTL_NO_FRAME;
    while (node != 0 && node < fb->d->nnodes && fb->memo[node] == 0) {
        if (mtl_grow_zeroed((void **)&fb->path, &fb->path_cap, n + 1, sizeof *fb->path, 256) < 0)
            return MTL_ENOMEM;
        fb->path[n++] = node;
        node = fb->d->parent[node];
    }
    if (node != 0 && node < fb->d->nnodes && fb->memo[node] > 1)
        known = fb->memo[node] - 2;
    while (n-- > 0) {
        int rc = node_frame(fb, fb->path[n], known, &known);
        if (rc < 0)
            return rc;
        fb->memo[fb->path[n]] = known == MTL_NO_FRAME ? 1 : known + 2;
    }
    *out = known;
    return 0;
}

/* ---- the analysis ---------------------------------------------------------- */

static int by_bytes(const void *a, const void *b)
{
    const struct mtl_stack_figure *x = a, *y = b;
    if (x->alloc_bytes != y->alloc_bytes)
        return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The in-use sums of o's moment. */
static int inuse_sums(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_stack_figures_options *o, struct mtl_stack_figures *out,
                      struct mtl_stackagg *agg)
{
    struct mtl_filter g = *f;
    if (o->at_peak) {
        int found;
        return mtl__peak_stacks(e, f, agg, &out->peak_bytes, &out->inuse_us, &found);
    }
    if (o->at_set) {
        g.live_at_set = 1;
        g.live_at = o->at_us;
        out->inuse_us = o->at_us;
    } else {
        g.never_freed = 1;
    }
    *agg = (struct mtl_stackagg)MTL_STACKAGG_INIT(0);
    return mtl_engine_sums(e, &g, agg);
}

/* The figure of a stack, added if new. */
static struct mtl_stack_figure *figure(struct mtl_stack_figures *out, struct mtl_hmap *index,
                                       size_t *cap, uint32_t stack)
{
    uint64_t v;
    if (mtl_hmap_get(index, (uint64_t)stack + 1, &v))
        return &out->figures[v];
    if (mtl_grow_zeroed((void **)&out->figures, cap, out->n + 1, sizeof *out->figures, 256) < 0 ||
        mtl_hmap_put(index, (uint64_t)stack + 1, out->n, NULL) < 0)
        return NULL;
    struct mtl_stack_figure *s = &out->figures[out->n++];
    memset(s, 0, sizeof *s);
    s->stack = stack;
    s->frame = MTL_NO_FRAME;
    return s;
}

int mtl_stack_figures(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_stack_figures_options *o,
                      struct mtl_stack_figures *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    struct mtl_stackagg alloc = MTL_STACKAGG_INIT(0), inuse = MTL_STACKAGG_INIT(0),
                        at_peak = MTL_STACKAGG_INIT(0);
    struct life_pass lp = { 0 };
    struct mtl_hmap index = MTL_HMAP_INIT;
    struct frame_builder fb = { 0 };
    size_t cap = 0;
    mtl_engine_prefetch_symbols(e);
    int rc = mtl_engine_sums(e, f, &alloc);
    if (rc == 0)
        rc = inuse_sums(e, f, o, out, &inuse);
    if (rc == 0 && o->lifetimes) {
        int found;
        uint64_t peak_us;
        rc = mtl__peak_stacks(e, f, &at_peak, &out->peak_bytes, &peak_us, &found);
        out->peak_us = peak_us;
        struct mtl_scan_ops ops = { .event = life_event, .block = life_block, .raw = 1 };
        struct mtl_scan_result res = { 0 };
        if (rc == 0)
            rc = mtl_engine_scan(e, f, &ops, &lp, &res);
        if (rc == 0 && lp.failed)
            rc = MTL_ENOMEM;
        out->end_us = res.end_us;
    }
    if (!o->lifetimes)
        out->end_us = mtl_engine_defs(e)->info.duration_us;
    if (!o->at_peak && !o->at_set)
        out->inuse_us = out->end_us;
    for (size_t i = 0; rc == 0 && i < alloc.n; i++) {
        struct mtl_stack_figure *s = figure(out, &index, &cap, alloc.e[i].stack);
        if (!s) {
            rc = MTL_ENOMEM;
            break;
        }
        s->alloc_calls += alloc.e[i].calls;
        s->alloc_bytes += alloc.e[i].bytes;
        if (alloc.e[i].stack < lp.cap) {
            const struct stack_live *l = &lp.s[alloc.e[i].stack];
            s->max_calls = l->max_calls;
            s->max_bytes = l->max_bytes;
            s->end_calls = l->live_calls;
            s->end_bytes = l->live_bytes;
            s->life_us = l->life_us + (double)out->end_us * l->open_calls - l->open_start;
        }
    }
    /* In use and at the peak are of blocks that pass f as well: their
     * stacks have figures already. */
    for (size_t i = 0; rc == 0 && i < inuse.n; i++) {
        struct mtl_stack_figure *s = figure(out, &index, &cap, inuse.e[i].stack);
        if (!s)
            rc = MTL_ENOMEM;
        else {
            s->inuse_calls += inuse.e[i].calls;
            s->inuse_bytes += inuse.e[i].bytes;
        }
    }
    for (size_t i = 0; rc == 0 && i < at_peak.n; i++) {
        struct mtl_stack_figure *s = figure(out, &index, &cap, at_peak.e[i].stack);
        if (!s)
            rc = MTL_ENOMEM;
        else {
            s->peak_calls += at_peak.e[i].calls;
            s->peak_bytes += at_peak.e[i].bytes;
        }
    }
    if (rc == 0) {
        fb.out = out;
        fb.d = mtl_engine_defs(e);
        fb.v = mtl_engine_view(e, f);
        fb.memo = calloc(fb.d->nnodes ? fb.d->nnodes : 1, sizeof *fb.memo);
        if (!fb.v || !fb.memo)
            rc = MTL_ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        struct mtl_stack_figure *s = &out->figures[i];
        rc = stack_frame(&fb, s->stack, &s->frame);
        uint32_t site = rc == 0 ? mtl_view_site(fb.v, s->stack) : MTL_NO_LOCATION;
        s->site = site == MTL_NO_LOCATION ? "(no stack)" : mtl_view_location(fb.v, site)->function;
    }
    if (rc == 0) {
        out->trace = fb.d->info;
        out->modules = fb.d->modules;
        out->nmodules = fb.d->nmodules;
    }
    if (rc == 0)
        qsort(out->figures, out->n, sizeof *out->figures, by_bytes);
    free(fb.memo);
    free(fb.path);
    free(lp.s);
    mtl_hmap_release(&index);
    mtl_stackagg_release(&alloc);
    mtl_stackagg_release(&inuse);
    mtl_stackagg_release(&at_peak);
    if (rc < 0)
        mtl_stack_figures_release(out);
    return rc;
}

void mtl_stack_figures_release(struct mtl_stack_figures *s)
{
    free(s->figures);
    free(s->frames);
    free(s->locs);
    memset(s, 0, sizeof *s);
}
