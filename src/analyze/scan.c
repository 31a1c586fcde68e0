/* scan.c: see scan.h. */
#include "analyze/scan.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/ptrmap.h"
#include "analyze/view.h"
#include "common/bitset.h"
#include "memtally/errors.h"
#include "analyze/stackagg.h"
#include "trace/allocs.h"
#include "trace/blocksums.h"
#include "trace/defs.h"

struct scan {
    const struct mtl_filter *f;
    const struct mtl_scan_input *in;
    struct mtl_reader *r;
    const struct mtl_scan_ops *ops;
    void *arg;
    struct mtl_ptrmap live;
    uint64_t allocations;
    uint64_t seq;      /* allocations and frees seen, matched or not */
    uint64_t end_us;
    struct mtl_bitset passed; /* two-pass mode: bit per allocation ordinal */
    int8_t *stack_ok;  /* per stack: -1 unknown, 0, 1 (inside, not inside) */
    uint32_t stack_ok_cap;
    int8_t *tag_ok;    /* per type tag: -1 unknown, 0, 1 (--type) */
    uint32_t tag_ok_cap;
    int pass;          /* 1: deciding (no callbacks), 2 or single: reporting */
    int two_pass;
    int at_alloc;      /* blocks reported at their allocation (alloc_only) */
    int alloc_filters; /* any condition to check at allocation */
    int stopped;       /* a callback asked to stop */
};

static uint32_t tid_of(const struct mtl_reader *r, uint32_t thread)
{
    const struct mtl_thread *t = mtl_reader_thread(r, thread);
    return t ? t->tid : 0;
}

/* A cache of answers (-1: unknown) grown to hold index i, from first
 * entries, doubling.  0 or MTL_ENOMEM. */
static int grow_unknown(int8_t **t, uint32_t *cap, uint32_t i, uint32_t first)
{
    uint32_t n = *cap ? *cap : first;
    while (n <= i)
        n *= 2;
    int8_t *p = realloc(*t, n);
    if (!p)
        return MTL_ENOMEM;
    memset(p + *cap, -1, n - *cap);
    *t = p;
    *cap = n;
    return 0;
}

/* 1 if a block of type tag passes --type, 0 if not, negative on error;
 * cached per tag (tags are strings defined before the records that use
 * them).  Asked at a block's fate: a TAG record may change its tag. */
static int tag_passes(struct scan *s, uint32_t tag)
{
    if (!s->f->type)
        return 1;
    if (tag >= s->tag_ok_cap && grow_unknown(&s->tag_ok, &s->tag_ok_cap, tag, 64) < 0)
        return MTL_ENOMEM;
    if (s->tag_ok[tag] < 0)
        s->tag_ok[tag] = (int8_t)mtl_filter_type_passes(s->f, tag ? mtl_reader_string(s->r, tag)
                                                                  : NULL);
    return s->tag_ok[tag];
}

/* 1 if the stack passes --inside and --not-inside, 0 if not, negative on
 * error; cached per stack. */
static int stack_passes(struct scan *s, uint32_t stack)
{
    const struct mtl_filter *f = s->f;
    if (!f->ninside && !f->nnot_inside)
        return 1;
    if (stack >= s->stack_ok_cap && grow_unknown(&s->stack_ok, &s->stack_ok_cap, stack, 1024) < 0)
        return MTL_ENOMEM;
    if (s->stack_ok[stack] >= 0)
        return s->stack_ok[stack];
    int ok = 1;
    for (size_t i = 0; ok && i < f->ninside; i++) {
        int m = mtl_view_stack_matches(s->in->v, stack, f->inside[i]);
        if (m < 0)
            return m;
        ok = m;
    }
    for (size_t i = 0; ok && i < f->nnot_inside; i++) {
        int m = mtl_view_stack_matches(s->in->v, stack, f->not_inside[i]);
        if (m < 0)
            return m;
        ok = !m;
    }
    s->stack_ok[stack] = (int8_t)ok;
    return ok;
}

static void fill_block(const struct scan *s, struct mtl_block *b, uint64_t ptr,
                       const struct mtl_ptrmap_val *v, uint64_t free_us)
{
    b->alloc_seq = v->seq;
    b->free_seq = free_us == MTL_NEVER ? MTL_NEVER : s->seq;
    b->ptr = ptr;
    b->size = v->size;
    b->alloc_us = v->time_us;
    b->free_us = free_us;
    b->ordinal = v->ordinal;
    b->stack = v->stack;
    b->thread = v->thread;
    b->tag = v->tag;
    const struct mtl_trace_info *info = mtl_reader_info(s->r);
    mtl__weights(info->mode, info->sample_rate, v->size, &b->weight_count, &b->weight_bytes);
    b->temporary = free_us != MTL_NEVER && s->seq == v->seq + 1;
    b->free_lost = 0;
}

/* Hands a block that passes to ops: added to its sums, or to its callback. */
static int report_block(struct scan *s, const struct mtl_block *b)
{
    if (s->ops->sums)
        return mtl_stackagg_add(s->ops->sums, b->thread, b->stack, b->weight_count,
                                b->weight_bytes, 0);
    if (s->ops->block && s->ops->block(s->arg, b) != 0) {
        s->stopped = 1;
        return MTL_ESTOPPED;
    }
    return 0;
}

/* A block's fate is known: decide the rest of the filters, report it. */
static int settle_as(struct scan *s, uint64_t ptr, const struct mtl_ptrmap_val *v,
                     uint64_t free_us, int lost)
{
    if (s->pass == 2)
        return 0; /* reported in pass 1; pass 2 is for the events */
    if (!mtl_filter_at_free(s->f, v->time_us, free_us, s->end_us))
        return 0;
    int typed = tag_passes(s, v->tag); /* its tag as TAG records left it */
    if (typed <= 0)
        return typed;
    if (s->f->temporary && (lost || free_us == MTL_NEVER || s->seq != v->seq + 1))
        return 0;
    if (s->two_pass && mtl_bitset_set(&s->passed, v->ordinal) < 0)
        return MTL_ENOMEM;
    struct mtl_block b;
    fill_block(s, &b, ptr, v, free_us);
    if (lost) {
        b.temporary = 0;
        b.free_lost = 1;
    }
    return report_block(s, &b);
}

static int settle(struct scan *s, uint64_t ptr, const struct mtl_ptrmap_val *v,
                  uint64_t free_us)
{
    return settle_as(s, ptr, v, free_us, 0);
}

static int settle_lost(struct scan *s, uint64_t ptr, const struct mtl_ptrmap_val *v,
                       uint64_t free_us)
{
    return settle_as(s, ptr, v, free_us, 1);
}

static int call_event(struct scan *s, const struct mtl_event *ev, const struct mtl_block *b,
                      int passes)
{
    if (s->ops->event(s->arg, ev, b, passes) != 0) {
        s->stopped = 1;
        return MTL_ESTOPPED;
    }
    return 0;
}

static void progress(struct scan *s, uint64_t *next)
{
    uint64_t at, size;
    mtl_reader_position(s->r, &at, &size);
    if (size && at >= *next) {
        s->ops->progress(s->arg, (double)at / (double)size);
        *next = at + size / 100;
    }
}

/* The block old at ev's address ends at ev, whose free was not
 * recorded: settled as freed then, and shown to event consumers as a free
 * just before ev (with ev's sequence number, which it does not use up). */
static int lost_free(struct scan *s, const struct mtl_event *ev,
                     const struct mtl_ptrmap_val *old)
{
    int rc;
    if ((rc = settle_lost(s, ev->ptr, old, ev->time_us)) < 0)
        return rc;
    if (s->ops->event && s->pass != 1) {
        struct mtl_event fev = { .type = MTL_EV_FREE, .time_us = ev->time_us,
                                 .thread = ev->thread, .ptr = ev->ptr };
        struct mtl_block b;
        fill_block(s, &b, ev->ptr, old, ev->time_us);
        b.temporary = 0;
        b.free_lost = 1;
        int passes = s->pass == 2 ? mtl_bitset_test(&s->passed, old->ordinal)
                                  : mtl_filter_decidable_at_alloc(s->f);
        if ((rc = call_event(s, &fev, &b, passes)) < 0)
            return rc;
    }
    return 0;
}

static void refresh_defs(struct scan *s)
{
    mtl__reader_defs(s->r, s->in->d);
    if (s->in->defs_read)
        s->in->defs_read(s->in->reopen_arg);
}

static int on_alloc(struct scan *s, const struct mtl_event *ev)
{
    struct mtl_ptrmap_val v = {
        .size = ev->size, .time_us = ev->time_us, .ordinal = s->allocations,
        .seq = s->seq, .stack = ev->stack, .thread = ev->thread, .tag = ev->tag,
    };
    int rc;
    s->allocations++;
    /* The view needs the stack's nodes: the reader's arrays may have grown
     * (and moved) since the definitions were last taken. */
    if (s->in->d && mtl_reader_stack_count(s->r) != s->in->d->nnodes && s->pass != 2)
        refresh_defs(s);
    int passes = !s->alloc_filters ||
                 mtl_filter_at_alloc(s->f, ev->size, tid_of(s->r, ev->thread), ev->thread,
                                     ev->time_us);
    if (passes && (passes = stack_passes(s, ev->stack)) < 0)
        return passes;
    /* An address allocated again without a free between: its free was
     * lost (recording was paused), so the old block ends here. */
    struct mtl_ptrmap_val old;
    if (mtl_ptrmap_take(&s->live, ev->ptr, &old) && (rc = lost_free(s, ev, &old)) < 0)
        return rc;
    /* Only blocks that may pass are followed; the others' frees then look
     * like frees of unknown blocks, which is all they are to the analysis. */
    if (passes && mtl_ptrmap_put(&s->live, ev->ptr, &v, NULL) < 0)
        return MTL_ENOMEM;
    if (s->ops->event && s->pass != 1) {
        struct mtl_block b;
        fill_block(s, &b, ev->ptr, &v, MTL_NEVER);
        b.temporary = 0;
        if (s->pass == 2)
            passes = mtl_bitset_test(&s->passed, v.ordinal);
        if ((rc = call_event(s, ev, &b, passes)) < 0)
            return rc;
    }
    s->seq++;
    return 0;
}

static int on_free(struct scan *s, const struct mtl_event *ev)
{
    struct mtl_ptrmap_val v;
    int rc, known = mtl_ptrmap_take(&s->live, ev->ptr, &v);
    if (known && (rc = settle(s, ev->ptr, &v, ev->time_us)) < 0)
        return rc;
    if (s->ops->event && s->pass != 1) {
        struct mtl_block b;
        int passes = 0;
        if (known) {
            fill_block(s, &b, ev->ptr, &v, ev->time_us);
            passes = s->pass == 2 ? mtl_bitset_test(&s->passed, v.ordinal)
                                  : mtl_filter_decidable_at_alloc(s->f);
        }
        if ((rc = call_event(s, ev, known ? &b : NULL, passes)) < 0)
            return rc;
    }
    s->seq++;
    return 0;
}

struct remaining {
    struct scan *s;
    int rc;
};

static void report_remaining(uint64_t key, const struct mtl_ptrmap_val *v, void *arg)
{
    struct remaining *rem = arg;
    if (rem->rc == 0)
        rem->rc = settle(rem->s, key, v, MTL_NEVER);
}

static int one_pass(struct scan *s)
{
    struct mtl_event ev;
    int rc;
    uint64_t next_progress = 0;
    unsigned n = 0;
    while ((rc = mtl_reader_next(s->r, &ev)) > 0) {
        if (s->ops->progress && s->pass != 2 && ++n % 65536 == 0)
            progress(s, &next_progress);
        if (ev.type == MTL_EV_ALLOC) {
            rc = on_alloc(s, &ev);
        } else if (ev.type == MTL_EV_FREE) {
            rc = on_free(s, &ev);
        } else {
            /* A live block followed takes its new tag (its fate tells it). */
            struct mtl_ptrmap_val v;
            if (ev.type == MTL_EV_TAG && mtl_ptrmap_take(&s->live, ev.ptr, &v)) {
                v.tag = ev.tag;
                if (mtl_ptrmap_put(&s->live, ev.ptr, &v, NULL) < 0)
                    return MTL_ENOMEM;
            }
            /* Threads and modules come with these: the definitions grow. */
            if (s->in->d && s->pass != 2)
                refresh_defs(s);
            if (s->ops->event && s->pass != 1)
                rc = call_event(s, &ev, NULL, 0);
        }
        if (rc < 0)
            return rc;
    }
    if (rc < 0)
        return rc;
    s->end_us = mtl_reader_info(s->r)->duration_us;
    if (s->in->d && s->pass != 2)
        refresh_defs(s);
    if (s->pass != 2) {
        struct remaining rem = { s, 0 };
        mtl_ptrmap_each(&s->live, report_remaining, &rem);
        return rem.rc;
    }
    return 0;
}

/* The scan of blocks reported at their allocation: the reader's batches
 * of allocations, frees not even decoded into events. */
static int alloc_pass(struct scan *s)
{
    struct mtl_allocs *b = malloc(sizeof *b);
    if (!b)
        return MTL_ENOMEM;
    const struct mtl_trace_info *info = mtl_reader_info(s->r);
    const struct mtl_filter *f = s->f;
    struct mtl_stackagg *sums = s->ops->sums;
    uint64_t next_progress = 0;
    int rc;
    while ((rc = mtl__reader_allocs(s->r, b)) > 0) {
        if (s->ops->progress)
            progress(s, &next_progress);
        /* The view needs the batch's stacks: the reader's arrays may have
         * grown (and moved) since the definitions were last taken. */
        if (s->in->d && mtl_reader_stack_count(s->r) != s->in->d->nnodes)
            refresh_defs(s);
        for (size_t i = 0; i < b->n && rc >= 0; i++) {
            uint64_t ordinal = s->allocations++;
            if (s->alloc_filters &&
                !mtl_filter_at_alloc(f, b->size[i], tid_of(s->r, b->thread[i]), b->thread[i],
                                     b->time_us[i]))
                continue;
            int passes = stack_passes(s, b->stack[i]);
            if (passes <= 0) {
                rc = passes;
                continue;
            }
            double wc, wb;
            mtl__weights(info->mode, info->sample_rate, b->size[i], &wc, &wb);
            if (sums) { /* the common case, without a block made */
                rc = mtl_stackagg_add(sums, b->thread[i], b->stack[i], wc, wb, 0);
                continue;
            }
            struct mtl_block blk = {
                .size = b->size[i], .alloc_us = b->time_us[i], .free_us = MTL_NEVER,
                .ordinal = ordinal, .alloc_seq = b->seq[i], .free_seq = MTL_NEVER,
                .stack = b->stack[i], .thread = b->thread[i], .tag = b->tag[i],
                .weight_count = wc, .weight_bytes = wb,
            };
            rc = report_block(s, &blk);
        }
        if (rc < 0)
            break;
    }
    free(b);
    if (rc < 0)
        return rc;
    s->end_us = info->duration_us;
    if (s->in->d)
        refresh_defs(s);
    return 0;
}

/* The scan of sums per stack that need nothing of an allocation but its
 * size and stack (no thread, no time): the reader's per-block sums, made
 * by the workers that decode the blocks, so that this thread adds a few
 * thousand totals per block instead of every allocation. */
static int sums_pass(struct scan *s)
{
    const struct mtl_block_sums *b;
    uint64_t next_progress = 0;
    int rc;
    while ((rc = mtl__reader_alloc_sums(s->r, &b)) > 0) {
        if (s->ops->progress)
            progress(s, &next_progress);
        if (s->in->d && mtl_reader_stack_count(s->r) != s->in->d->nnodes)
            refresh_defs(s);
        s->allocations += b->allocs;
        for (size_t i = 0; i < b->n && rc >= 0; i++) {
            int passes = stack_passes(s, b->stack[i]);
            if (passes > 0)
                rc = mtl_stackagg_add(s->ops->sums, 0, b->stack[i], b->calls[i], b->bytes[i],
                                      0);
            else
                rc = passes;
        }
        if (rc < 0)
            return rc;
    }
    if (rc < 0)
        return rc;
    s->end_us = mtl_reader_info(s->r)->duration_us;
    if (s->in->d)
        refresh_defs(s);
    return 0;
}

int mtl_scan(const struct mtl_scan_input *in, const struct mtl_filter *f,
             const struct mtl_scan_ops *ops, void *arg, struct mtl_scan_result *res)
{
    struct scan s = { .f = f, .in = in, .r = in->r, .ops = ops, .arg = arg };
    s.two_pass = ops->event && !mtl_filter_decidable_at_alloc(f);
    s.pass = s.two_pass ? 1 : 0;
    s.at_alloc = ops->alloc_only && (ops->block || ops->sums) && !ops->event &&
                 mtl_filter_decidable_at_alloc(f);
    s.alloc_filters = f->size.set || f->allocated.set || f->thread_set;
    if (s.at_alloc)
        mtl_reader_skip_pointers(in->r, 1); /* nothing is matched by address */
    /* end_us is needed by --lifetime for blocks never freed, before the
     * end is reached: the duration is known only at the end, so those are
     * settled after the loop (report_remaining). */
    int by_block = s.at_alloc && ops->sums && !ops->sums->per_thread && !ops->block &&
                   !s.alloc_filters && (mtl__reader_heaps(in->r) & MTL_HEAPS_MALLOC);
    int rc = by_block ? sums_pass(&s) : s.at_alloc ? alloc_pass(&s) : one_pass(&s);
    struct mtl_reader *r2 = NULL;
    if (rc == 0 && s.two_pass) {
        rc = in->reopen(in->reopen_arg, &r2);
        if (rc == 0) {
            mtl_ptrmap_release(&s.live);
            s.r = r2;
            s.pass = 2;
            s.allocations = s.seq = 0;
            rc = one_pass(&s);
        }
    }
    if (res) {
        res->allocations = s.allocations;
        res->end_us = mtl_reader_info(in->r)->duration_us;
    }
    mtl_reader_close(r2);
    mtl_ptrmap_release(&s.live);
    mtl_bitset_release(&s.passed);
    free(s.stack_ok);
    free(s.tag_ok);
    return rc;
}
