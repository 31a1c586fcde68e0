/*
 * test_stackagg.c: the totals per (thread, stack) (src/analyze/stackagg.h)
 * against a plain array of the same sums: one entry per pair, in order of
 * first addition, whether the pair's entry sits in its thread's dense
 * table (threads below MTL_STACKAGG_DENSE_THREADS) or in the hash map (the
 * others); threads folded into 0 without per_thread; merge; totals.
 *
 * Weights are multiples of 1/4, so that every sum is exact in a double
 * and the comparisons can be ==.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/stackagg.h"
#include "check.h"

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(uint64_t n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state % n;
}

/* ---- the truth: a plain array over the threads and stacks used --------- */

enum { NTHREADS = 6, NSTACKS = 3000 };

static const uint32_t thread_ids[NTHREADS] = { 0, 1, 2, 7, 1000, UINT32_MAX };
static uint32_t stack_ids[NSTACKS];

struct cell {
    double calls, bytes, extra;
    long order;   /* rank of its first addition, -1 before */
    int seen;     /* found among the entries (checking) */
};

struct truth {
    struct cell c[NTHREADS][NSTACKS];
    long added;   /* distinct pairs */
};

static void truth_reset(struct truth *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < NTHREADS; i++)
        for (int s = 0; s < NSTACKS; s++)
            t->c[i][s].order = -1;
}

static void truth_add(struct truth *t, int ti, int si, double calls, double bytes, double extra)
{
    struct cell *c = &t->c[ti][si];
    if (c->order < 0)
        c->order = t->added++;
    c->calls += calls;
    c->bytes += bytes;
    c->extra += extra;
}

static int thread_slot(uint32_t id)
{
    for (int i = 0; i < NTHREADS; i++)
        if (thread_ids[i] == id)
            return i;
    return -1;
}

static int stack_slot(uint32_t id)
{
    for (int s = 0; s < NSTACKS; s++)
        if (stack_ids[s] == id)
            return s;
    return -1;
}

/* a against the truth: each pair's sums once, in order of first addition,
 * the dense tables holding the entries of the first threads and the hash
 * map every other one.  Without per_thread, every thread is 0. */
static void check_against(const struct mtl_stackagg *a, struct truth *t)
{
    CHECK_EQ(a->n, (size_t)t->added);
    for (int i = 0; i < NTHREADS; i++)
        for (int s = 0; s < NSTACKS; s++)
            t->c[i][s].seen = 0;
    double calls = 0, bytes = 0, extra = 0;
    size_t stacks = 0;
    for (size_t k = 0; k < a->n; k++) {
        const struct mtl_stackagg_entry *e = &a->e[k];
        int ti = thread_slot(e->thread), si = stack_slot(e->stack);
        CHECK(ti >= 0 && si >= 0);
        struct cell *c = &t->c[ti][si];
        CHECK(!c->seen);
        c->seen = 1;
        CHECK_EQ(c->order, (long)k);
        CHECK(e->calls == c->calls);
        CHECK(e->bytes == c->bytes);
        CHECK(e->extra == c->extra);
        calls += c->calls;
        bytes += c->bytes;
        extra += c->extra;
        /* Its slot: its thread's dense table, or the map. */
        uint64_t v;
        int hashed = mtl_hmap_get(&a->others, (uint64_t)e->thread << 32 | e->stack, &v);
        if (e->thread < MTL_STACKAGG_DENSE_THREADS) {
            CHECK(!hashed);
            CHECK(e->stack < a->dense_cap[e->thread]);
            CHECK_EQ(a->dense[e->thread][e->stack], k + 1);
            stacks++;
        } else {
            CHECK(hashed);
            CHECK_EQ(v, k);
        }
    }
    CHECK_EQ(a->others.count, a->n - stacks);
    double tc = -1, tb = -1, tx = -1;
    mtl_stackagg_totals(a, &tc, &tb, &tx);
    CHECK(tc == calls && tb == bytes && tx == extra);
    mtl_stackagg_totals(a, NULL, &tb, NULL); /* any of them may be left out */
    CHECK(tb == bytes);
    mtl_stackagg_totals(a, &tc, NULL, NULL);
    CHECK(tc == calls);
}

/* ---- written out ---------------------------------------------------------- */

static void test_small(void)
{
    struct mtl_stackagg a = MTL_STACKAGG_INIT(1);
    double c, b, x;
    mtl_stackagg_totals(&a, &c, &b, &x);
    CHECK(a.n == 0 && c == 0 && b == 0 && x == 0);

    /* Threads 3 and 1 in their dense tables. */
    CHECK(mtl_stackagg_add(&a, 3, 5, 1, 100, 0) == 0);
    CHECK(mtl_stackagg_add(&a, 1, 5, 1, 10, 0) == 0);
    CHECK(mtl_stackagg_add(&a, 3, 5, 2, 200, 1) == 0);
    CHECK(mtl_stackagg_add(&a, 1, 5, 1, 10, 0) == 0);
    CHECK(mtl_stackagg_add(&a, 1, 6, 4, 40, 0) == 0);
    CHECK_EQ(a.n, 3);
    CHECK(a.e[0].thread == 3 && a.e[0].stack == 5);
    CHECK(a.e[0].calls == 3 && a.e[0].bytes == 300 && a.e[0].extra == 1);
    CHECK(a.e[1].thread == 1 && a.e[1].stack == 5);
    CHECK(a.e[1].calls == 2 && a.e[1].bytes == 20 && a.e[1].extra == 0);
    CHECK(a.e[2].thread == 1 && a.e[2].stack == 6);
    CHECK(a.e[2].calls == 4 && a.e[2].bytes == 40);
    CHECK_EQ(a.dense[3][5], 1);
    CHECK_EQ(a.dense[1][5], 2);
    CHECK_EQ(a.dense[1][6], 3);
    CHECK_EQ(a.others.count, 0);
    mtl_stackagg_totals(&a, &c, &b, &x);
    CHECK(c == 9 && b == 360 && x == 1);

    /* Stack 0: thread 9 through the map (past the dense threads), thread
     * 0 in its table. */
    CHECK(mtl_stackagg_add(&a, 9, 0, 1, 1, 0) == 0);
    CHECK(mtl_stackagg_add(&a, 0, 0, 1, 2, 0) == 0);
    CHECK(mtl_stackagg_add(&a, 0, 0, 1, 2, 0) == 0);
    CHECK(mtl_stackagg_add(&a, 9, 0, 1, 1, 0) == 0);
    CHECK_EQ(a.n, 5);
    CHECK(a.e[3].thread == 9 && a.e[3].calls == 2 && a.e[3].bytes == 2);
    CHECK(a.e[4].thread == 0 && a.e[4].calls == 2 && a.e[4].bytes == 4);

    /* A stack far above the dense table's first size. */
    CHECK(mtl_stackagg_add(&a, 2, 1u << 20, 1, 7, 0) == 0);
    CHECK(mtl_stackagg_add(&a, 2, 1u << 20, 1, 7, 0) == 0);
    CHECK_EQ(a.n, 6);
    CHECK(a.dense_cap[2] > 1u << 20);
    CHECK(a.e[5].calls == 2 && a.e[5].bytes == 14);
    CHECK_EQ(a.dense[2][1u << 20], 6);
    CHECK_EQ(a.dense[1][5], 2); /* other threads' tables as they were */
    CHECK_EQ(a.dense[1][6], 3);
    CHECK_EQ(a.dense[0][0], 5);
    CHECK_EQ(a.others.count, 1); /* thread 9's */

    /* Zero weights still make an entry (an analysis may add only extra). */
    CHECK(mtl_stackagg_add(&a, 2, 77, 0, 0, 0) == 0);
    CHECK_EQ(a.n, 7);

    mtl_stackagg_release(&a);
    CHECK(a.n == 0 && a.e == NULL && a.dense[1] == NULL && a.dense_cap[1] == 0);
    /* Released, it can be used again. */
    CHECK(mtl_stackagg_add(&a, 1, 5, 1, 8, 0) == 0);
    CHECK(a.n == 1 && a.e[0].thread == 1 && a.e[0].bytes == 8 && a.dense[1][5] == 1);
    mtl_stackagg_release(&a);

    /* Without per_thread, every thread adds to thread 0's entry. */
    struct mtl_stackagg s = MTL_STACKAGG_INIT(0);
    CHECK(mtl_stackagg_add(&s, 3, 5, 1, 100, 0) == 0);
    CHECK(mtl_stackagg_add(&s, 1, 5, 1, 10, 2) == 0);
    CHECK(mtl_stackagg_add(&s, 1, 6, 1, 1, 0) == 0);
    CHECK_EQ(s.n, 2);
    CHECK(s.e[0].thread == 0 && s.e[0].stack == 5);
    CHECK(s.e[0].calls == 2 && s.e[0].bytes == 110 && s.e[0].extra == 2);
    CHECK(s.e[1].thread == 0 && s.e[1].stack == 6);
    CHECK_EQ(s.others.count, 0);
    mtl_stackagg_release(&s);
}

/* ---- random adds against the truth ---------------------------------------- */

static void make_stacks(void)
{
    /* Mostly small ids, as stacks are numbered in order of first use;
     * some far up, so that the dense table grows while in use. */
    for (int s = 0; s < NSTACKS; s++)
        stack_ids[s] = s < 2500 ? (uint32_t)s : (uint32_t)(2500 + (s - 2500) * 397);
}

/* Adds n random weights to a (and the truth of it); the thread recorded
 * in the truth is 0 without per_thread. */
static void random_adds(struct mtl_stackagg *a, struct truth *t, int n)
{
    for (int i = 0; i < n; i++) {
        int ti = (int)rnd(NTHREADS);
        /* Runs of one stack, as a loop allocates; then anywhere. */
        int si = rnd(4) ? (int)rnd(40) : (int)rnd(NSTACKS);
        double calls = (double)(1 + rnd(3)) / (rnd(2) ? 1 : 4);
        double bytes = (double)rnd(1 << 16) / 4;
        double extra = rnd(3) == 0 ? (double)rnd(5) : 0;
        CHECK(mtl_stackagg_add(a, thread_ids[ti], stack_ids[si], calls, bytes, extra) == 0);
        truth_add(t, a->per_thread ? ti : 0, si, calls, bytes, extra);
    }
}

static struct truth t1, t2, tall;

static void test_random(void)
{
    for (int per_thread = 0; per_thread <= 1; per_thread++) {
        struct mtl_stackagg a = MTL_STACKAGG_INIT(per_thread);
        truth_reset(&t1);
        random_adds(&a, &t1, 20000);
        check_against(&a, &t1);
        if (per_thread)
            CHECK(a.others.count > 100); /* the map was used */
        /* More adds to the same aggregate: entries keep their places. */
        random_adds(&a, &t1, 5000);
        check_against(&a, &t1);
        mtl_stackagg_release(&a);
    }
}

/* Merging is adding each of from's entries, in its order of first
 * addition, to the aggregate: the same on the truth. */
static void replay(struct truth *t, const struct truth *from, int per_thread)
{
    static int at_thread[NTHREADS * NSTACKS], at_stack[NTHREADS * NSTACKS];
    for (int ti = 0; ti < NTHREADS; ti++)
        for (int si = 0; si < NSTACKS; si++) {
            long k = from->c[ti][si].order;
            if (k >= 0) {
                at_thread[k] = ti;
                at_stack[k] = si;
            }
        }
    for (long k = 0; k < from->added; k++) {
        const struct cell *c = &from->c[at_thread[k]][at_stack[k]];
        truth_add(t, per_thread ? at_thread[k] : 0, at_stack[k], c->calls, c->bytes, c->extra);
    }
}

static void test_merge(void)
{
    for (int per_thread = 0; per_thread <= 1; per_thread++) {
        struct mtl_stackagg a = MTL_STACKAGG_INIT(per_thread);
        struct mtl_stackagg b = MTL_STACKAGG_INIT(per_thread);
        truth_reset(&t1);
        truth_reset(&t2);
        random_adds(&a, &t1, 8000);
        random_adds(&b, &t2, 8000);
        check_against(&b, &t2);
        truth_reset(&tall);
        replay(&tall, &t1, 1);
        replay(&tall, &t2, 1);
        CHECK(mtl_stackagg_merge(&a, &b) == 0);
        check_against(&a, &tall);
        check_against(&b, &t2); /* from is left as it was */

        /* Merging into an empty aggregate copies. */
        struct mtl_stackagg c = MTL_STACKAGG_INIT(per_thread);
        CHECK(mtl_stackagg_merge(&c, &b) == 0);
        check_against(&c, &t2);
        /* Merging an empty one changes nothing. */
        struct mtl_stackagg empty = MTL_STACKAGG_INIT(per_thread);
        CHECK(mtl_stackagg_merge(&c, &empty) == 0);
        check_against(&c, &t2);
        mtl_stackagg_release(&a);
        mtl_stackagg_release(&b);
        mtl_stackagg_release(&c);
    }

    /* Per-thread entries merged into an aggregate without threads fold. */
    struct mtl_stackagg a = MTL_STACKAGG_INIT(1), s = MTL_STACKAGG_INIT(0);
    truth_reset(&t1);
    random_adds(&a, &t1, 8000);
    truth_reset(&t2);
    replay(&t2, &t1, 0);
    CHECK(mtl_stackagg_merge(&s, &a) == 0);
    check_against(&s, &t2);
    mtl_stackagg_release(&a);
    mtl_stackagg_release(&s);
}

int main(void)
{
    make_stacks();
    test_small();
    test_random();
    test_merge();
    CHECKS_DONE();
}
