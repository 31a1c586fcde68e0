/*
 * index_scan.c: queries answered from a trace's index (index.h) instead
 * of its events, reading the index's columns a chunk at a time.
 *
 * A block passes the filters or not whatever the query does with it.  The
 * queries most analyses are made of run on every core, each thread taking
 * chunks k, k + n, ... (so that what a thread computes does not depend on
 * timing), and joining in order:
 *   - sums per (thread, stack) of the blocks that pass: the chunks'
 *     columns are decoded and tested row by row, straight into a table per
 *     thread; with conditions on threads and stacks only, the index's own
 *     sums answer;
 *   - the live curve (peak, timeline): the allocations of a block chunk
 *     and the frees between them make a segment of the trace; each is
 *     walked on its own from the bit per event, and the segments are
 *     joined, each starting where the one before ended;
 *   - the blocks live after an event: allocated by then, less those whose
 *     free came by then (from the free chunks, in parallel).
 * The general scan of scan.h (blocks to a callback, or every allocation
 * and free in order) runs on one thread.  What the index does not hold
 * (addresses, the thread that freed a block, thread and module events)
 * only `dump` shows, and dump reads the trace.
 */
#include "analyze/index_scan.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/curve.h"
#include "analyze/digest.h"
#include "analyze/view.h"
#include "common/bitset.h"
#include "common/parallel.h"
#include "memtally/errors.h"

#define ALL_COLUMNS ((1u << MTL_IXA_COLUMNS) - 1)
#define COL(k) (1u << MTL_IXA_##k)
#define FCOL(k) (1u << MTL_IXF_##k)

/* The block columns that give what needs (scan.h's MTL_NEED_*) asks. */
static unsigned block_columns(unsigned needs)
{
    if (!needs)
        return ALL_COLUMNS;
    unsigned m = 0;
    if (needs & MTL_NEED_ALLOC_TIME)
        m |= COL(TIME);
    if (needs & MTL_NEED_FREE_TIME)
        m |= COL(TIME) | COL(LIFE);
    if (needs & MTL_NEED_SIZE)
        m |= COL(SIZE);
    if (needs & MTL_NEED_STACK)
        m |= COL(STACK);
    if (needs & MTL_NEED_THREAD)
        m |= COL(THREAD);
    if (needs & MTL_NEED_FLAGS)
        m |= COL(FLAGS);
    if (needs & MTL_NEED_TAG)
        m |= COL(TAG);
    return m;
}

struct ix_scan {
    const struct mtl_index *ix;
    const struct mtl_ix_summary *sum;
    const struct mtl_defs *d;
    struct mtl_view *v;
    const struct mtl_filter *f;
    unsigned threads;            /* cores a query may use */
    int at_alloc, at_free, on_stacks, filtering;
    unsigned filter_columns;     /* what deciding needs */
    uint8_t *stack_ok;           /* per stack node: passes --inside, --not-inside */
    uint8_t *tag_ok;             /* per type tag (string id): passes --type */
    uint8_t *thread_ok;          /* per thread index: passes --thread */
};

static inline uint64_t free_time(uint64_t alloc_us, uint64_t life)
{
    return life ? alloc_us + life - 1 : MTL_NEVER;
}

/* Decides --inside and --not-inside for every stack at once: a node
 * matches a pattern when a frame of its own matches it or its parent
 * matches, so one pass over the nodes (parents come first) settles all,
 * each distinct function matched against each pattern once.  Afterwards
 * stack_ok is read-only: the threads of a query share it. */
static int settle_stacks(struct ix_scan *s)
{
    const struct mtl_filter *f = s->f;
    size_t np = f->ninside + f->nnot_inside;
    uint32_t nnodes = s->d->nnodes;
    uint64_t *mask = calloc(nnodes ? nnodes : 1, sizeof *mask);
    uint64_t *fn_mask = NULL;        /* per function id: patterns + 1, 0 unknown */
    size_t fn_cap = 0;
    int rc = mask ? 0 : MTL_ENOMEM;
    uint64_t all_inside = f->ninside == 64 ? ~0ull : (1ull << f->ninside) - 1;
    for (uint32_t id = 1; rc == 0 && id < nnodes; id++) {
        uint32_t first, n;
        if ((rc = mtl_view_node(s->v, id, &first, &n)) < 0)
            break;
        uint64_t m = mask[s->d->parent[id]];
        for (uint32_t i = first; i < first + n; i++) {
            uint32_t fid = mtl_view_location(s->v, i)->function_id;
            if (fid >= fn_cap) {
                size_t cap = fn_cap ? fn_cap : 1024;
                while (cap <= fid)
                    cap *= 2;
                uint64_t *p = realloc(fn_mask, cap * sizeof *p);
                if (!p) {
                    rc = MTL_ENOMEM;
                    break;
                }
                memset(p + fn_cap, 0, (cap - fn_cap) * sizeof *p);
                fn_mask = p;
                fn_cap = cap;
            }
            if (!fn_mask[fid]) {
                uint64_t bits = 0;
                for (size_t k = 0; k < np; k++) {
                    const char *pat = k < f->ninside ? f->inside[k]
                                                     : f->not_inside[k - f->ninside];
                    if (mtl_view_location_matches(s->v, i, pat))
                        bits |= 1ull << k;
                }
                fn_mask[fid] = bits + 1;
            }
            m |= fn_mask[fid] - 1;
        }
        mask[id] = m;
    }
    for (uint32_t id = 0; rc == 0 && id < nnodes; id++)
        s->stack_ok[id] = (uint8_t)((mask[id] & all_inside) == all_inside &&
                                    !(mask[id] >> f->ninside));
    free(mask);
    free(fn_mask);
    return rc;
}

static int start_scan(struct ix_scan *s, const struct mtl_index *ix, const struct mtl_defs *d,
                      struct mtl_view *v, const struct mtl_filter *f, unsigned threads)
{
    memset(s, 0, sizeof *s);
    s->ix = ix;
    s->sum = mtl_index_summary(ix);
    s->d = d;
    s->v = v;
    s->f = f;
    s->threads = threads ? threads : 1;
    s->on_stacks = mtl_filter_on_stacks(f);
    s->at_free = !mtl_filter_decidable_at_alloc(f);
    s->at_alloc = f->size.set || f->allocated.set || f->thread_set || f->type;
    s->filtering = s->on_stacks || s->at_free || s->at_alloc;
    if (f->allocated.set || s->at_free)
        s->filter_columns |= COL(TIME);
    if (s->at_free)
        s->filter_columns |= COL(LIFE);
    if (f->temporary)
        s->filter_columns |= COL(FLAGS);
    if (f->size.set)
        s->filter_columns |= COL(SIZE);
    if (f->thread_set) {
        s->filter_columns |= COL(THREAD);
        if (!(s->thread_ok = calloc(d->nthreads + 1, 1)))
            return MTL_ENOMEM;
        for (uint32_t t = 0; t < d->nthreads; t++)
            s->thread_ok[t] = f->thread == (f->thread_is_index ? t : d->threads[t].tid);
    }
    if (f->type) {
        s->filter_columns |= COL(TAG);
        if (!(s->tag_ok = calloc((size_t)d->nstrings + 1, 1)))
            return MTL_ENOMEM;
        for (uint32_t t = 0; t <= d->nstrings; t++)
            s->tag_ok[t] = (uint8_t)mtl_filter_type_passes(f, t ? mtl_defs_string(d, t) : NULL);
    }
    if (s->on_stacks) {
        s->filter_columns |= COL(STACK);
        if (!(s->stack_ok = malloc(d->nnodes ? d->nnodes : 1)))
            return MTL_ENOMEM;
        return settle_stacks(s);
    }
    return 0;
}

static void finish(struct ix_scan *s)
{
    free(s->stack_ok);
    free(s->tag_ok);
    free(s->thread_ok);
}

/* Whether row i of a decoded chunk (with s->filter_columns) passes. */
static inline int row_passes(const struct ix_scan *s, const uint64_t *const col[], size_t i)
{
    const struct mtl_filter *f = s->f;
    if (f->size.set && !mtl_range_has(&f->size, col[MTL_IXA_SIZE][i]))
        return 0;
    if (f->allocated.set && !mtl_range_has(&f->allocated, col[MTL_IXA_TIME][i]))
        return 0;
    if (f->thread_set && !s->thread_ok[col[MTL_IXA_THREAD][i]])
        return 0;
    if (f->type) {
        uint64_t tag = col[MTL_IXA_TAG][i];
        if (tag > s->d->nstrings || !s->tag_ok[tag])
            return 0;
    }
    if (s->at_free) {
        uint64_t a = col[MTL_IXA_TIME][i];
        if (!mtl_filter_at_free(f, a, free_time(a, col[MTL_IXA_LIFE][i]), s->sum->end_us))
            return 0;
        if (f->temporary && !(col[MTL_IXA_FLAGS][i] & MTL_IX_TEMPORARY))
            return 0;
    }
    return !s->on_stacks || s->stack_ok[col[MTL_IXA_STACK][i]];
}

/* The block of row i from the columns decoded (the others left 0). */
static void fill(const struct ix_scan *s, const uint64_t *const col[], size_t i,
                 uint64_t block, struct mtl_block *b)
{
    memset(b, 0, sizeof *b);
    b->ordinal = block;
    b->alloc_seq = b->free_seq = MTL_NEVER;
    b->free_us = MTL_NEVER;
    if (col[MTL_IXA_TIME])
        b->alloc_us = col[MTL_IXA_TIME][i];
    if (col[MTL_IXA_LIFE])
        b->free_us = free_time(b->alloc_us, col[MTL_IXA_LIFE][i]);
    if (col[MTL_IXA_STACK])
        b->stack = (uint32_t)col[MTL_IXA_STACK][i];
    if (col[MTL_IXA_THREAD])
        b->thread = (uint32_t)col[MTL_IXA_THREAD][i];
    if (col[MTL_IXA_TAG])
        b->tag = (uint32_t)col[MTL_IXA_TAG][i];
    if (col[MTL_IXA_FLAGS]) {
        b->temporary = (col[MTL_IXA_FLAGS][i] & MTL_IX_TEMPORARY) != 0;
        b->free_lost = (col[MTL_IXA_FLAGS][i] & MTL_IX_FREE_LOST) != 0;
    }
    if (col[MTL_IXA_SIZE]) {
        b->size = col[MTL_IXA_SIZE][i];
        mtl__weights(s->d->info.mode, s->d->info.sample_rate, b->size, &b->weight_count,
                     &b->weight_bytes);
    }
}

/* Whether any bit of block chunk c is set in bits. */
static int chunk_any(const struct mtl_bitset *bits, uint64_t c)
{
    uint64_t w0 = c * MTL_IX_CHUNK / 64;
    for (uint64_t w = w0; w < w0 + MTL_IX_CHUNK / 64 && w < bits->nwords; w++)
        if (bits->w[w])
            return 1;
    return 0;
}

/* A chunk of block rows, decoded with the columns asked for: what the
 * queries below do with each. */
typedef int (*chunk_fn)(void *arg, const uint64_t *const col[], size_t n, uint64_t first);

/* Calls fn for block chunks k, k + step, ... (decoded with the columns of
 * mask), but those none of whose blocks are in only, when only is set.
 * Stops at the first non-zero answer, which it returns. */
static int each_chunk(const struct ix_scan *s, uint64_t k, uint64_t step, unsigned mask,
                      const struct mtl_bitset *only, chunk_fn fn, void *arg)
{
    struct mtl_ix_cursor *cur;
    int rc = mtl_ix_cursor_open(&cur, s->ix);
    for (uint64_t c = k; rc == 0 && c < s->sum->nachunks; c += step) {
        if (only && !chunk_any(only, c))
            continue; /* no block asked for: not decoded */
        const uint64_t *col[MTL_IXA_COLUMNS];
        size_t n;
        uint64_t first;
        if ((rc = mtl_ix_blocks(cur, c, mask, col, &n, &first)) == 0)
            rc = fn(arg, col, n, first);
    }
    mtl_ix_cursor_close(cur);
    return rc;
}

/* ---- the general scan, on one thread ------------------------------------- */

struct blocks_out {
    const struct ix_scan *s;
    int (*block)(void *arg, const struct mtl_block *b);
    void *arg;
};

static int blocks_chunk(void *arg, const uint64_t *const col[], size_t n, uint64_t first)
{
    const struct blocks_out *o = arg;
    for (size_t i = 0; i < n; i++) {
        if (!row_passes(o->s, col, i))
            continue;
        struct mtl_block b;
        fill(o->s, col, i, first + i, &b);
        if (o->block(o->arg, &b) != 0)
            return MTL_ESTOPPED;
    }
    return 0;
}

/* Hands out the blocks that pass, with the columns of mask. */
static int each_block(struct ix_scan *s, unsigned mask,
                      int (*block)(void *arg, const struct mtl_block *b), void *arg)
{
    struct blocks_out o = { s, block, arg };
    return each_chunk(s, 0, 1, mask | s->filter_columns, NULL, blocks_chunk, &o);
}

/* The same on every core, part k on thread k (ops->parts of them at most). */
struct parts_job {
    struct ix_scan *s;
    unsigned mask, n;
    const struct mtl_scan_ops *ops;
    void *arg;
};

struct part_out {
    const struct ix_scan *s;
    const struct mtl_scan_ops *ops;
    void *arg;
    unsigned part;
};

static int part_chunk(void *arg, const uint64_t *const col[], size_t n, uint64_t first)
{
    const struct part_out *o = arg;
    for (size_t i = 0; i < n; i++) {
        if (!row_passes(o->s, col, i))
            continue;
        struct mtl_block b;
        fill(o->s, col, i, first + i, &b);
        if (o->ops->part_block(o->arg, o->part, &b) != 0)
            return MTL_ESTOPPED;
    }
    return 0;
}

static int part_share(void *arg, unsigned k)
{
    struct parts_job *j = arg;
    struct part_out o = { j->s, j->ops, j->arg, k };
    return each_chunk(j->s, k, j->n, j->mask | j->s->filter_columns, NULL, part_chunk, &o);
}

static int each_block_in_parts(struct ix_scan *s, unsigned mask,
                               const struct mtl_scan_ops *ops, void *arg)
{
    unsigned n = s->threads < ops->parts ? s->threads : ops->parts;
    if (n > MTL_MAX_THREADS)
        n = MTL_MAX_THREADS;
    struct parts_job j = { s, mask, n ? n : 1, ops, arg };
    return mtl_parallel(j.n, part_share, &j);
}

struct decide_job {
    struct ix_scan *s;
    struct mtl_bitset *pass;
};

static int decide_chunk(void *arg, const uint64_t *const col[], size_t n, uint64_t first)
{
    struct decide_job *j = arg;
    /* A chunk's bits are words of their own: no other thread writes them. */
    for (size_t i = 0; i < n; i++)
        if (row_passes(j->s, col, i))
            j->pass->w[(first + i) / 64] |= 1ull << ((first + i) % 64);
    return 0;
}

static int decide_share(void *arg, unsigned k)
{
    struct decide_job *j = arg;
    return each_chunk(j->s, k, j->s->threads, j->s->filter_columns, NULL, decide_chunk, j);
}

static int decide(struct ix_scan *s, struct mtl_bitset *pass)
{
    if (mtl_bitset_reserve(pass, s->sum->nblocks) < 0)
        return MTL_ENOMEM;
    if (!s->filtering) {
        for (uint64_t i = 0; i < s->sum->nblocks; i++)
            pass->w[i / 64] |= 1ull << (i % 64);
        return 0;
    }
    struct decide_job j = { s, pass };
    return mtl_parallel(s->threads, decide_share, &j);
}

/* Replays allocations and frees in trace order through event(), with the
 * RSS samples between them by time.  A free's block has its number, size
 * and free time only. */
static int replay(struct ix_scan *s, const struct mtl_bitset *pass, unsigned needs,
                  int (*event)(void *arg, const struct mtl_event *ev,
                               const struct mtl_block *b, int passes),
                  void *arg)
{
    const struct mtl_ix_summary *sum = s->sum;
    const uint64_t *acol[MTL_IXA_COLUMNS], *fcol[MTL_IXF_COLUMNS];
    size_t an = 0, ai = 0, fn = 0, fi = 0;
    uint64_t ac = 0, fc = 0, first = 0, r = 0;
    unsigned amask = block_columns(needs) & (COL(TIME) | COL(SIZE) | COL(STACK) | COL(THREAD));
    unsigned fmask = FCOL(BLOCK) | FCOL(TIME) | FCOL(SIZE);
    struct mtl_ix_cursor *acur, *fcur = NULL;
    int rc = mtl_ix_cursor_open(&acur, s->ix);
    if (rc == 0)
        rc = mtl_ix_cursor_open(&fcur, s->ix);
    struct mtl_block b;
    memset(&b, 0, sizeof b);
    for (uint64_t e = 0; rc == 0 && e < sum->nevents; e++) {
        int alloc = (int)(sum->events[e / 64] >> (e % 64) & 1);
        if (alloc) {
            if (ai == an) {
                if (ac >= sum->nachunks) {
                    rc = MTL_ECORRUPT;
                    break;
                }
                if ((rc = mtl_ix_blocks(acur, ac++, amask, acol, &an, &first)) < 0)
                    break;
                ai = 0;
            }
            b.ordinal = first + ai;
            b.size = acol[MTL_IXA_SIZE] ? acol[MTL_IXA_SIZE][ai] : 0;
            b.alloc_us = acol[MTL_IXA_TIME] ? acol[MTL_IXA_TIME][ai] : 0;
            b.free_us = MTL_NEVER; /* not known yet at its allocation */
            b.stack = acol[MTL_IXA_STACK] ? (uint32_t)acol[MTL_IXA_STACK][ai] : 0;
            b.thread = acol[MTL_IXA_THREAD] ? (uint32_t)acol[MTL_IXA_THREAD][ai] : 0;
            b.tag = acol[MTL_IXA_TAG] ? (uint32_t)acol[MTL_IXA_TAG][ai] : 0;
            b.alloc_seq = e;
            b.free_seq = MTL_NEVER;
            ai++;
        } else {
            if (fi == fn) {
                if (fc >= sum->nfchunks) {
                    rc = MTL_ECORRUPT;
                    break;
                }
                if ((rc = mtl_ix_frees(fcur, fc++, fmask, fcol, &fn)) < 0)
                    break;
                fi = 0;
            }
            b.ordinal = fcol[MTL_IXF_BLOCK][fi];
            b.size = fcol[MTL_IXF_SIZE][fi];
            b.free_us = fcol[MTL_IXF_TIME][fi];
            b.alloc_us = 0;
            b.stack = b.thread = b.tag = 0;
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
        for (; r < sum->nrss && sum->rss[r].time_us <= ev.time_us && rc == 0; r++) {
            struct mtl_event rss = { .type = MTL_EV_RSS, .time_us = sum->rss[r].time_us,
                                     .size = sum->rss[r].bytes };
            if (event(arg, &rss, NULL, 0) != 0)
                rc = MTL_ESTOPPED;
        }
        if (rc == 0 && event(arg, &ev, &b, mtl_bitset_test(pass, b.ordinal)) != 0)
            rc = MTL_ESTOPPED;
    }
    for (; rc == 0 && r < sum->nrss; r++) {
        struct mtl_event rss = { .type = MTL_EV_RSS, .time_us = sum->rss[r].time_us,
                                 .size = sum->rss[r].bytes };
        if (event(arg, &rss, NULL, 0) != 0)
            rc = MTL_ESTOPPED;
    }
    mtl_ix_cursor_close(acur);
    mtl_ix_cursor_close(fcur);
    return rc;
}

int mtl__index_scan(const struct mtl_index *ix, const struct mtl_defs *d,
                    struct mtl_view *v, const struct mtl_filter *f, unsigned threads,
                    const struct mtl_scan_ops *ops, void *arg, struct mtl_scan_result *res)
{
    struct ix_scan s;
    struct mtl_bitset pass = MTL_BITSET_INIT;
    int rc = start_scan(&s, ix, d, v, f, threads);
    if (rc == 0 && ops->event && (rc = decide(&s, &pass)) == 0)
        rc = replay(&s, &pass, ops->needs, ops->event, arg);
    if (rc == 0 && ops->block)
        rc = each_block(&s, block_columns(ops->needs), ops->block, arg);
    if (rc == 0 && ops->part_block)
        rc = each_block_in_parts(&s, block_columns(ops->needs), ops, arg);
    if (res) {
        res->allocations = s.sum->nblocks;
        res->end_us = s.sum->end_us;
    }
    mtl_bitset_release(&pass);
    finish(&s);
    return rc;
}

/* ---- sums per (thread, stack), on every core ------------------------------ */

struct sums_job {
    struct ix_scan *s;
    const struct mtl_bitset *only;  /* the blocks to count, or all that pass */
    unsigned mask;
    struct mtl_stackagg agg[MTL_MAX_THREADS];
};

struct sums_out {
    struct sums_job *j;
    struct mtl_stackagg *agg;
};

static int sums_chunk(void *arg, const uint64_t *const col[], size_t n, uint64_t first)
{
    struct sums_out *o = arg;
    const struct ix_scan *s = o->j->s;
    const struct mtl_bitset *only = o->j->only;
    const struct mtl_trace_info *in = &s->d->info;
    int sampled = in->mode == MTL_MODE_SAMPLED, rc = 0;
    const uint64_t *size = col[MTL_IXA_SIZE], *stack = col[MTL_IXA_STACK];
    const uint64_t *thread = col[MTL_IXA_THREAD];
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (only ? !mtl_bitset_test(only, first + i) : !row_passes(s, col, i))
            continue;
        double wc = 1, wb = (double)size[i];
        if (sampled)
            mtl__weights(in->mode, in->sample_rate, size[i], &wc, &wb);
        rc = mtl_stackagg_add(o->agg, thread ? (uint32_t)thread[i] : 0, (uint32_t)stack[i],
                              wc, wb, 0);
    }
    return rc;
}

static int sums_share(void *arg, unsigned k)
{
    struct sums_job *j = arg;
    struct sums_out o = { j, &j->agg[k] };
    return each_chunk(j->s, k, j->s->threads, j->mask, j->only, sums_chunk, &o);
}

/* Sums into out the blocks that pass (or, with only, those of its bits).
 * The threads' sums are added in order.  (In a sampled trace the order of
 * the additions of weights is not the trace's, so the last bits of sums
 * may differ from a scan's.) */
static int sums(struct ix_scan *s, const struct mtl_bitset *only, struct mtl_stackagg *out)
{
    struct sums_job *j = calloc(1, sizeof *j);
    if (!j)
        return MTL_ENOMEM;
    unsigned n = s->threads < MTL_MAX_THREADS ? s->threads : MTL_MAX_THREADS;
    s->threads = n;
    *j = (struct sums_job){ .s = s, .only = only };
    j->mask = COL(SIZE) | COL(STACK) | (out->per_thread ? COL(THREAD) : 0) |
              (only ? 0 : s->filter_columns);
    for (unsigned k = 0; k < n; k++)
        j->agg[k] = (struct mtl_stackagg)MTL_STACKAGG_INIT(out->per_thread);
    int rc = mtl_parallel(n, sums_share, j);
    for (unsigned k = 0; k < n; k++) {
        if (rc == 0)
            rc = mtl_stackagg_merge(out, &j->agg[k]);
        mtl_stackagg_release(&j->agg[k]);
    }
    free(j);
    return rc;
}

/* Sums per (thread, stack) from the index's own, for conditions on threads
 * and stacks only. */
static int stack_sums(struct ix_scan *s, struct mtl_stackagg *out)
{
    for (uint64_t i = 0; i < s->sum->nstack_totals; i++) {
        const struct mtl_ix_stack_total *t = &s->sum->stack_totals[i];
        if ((s->thread_ok && !s->thread_ok[t->thread]) || (s->on_stacks && !s->stack_ok[t->stack]))
            continue;
        int rc = mtl_stackagg_add(out, t->thread, t->stack, t->calls, t->bytes, 0);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int mtl__index_sums(const struct mtl_index *ix, const struct mtl_defs *d, struct mtl_view *v,
                    const struct mtl_filter *f, unsigned threads, struct mtl_stackagg *out)
{
    struct ix_scan s;
    int rc = start_scan(&s, ix, d, v, f, threads);
    /* The index's own sums are per (thread, stack): not split by type. */
    if (rc == 0 && !f->size.set && !f->allocated.set && !f->type && !s.at_free)
        rc = stack_sums(&s, out);
    else if (rc == 0)
        rc = sums(&s, NULL, out);
    finish(&s);
    return rc;
}

/* ---- the blocks live after an event ----------------------------------------- */

struct dead_job {
    struct ix_scan *s;
    _Atomic uint64_t *live;      /* the bitset's words */
    uint64_t nfrees;             /* the frees before the moment */
};

/* Clears the bits of the blocks freed before the moment, from free
 * chunks k, k + n, ... (blocks of different chunks share words: atomic). */
static int dead_share(void *arg, unsigned k)
{
    struct dead_job *j = arg;
    struct ix_scan *s = j->s;
    struct mtl_ix_cursor *cur;
    int rc = mtl_ix_cursor_open(&cur, s->ix);
    for (uint64_t c = k; rc == 0 && c * MTL_IX_CHUNK < j->nfrees; c += s->threads) {
        const uint64_t *col[MTL_IXF_COLUMNS];
        size_t n;
        if ((rc = mtl_ix_frees(cur, c, FCOL(BLOCK), col, &n)) < 0)
            break;
        for (size_t i = 0; i < n && c * MTL_IX_CHUNK + i < j->nfrees; i++) {
            uint64_t b = col[MTL_IXF_BLOCK][i];
            atomic_fetch_and_explicit(&j->live[b / 64], ~(1ull << (b % 64)),
                                      memory_order_relaxed);
        }
    }
    mtl_ix_cursor_close(cur);
    return rc;
}

int mtl__index_live_sums(const struct mtl_index *ix, const struct mtl_defs *d,
                         struct mtl_view *v, const struct mtl_filter *f, uint64_t seq,
                         unsigned threads, struct mtl_stackagg *out)
{
    struct ix_scan s;
    struct mtl_bitset live = MTL_BITSET_INIT;
    int rc = start_scan(&s, ix, d, v, f, threads);
    if (rc == 0)
        rc = decide(&s, &live);
    /* Allocated by then: the first nallocs blocks, nallocs the ones among
     * the first seq + 1 events. */
    uint64_t nevents = seq + 1 < s.sum->nevents ? seq + 1 : s.sum->nevents, nallocs = 0;
    for (uint64_t w = 0; rc == 0 && w * 64 < nevents; w++) {
        uint64_t bits = s.sum->events[w];
        if (w * 64 + 64 > nevents)
            bits &= (1ull << (nevents - w * 64)) - 1;
        nallocs += (uint64_t)__builtin_popcountll(bits);
    }
    for (uint64_t i = nallocs; rc == 0 && i < s.sum->nblocks; i++)
        mtl_bitset_clear(&live, i);
    if (rc == 0) {
        struct dead_job j = { &s, (_Atomic uint64_t *)live.w, nevents - nallocs };
        rc = mtl_parallel(s.threads, dead_share, &j);
    }
    if (rc == 0)
        rc = sums(&s, &live, out);
    mtl_bitset_release(&live);
    finish(&s);
    return rc;
}

/* ---- the live curve, in segments, on every core ----------------------------- */

/* What one segment (the allocations of block chunk k and the frees
 * between them) adds to the live bytes. */
struct seg {
    double sum;                  /* of the segment's changes */
    double max;                  /* its highest prefix, when has_max */
    uint64_t max_seq, max_us;
    int has_max;
    uint32_t *bucket;            /* buckets whose last event is here, in order */
    double *prefix;              /* the prefix after that event */
    size_t nb, cap;
};

struct curve_job {
    struct ix_scan *s;
    const struct mtl_bitset *pass;   /* NULL: every block passes */
    const uint64_t *start;           /* event number of each chunk's first allocation */
    struct seg *segs;
    struct mtl_curve *c;
    double (*alloc_bytes)[MTL_CURVE_FINE], (*alloc_calls)[MTL_CURVE_FINE]; /* per share */
};

static int seg_note(struct seg *g, uint32_t bucket, double prefix)
{
    if (g->nb && g->bucket[g->nb - 1] == bucket) {
        g->prefix[g->nb - 1] = prefix;
        return 0;
    }
    if (g->nb == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        uint32_t *b = realloc(g->bucket, cap * sizeof *b);
        if (!b)
            return MTL_ENOMEM;
        g->bucket = b;
        double *p = realloc(g->prefix, cap * sizeof *p);
        if (!p)
            return MTL_ENOMEM;
        g->prefix = p;
        g->cap = cap;
    }
    g->bucket[g->nb] = bucket;
    g->prefix[g->nb++] = prefix;
    return 0;
}

static int walk_segment(struct curve_job *j, unsigned share, uint64_t k,
                        struct mtl_ix_cursor *acur, struct mtl_ix_cursor *fcur)
{
    struct ix_scan *s = j->s;
    const struct mtl_ix_summary *sum = s->sum;
    const struct mtl_trace_info *in = &s->d->info;
    int sampled = in->mode == MTL_MODE_SAMPLED, buckets = j->c->buckets;
    uint64_t width = j->c->width_us;
    struct seg *g = &j->segs[k];
    const uint64_t *acol[MTL_IXA_COLUMNS], *fcol[MTL_IXF_COLUMNS];
    size_t an, fn = 0, fi = 0;
    uint64_t first;
    int rc = mtl_ix_blocks(acur, k, COL(SIZE) | COL(TIME), acol, &an, &first);
    if (rc < 0)
        return rc;
    uint64_t e0 = j->start[k], e1 = j->start[k + 1];
    uint64_t f = e0 - first;              /* the frees before the segment */
    uint64_t fc = f / MTL_IX_CHUNK;
    unsigned fmask = FCOL(SIZE) | (j->pass ? FCOL(BLOCK) : 0) | (buckets ? FCOL(TIME) : 0);
    size_t ai = 0;
    double prefix = 0;
    for (uint64_t e = e0; e < e1; e++) {
        int alloc = (int)(sum->events[e / 64] >> (e % 64) & 1);
        uint64_t size, t, block;
        if (alloc) {
            if (ai >= an)
                return MTL_ECORRUPT;
            block = first + ai;
            size = acol[MTL_IXA_SIZE][ai];
            t = acol[MTL_IXA_TIME][ai];
            ai++;
        } else {
            if (fi == fn) {
                if (fc >= sum->nfchunks)
                    return MTL_ECORRUPT;
                if ((rc = mtl_ix_frees(fcur, fc, fmask, fcol, &fn)) < 0)
                    return rc;
                fi = fc == f / MTL_IX_CHUNK ? f % MTL_IX_CHUNK : 0;
                fc++;
            }
            block = fcol[MTL_IXF_BLOCK] ? fcol[MTL_IXF_BLOCK][fi] : 0;
            size = fcol[MTL_IXF_SIZE][fi];
            t = fcol[MTL_IXF_TIME] ? fcol[MTL_IXF_TIME][fi] : 0;
            fi++;
        }
        if (j->pass && !mtl_bitset_test(j->pass, block))
            continue;
        double wc = 1, wb = (double)size;
        if (sampled)
            mtl__weights(in->mode, in->sample_rate, size, &wc, &wb);
        uint64_t bk = t / width;
        if (buckets && bk >= MTL_CURVE_FINE)
            return MTL_ECORRUPT;
        if (alloc) {
            prefix += wb;
            if (buckets) {
                j->alloc_bytes[share][bk] += wb;
                j->alloc_calls[share][bk] += wc;
            }
            if (!g->has_max || prefix > g->max) {
                g->max = prefix;
                g->max_seq = e;
                g->max_us = t;
                g->has_max = 1;
            }
        } else {
            prefix -= wb;
        }
        if (buckets && (rc = seg_note(g, (uint32_t)bk, prefix)) < 0)
            return rc;
    }
    g->sum = prefix;
    return 0;
}

static int curve_share(void *arg, unsigned k)
{
    struct curve_job *j = arg;
    struct mtl_ix_cursor *acur = NULL, *fcur = NULL;
    int rc = mtl_ix_cursor_open(&acur, j->s->ix);
    if (rc == 0)
        rc = mtl_ix_cursor_open(&fcur, j->s->ix);
    for (uint64_t c = k; rc == 0 && c < j->s->sum->nachunks; c += j->s->threads)
        rc = walk_segment(j, k, c, acur, fcur);
    mtl_ix_cursor_close(acur);
    mtl_ix_cursor_close(fcur);
    return rc;
}

/* The event number of each block chunk's first allocation, and the number
 * of events after the last (start[nachunks]). */
static int chunk_starts(const struct ix_scan *s, uint64_t **out)
{
    const struct mtl_ix_summary *sum = s->sum;
    uint64_t *start = malloc((sum->nachunks + 1) * sizeof *start);
    if (!start)
        return MTL_ENOMEM;
    uint64_t seen = 0, k = 0;
    for (uint64_t w = 0; w * 64 < sum->nevents && k < sum->nachunks; w++) {
        uint64_t bits = sum->events[w];
        if (w * 64 + 64 > sum->nevents)
            bits &= (1ull << (sum->nevents - w * 64)) - 1;
        uint64_t ones = (uint64_t)__builtin_popcountll(bits);
        /* Does chunk k start at an allocation in this word? */
        while (k < sum->nachunks && k * MTL_IX_CHUNK < seen + ones) {
            uint64_t need = k * MTL_IX_CHUNK - seen, b = bits;
            for (uint64_t i = 0; i < need; i++)
                b &= b - 1;
            start[k++] = w * 64 + (uint64_t)__builtin_ctzll(b);
        }
        seen += ones;
    }
    if (k != sum->nachunks) {
        free(start);
        return MTL_ECORRUPT;
    }
    start[sum->nachunks] = sum->nevents;
    *out = start;
    return 0;
}

/* ---- the buckets of the curve without its peak, on every core ----------- */

/* What one thread adds up: allocations by the bucket of their time, frees
 * by the bucket of theirs. */
struct bucket_sums {
    double alloc_bytes[MTL_CURVE_FINE], alloc_calls[MTL_CURVE_FINE];
    double freed[MTL_CURVE_FINE];
    uint8_t event[MTL_CURVE_FINE];
};

struct buckets_job {
    struct ix_scan *s;
    uint64_t width_us;
    struct bucket_sums *part;
};

struct buckets_out {
    const struct buckets_job *j;
    struct bucket_sums *b;
};

static int buckets_chunk(void *arg, const uint64_t *const col[], size_t n, uint64_t first)
{
    (void)first;
    struct buckets_out *o = arg;
    const struct ix_scan *s = o->j->s;
    const struct mtl_trace_info *in = &s->d->info;
    uint64_t width = o->j->width_us;
    struct bucket_sums *b = o->b;
    for (size_t i = 0; i < n; i++) {
        if (s->filtering && !row_passes(s, col, i))
            continue;
        uint64_t a = col[MTL_IXA_TIME][i], free_us = free_time(a, col[MTL_IXA_LIFE][i]);
        uint64_t ab = a / width;
        if (ab >= MTL_CURVE_FINE || (free_us != MTL_NEVER && free_us / width >= MTL_CURVE_FINE))
            return MTL_ECORRUPT; /* past the trace's end */
        double wc, wb;
        mtl__weights(in->mode, in->sample_rate, col[MTL_IXA_SIZE][i], &wc, &wb);
        b->alloc_bytes[ab] += wb;
        b->alloc_calls[ab] += wc;
        b->event[ab] = 1;
        if (free_us != MTL_NEVER) {
            b->freed[free_us / width] += wb;
            b->event[free_us / width] = 1;
        }
    }
    return 0;
}

static int buckets_share(void *arg, unsigned k)
{
    struct buckets_job *j = arg;
    struct buckets_out o = { j, &j->part[k] };
    unsigned mask = COL(TIME) | COL(LIFE) | COL(SIZE) | j->s->filter_columns;
    return each_chunk(j->s, k, j->s->threads, mask, NULL, buckets_chunk, &o);
}

/* The buckets of c: what was live at the end of a bucket is what was
 * allocated up to then less what was freed up to then, so the blocks can
 * be added up in any order, on every core, instead of walking the events
 * in order as the peak needs. */
static int buckets(struct ix_scan *s, struct mtl_curve *c)
{
    unsigned n = s->threads < MTL_MAX_THREADS ? s->threads : MTL_MAX_THREADS;
    s->threads = n;
    struct buckets_job j = { s, c->width_us, calloc(n, sizeof *j.part) };
    if (!j.part)
        return MTL_ENOMEM;
    int rc = mtl_parallel(n, buckets_share, &j);
    double allocated = 0, freed = 0;
    for (size_t i = 0; rc == 0 && i < MTL_CURVE_FINE; i++) {
        int event = 0;
        for (unsigned k = 0; k < n; k++) {
            c->b[i].alloc_bytes += j.part[k].alloc_bytes[i];
            c->b[i].alloc_calls += j.part[k].alloc_calls[i];
            allocated += j.part[k].alloc_bytes[i];
            freed += j.part[k].freed[i];
            event |= j.part[k].event[i];
        }
        if (event) {
            c->b[i].live = allocated - freed;
            c->b[i].has_live = 1;
        }
    }
    free(j.part);
    return rc;
}

/* ---- every view of a filter at once, on every core ----------------------- */

struct digest_job {
    struct ix_scan *s;
    struct mtl_digest *part[MTL_MAX_THREADS];
};

struct digest_out {
    const struct ix_scan *s;
    struct mtl_digest *g;
};

static int digest_chunk(void *arg, const uint64_t *const col[], size_t n, uint64_t first)
{
    (void)first;
    struct digest_out *o = arg;
    const struct ix_scan *s = o->s;
    const struct mtl_trace_info *in = &s->d->info;
    struct mtl_digest *g = o->g;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (s->filtering && !row_passes(s, col, i))
            continue;
        uint64_t a = col[MTL_IXA_TIME][i], life = col[MTL_IXA_LIFE][i];
        uint64_t free_us = free_time(a, life), ab = a / g->width_us;
        if (ab >= MTL_CURVE_FINE || a / g->life_width_us >= MTL_DIGEST_LIFE_COLS ||
            (free_us != MTL_NEVER && free_us / g->width_us >= MTL_CURVE_FINE))
            return MTL_ECORRUPT; /* past the trace's end */
        double wc, wb;
        mtl__weights(in->mode, in->sample_rate, col[MTL_IXA_SIZE][i], &wc, &wb);
        rc = mtl_stackagg_add(&g->sums, (uint32_t)col[MTL_IXA_THREAD][i],
                              (uint32_t)col[MTL_IXA_STACK][i], wc, wb, 0);
        g->alloc[ab].bytes += wb;
        g->alloc[ab].calls += wc;
        g->event[ab] = 1;
        g->calls += wc;
        g->bytes += wb;
        struct mtl_digest_cell *cell;
        if (free_us == MTL_NEVER) {
            cell = &g->live[a / g->life_width_us];
        } else {
            size_t fb = (size_t)(free_us / g->width_us);
            g->freed[fb] += wb;
            g->event[fb] = 1;
            cell = &g->life[(size_t)mtl_digest_life_row(free_us - a) * MTL_DIGEST_LIFE_COLS +
                            a / g->life_width_us];
        }
        cell->calls += wc;
        cell->bytes += wb;
    }
    return rc;
}

static int digest_share(void *arg, unsigned k)
{
    struct digest_job *j = arg;
    struct digest_out o = { j->s, j->part[k] };
    unsigned mask = COL(TIME) | COL(LIFE) | COL(SIZE) | COL(STACK) | COL(THREAD) |
                    j->s->filter_columns;
    return each_chunk(j->s, k, j->s->threads, mask, NULL, digest_chunk, &o);
}

static void add_cells(struct mtl_digest_cell *to, const struct mtl_digest_cell *from, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        to[i].calls += from[i].calls;
        to[i].bytes += from[i].bytes;
    }
}

static void digest_add(struct mtl_digest *to, const struct mtl_digest *from)
{
    add_cells(to->alloc, from->alloc, MTL_CURVE_FINE);
    add_cells(to->life, from->life, MTL_DIGEST_LIFE_ROWS * MTL_DIGEST_LIFE_COLS);
    add_cells(to->live, from->live, MTL_DIGEST_LIFE_COLS);
    for (size_t i = 0; i < MTL_CURVE_FINE; i++) {
        to->freed[i] += from->freed[i];
        to->event[i] |= from->event[i];
    }
    to->calls += from->calls;
    to->bytes += from->bytes;
}

int mtl__index_digest(const struct mtl_index *ix, const struct mtl_defs *d, struct mtl_view *v,
                      const struct mtl_filter *f, unsigned threads, struct mtl_digest *out)
{
    struct ix_scan s;
    struct digest_job j = { &s, { NULL } };
    int rc = start_scan(&s, ix, d, v, f, threads);
    if (s.threads > MTL_MAX_THREADS)
        s.threads = MTL_MAX_THREADS;
    out->width_us = mtl_curve_width(s.sum->end_us);
    out->life_width_us = MTL_CURVE_FIRST_WIDTH;
    while (s.sum->end_us / out->life_width_us >= MTL_DIGEST_LIFE_COLS)
        out->life_width_us *= 2;
    out->sums = (struct mtl_stackagg)MTL_STACKAGG_INIT(1);
    for (unsigned k = 0; rc == 0 && k < s.threads; k++) {
        if (!(j.part[k] = calloc(1, sizeof *j.part[k]))) {
            rc = MTL_ENOMEM;
            break;
        }
        j.part[k]->width_us = out->width_us;
        j.part[k]->life_width_us = out->life_width_us;
        j.part[k]->sums = (struct mtl_stackagg)MTL_STACKAGG_INIT(1);
    }
    if (rc == 0)
        rc = mtl_parallel(s.threads, digest_share, &j);
    /* The threads' parts are added in order, as sums() does. */
    for (unsigned k = 0; k < s.threads; k++) {
        if (rc == 0 && j.part[k]) {
            digest_add(out, j.part[k]);
            rc = mtl_stackagg_merge(&out->sums, &j.part[k]->sums);
        }
        if (j.part[k])
            mtl_digest_release(j.part[k]);
        free(j.part[k]);
    }
    finish(&s);
    return rc;
}

int mtl__index_rss(const struct mtl_index *ix, struct mtl_curve *c)
{
    const struct mtl_ix_summary *sum = mtl_index_summary(ix);
    for (uint64_t r = 0; r < sum->nrss; r++) {
        uint64_t bk = sum->rss[r].time_us / c->width_us;
        if (bk >= MTL_CURVE_FINE)
            return MTL_ECORRUPT; /* past the trace's end */
        c->b[bk].rss = sum->rss[r].bytes;
        c->b[bk].has_rss = 1;
    }
    return 0;
}

int mtl__index_curve(const struct mtl_index *ix, const struct mtl_defs *d, struct mtl_view *v,
                     const struct mtl_filter *f, unsigned threads, struct mtl_curve *c)
{
    struct ix_scan s;
    struct mtl_bitset pass = MTL_BITSET_INIT;
    struct curve_job j = { 0 };
    int rc = start_scan(&s, ix, d, v, f, threads);
    if (s.threads > MTL_MAX_THREADS)
        s.threads = MTL_MAX_THREADS;
    if (c->buckets)
        c->width_us = mtl_curve_width(s.sum->end_us);
    if (rc == 0 && c->buckets && c->no_peak) {
        rc = buckets(&s, c);
        goto rss;
    }
    if (rc == 0 && s.filtering)
        rc = decide(&s, &pass);
    if (rc == 0)
        rc = chunk_starts(&s, (uint64_t **)&j.start);
    j.s = &s;
    j.pass = s.filtering ? &pass : NULL;
    j.c = c;
    if (rc == 0 && (!(j.segs = calloc(s.sum->nachunks + 1, sizeof *j.segs)) ||
                    !(j.alloc_bytes = calloc(s.threads, sizeof *j.alloc_bytes)) ||
                    !(j.alloc_calls = calloc(s.threads, sizeof *j.alloc_calls))))
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = mtl_parallel(s.threads, curve_share, &j);
    /* Join the segments in order. */
    double running = 0;
    for (uint64_t k = 0; rc == 0 && k < s.sum->nachunks; k++) {
        const struct seg *g = &j.segs[k];
        if (g->has_max && running + g->max > c->peak) {
            c->peak = running + g->max;
            c->peak_seq = g->max_seq;
            c->peak_us = g->max_us;
            c->found = 1;
        }
        for (size_t i = 0; c->buckets && i < g->nb; i++) {
            c->b[g->bucket[i]].live = running + g->prefix[i];
            c->b[g->bucket[i]].has_live = 1;
        }
        running += g->sum;
    }
    for (unsigned k = 0; rc == 0 && c->buckets && k < s.threads; k++)
        for (size_t i = 0; i < MTL_CURVE_FINE; i++) {
            c->b[i].alloc_bytes += j.alloc_bytes[k][i];
            c->b[i].alloc_calls += j.alloc_calls[k][i];
        }
rss:
    if (rc == 0 && c->buckets)
        rc = mtl__index_rss(ix, c);
    for (uint64_t k = 0; j.segs && k < s.sum->nachunks; k++) {
        free(j.segs[k].bucket);
        free(j.segs[k].prefix);
    }
    free(j.segs);
    free(j.alloc_bytes);
    free(j.alloc_calls);
    free((void *)j.start);
    mtl_bitset_release(&pass);
    finish(&s);
    return rc;
}
