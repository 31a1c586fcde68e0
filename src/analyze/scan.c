/* scan.c: see scan.h. */
#include "analyze/scan.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/ptrmap.h"
#include "analyze/view.h"

struct scan {
    const struct mtl_filter *f;
    struct mtl_view *v;
    struct mtl_reader *r;
    const struct mtl_scan_ops *ops;
    void *arg;
    struct mtl_ptrmap live;
    uint64_t allocations, frees;
    uint64_t seq;      /* allocations and frees seen, matched or not */
    uint64_t end_us;
    /* two-pass mode: bit per allocation ordinal */
    uint8_t *bits;
    size_t bits_cap;
    int pass;          /* 1: deciding (no callbacks), 2 or single: reporting */
    int two_pass;
    int at_alloc;      /* blocks reported at their allocation (alloc_only) */
    int alloc_filters; /* any condition to check at allocation */
};

static uint32_t tid_of(const struct mtl_reader *r, uint32_t thread)
{
    const struct mtl_thread *t = mtl_reader_thread(r, thread);
    return t ? t->tid : 0;
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
    b->weight_count = v->weight_count;
    b->weight_bytes = v->weight_bytes;
    b->temporary = free_us != MTL_NEVER && s->allocations == v->ordinal + 1;
}

static int set_bit(struct scan *s, uint64_t ordinal)
{
    size_t byte = (size_t)(ordinal >> 3);
    if (byte >= s->bits_cap) {
        size_t cap = s->bits_cap ? s->bits_cap * 2 : 1 << 16;
        while (cap <= byte)
            cap *= 2;
        uint8_t *b = realloc(s->bits, cap);
        if (!b)
            return -1;
        memset(b + s->bits_cap, 0, cap - s->bits_cap);
        s->bits = b;
        s->bits_cap = cap;
    }
    s->bits[byte] |= (uint8_t)(1u << (ordinal & 7));
    return 0;
}

static int get_bit(const struct scan *s, uint64_t ordinal)
{
    size_t byte = (size_t)(ordinal >> 3);
    return byte < s->bits_cap && (s->bits[byte] >> (ordinal & 7)) & 1;
}

/* A block's fate is known: decide the rest of the filters, report it. */
static int settle(struct scan *s, uint64_t ptr, const struct mtl_ptrmap_val *v,
                  uint64_t free_us)
{
    if (s->pass == 2)
        return 0; /* reported in pass 1's decisions, through events */
    if (!mtl_filter_at_free(s->f, v->time_us, free_us, s->end_us))
        return 0;
    if (s->two_pass && set_bit(s, v->ordinal) < 0)
        return -1;
    struct mtl_block b;
    fill_block(s, &b, ptr, v, free_us);
    return s->ops->block ? s->ops->block(s->arg, &b) : 0;
}

static void report_remaining(uint64_t key, const struct mtl_ptrmap_val *v, void *arg)
{
    struct scan *s = arg;
    if (settle(s, key, v, MTL_NEVER) != 0)
        s->end_us = UINT64_MAX; /* remember that a callback stopped us */
}

static int one_pass(struct scan *s)
{
    struct mtl_event ev;
    int rc;
    uint64_t next_progress = 0;
    unsigned n = 0;
    while ((rc = mtl_reader_next(s->r, &ev)) > 0) {
        if (s->ops->progress && s->pass != 2 && ++n % 65536 == 0) {
            uint64_t at, size;
            mtl_reader_position(s->r, &at, &size);
            if (size && at >= next_progress) {
                s->ops->progress(s->arg, (double)at / (double)size);
                next_progress = at + size / 100;
            }
        }
        if (ev.type == MTL_EV_ALLOC) {
            struct mtl_ptrmap_val v = {
                .size = ev.size, .time_us = ev.time_us, .ordinal = s->allocations,
                .seq = s->seq,
                .stack = ev.stack, .thread = ev.thread,
                .weight_count = ev.weight_count, .weight_bytes = ev.weight_bytes,
            };
            s->allocations++;
            int passes = !s->alloc_filters ||
                         mtl_filter_at_alloc(s->f, ev.size, tid_of(s->r, ev.thread),
                                             ev.thread, ev.time_us);
            if (passes) {
                int p = mtl_view_passes(s->v, ev.stack);
                if (p < 0)
                    return p;
                passes = p;
            }
            if (s->at_alloc) {
                /* Only what is known at allocation: no fill_block. */
                s->seq++;
                if (!passes)
                    continue;
                struct mtl_block b = {
                    .ptr = ev.ptr, .size = ev.size, .alloc_us = ev.time_us,
                    .free_us = MTL_NEVER, .ordinal = v.ordinal, .alloc_seq = v.seq,
                    .free_seq = MTL_NEVER, .stack = ev.stack, .thread = ev.thread,
                    .weight_count = ev.weight_count, .weight_bytes = ev.weight_bytes,
                };
                if ((rc = s->ops->block(s->arg, &b)) != 0)
                    return -1;
                continue;
            }
            /* Only blocks that may pass are followed; the others' frees
             * then look like frees of unknown blocks, which is all they
             * are to the analysis. */
            if (passes) {
                struct mtl_ptrmap_val old;
                int put = mtl_ptrmap_put(&s->live, ev.ptr, &v, &old);
                if (put < 0)
                    return -1;
            } else {
                mtl_ptrmap_take(&s->live, ev.ptr, NULL); /* a lost free */
            }
            if (s->ops->event && s->pass != 1) {
                struct mtl_block b;
                fill_block(s, &b, ev.ptr, &v, MTL_NEVER);
                b.temporary = 0;
                if (s->pass == 2)
                    passes = get_bit(s, v.ordinal);
                if ((rc = s->ops->event(s->arg, &ev, &b, passes)) != 0)
                    return -1;
            }
            s->seq++;
        } else if (ev.type == MTL_EV_FREE && s->at_alloc) {
            s->seq++;
        } else if (ev.type == MTL_EV_FREE) {
            struct mtl_ptrmap_val v;
            int known = mtl_ptrmap_take(&s->live, ev.ptr, &v);
            s->frees += known;
            if (known && (rc = settle(s, ev.ptr, &v, ev.time_us)) != 0)
                return rc < 0 ? rc : -1;
            if (s->ops->event && s->pass != 1) {
                struct mtl_block b;
                int passes = 0;
                if (known) {
                    fill_block(s, &b, ev.ptr, &v, ev.time_us);
                    passes = s->pass == 2 ? get_bit(s, v.ordinal)
                                          : mtl_filter_decidable_at_alloc(s->f);
                }
                if (s->ops->event(s->arg, &ev, known ? &b : NULL, passes) != 0)
                    return -1;
            }
            s->seq++;
        } else if (s->ops->event && s->pass != 1) {
            if (s->ops->event(s->arg, &ev, NULL, 0) != 0)
                return -1;
        }
    }
    if (rc < 0)
        return rc;
    s->end_us = mtl_reader_info(s->r)->duration_us;
    if (s->pass != 2) {
        mtl_ptrmap_each(&s->live, report_remaining, s);
        if (s->end_us == UINT64_MAX)
            return -1;
    }
    return 0;
}

int mtl_scan(const char *path, struct mtl_reader *r, struct mtl_view *v,
             const struct mtl_filter *f, const struct mtl_scan_ops *ops,
             void *arg, struct mtl_scan_result *res)
{
    struct scan s = { .f = f, .v = v, .r = r, .ops = ops, .arg = arg };
    s.two_pass = ops->event && !mtl_filter_decidable_at_alloc(f);
    s.pass = s.two_pass ? 1 : 0;
    s.at_alloc = ops->alloc_only && ops->block && !ops->event &&
                 mtl_filter_decidable_at_alloc(f);
    s.alloc_filters = f->size.set || f->allocated.set || f->thread_set;
    if (s.at_alloc)
        mtl_reader_skip_pointers(r, 1); /* nothing is matched by address */
    /* end_us is needed by --lifetime for blocks never freed, before the
     * end is reached: the duration is known only at the end, so those are
     * settled after the loop (report_remaining). */
    int rc = one_pass(&s);
    struct mtl_reader *r2 = NULL;
    if (rc == 0 && s.two_pass) {
        rc = mtl_reader_open(&r2, path);
        if (rc == 0) {
            mtl_ptrmap_release(&s.live);
            s.r = r2;
            s.pass = 2;
            s.allocations = s.frees = s.seq = 0;
            rc = one_pass(&s);
        }
    }
    if (res) {
        res->allocations = s.allocations;
        res->frees = s.frees;
        res->end_us = mtl_reader_info(r)->duration_us;
    }
    mtl_reader_close(r2);
    mtl_ptrmap_release(&s.live);
    free(s.bits);
    return rc;
}
