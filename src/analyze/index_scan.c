/*
 * index_scan.c: scans answered from a trace's index (index.h) instead of
 * its events: the same callbacks as scan.c, the same blocks, read from the
 * index's columns a chunk at a time.
 *
 * A block passes the filters or not whatever the query does with it: a
 * scan of blocks decides and hands them out chunk by chunk; a replay of
 * the allocations and frees in trace order (peak, timeline) first sets a
 * bit per block that passes, then walks the block and free chunks side by
 * side as the bit per event says, with the RSS samples between them by
 * time.  What the index does not hold (addresses, the thread that freed a
 * block, thread and module events) only `dump` shows, and dump reads the
 * trace.
 */
#include "analyze/index_scan.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/view.h"
#include "common/bitset.h"
#include "memtally/errors.h"

#define ALL_COLUMNS ((1u << MTL_IXA_COLUMNS) - 1)

struct ix_scan {
    const struct mtl_index *ix;
    const struct mtl_ix_summary *sum;
    const struct mtl_defs *d;
    struct mtl_view *v;
    const struct mtl_filter *f;
    struct mtl_ix_cursor *cur;
    int8_t *stack_ok;            /* per stack: -1 unknown, 0, 1 */
    int at_alloc, at_free, on_stacks;
    unsigned filter_columns;     /* what deciding needs */
};

static int stack_ok(struct ix_scan *s, uint32_t stack)
{
    const struct mtl_filter *f = s->f;
    if (s->stack_ok[stack] >= 0)
        return s->stack_ok[stack];
    int ok = 1;
    for (size_t i = 0; ok && i < f->ninside; i++) {
        int m = mtl_view_stack_matches(s->v, stack, f->inside[i]);
        if (m < 0)
            return m;
        ok = m;
    }
    for (size_t i = 0; ok && i < f->nnot_inside; i++) {
        int m = mtl_view_stack_matches(s->v, stack, f->not_inside[i]);
        if (m < 0)
            return m;
        ok = !m;
    }
    s->stack_ok[stack] = (int8_t)ok;
    return ok;
}

static int start(struct ix_scan *s, const struct mtl_index *ix, const struct mtl_defs *d,
                 struct mtl_view *v, const struct mtl_filter *f)
{
    memset(s, 0, sizeof *s);
    s->ix = ix;
    s->sum = mtl_index_summary(ix);
    s->d = d;
    s->v = v;
    s->f = f;
    s->on_stacks = mtl_filter_on_stacks(f);
    s->at_free = !mtl_filter_decidable_at_alloc(f);
    s->at_alloc = f->size.set || f->allocated.set || f->thread_set;
    if (f->allocated.set || s->at_free)
        s->filter_columns |= 1u << MTL_IXA_TIME;
    if (s->at_free)
        s->filter_columns |= 1u << MTL_IXA_LIFE;
    if (f->size.set)
        s->filter_columns |= 1u << MTL_IXA_SIZE;
    if (f->thread_set)
        s->filter_columns |= 1u << MTL_IXA_THREAD;
    if (s->on_stacks) {
        s->filter_columns |= 1u << MTL_IXA_STACK;
        s->stack_ok = malloc(d->nnodes ? d->nnodes : 1);
        if (!s->stack_ok)
            return MTL_ENOMEM;
        memset(s->stack_ok, -1, d->nnodes);
    }
    return mtl_ix_cursor_open(&s->cur, ix);
}

static void finish(struct ix_scan *s)
{
    free(s->stack_ok);
    mtl_ix_cursor_close(s->cur);
}

static inline uint64_t free_time(uint64_t alloc_us, uint64_t life)
{
    return life ? alloc_us + life - 1 : MTL_NEVER;
}

/* Whether row i of a decoded chunk passes; negative on error. */
static int passes(struct ix_scan *s, const uint64_t *const col[], size_t i)
{
    const struct mtl_filter *f = s->f;
    if (s->at_alloc) {
        uint64_t th = col[MTL_IXA_THREAD] ? col[MTL_IXA_THREAD][i] : 0;
        uint32_t tid = th < s->d->nthreads ? s->d->threads[th].tid : 0;
        if (!mtl_filter_at_alloc(f, col[MTL_IXA_SIZE] ? col[MTL_IXA_SIZE][i] : 0, tid,
                                 (uint32_t)th, col[MTL_IXA_TIME] ? col[MTL_IXA_TIME][i] : 0))
            return 0;
    }
    if (s->at_free) {
        uint64_t a = col[MTL_IXA_TIME][i];
        if (!mtl_filter_at_free(f, a, free_time(a, col[MTL_IXA_LIFE][i]), s->sum->end_us))
            return 0;
    }
    if (s->on_stacks)
        return stack_ok(s, (uint32_t)col[MTL_IXA_STACK][i]);
    return 1;
}

static void fill(const struct ix_scan *s, const uint64_t *const col[], size_t i,
                 uint64_t block, struct mtl_block *b)
{
    memset(b, 0, sizeof *b);
    b->size = col[MTL_IXA_SIZE][i];
    b->alloc_us = col[MTL_IXA_TIME][i];
    b->free_us = free_time(b->alloc_us, col[MTL_IXA_LIFE][i]);
    b->ordinal = block;
    b->alloc_seq = b->free_seq = MTL_NEVER;
    b->stack = (uint32_t)col[MTL_IXA_STACK][i];
    b->thread = (uint32_t)col[MTL_IXA_THREAD][i];
    b->temporary = (col[MTL_IXA_FLAGS][i] & MTL_IX_TEMPORARY) != 0;
    b->free_lost = (col[MTL_IXA_FLAGS][i] & MTL_IX_FREE_LOST) != 0;
    mtl__weights(s->d->info.mode, s->d->info.sample_rate, b->size, &b->weight_count,
                 &b->weight_bytes);
}

/* Hands out the blocks that pass and, when only is set, whose bit in it
 * is set. */
static int each_block(struct ix_scan *s, const struct mtl_bitset *only,
                      int (*block)(void *arg, const struct mtl_block *b), void *arg)
{
    for (uint64_t c = 0; c < s->sum->nachunks; c++) {
        if (only) {
            /* A chunk with no block asked for is not decoded. */
            uint64_t w0 = c * MTL_IX_CHUNK / 64, w1 = w0 + MTL_IX_CHUNK / 64, any = 0;
            for (uint64_t w = w0; w < w1 && w < only->nwords && !any; w++)
                any = only->w[w];
            if (!any)
                continue;
        }
        const uint64_t *col[MTL_IXA_COLUMNS];
        size_t n;
        uint64_t first;
        int rc = mtl_ix_blocks(s->cur, c, ALL_COLUMNS, col, &n, &first);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < n; i++) {
            if (only && !mtl_bitset_test(only, first + i))
                continue;
            if (!only) {
                int p = passes(s, col, i);
                if (p <= 0) {
                    if (p < 0)
                        return p;
                    continue;
                }
            }
            struct mtl_block b;
            fill(s, col, i, first + i, &b);
            if (block(arg, &b) != 0)
                return MTL_ESTOPPED;
        }
    }
    return 0;
}

/* A bit per block that passes. */
static int decide(struct ix_scan *s, struct mtl_bitset *pass)
{
    if (mtl_bitset_reserve(pass, s->sum->nblocks) < 0)
        return MTL_ENOMEM;
    if (!s->filter_columns && !s->at_alloc) {
        for (uint64_t i = 0; i < s->sum->nblocks; i++)
            pass->w[i / 64] |= 1ull << (i % 64);
        return 0;
    }
    for (uint64_t c = 0; c < s->sum->nachunks; c++) {
        const uint64_t *col[MTL_IXA_COLUMNS];
        size_t n;
        uint64_t first;
        int rc = mtl_ix_blocks(s->cur, c, s->filter_columns, col, &n, &first);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < n; i++) {
            int p = passes(s, col, i);
            if (p < 0)
                return p;
            if (p)
                pass->w[(first + i) / 64] |= 1ull << ((first + i) % 64);
        }
    }
    return 0;
}

/* Replays allocations and frees in trace order through event(), up to
 * and with the event numbered last; with_rss puts the RSS samples between
 * them by time. */
static int replay(struct ix_scan *s, const struct mtl_bitset *pass, uint64_t last,
                  int (*event)(void *arg, const struct mtl_event *ev,
                               const struct mtl_block *b, int passes),
                  void *arg, int with_rss)
{
    const struct mtl_ix_summary *sum = s->sum;
    const uint64_t *acol[MTL_IXA_COLUMNS], *fcol[MTL_IXF_COLUMNS];
    size_t an = 0, ai = 0, fn = 0, fi = 0;
    uint64_t ac = 0, fc = 0, first = 0, r = 0;
    unsigned amask = 1u << MTL_IXA_TIME | 1u << MTL_IXA_SIZE | 1u << MTL_IXA_STACK |
                     1u << MTL_IXA_THREAD;
    unsigned fmask = 1u << MTL_IXF_BLOCK | 1u << MTL_IXF_TIME | 1u << MTL_IXF_SIZE;
    int rc;
    for (uint64_t e = 0; e < sum->nevents && e <= last; e++) {
        int alloc = (int)(sum->events[e / 64] >> (e % 64) & 1);
        struct mtl_block b;
        memset(&b, 0, sizeof b);
        if (alloc) {
            if (ai == an) {
                if (ac >= sum->nachunks)
                    return MTL_ECORRUPT;
                if ((rc = mtl_ix_blocks(s->cur, ac++, amask, acol, &an, &first)) < 0)
                    return rc;
                ai = 0;
            }
            b.ordinal = first + ai;
            b.size = acol[MTL_IXA_SIZE][ai];
            b.alloc_us = acol[MTL_IXA_TIME][ai];
            b.free_us = MTL_NEVER; /* not known yet at its allocation */
            b.stack = (uint32_t)acol[MTL_IXA_STACK][ai];
            b.thread = (uint32_t)acol[MTL_IXA_THREAD][ai];
            b.alloc_seq = e;
            b.free_seq = MTL_NEVER;
            ai++;
        } else {
            if (fi == fn) {
                if (fc >= sum->nfchunks)
                    return MTL_ECORRUPT;
                if ((rc = mtl_ix_frees(s->cur, fc++, fmask, fcol, &fn)) < 0)
                    return rc;
                fi = 0;
            }
            /* The index keeps a free's block, time and size: enough for
             * the live bytes; not its stack nor its threads. */
            b.ordinal = fcol[MTL_IXF_BLOCK][fi];
            b.size = fcol[MTL_IXF_SIZE][fi];
            b.free_us = fcol[MTL_IXF_TIME][fi];
            b.alloc_seq = MTL_NEVER;
            b.free_seq = e;
            fi++;
        }
        mtl__weights(s->d->info.mode, s->d->info.sample_rate, b.size, &b.weight_count,
                     &b.weight_bytes);
        struct mtl_event ev = { .type = alloc ? MTL_EV_ALLOC : MTL_EV_FREE,
                                .time_us = alloc ? b.alloc_us : b.free_us,
                                .thread = b.thread, .size = alloc ? b.size : 0,
                                .stack = b.stack,
                                .weight_count = alloc ? b.weight_count : 0,
                                .weight_bytes = alloc ? b.weight_bytes : 0 };
        for (; with_rss && r < sum->nrss && sum->rss[r].time_us <= ev.time_us; r++) {
            struct mtl_event rss = { .type = MTL_EV_RSS, .time_us = sum->rss[r].time_us,
                                     .size = sum->rss[r].bytes };
            if (event(arg, &rss, NULL, 0) != 0)
                return MTL_ESTOPPED;
        }
        if (event(arg, &ev, &b, mtl_bitset_test(pass, b.ordinal)) != 0)
            return MTL_ESTOPPED;
    }
    for (; with_rss && r < sum->nrss; r++) {
        struct mtl_event rss = { .type = MTL_EV_RSS, .time_us = sum->rss[r].time_us,
                                 .size = sum->rss[r].bytes };
        if (event(arg, &rss, NULL, 0) != 0)
            return MTL_ESTOPPED;
    }
    return 0;
}

int mtl__index_scan(const struct mtl_index *ix, const struct mtl_defs *d,
                    struct mtl_view *v, const struct mtl_filter *f,
                    const struct mtl_scan_ops *ops, void *arg, struct mtl_scan_result *res)
{
    struct ix_scan s;
    struct mtl_bitset pass = MTL_BITSET_INIT;
    int rc = start(&s, ix, d, v, f);
    if (rc == 0 && ops->event && (rc = decide(&s, &pass)) == 0)
        rc = replay(&s, &pass, UINT64_MAX, ops->event, arg, 1);
    if (rc == 0 && ops->block)
        rc = each_block(&s, NULL, ops->block, arg);
    if (res) {
        res->allocations = s.sum->nblocks;
        res->frees = s.sum->nfrees;
        res->end_us = s.sum->end_us;
    }
    mtl_bitset_release(&pass);
    finish(&s);
    return rc;
}

struct live_after {
    struct mtl_bitset live;
};

static int mark(void *arg, const struct mtl_event *ev, const struct mtl_block *b, int passes)
{
    struct live_after *l = arg;
    if (!b || !passes)
        return 0;
    if (ev->type == MTL_EV_ALLOC)
        l->live.w[b->ordinal / 64] |= 1ull << (b->ordinal % 64);
    else
        mtl_bitset_clear(&l->live, b->ordinal);
    return 0;
}

int mtl__index_live_after(const struct mtl_index *ix, const struct mtl_defs *d,
                          struct mtl_view *v, const struct mtl_filter *f, uint64_t seq,
                          int (*block)(void *arg, const struct mtl_block *b), void *arg)
{
    struct ix_scan s;
    struct mtl_bitset pass = MTL_BITSET_INIT;
    struct live_after l = { MTL_BITSET_INIT };
    int rc = start(&s, ix, d, v, f);
    if (rc == 0)
        rc = decide(&s, &pass);
    if (rc == 0 && mtl_bitset_reserve(&l.live, s.sum->nblocks) < 0)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = replay(&s, &pass, seq, mark, &l, 0);
    if (rc == 0)
        rc = each_block(&s, &l.live, block, arg);
    mtl_bitset_release(&l.live);
    mtl_bitset_release(&pass);
    finish(&s);
    return rc;
}
