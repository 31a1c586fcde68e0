/*
 * blocksums.c: see blocksums.h.
 *
 * Stack ids are handed out in the order stacks are first seen, so a block
 * mostly uses ids close together: a dense table from id to entry serves
 * them without hashing, as stackagg.c does; ids beyond DENSE_MAX (a
 * program with millions of stacks, or a damaged trace) go to a hash map,
 * so that one wild id costs no memory.
 */
#include "trace/blocksums.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "memtally/errors.h"
#include "trace/defs.h"

#define DENSE_MAX (1u << 22)

static int grow_entries(struct mtl_sums_buf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = need > 2 * b->cap ? need : 2 * b->cap;
    uint32_t *s = realloc(b->stack, cap * sizeof *s);
    if (s)
        b->stack = s;
    double *c = s ? realloc(b->calls, cap * sizeof *c) : NULL;
    if (c)
        b->calls = c;
    double *y = c ? realloc(b->bytes, cap * sizeof *y) : NULL;
    if (!y)
        return MTL_ENOMEM;
    b->bytes = y;
    b->cap = cap;
    return 0;
}

/* The entry of stack id in b's table (made if new), or -1 when out of
 * memory. */
static ptrdiff_t entry_of(struct mtl_sums_buf *b, struct mtl_sums_scratch *t, uint32_t id)
{
    uint32_t *slot = NULL;
    uint64_t *far = NULL;
    if (id < DENSE_MAX) {
        if (id >= t->dense_cap &&
            mtl_grow_zeroed((void **)&t->dense, &t->dense_cap, (size_t)id + 1,
                            sizeof *t->dense, 4096) < 0)
            return -1;
        slot = &t->dense[id];
        if (*slot)
            return *slot - 1;
    } else {
        int created;
        if (!(far = mtl_hmap_slot(&t->far, id, &created)))
            return -1;
        if (!created)
            return (ptrdiff_t)*far;
    }
    size_t e = b->out.n;
    if (grow_entries(b, e + 1) < 0) {
        if (far)
            mtl_hmap_take(&t->far, id, NULL);
        return -1;
    }
    b->stack[e] = id;
    b->calls[e] = b->bytes[e] = 0;
    b->out.n++;
    if (slot)
        *slot = (uint32_t)e + 1;
    else
        *far = e;
    if (id > b->out.max_stack)
        b->out.max_stack = id;
    return (ptrdiff_t)e;
}

/* The next number of stream s into *v: 1, or 0 at its end or at a
 * varint that does not parse (then s->bad). */
static inline int next_value(struct mtl_sums_stream *s, uint64_t *v)
{
    if (s->p >= s->end)
        return 0;
    if (*s->p < 0x80) {
        *v = *s->p++; /* most fields fit in one byte */
    } else if (mtl__get_varint(&s->p, s->end, v) < 0) {
        s->bad = 1;
        s->p = s->end;
        return 0;
    }
    s->n++;
    if (s->deltas)
        *v = s->sum += (uint64_t)mtl__unzigzag(*v);
    return 1;
}

void mtl__sums_make(struct mtl_sums_buf *b, struct mtl_sums_scratch *t,
                    struct mtl_sums_stream *size, struct mtl_sums_stream *stack,
                    enum mtl_mode mode, uint64_t rate)
{
    b->out = (struct mtl_block_sums){ .status = 1 };
    size->n = stack->n = 0;
    size->bad = stack->bad = 0;
    /* Room for a stack per byte of sizes (each takes one at least) at
     * once: the pages of what is not used are never touched, where
     * growing by doubling would leave the smaller copies behind. */
    if (grow_entries(b, (size_t)(size->end - size->p)) < 0) {
        b->out.status = MTL_ENOMEM;
        return;
    }
    /* A run of allocations from one stack (a loop's) is summed here
     * before its entry: adding to the entry each time would wait on the
     * addition before, through memory. */
    uint64_t sz, st, run_stack = UINT64_MAX;
    ptrdiff_t e = -1;
    double run_calls = 0, run_bytes = 0;
    for (;;) {
        int has_size = next_value(size, &sz), has_stack = next_value(stack, &st);
        if (!has_size || !has_stack) {
            if (has_size || has_stack)
                b->out.status = 0; /* one stream has more numbers */
            break;
        }
        if (st != run_stack) {
            if (e >= 0) {
                b->calls[e] += run_calls;
                b->bytes[e] += run_bytes;
            }
            run_calls = run_bytes = 0;
            run_stack = st;
            e = st > UINT32_MAX ? -2 : entry_of(b, t, (uint32_t)st);
            if (e < 0) {
                b->out.status = e == -1 ? MTL_ENOMEM : 0;
                break;
            }
        }
        double wc, wb;
        mtl__weights(mode, rate, sz, &wc, &wb);
        run_calls += wc;
        run_bytes += wb;
    }
    if (e >= 0) {
        b->calls[e] += run_calls;
        b->bytes[e] += run_bytes;
    }
    /* What is left is counted, for the reader's check of the block. */
    while (next_value(size, &sz))
        ;
    while (next_value(stack, &st))
        ;
    if (size->bad || stack->bad)
        b->out.status = 0;
    b->out.allocs = size->n;
    /* The tables empty again for the next block, at the cost of this
     * one's stacks rather than of their size. */
    for (size_t i = 0; i < b->out.n; i++)
        if (b->stack[i] < DENSE_MAX)
            t->dense[b->stack[i]] = 0;
    if (t->far.count)
        mtl_hmap_clear(&t->far);
    b->out.stack = b->stack;
    b->out.calls = b->calls;
    b->out.bytes = b->bytes;
}

void mtl__sums_release(struct mtl_sums_buf *b)
{
    free(b->stack);
    free(b->calls);
    free(b->bytes);
    *b = (struct mtl_sums_buf)MTL_SUMS_BUF_INIT;
}

void mtl__sums_scratch_release(struct mtl_sums_scratch *t)
{
    free(t->dense);
    mtl_hmap_release(&t->far);
    *t = (struct mtl_sums_scratch)MTL_SUMS_SCRATCH_INIT;
}
