/*
 * test_blocksums.c: the per-block sums of allocations per stack
 * (src/trace/blocksums.h) and the reader's walk that hands them out
 * (mtl__reader_alloc_sums): first the sums alone (order of first
 * allocation, ids past the dense table, tables empty again for the next
 * block, streams that do not pair up, sampled weights); then, on traces
 * built in memory, the reader's sums against the reader's allocations one
 * by one (mtl__reader_allocs) with 0, 1 and 3 workers: the same totals per
 * stack in the same order, the same allocations, duration and
 * completeness; ALLOC_EX records, stacks defined in later blocks, a trace
 * cut short, a stack used before any block defined it, pointers wanted.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memtally/errors.h"
#include "trace/allocs.h"
#include "common/varint.h"
#include "trace/blocksums.h"
#include "trace/defs.h"
#include "trace_mem.h"

/* ---- the sums alone ---------------------------------------------------- */

static uint8_t size_bytes[256], stack_bytes[256];
static struct mtl_sums_stream size_s, stack_s;

/* Sums n sizes and nstack stacks, written as varints, the way a block
 * holds them; bad_tail: a varint that does not parse after the stacks. */
static const struct mtl_block_sums *sums(struct mtl_sums_buf *b, struct mtl_sums_scratch *t,
                                         const uint64_t *size, size_t n,
                                         const uint64_t *stack, size_t nstack, int bad_tail,
                                         enum mtl_mode mode)
{
    uint8_t *p = size_bytes, *q = stack_bytes;
    for (size_t i = 0; i < n; i++)
        p = mtl__put_varint(p, size[i]);
    for (size_t i = 0; i < nstack; i++)
        q = mtl__put_varint(q, stack[i]);
    if (bad_tail)
        *q++ = 0x80; /* continues past the end */
    size_s = (struct mtl_sums_stream){ .p = size_bytes, .end = p, .n = 99, .bad = 1 };
    stack_s = (struct mtl_sums_stream){ .p = stack_bytes, .end = q, .n = 99, .bad = 1 };
    mtl__sums_make(b, t, &size_s, &stack_s, mode, 16);
    return &b->out;
}

static void check_sums(void)
{
    struct mtl_sums_buf b = MTL_SUMS_BUF_INIT;
    struct mtl_sums_scratch t = MTL_SUMS_SCRATCH_INIT;
    const uint64_t far = (1u << 23) + 7; /* past the dense table */
    uint64_t size[] = { 10, 20, 300, 40, 5 };
    uint64_t stack[] = { 5, 3, 5, far, 3 };
    const struct mtl_block_sums *s = sums(&b, &t, size, 5, stack, 5, 0, MTL_MODE_FULL);
    CHECK_EQ(s->status, 1);
    CHECK_EQ(s->allocs, 5);
    CHECK(size_s.n == 5 && stack_s.n == 5 && !size_s.bad && !stack_s.bad);
    CHECK_EQ(s->n, 3);
    CHECK_EQ(s->stack[0], 5);
    CHECK_EQ(s->stack[1], 3);
    CHECK_EQ(s->stack[2], far);
    CHECK(s->calls[0] == 2 && s->bytes[0] == 310);
    CHECK(s->calls[1] == 2 && s->bytes[1] == 25);
    CHECK(s->calls[2] == 1 && s->bytes[2] == 40);
    CHECK_EQ(s->max_stack, far);

    /* The next block starts from nothing. */
    uint64_t size2[] = { 7, 8 };
    uint64_t stack2[] = { far, 3 };
    s = sums(&b, &t, size2, 2, stack2, 2, 0, MTL_MODE_FULL);
    CHECK_EQ(s->status, 1);
    CHECK_EQ(s->n, 2);
    CHECK(s->stack[0] == far && s->calls[0] == 1 && s->bytes[0] == 7);
    CHECK(s->stack[1] == 3 && s->calls[1] == 1 && s->bytes[1] == 8);

    /* An empty block. */
    s = sums(&b, &t, NULL, 0, NULL, 0, 0, MTL_MODE_FULL);
    CHECK(s->status == 1 && s->n == 0 && s->allocs == 0 && s->max_stack == 0);
    CHECK(size_s.n == 0 && stack_s.n == 0);

    /* Streams that do not pair up, a varint that does not parse, a stack
     * id no node can have: corrupt, with each stream counted in full. */
    s = sums(&b, &t, size, 5, stack, 4, 0, MTL_MODE_FULL);
    CHECK_EQ(s->status, 0);
    CHECK(size_s.n == 5 && stack_s.n == 4);
    s = sums(&b, &t, size, 3, stack, 5, 0, MTL_MODE_FULL);
    CHECK_EQ(s->status, 0);
    CHECK(size_s.n == 3 && stack_s.n == 5);
    s = sums(&b, &t, size, 5, stack, 5, 1, MTL_MODE_FULL);
    CHECK_EQ(s->status, 0);
    CHECK(stack_s.n == 5 && stack_s.bad && !size_s.bad);
    uint64_t wild[] = { 3, (uint64_t)UINT32_MAX + 1, 3 };
    s = sums(&b, &t, size, 3, wild, 3, 0, MTL_MODE_FULL);
    CHECK_EQ(s->status, 0);
    CHECK(size_s.n == 3 && stack_s.n == 3);
    s = sums(&b, &t, size2, 2, stack2, 2, 0, MTL_MODE_FULL); /* reset after */
    CHECK(s->status == 1 && s->n == 2 && s->calls[1] == 1);

    /* Sampled: each allocation weighs what mtl__weights says. */
    s = sums(&b, &t, size, 5, stack, 5, 0, MTL_MODE_SAMPLED);
    double c0, b0, c2, b2;
    mtl__weights(MTL_MODE_SAMPLED, 16, 10, &c0, &b0);
    mtl__weights(MTL_MODE_SAMPLED, 16, 300, &c2, &b2);
    CHECK(fabs(s->calls[0] - (c0 + c2)) < 1e-9 && fabs(s->bytes[0] - (b0 + b2)) < 1e-9);
    CHECK(s->calls[0] > 2);

    mtl__sums_release(&b);
    mtl__sums_scratch_release(&t);
}

/* ---- the reader's sums against its allocations ------------------------- */

#define MAX_STACKS 64

struct totals {
    uint32_t order[TM_MAX_NODES]; /* stacks, in the order first allocated from */
    size_t n;
    double calls[TM_MAX_NODES], bytes[TM_MAX_NODES];
    uint64_t allocs;
};

static void add(struct totals *t, uint32_t stack, double calls, double bytes)
{
    CHECK(stack < TM_MAX_NODES);
    if (t->calls[stack] == 0 && t->bytes[stack] == 0) {
        int seen = 0;
        for (size_t i = 0; i < t->n && !seen; i++)
            seen = t->order[i] == stack;
        if (!seen)
            t->order[t->n++] = stack;
    }
    t->calls[stack] += calls;
    t->bytes[stack] += bytes;
}

/* By mtl__reader_allocs, allocation by allocation. */
static int by_allocs(const struct tm_trace *tr, struct totals *t, struct mtl_trace_info *info)
{
    struct mtl_reader *r;
    CHECK_EQ(mtl_reader_open_memory(&r, tr->data, tr->size), 0);
    mtl_reader_skip_pointers(r, 1);
    static struct mtl_allocs b;
    int rc;
    while ((rc = mtl__reader_allocs(r, &b)) > 0) {
        for (size_t i = 0; i < b.n; i++) {
            double wc, wb;
            mtl__weights(mtl_reader_info(r)->mode, mtl_reader_info(r)->sample_rate,
                         b.size[i], &wc, &wb);
            add(t, b.stack[i], wc, wb);
            t->allocs++;
        }
    }
    *info = *mtl_reader_info(r);
    mtl_reader_close(r);
    return rc;
}

/* By mtl__reader_alloc_sums, block by block, on this many workers. */
static int by_sums(const struct tm_trace *tr, unsigned workers, struct totals *t,
                   struct mtl_trace_info *info)
{
    struct mtl_reader *r;
    CHECK_EQ(mtl_reader_open_memory(&r, tr->data, tr->size), 0);
    mtl_reader_threads(r, workers);
    mtl_reader_skip_pointers(r, 1);
    const struct mtl_block_sums *s;
    int rc;
    while ((rc = mtl__reader_alloc_sums(r, &s)) > 0) {
        CHECK_EQ(s->status, 1);
        CHECK(s->n == 0 || s->max_stack < mtl_reader_stack_count(r));
        for (size_t i = 0; i < s->n; i++)
            add(t, s->stack[i], s->calls[i], s->bytes[i]);
        t->allocs += s->allocs;
    }
    *info = *mtl_reader_info(r);
    mtl_reader_close(r);
    return rc;
}

static void same_totals(const struct tm_trace *tr, int want_rc)
{
    static struct totals a, b;
    struct mtl_trace_info ia, ib;
    memset(&a, 0, sizeof a);
    CHECK_EQ(by_allocs(tr, &a, &ia), want_rc);
    static const unsigned workers[] = { 0, 1, 3 };
    for (size_t w = 0; w < sizeof workers / sizeof workers[0]; w++) {
        memset(&b, 0, sizeof b);
        CHECK_EQ(by_sums(tr, workers[w], &b, &ib), want_rc);
        if (want_rc < 0)
            continue; /* what came before an error is not compared */
        CHECK_EQ(b.allocs, a.allocs);
        CHECK_EQ(b.n, a.n);
        for (size_t i = 0; i < a.n; i++) {
            uint32_t st = a.order[i];
            CHECK_EQ(b.order[i], st);
            CHECK(fabs(b.calls[st] - a.calls[st]) <= 1e-9 * a.calls[st]);
            CHECK(fabs(b.bytes[st] - a.bytes[st]) <= 1e-9 * a.bytes[st]);
        }
        CHECK_EQ(ib.duration_us, ia.duration_us);
        CHECK_EQ(ib.complete, ia.complete);
        CHECK_EQ(ib.truncated, ia.truncated);
    }
}

/* Thousands of events on three threads, stacks defined as they come
 * (some in later blocks than others), blocks cut at odd places. */
static void build_busy(struct tm_trace *t, enum mtl_mode mode, int end)
{
    tm_open(t, mode, 64);
    tm_thread(t, 0, 0, 100, "main");
    tm_thread(t, 1, 1, 101, "a");
    tm_thread(t, 2, 2, 102, NULL);
    uint32_t stacks[MAX_STACKS], nstacks = 0;
    uint32_t tag = tm_string(t, "Widget");
    uint64_t now = 10, seed = 12345;
    uint64_t live[256] = { 0 };
    for (int i = 0; i < 6000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(seed >> 33);
        now += r % 7;
        uint32_t thread = r % 3;
        if (nstacks < MAX_STACKS && (nstacks == 0 || r % 97 == 0)) {
            char name[32];
            snprintf(name, sizeof name, "f%u", nstacks);
            stacks[nstacks] = tm_stack(t, name, nstacks % 2 ? "g" : "h", "main", NULL);
            nstacks++;
        }
        unsigned slot = (r >> 8) % 256;
        if (live[slot]) {
            tm_free(t, now, thread, live[slot]);
            live[slot] = 0;
        } else {
            live[slot] = 0x10000 + (uint64_t)slot * 64;
            uint32_t st = stacks[(r >> 16) % nstacks];
            if (r % 11 == 0)
                tm_alloc_tagged(t, now, thread, live[slot], 1 + r % 5000, st, tag);
            else
                tm_alloc(t, now, thread, live[slot], 1 + r % 5000, st);
        }
        if (r % 400 == 0)
            tm_flush(t);
        if (r % 1000 == 0)
            tm_rss(t, now, 1u << 20);
    }
    if (end)
        tm_end(t, now + 5);
    tm_close(t);
}

static void check_reader(void)
{
    struct tm_trace t;
    for (int mode = 0; mode < 2; mode++) {
        build_busy(&t, mode ? MTL_MODE_SAMPLED : MTL_MODE_FULL, 1);
        same_totals(&t, 0);
        tm_release(&t);
    }

    /* No END: incomplete; cut inside a block: truncated, the whole
     * blocks before counted alike. */
    build_busy(&t, MTL_MODE_FULL, 0);
    same_totals(&t, 0);
    size_t whole = t.size;
    t.size = whole * 2 / 3;
    same_totals(&t, 0);
    t.size = whole;
    tm_release(&t);

    /* Pointers wanted: refused, the walk skips them. */
    build_busy(&t, MTL_MODE_FULL, 1);
    struct mtl_reader *r;
    const struct mtl_block_sums *s;
    CHECK_EQ(mtl_reader_open_memory(&r, t.data, t.size), 0);
    CHECK_EQ(mtl__reader_alloc_sums(r, &s), MTL_EINVAL);
    mtl_reader_close(r);
    tm_release(&t);

    /* A stack id no block had defined by the end of the allocation's
     * block: corrupt (the record itself is read only by the workers). */
    tm_open(&t, MTL_MODE_FULL, 0);
    tm_thread(&t, 0, 0, 100, "main");
    uint32_t f = tm_stack(&t, "f", "main", NULL);
    tm_alloc(&t, 1, 0, 0x1000, 8, f);
    tm_room(&t);
    tb_byte(t.b, MTL_REC_ALLOC);
    tm_at(&t, 2);
    tb_size(t.b, 16);
    tb_stack(t.b, f + 50);
    tm_pointer(&t, 0x2000);
    tm_end(&t, 3);
    tm_close(&t);
    same_totals(&t, MTL_ECORRUPT);
    tm_release(&t);
}

int main(void)
{
    check_sums();
    check_reader();
    CHECKS_DONE();
}
