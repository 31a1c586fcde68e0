/*
 * test_scan.c: the scan (src/analyze/scan.h) driven directly on a trace
 * built in memory (trace_mem.h), read by a reader on that memory: the
 * blocks it reports, each field of each (ordinal, address, size, times,
 * positions among allocations and frees, stack, thread, weights,
 * temporary, free_lost) against what the trace was written to hold; frees
 * of unknown blocks ignored; an address allocated twice without a free;
 * the filters; the two passes with an event callback and a filter on
 * frees; blocks reported at their allocation (alloc_only) and summed per
 * stack; a callback that stops the scan; weights of a sampled trace.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/scan.h"
#include "analyze/stackagg.h"
#include "analyze/view.h"
#include "check.h"
#include "memtally/errors.h"
#include "trace/defs.h"
#include "trace_mem.h"

#define N MTL_NEVER

/* ---- the trace --------------------------------------------------------- */

/* Threads: 0 (tid 100, "main") and 1 (tid 200, "worker").  Stacks: F is
 * f <- main, G is g <- main.  The events, in order, with their position
 * among allocations and frees (seq):
 *
 *   seq  time  thread  what
 *    0     10    0     alloc A 0x1000  10 F   freed by the next event: temporary
 *    1     20    0     free  A
 *    2     30    1     alloc B 0x2000  20 G
 *    3     40    1     alloc C 0x3000  30 F
 *    4     50    1     free  B                  not the next event after B's
 *    5     60    0     free  0x9999             unknown: ignored, but an event
 *    6     70    0     free  C                  (so C is not temporary)
 *    7     80    0     alloc D 0x4000  40 G
 *    8     80    0     alloc E 0x4000  50 F     D's free was lost: D ends here
 *    9     90    1     free  E                  the next event after E: temporary
 *   10    100    0     alloc F 0x5000  60 G     never freed
 *   11    110    1     alloc G 0x1000  70 F     A's address again: never freed
 *         115          rss 4096
 *   12    120    0     free  0x2000             B's, freed already: unknown
 *         150          end
 */
static struct tm_trace T;
static uint32_t stack_f, stack_g;

static void build(enum mtl_mode mode, uint64_t rate)
{
    tm_open(&T, mode, rate);
    stack_f = tm_stack(&T, "f", "main", NULL);
    stack_g = tm_stack(&T, "g", "main", NULL);
    tm_thread(&T, 0, 0, 100, "main");
    tm_thread(&T, 5, 1, 200, "worker");
    tm_alloc(&T, 10, 0, 0x1000, 10, stack_f);
    tm_free(&T, 20, 0, 0x1000);
    tm_flush(&T); /* the decoder's state goes on across blocks */
    tm_alloc(&T, 30, 1, 0x2000, 20, stack_g);
    tm_alloc(&T, 40, 1, 0x3000, 30, stack_f);
    tm_free(&T, 50, 1, 0x2000);
    tm_free(&T, 60, 0, 0x9999);
    tm_free(&T, 70, 0, 0x3000);
    tm_alloc(&T, 80, 0, 0x4000, 40, stack_g);
    tm_alloc(&T, 80, 0, 0x4000, 50, stack_f);
    tm_free(&T, 90, 1, 0x4000);
    tm_alloc(&T, 100, 0, 0x5000, 60, stack_g);
    tm_alloc(&T, 110, 1, 0x1000, 70, stack_f);
    tm_rss(&T, 115, 4096);
    tm_free(&T, 120, 0, 0x2000);
    tm_end(&T, 150);
    tm_close(&T);
}

/* What each block must be, by ordinal (A..G). */
struct want {
    uint64_t ptr, size, alloc_us, free_us, alloc_seq, free_seq;
    int thread, stack_is_g, temporary, free_lost;
};

static const struct want W[7] = {
    /*          ptr   size alloc free aseq fseq thr  G  tmp lost */
    [0] = { 0x1000, 10,  10,  20,  0,  1,  0, 0, 1, 0 },
    [1] = { 0x2000, 20,  30,  50,  2,  4,  1, 1, 0, 0 },
    [2] = { 0x3000, 30,  40,  70,  3,  6,  1, 0, 0, 0 },
    [3] = { 0x4000, 40,  80,  80,  7,  8,  0, 1, 0, 1 },
    [4] = { 0x4000, 50,  80,  90,  8,  9,  0, 0, 1, 0 },
    [5] = { 0x5000, 60, 100,   N, 10,  N,  0, 1, 0, 0 },
    [6] = { 0x1000, 70, 110,   N, 11,  N,  1, 0, 0, 0 },
};

/* The block b is block ordinal of W, reported at its fate (at_alloc: at
 * its allocation, its fate unknown). */
static void check_block(const struct mtl_block *b, int at_alloc)
{
    CHECK(b->ordinal < 7);
    const struct want *w = &W[b->ordinal];
    CHECK_EQ(b->size, w->size);
    CHECK_EQ(b->alloc_us, w->alloc_us);
    CHECK_EQ(b->alloc_seq, w->alloc_seq);
    CHECK_EQ(b->thread, w->thread);
    CHECK_EQ(b->stack, w->stack_is_g ? stack_g : stack_f);
    CHECK(b->weight_count == 1 && b->weight_bytes == (double)w->size);
    if (at_alloc) {
        CHECK_EQ(b->free_us, N);
        CHECK_EQ(b->free_seq, N);
        CHECK(!b->temporary && !b->free_lost);
        return;
    }
    CHECK_EQ(b->ptr, w->ptr);
    CHECK_EQ(b->free_us, w->free_us);
    CHECK_EQ(b->free_seq, w->free_seq);
    CHECK_EQ(b->temporary, w->temporary);
    CHECK_EQ(b->free_lost, w->free_lost);
}

/* ---- running a scan ------------------------------------------------------ */

#define MAX_GOT 64

struct got_event {
    enum mtl_event_type type;
    uint64_t time_us, ptr;
    int has_block, passes;
    struct mtl_block b;
};

static struct {
    struct mtl_block blocks[MAX_GOT];
    size_t nblocks;
    struct got_event events[MAX_GOT];
    size_t nevents;
    size_t stop_after;   /* the block callback stops at this many, 0: never */
    int reopened;
} got;

static int on_block(void *arg, const struct mtl_block *b)
{
    (void)arg;
    CHECK(got.nblocks < MAX_GOT);
    got.blocks[got.nblocks++] = *b;
    return got.stop_after && got.nblocks == got.stop_after;
}

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    (void)arg;
    CHECK(got.nevents < MAX_GOT);
    struct got_event *g = &got.events[got.nevents++];
    g->type = ev->type;
    g->time_us = ev->time_us;
    g->ptr = ev->ptr;
    g->has_block = b != NULL;
    g->passes = passes;
    if (b)
        g->b = *b;
    return 0;
}

static int reopen(void *arg, struct mtl_reader **out)
{
    struct tm_trace *t = arg;
    got.reopened++;
    return mtl_reader_open_memory(out, t->data, t->size);
}

/* Custom frames are named by their strings: the namer is never asked. */
static int no_resolve(void *arg, uint32_t module, uint64_t addr, const struct mtl_symbol **out)
{
    (void)arg, (void)module, (void)addr, (void)out;
    CHECK(!"a custom frame was resolved as a native one");
    return MTL_EINVAL;
}

/* Scans T with f and ops; with_view: the definitions and a view, for
 * the filters on stacks.  Returns the scan's code. */
static int scan(const struct mtl_filter *f, const struct mtl_scan_ops *ops, int with_view,
                struct mtl_scan_result *res)
{
    memset(got.blocks, 0, sizeof got.blocks);
    memset(got.events, 0, sizeof got.events);
    got.nblocks = got.nevents = 0;
    got.reopened = 0;
    struct mtl_reader *r;
    CHECK(mtl_reader_open_memory(&r, T.data, T.size) == 0);
    struct mtl_defs defs;
    struct mtl_view *v = NULL;
    if (with_view) {
        mtl__reader_defs(r, &defs);
        struct mtl_view_namer namer = { .resolve = no_resolve };
        struct mtl_view_options vo = { 0 };
        CHECK(mtl_view_open(&v, &defs, &namer, &vo) == 0);
    }
    struct mtl_scan_input in = { r, reopen, &T, with_view ? &defs : NULL, v, NULL };
    int rc = mtl_scan(&in, f, ops, NULL, res);
    mtl_view_close(v);
    mtl_reader_close(r);
    return rc;
}

static struct mtl_filter none(void)
{
    struct mtl_filter f;
    memset(&f, 0, sizeof f);
    return f;
}

/* The ordinals of the blocks reported, as a bit set. */
static unsigned reported(void)
{
    unsigned m = 0;
    for (size_t i = 0; i < got.nblocks; i++) {
        CHECK(got.blocks[i].ordinal < 32);
        CHECK(!(m & 1u << got.blocks[i].ordinal)); /* once each */
        m |= 1u << got.blocks[i].ordinal;
    }
    return m;
}

#define BIT(x) (1u << (x))
enum { A, B, C, D, E, F, G };

/* ---- the tests ----------------------------------------------------------- */

static void test_blocks(void)
{
    struct mtl_filter f = none();
    struct mtl_scan_ops ops = { .block = on_block };
    struct mtl_scan_result res;
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(got.nblocks, 7);
    for (size_t i = 0; i < got.nblocks; i++)
        check_block(&got.blocks[i], 0);
    /* Reported when their fate is known: A, B, C, D (at E's allocation), E
     * in trace order; F and G at the end. */
    for (size_t i = 0; i < 5; i++)
        CHECK_EQ(got.blocks[i].ordinal, i);
    CHECK_EQ(reported(), 0x7f);
    CHECK_EQ(res.allocations, 7);
    CHECK_EQ(res.end_us, 150);
    CHECK_EQ(got.reopened, 0);
    /* A filter on frees, without events: still one pass. */
    f.never_freed = 1;
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(got.reopened, 0);
    CHECK_EQ(reported(), BIT(F) | BIT(G));
    for (size_t i = 0; i < got.nblocks; i++)
        check_block(&got.blocks[i], 0);
}

/* Each filter: which blocks pass, and each block as it is. */
static void expect(const struct mtl_filter *f, int with_view, unsigned want)
{
    struct mtl_scan_ops ops = { .block = on_block };
    struct mtl_scan_result res;
    CHECK(scan(f, &ops, with_view, &res) == 0);
    if (reported() != want)
        fprintf(stderr, "reported 0x%x, want 0x%x\n", reported(), want);
    CHECK_EQ(reported(), want);
    for (size_t i = 0; i < got.nblocks; i++)
        check_block(&got.blocks[i], 0);
    CHECK_EQ(res.allocations, 7);
    CHECK_EQ(res.end_us, 150);
}

static void test_filters(void)
{
    struct mtl_filter f = none();
    f.size = (struct mtl_range){ 1, 20, 50 };
    expect(&f, 0, BIT(B) | BIT(C) | BIT(D) | BIT(E));
    /* D alone is followed: E's allocation at its address still ends it. */
    f.size = (struct mtl_range){ 1, 40, 40 };
    expect(&f, 0, BIT(D));
    /* E alone: D is not followed, E is an ordinary block. */
    f.size = (struct mtl_range){ 1, 50, 50 };
    expect(&f, 0, BIT(E));

    f = none();
    f.thread_set = 1, f.thread = 200;
    expect(&f, 0, BIT(B) | BIT(C) | BIT(G));
    f.thread_is_index = 1, f.thread = 1;
    expect(&f, 0, BIT(B) | BIT(C) | BIT(G));
    f.thread = 200; /* no thread has index 200 */
    expect(&f, 0, 0);

    f = none();
    f.allocated = (struct mtl_range){ 1, 30, 40 };
    expect(&f, 0, BIT(B) | BIT(C));
    f.allocated = (struct mtl_range){ 1, 80, 80 };
    expect(&f, 0, BIT(D) | BIT(E));

    f = none();
    f.temporary = 1;
    expect(&f, 0, BIT(A) | BIT(E));

    f = none();
    f.never_freed = 1;
    expect(&f, 0, BIT(F) | BIT(G));

    /* Lifetimes: A 10, B 20, C 30, D 0, E 10, F 50 and G 40 to the end. */
    f = none();
    f.lifetime = (struct mtl_range){ 1, 0, 10 };
    expect(&f, 0, BIT(A) | BIT(D) | BIT(E));
    f.lifetime = (struct mtl_range){ 1, 40, 50 };
    expect(&f, 0, BIT(F) | BIT(G));
    f.lifetime = (struct mtl_range){ 1, 11, 39 };
    expect(&f, 0, BIT(B) | BIT(C));

    f = none();
    f.live_at_set = 1, f.live_at = 80;
    expect(&f, 0, BIT(E));            /* D, made and ended at 80, never was */
    f.live_at = 79;
    expect(&f, 0, 0);
    f.live_at = 110;
    expect(&f, 0, BIT(F) | BIT(G));

    f = none();
    f.freed = (struct mtl_range){ 1, 50, 80 };
    expect(&f, 0, BIT(B) | BIT(C) | BIT(D)); /* D's end counts as its free */

    f = none();
    f.live_between = (struct mtl_range){ 1, 45, 85 };
    expect(&f, 0, BIT(B) | BIT(C) | BIT(E));

    /* On stacks: G is g <- main, F is f <- main. */
    f = none();
    mtl_filter_add_pattern(f.inside, &f.ninside, "g");
    expect(&f, 1, BIT(B) | BIT(D) | BIT(F));
    f = none();
    mtl_filter_add_pattern(f.not_inside, &f.nnot_inside, "g");
    expect(&f, 1, BIT(A) | BIT(C) | BIT(E) | BIT(G));
    f = none();
    mtl_filter_add_pattern(f.inside, &f.ninside, "ma*");
    expect(&f, 1, 0x7f);
    mtl_filter_add_pattern(f.inside, &f.ninside, "f");
    f.size = (struct mtl_range){ 1, 0, 60 };
    expect(&f, 1, BIT(A) | BIT(C) | BIT(E));
}

/* An event as expected: type, time, and for allocations and frees of known
 * blocks the block's ordinal and whether it passes. */
static void check_event(size_t i, enum mtl_event_type type, uint64_t time_us, int ordinal,
                        int passes)
{
    CHECK(i < got.nevents);
    const struct got_event *g = &got.events[i];
    CHECK_EQ(g->type, type);
    CHECK_EQ(g->time_us, time_us);
    CHECK_EQ(g->has_block, ordinal >= 0);
    if (ordinal < 0)
        return;
    CHECK_EQ(g->b.ordinal, ordinal);
    CHECK_EQ(g->passes, passes);
    const struct want *w = &W[ordinal];
    CHECK_EQ(g->b.size, w->size);
    CHECK_EQ(g->b.alloc_us, w->alloc_us);
    CHECK_EQ(g->b.alloc_seq, w->alloc_seq);
    if (type == MTL_EV_ALLOC) {
        CHECK_EQ(g->b.free_us, N);
        CHECK(!g->b.temporary);
    } else {
        CHECK_EQ(g->b.free_us, w->free_us);
        CHECK_EQ(g->b.free_seq, w->free_seq);
        CHECK_EQ(g->b.temporary, w->temporary);
        CHECK_EQ(g->b.free_lost, w->free_lost);
    }
}

/* The events of T, with whether each block passes (bit per ordinal). */
static void check_events(unsigned pass)
{
#define P(x) ((pass >> (x)) & 1)
    size_t i = 0;
    check_event(i++, MTL_EV_THREAD_START, 0, -1, 0);
    check_event(i++, MTL_EV_THREAD_NAME, 0, -1, 0);
    check_event(i++, MTL_EV_THREAD_START, 5, -1, 0);
    check_event(i++, MTL_EV_THREAD_NAME, 5, -1, 0);
    check_event(i++, MTL_EV_ALLOC, 10, A, P(A));
    check_event(i++, MTL_EV_FREE, 20, P(A) ? A : -1, P(A));
    check_event(i++, MTL_EV_ALLOC, 30, B, P(B));
    check_event(i++, MTL_EV_ALLOC, 40, C, P(C));
    check_event(i++, MTL_EV_FREE, 50, P(B) ? B : -1, P(B));
    check_event(i++, MTL_EV_FREE, 60, -1, 0);           /* unknown */
    check_event(i++, MTL_EV_FREE, 70, P(C) ? C : -1, P(C));
    check_event(i++, MTL_EV_ALLOC, 80, D, P(D));
    if (P(D))
        check_event(i++, MTL_EV_FREE, 80, D, 1);        /* its lost free */
    check_event(i++, MTL_EV_ALLOC, 80, E, P(E));
    check_event(i++, MTL_EV_FREE, 90, P(E) ? E : -1, P(E));
    check_event(i++, MTL_EV_ALLOC, 100, F, P(F));
    check_event(i++, MTL_EV_ALLOC, 110, G, P(G));
    check_event(i++, MTL_EV_RSS, 115, -1, 0);
    check_event(i++, MTL_EV_FREE, 120, -1, 0);          /* freed already */
    CHECK_EQ(got.nevents, i);
#undef P
}

static void test_events(void)
{
    struct mtl_scan_ops ops = { .block = on_block, .event = on_event };
    struct mtl_scan_result res;

    /* No filter: one pass, every block passes. */
    struct mtl_filter f = none();
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(got.reopened, 0);
    check_events(0x7f);
    CHECK_EQ(reported(), 0x7f);
    CHECK_EQ(got.events[4].b.ptr, 0x1000);
    CHECK_EQ(got.events[15].b.ptr, 0x5000);

    /* A filter decided at allocation: still one pass; the blocks that do
     * not pass are not followed, so their frees are unknown. */
    f.size = (struct mtl_range){ 1, 20, 50 };
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(got.reopened, 0);
    check_events(BIT(B) | BIT(C) | BIT(D) | BIT(E));

    /* A filter on frees: two passes.  The first decides (and reports the
     * blocks), the second gives the events with the answer at once, the
     * allocation included. */
    f = none();
    f.lifetime = (struct mtl_range){ 1, 0, 10 };
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(got.reopened, 1);
    CHECK_EQ(reported(), BIT(A) | BIT(D) | BIT(E));
    for (size_t i = 0; i < got.nblocks; i++)
        check_block(&got.blocks[i], 0);
    /* Every block is followed in the second pass: the frees of those that
     * do not pass are known, with passes 0. */
    size_t i = 0;
    check_event(i++, MTL_EV_THREAD_START, 0, -1, 0);
    check_event(i++, MTL_EV_THREAD_NAME, 0, -1, 0);
    check_event(i++, MTL_EV_THREAD_START, 5, -1, 0);
    check_event(i++, MTL_EV_THREAD_NAME, 5, -1, 0);
    check_event(i++, MTL_EV_ALLOC, 10, A, 1);
    check_event(i++, MTL_EV_FREE, 20, A, 1);
    check_event(i++, MTL_EV_ALLOC, 30, B, 0);
    check_event(i++, MTL_EV_ALLOC, 40, C, 0);
    check_event(i++, MTL_EV_FREE, 50, B, 0);
    check_event(i++, MTL_EV_FREE, 60, -1, 0);
    check_event(i++, MTL_EV_FREE, 70, C, 0);
    check_event(i++, MTL_EV_ALLOC, 80, D, 1);
    check_event(i++, MTL_EV_FREE, 80, D, 1);
    check_event(i++, MTL_EV_ALLOC, 80, E, 1);
    check_event(i++, MTL_EV_FREE, 90, E, 1);
    check_event(i++, MTL_EV_ALLOC, 100, F, 0);
    check_event(i++, MTL_EV_ALLOC, 110, G, 0);
    check_event(i++, MTL_EV_RSS, 115, -1, 0);
    check_event(i++, MTL_EV_FREE, 120, -1, 0);
    CHECK_EQ(got.nevents, i);
    CHECK_EQ(res.allocations, 7);
    CHECK_EQ(res.end_us, 150);

    /* --freed-between 50,80 with --size ..40: B, C and D. */
    f = none();
    f.freed = (struct mtl_range){ 1, 50, 80 };
    f.size = (struct mtl_range){ 1, 0, 40 };
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(got.reopened, 1);
    CHECK_EQ(reported(), BIT(B) | BIT(C) | BIT(D));
    CHECK_EQ(got.events[6].passes, 1);  /* B's allocation, long before its free */
    CHECK_EQ(got.events[4].passes, 0);  /* A's */
    CHECK_EQ(got.events[15].passes, 0); /* F's */
}

static void test_alloc_only(void)
{
    /* Reported at their allocation, in order, their fate unknown. */
    struct mtl_filter f = none();
    struct mtl_scan_ops ops = { .block = on_block, .alloc_only = 1 };
    struct mtl_scan_result res;
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(got.nblocks, 7);
    for (size_t i = 0; i < got.nblocks; i++) {
        CHECK_EQ(got.blocks[i].ordinal, i);
        check_block(&got.blocks[i], 1);
    }
    CHECK_EQ(res.allocations, 7);
    CHECK_EQ(res.end_us, 150);

    f.thread_set = 1, f.thread = 100;
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(reported(), BIT(A) | BIT(D) | BIT(E) | BIT(F));
    for (size_t i = 0; i < got.nblocks; i++)
        check_block(&got.blocks[i], 1);
    f = none();
    mtl_filter_add_pattern(f.inside, &f.ninside, "f");
    CHECK(scan(&f, &ops, 1, &res) == 0);
    CHECK_EQ(reported(), BIT(A) | BIT(C) | BIT(E) | BIT(G));

    /* A filter on frees needs the frees: blocks at their fate. */
    f = none();
    f.never_freed = 1;
    CHECK(scan(&f, &ops, 0, &res) == 0);
    CHECK_EQ(reported(), BIT(F) | BIT(G));
    for (size_t i = 0; i < got.nblocks; i++)
        check_block(&got.blocks[i], 0);

    /* Summed per (thread, stack) instead. */
    struct mtl_stackagg a = MTL_STACKAGG_INIT(1);
    struct mtl_scan_ops sums = { .sums = &a, .alloc_only = 1 };
    f = none();
    f.size = (struct mtl_range){ 1, 11, 69 }; /* all but A and G */
    CHECK(scan(&f, &sums, 0, &res) == 0);
    CHECK_EQ(got.nblocks, 0);
    /* thread 1: B (G) 20, C (F) 30; thread 0: D (G) 40, E (F) 50, F (G) 60 */
    CHECK_EQ(a.n, 4);
    CHECK(a.e[0].thread == 1 && a.e[0].stack == stack_g && a.e[0].calls == 1 &&
          a.e[0].bytes == 20);
    CHECK(a.e[1].thread == 1 && a.e[1].stack == stack_f && a.e[1].calls == 1 &&
          a.e[1].bytes == 30);
    CHECK(a.e[2].thread == 0 && a.e[2].stack == stack_g && a.e[2].calls == 2 &&
          a.e[2].bytes == 100);
    CHECK(a.e[3].thread == 0 && a.e[3].stack == stack_f && a.e[3].calls == 1 &&
          a.e[3].bytes == 50);
    mtl_stackagg_release(&a);

    /* Sums of a filter on frees: from the blocks at their fate. */
    a = (struct mtl_stackagg)MTL_STACKAGG_INIT(0);
    f = none();
    f.temporary = 1;
    CHECK(scan(&f, &sums, 0, &res) == 0);
    CHECK_EQ(a.n, 1); /* A and E, both F */
    CHECK(a.e[0].stack == stack_f && a.e[0].calls == 2 && a.e[0].bytes == 60);
    mtl_stackagg_release(&a);
}

static void test_stop(void)
{
    struct mtl_filter f = none();
    struct mtl_scan_ops ops = { .block = on_block };
    got.stop_after = 2;
    struct mtl_reader *r;
    CHECK(mtl_reader_open_memory(&r, T.data, T.size) == 0);
    struct mtl_scan_input in = { r, reopen, &T, NULL, NULL, NULL };
    memset(got.blocks, 0, sizeof got.blocks);
    got.nblocks = 0;
    CHECK(mtl_scan(&in, &f, &ops, NULL, NULL) == MTL_ESTOPPED);
    CHECK_EQ(got.nblocks, 2);
    mtl_reader_close(r);
    got.stop_after = 0;
}

/* A damaged trace: what came before the damage is reported, then the
 * error. */
static void test_corrupt(void)
{
    /* Break the second block's check word: the first block holds A. */
    size_t first = MTL_FILE_HEADER_SIZE + MTL_BLOCK_HEADER_SIZE +
                   (size_t)mtl__get_u32le((const uint8_t *)T.data + MTL_FILE_HEADER_SIZE + 4);
    CHECK(first + MTL_BLOCK_HEADER_SIZE < T.size);
    T.data[first + 12] ^= 1;
    struct mtl_filter f = none();
    struct mtl_scan_ops ops = { .block = on_block, .event = on_event };
    struct mtl_scan_result res;
    int rc = scan(&f, &ops, 0, &res);
    T.data[first + 12] ^= 1;
    CHECK(rc == MTL_ECORRUPT);
    CHECK_EQ(got.nblocks, 1);
    check_block(&got.blocks[0], 0);
    CHECK_EQ(got.blocks[0].ordinal, A);
}

/* Sampled: each block stands for 1/p blocks and size/p bytes, p = 1 -
 * exp(-size/rate) (docs/ANALYSIS.md, "Sampled traces"). */
static void test_sampled(void)
{
    tm_release(&T);
    build(MTL_MODE_SAMPLED, 64);
    struct mtl_filter f = none();
    struct mtl_scan_ops ops = { .block = on_block };
    CHECK(scan(&f, &ops, 0, NULL) == 0);
    CHECK_EQ(got.nblocks, 7);
    for (size_t i = 0; i < got.nblocks; i++) {
        const struct mtl_block *b = &got.blocks[i];
        double p = 1 - exp(-(double)b->size / 64.0);
        CHECK(fabs(b->weight_count - 1 / p) < 1e-9 * (1 / p));
        CHECK(fabs(b->weight_bytes - (double)b->size / p) < 1e-9 * ((double)b->size / p));
        CHECK(b->weight_count > 1);
        CHECK_EQ(b->size, W[b->ordinal].size);
        CHECK_EQ(b->free_us, W[b->ordinal].free_us);
    }
}

int main(void)
{
    build(MTL_MODE_FULL, 0);
    test_blocks();
    test_filters();
    test_events();
    test_alloc_only();
    test_stop();
    test_corrupt();
    test_sampled();
    tm_release(&T);
    CHECKS_DONE();
}
