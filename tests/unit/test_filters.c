/*
 * test_filters.c: the block filters (src/analyze/filter.h) against
 * docs/ANALYSIS.md ("Filters", "Times, sizes, patterns"): the parsers of
 * times, sizes and ranges; every condition at T-1, T and T+1 around its
 * bounds; open ranges; blocks never freed (--lifetime runs to the end of
 * the trace); blocks freed in the microsecond they were made; and which
 * filters can be decided when a block is allocated.
 *
 * Besides the cases written out, every condition is compared with a model
 * written from the definitions on a small grid of times (every block and
 * every range on it), and combinations of conditions on random blocks.
 * The model decides "live at some time in [A, B]" by trying each time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/filter.h"
#include "check.h"

/* ---- parsing ---------------------------------------------------------- */

static uint64_t time_of(const char *s)
{
    uint64_t us = 12345;
    CHECK(mtl_parse_time(s, &us) == 0);
    return us;
}

static int time_bad(const char *s)
{
    uint64_t us = 12345;
    return mtl_parse_time(s, &us) == -1 && us == 12345;
}

static uint64_t size_of(const char *s)
{
    uint64_t b = 12345;
    CHECK(mtl_parse_size(s, &b) == 0);
    return b;
}

static int size_bad(const char *s)
{
    uint64_t b = 12345;
    return mtl_parse_size(s, &b) == -1 && b == 12345;
}

static void test_parse_time(void)
{
    CHECK_EQ(time_of("2.5s"), 2500000);
    CHECK_EQ(time_of("300ms"), 300000);
    CHECK_EQ(time_of("150us"), 150);
    CHECK_EQ(time_of("7"), 7000000);        /* bare: seconds */
    CHECK_EQ(time_of("0"), 0);
    CHECK_EQ(time_of("0us"), 0);
    CHECK_EQ(time_of("1.5ms"), 1500);
    /* 0.000502 s is 501.99999999999994 us in binary: the nearest us. */
    CHECK_EQ(time_of("0.000502"), 502);
    CHECK_EQ(time_of("0.000502s"), 502);
    CHECK_EQ(time_of("1e3us"), 1000);
    CHECK_EQ(time_of("18000000000000s"), 18000000000000000000ull);
    CHECK(time_bad(""));
    CHECK(time_bad("-1"));
    CHECK(time_bad("+1"));
    CHECK(time_bad(" 1"));
    CHECK(time_bad("1 s"));
    CHECK(time_bad("1h"));
    CHECK(time_bad("1sec"));
    CHECK(time_bad("ms"));
    CHECK(time_bad("1.5.5"));
    CHECK(time_bad("inf"));
    CHECK(time_bad("nan"));
    CHECK(time_bad("1e14"));                /* 1e20 us: more than 64 bits */
}

static void test_parse_size(void)
{
    CHECK_EQ(size_of("64"), 64);
    CHECK_EQ(size_of("0"), 0);
    CHECK_EQ(size_of("4K"), 4096);
    CHECK_EQ(size_of("4k"), 4096);
    CHECK_EQ(size_of("4KiB"), 4096);
    CHECK_EQ(size_of("4kb"), 4096);
    CHECK_EQ(size_of("1.5M"), 1572864);
    CHECK_EQ(size_of("2G"), 2147483648ull);
    CHECK_EQ(size_of("0.5K"), 512);
    CHECK_EQ(size_of("16000000000G"), 17179869184000000000ull); /* above INT64_MAX */
    CHECK(size_bad(""));
    CHECK(size_bad("K"));
    CHECK(size_bad("-4K"));
    CHECK(size_bad("4T"));
    CHECK(size_bad("4KX"));
    CHECK(size_bad("4Kib "));
    CHECK(size_bad("4 K"));
    CHECK(size_bad("20000000000G"));       /* more than 64 bits */
}

static void test_parse_range(void)
{
    struct mtl_range r;
    memset(&r, 0, sizeof r);
    CHECK(mtl_parse_range("1K..4K", 0, mtl_parse_size, &r) == 0);
    CHECK(r.set && r.min == 1024 && r.max == 4096);
    CHECK(mtl_parse_range("1K..", 0, mtl_parse_size, &r) == 0);
    CHECK(r.set && r.min == 1024 && r.max == UINT64_MAX);
    CHECK(mtl_parse_range("..64", 0, mtl_parse_size, &r) == 0);
    CHECK(r.set && r.min == 0 && r.max == 64);
    CHECK(mtl_parse_range("..", 0, mtl_parse_size, &r) == 0);
    CHECK(r.set && r.min == 0 && r.max == UINT64_MAX);
    CHECK(mtl_parse_range("5..5", 0, mtl_parse_size, &r) == 0);
    CHECK(r.min == 5 && r.max == 5);
    CHECK(mtl_parse_range("1ms..2s", 0, mtl_parse_time, &r) == 0);
    CHECK(r.min == 1000 && r.max == 2000000);
    CHECK(mtl_parse_range("100us,200us", 1, mtl_parse_time, &r) == 0);
    CHECK(r.set && r.min == 100 && r.max == 200);
    CHECK(mtl_parse_range("1.5,3", 1, mtl_parse_time, &r) == 0);
    CHECK(r.min == 1500000 && r.max == 3000000);

    struct mtl_range keep = { 0, 7, 9 };
    r = keep;
    CHECK(mtl_parse_range("10..5", 0, mtl_parse_size, &r) == -1);
    CHECK(!r.set);
    r = keep;
    CHECK(mtl_parse_range("64", 0, mtl_parse_size, &r) == -1);  /* no ".." */
    CHECK(!r.set);
    CHECK(mtl_parse_range("1..2", 1, mtl_parse_time, &r) == -1); /* no "," */
    CHECK(mtl_parse_range("1,2", 0, mtl_parse_time, &r) == -1);  /* no ".." */
    CHECK(mtl_parse_range("100,", 1, mtl_parse_time, &r) == -1); /* A,B needs both */
    CHECK(mtl_parse_range(",100", 1, mtl_parse_time, &r) == -1);
    CHECK(mtl_parse_range(",", 1, mtl_parse_time, &r) == -1);
    CHECK(mtl_parse_range("2,1", 1, mtl_parse_time, &r) == -1);
    CHECK(mtl_parse_range("x..4", 0, mtl_parse_size, &r) == -1);
    CHECK(mtl_parse_range("4..x", 0, mtl_parse_size, &r) == -1);
    char longer[200];
    memset(longer, '1', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    memcpy(longer + 100, "..", 2);
    CHECK(mtl_parse_range(longer, 0, mtl_parse_size, &r) == -1); /* pieces too long */
}

static void test_patterns(void)
{
    struct mtl_filter f;
    memset(&f, 0, sizeof f);
    CHECK(!mtl_filter_on_stacks(&f));
    CHECK(mtl_filter_add_pattern(f.inside, &f.ninside, "") == -1);
    CHECK_EQ(f.ninside, 0);
    for (int i = 0; i < MTL_MAX_PATTERNS; i++)
        CHECK(mtl_filter_add_pattern(f.inside, &f.ninside, "p*") == 0);
    CHECK(mtl_filter_add_pattern(f.inside, &f.ninside, "one too many") == -1);
    CHECK_EQ(f.ninside, MTL_MAX_PATTERNS);
    CHECK(mtl_filter_on_stacks(&f));
    CHECK(mtl_filter_decidable_at_alloc(&f)); /* stacks are known at allocation */
    f.ninside = 0;
    CHECK(mtl_filter_add_pattern(f.not_inside, &f.nnot_inside, "q") == 0);
    CHECK(mtl_filter_on_stacks(&f));

    /* The view: only the frame options count. */
    struct mtl_filter a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    b.size = (struct mtl_range){ 1, 0, 4 };
    b.ninside = 1;
    b.inside[0] = "x";
    CHECK(mtl_filter_same_view(&a, &b));
    char h1[] = "hid*", h2[] = "hid*";
    mtl_filter_add_pattern(a.hide, &a.nhide, h1);
    CHECK(!mtl_filter_same_view(&a, &b));
    mtl_filter_add_pattern(b.hide, &b.nhide, h2); /* equal text, another pointer */
    CHECK(mtl_filter_same_view(&a, &b));
    mtl_filter_add_pattern(b.wrappers, &b.nwrappers, "w");
    CHECK(!mtl_filter_same_view(&a, &b));
    mtl_filter_add_pattern(a.wrappers, &a.nwrappers, "v");
    CHECK(!mtl_filter_same_view(&a, &b));
    a.wrappers[0] = "w";
    CHECK(mtl_filter_same_view(&a, &b));
    a.keep_alloc_frames = 1;
    CHECK(!mtl_filter_same_view(&a, &b));
}

/* ---- the conditions, written out ---------------------------------------- */

static struct mtl_filter none(void)
{
    struct mtl_filter f;
    memset(&f, 0, sizeof f);
    return f;
}

static struct mtl_range range(uint64_t lo, uint64_t hi)
{
    return (struct mtl_range){ 1, lo, hi };
}

static void test_range_has(void)
{
    struct mtl_range r = { 0, 10, 20 };
    CHECK(mtl_range_has(&r, 0) && mtl_range_has(&r, UINT64_MAX)); /* unset: all */
    r = range(10, 20);
    CHECK(!mtl_range_has(&r, 9));
    CHECK(mtl_range_has(&r, 10));
    CHECK(mtl_range_has(&r, 11));
    CHECK(mtl_range_has(&r, 19));
    CHECK(mtl_range_has(&r, 20));
    CHECK(!mtl_range_has(&r, 21));
    r = range(0, UINT64_MAX);
    CHECK(mtl_range_has(&r, 0) && mtl_range_has(&r, UINT64_MAX));
    r = range(7, 7);
    CHECK(!mtl_range_has(&r, 6) && mtl_range_has(&r, 7) && !mtl_range_has(&r, 8));
    r = range(UINT64_MAX, UINT64_MAX);
    CHECK(!mtl_range_has(&r, UINT64_MAX - 1) && mtl_range_has(&r, UINT64_MAX));
}

static void test_at_alloc(void)
{
    struct mtl_filter f = none();
    CHECK(mtl_filter_at_alloc(&f, 0, 0, 0, 0));
    CHECK(mtl_filter_at_alloc(&f, UINT64_MAX, 99, 5, UINT64_MAX - 1));

    /* --size 64..128 */
    f.size = range(64, 128);
    CHECK(!mtl_filter_at_alloc(&f, 63, 1, 0, 0));
    CHECK(mtl_filter_at_alloc(&f, 64, 1, 0, 0));
    CHECK(mtl_filter_at_alloc(&f, 65, 1, 0, 0));
    CHECK(mtl_filter_at_alloc(&f, 127, 1, 0, 0));
    CHECK(mtl_filter_at_alloc(&f, 128, 1, 0, 0));
    CHECK(!mtl_filter_at_alloc(&f, 129, 1, 0, 0));
    /* --size 1K.. : open above */
    f.size = range(1024, UINT64_MAX);
    CHECK(!mtl_filter_at_alloc(&f, 1023, 1, 0, 0));
    CHECK(mtl_filter_at_alloc(&f, 1024, 1, 0, 0));
    CHECK(mtl_filter_at_alloc(&f, UINT64_MAX, 1, 0, 0));
    /* --size ..0 : the zero-sized only */
    f.size = range(0, 0);
    CHECK(mtl_filter_at_alloc(&f, 0, 1, 0, 0));
    CHECK(!mtl_filter_at_alloc(&f, 1, 1, 0, 0));

    /* --allocated-between 100,200 */
    f = none();
    f.allocated = range(100, 200);
    CHECK(!mtl_filter_at_alloc(&f, 8, 1, 0, 99));
    CHECK(mtl_filter_at_alloc(&f, 8, 1, 0, 100));
    CHECK(mtl_filter_at_alloc(&f, 8, 1, 0, 101));
    CHECK(mtl_filter_at_alloc(&f, 8, 1, 0, 199));
    CHECK(mtl_filter_at_alloc(&f, 8, 1, 0, 200));
    CHECK(!mtl_filter_at_alloc(&f, 8, 1, 0, 201));

    /* --thread 4242: by kernel id; --thread t3: by index */
    f = none();
    f.thread_set = 1;
    f.thread = 4242;
    CHECK(mtl_filter_at_alloc(&f, 8, 4242, 3, 0));
    CHECK(!mtl_filter_at_alloc(&f, 8, 4241, 4242, 0)); /* an index is not a tid */
    CHECK(!mtl_filter_at_alloc(&f, 8, 4243, 3, 0));
    f.thread_is_index = 1;
    f.thread = 3;
    CHECK(mtl_filter_at_alloc(&f, 8, 4242, 3, 0));
    CHECK(!mtl_filter_at_alloc(&f, 8, 3, 2, 0));        /* a tid is not an index */
    CHECK(!mtl_filter_at_alloc(&f, 8, 4242, 4, 0));
    f.thread = 0;
    CHECK(mtl_filter_at_alloc(&f, 8, 7, 0, 0));

    /* All at once: each must hold. */
    f.size = range(8, 8);
    f.allocated = range(5, 5);
    CHECK(mtl_filter_at_alloc(&f, 8, 7, 0, 5));
    CHECK(!mtl_filter_at_alloc(&f, 9, 7, 0, 5));
    CHECK(!mtl_filter_at_alloc(&f, 8, 7, 0, 6));
    CHECK(!mtl_filter_at_alloc(&f, 8, 7, 1, 5));

    /* The conditions on frees are not this function's. */
    f = none();
    f.never_freed = 1;
    f.live_at_set = 1;
    f.live_at = 10;
    f.freed = range(1, 2);
    f.lifetime = range(1000, 2000);
    f.live_between = range(1, 2);
    CHECK(mtl_filter_at_alloc(&f, 8, 7, 0, 500));
}

static void test_at_free(void)
{
    const uint64_t N = MTL_NEVER, end = 1000;
    struct mtl_filter f = none();
    CHECK(mtl_filter_at_free(&f, 0, 0, end));
    CHECK(mtl_filter_at_free(&f, 10, N, end));

    /* --never-freed */
    f.never_freed = 1;
    CHECK(mtl_filter_at_free(&f, 10, N, end));
    CHECK(!mtl_filter_at_free(&f, 10, 20, end));
    CHECK(!mtl_filter_at_free(&f, 10, end, end)); /* freed at the very end */

    /* --freed-between 200,300 */
    f = none();
    f.freed = range(200, 300);
    CHECK(!mtl_filter_at_free(&f, 0, 199, end));
    CHECK(mtl_filter_at_free(&f, 0, 200, end));
    CHECK(mtl_filter_at_free(&f, 0, 201, end));
    CHECK(mtl_filter_at_free(&f, 0, 299, end));
    CHECK(mtl_filter_at_free(&f, 0, 300, end));
    CHECK(!mtl_filter_at_free(&f, 0, 301, end));
    CHECK(!mtl_filter_at_free(&f, 0, N, end));
    f.freed = range(0, UINT64_MAX);             /* every freed block */
    CHECK(mtl_filter_at_free(&f, 0, 0, end));
    CHECK(!mtl_filter_at_free(&f, 0, N, end));  /* never freed is not "freed at MAX" */

    /* --live-at 500: allocated at or before, not freed by then */
    f = none();
    f.live_at_set = 1;
    f.live_at = 500;
    CHECK(mtl_filter_at_free(&f, 499, 501, end));
    CHECK(mtl_filter_at_free(&f, 500, 501, end));
    CHECK(!mtl_filter_at_free(&f, 501, 502, end));
    CHECK(!mtl_filter_at_free(&f, 100, 499, end));
    CHECK(!mtl_filter_at_free(&f, 100, 500, end)); /* freed at T: not live at T */
    CHECK(mtl_filter_at_free(&f, 100, 501, end));
    CHECK(mtl_filter_at_free(&f, 100, N, end));
    CHECK(mtl_filter_at_free(&f, 500, N, end));
    CHECK(!mtl_filter_at_free(&f, 500, 500, end)); /* freed the us it was made */
    f.live_at = 0;
    CHECK(mtl_filter_at_free(&f, 0, 1, end));
    CHECK(!mtl_filter_at_free(&f, 0, 0, end));

    /* --live-between 400,600: live (alloc <= t < free) at some t in it */
    f = none();
    f.live_between = range(400, 600);
    CHECK(!mtl_filter_at_free(&f, 100, 399, end));
    CHECK(!mtl_filter_at_free(&f, 100, 400, end)); /* gone at 400 */
    CHECK(mtl_filter_at_free(&f, 100, 401, end));  /* live at 400 */
    CHECK(mtl_filter_at_free(&f, 599, 600, end));
    CHECK(mtl_filter_at_free(&f, 600, 601, end));  /* live at 600 */
    CHECK(!mtl_filter_at_free(&f, 601, 700, end));
    CHECK(mtl_filter_at_free(&f, 600, N, end));
    CHECK(!mtl_filter_at_free(&f, 601, N, end));
    CHECK(mtl_filter_at_free(&f, 0, N, end));
    CHECK(mtl_filter_at_free(&f, 450, 550, end));  /* inside */
    CHECK(mtl_filter_at_free(&f, 300, 700, end));  /* around */
    CHECK(!mtl_filter_at_free(&f, 500, 500, end)); /* live at no time */
    CHECK(!mtl_filter_at_free(&f, 400, 400, end));
    f.live_between = range(500, 500);              /* one microsecond: --live-at 500 */
    CHECK(mtl_filter_at_free(&f, 500, 501, end));
    CHECK(!mtl_filter_at_free(&f, 500, 500, end));
    CHECK(!mtl_filter_at_free(&f, 499, 500, end));
    CHECK(!mtl_filter_at_free(&f, 501, 502, end));

    /* --lifetime 100..200: free - alloc, or end - alloc if never freed */
    f = none();
    f.lifetime = range(100, 200);
    CHECK(!mtl_filter_at_free(&f, 10, 109, end));
    CHECK(mtl_filter_at_free(&f, 10, 110, end));
    CHECK(mtl_filter_at_free(&f, 10, 111, end));
    CHECK(mtl_filter_at_free(&f, 10, 209, end));
    CHECK(mtl_filter_at_free(&f, 10, 210, end));
    CHECK(!mtl_filter_at_free(&f, 10, 211, end));
    CHECK(!mtl_filter_at_free(&f, 799, N, end));   /* 201 to the end */
    CHECK(mtl_filter_at_free(&f, 800, N, end));    /* 200 */
    CHECK(mtl_filter_at_free(&f, 900, N, end));    /* 100 */
    CHECK(!mtl_filter_at_free(&f, 901, N, end));   /* 99 */
    CHECK(!mtl_filter_at_free(&f, 800, N, end + 1));
    CHECK(mtl_filter_at_free(&f, 800, N, end - 100));
    f.lifetime = range(0, 0);
    CHECK(mtl_filter_at_free(&f, 5, 5, end));
    CHECK(!mtl_filter_at_free(&f, 5, 6, end));
    CHECK(mtl_filter_at_free(&f, end, N, end));    /* made at the very end */
    CHECK(!mtl_filter_at_free(&f, end - 1, N, end));
    f.lifetime = range(1, UINT64_MAX);             /* --lifetime 1us.. */
    CHECK(!mtl_filter_at_free(&f, 5, 5, end));
    CHECK(mtl_filter_at_free(&f, 5, 6, end));
    CHECK(mtl_filter_at_free(&f, 0, N, end));

    /* The conditions at allocation are not this function's. */
    f = none();
    f.size = range(1, 1);
    f.allocated = range(1, 1);
    f.thread_set = 1;
    f.thread = 77;
    CHECK(mtl_filter_at_free(&f, 500, 600, end));
}

static void test_decidable(void)
{
    struct mtl_filter f = none();
    CHECK(mtl_filter_decidable_at_alloc(&f));
    f.size = range(1, 2);
    f.allocated = range(1, 2);
    f.thread_set = 1;
    mtl_filter_add_pattern(f.inside, &f.ninside, "a");
    mtl_filter_add_pattern(f.not_inside, &f.nnot_inside, "b");
    mtl_filter_add_pattern(f.hide, &f.nhide, "c");
    f.keep_alloc_frames = 1;
    CHECK(mtl_filter_decidable_at_alloc(&f));
    struct mtl_filter g;
    g = f, g.live_at_set = 1;
    CHECK(!mtl_filter_decidable_at_alloc(&g));
    g = f, g.live_between = range(0, 0);
    CHECK(!mtl_filter_decidable_at_alloc(&g));
    g = f, g.freed = range(0, UINT64_MAX);
    CHECK(!mtl_filter_decidable_at_alloc(&g));
    g = f, g.never_freed = 1;
    CHECK(!mtl_filter_decidable_at_alloc(&g));
    g = f, g.lifetime = range(0, UINT64_MAX);
    CHECK(!mtl_filter_decidable_at_alloc(&g));
    g = f, g.temporary = 1;
    CHECK(!mtl_filter_decidable_at_alloc(&g));
}

/* ---- the model ---------------------------------------------------------- */

struct blk {
    uint64_t size, alloc, free; /* free: MTL_NEVER if never freed */
    uint32_t tid, index;
};

/* "Live at t": allocated at or before t, not freed by t. */
static int live_at(const struct blk *b, uint64_t t)
{
    return b->alloc <= t && (b->free == MTL_NEVER || b->free > t);
}

static int in(const struct mtl_range *r, uint64_t v)
{
    return !r->set || (r->min <= v && v <= r->max);
}

/* docs/ANALYSIS.md's table, condition by condition.  Times are small:
 * "live at some time in [A, B]" tries each t of [A, min(B, limit)]. */
static int model(const struct mtl_filter *f, const struct blk *b, uint64_t end,
                 uint64_t limit)
{
    if (!in(&f->allocated, b->alloc) || !in(&f->size, b->size))
        return 0;
    if (f->thread_set && f->thread != (f->thread_is_index ? b->index : b->tid))
        return 0;
    if (f->live_at_set && !live_at(b, f->live_at))
        return 0;
    if (f->live_between.set) {
        int some = 0;
        uint64_t hi = f->live_between.max < limit ? f->live_between.max : limit;
        for (uint64_t t = f->live_between.min; t <= hi && !some; t++)
            some = live_at(b, t);
        if (!some)
            return 0;
    }
    if (f->freed.set && (b->free == MTL_NEVER || !in(&f->freed, b->free)))
        return 0;
    if (f->never_freed && b->free != MTL_NEVER)
        return 0;
    if (f->lifetime.set && !in(&f->lifetime, (b->free == MTL_NEVER ? end : b->free) - b->alloc))
        return 0;
    return 1;
}

static int engine(const struct mtl_filter *f, const struct blk *b, uint64_t end)
{
    return mtl_filter_at_alloc(f, b->size, b->tid, b->index, b->alloc) &&
           mtl_filter_at_free(f, b->alloc, b->free, end);
}

/* Every block on a grid of times 0..E (allocated at a, freed at a..E or
 * never; the trace ends at E), against every range [lo, hi] of 0..E+1
 * and the open ones, for each condition on its own. */
static void test_grid(void)
{
    enum { E = 9 };
    const uint64_t OPEN = UINT64_MAX;
    struct blk blocks[200];
    size_t nb = 0;
    for (uint64_t a = 0; a <= E; a++) {
        for (uint64_t fr = a; fr <= E + 1; fr++) {
            blocks[nb++] = (struct blk){ a, a, fr == E + 1 ? MTL_NEVER : fr, 1, 0 };
            CHECK(nb < sizeof blocks / sizeof *blocks);
        }
    }
    size_t compared = 0, passed = 0;
    for (int kind = 0; kind < 6; kind++) {
        for (uint64_t lo = 0; lo <= E + 1; lo++) {
            for (uint64_t hi = lo; hi <= E + 2; hi++) {
                struct mtl_filter f = none();
                struct mtl_range r = range(lo, hi == E + 2 ? OPEN : hi);
                switch (kind) {
                case 0: f.allocated = r; break;
                case 1: f.freed = r; break;
                case 2: f.live_between = r; break;
                case 3: f.lifetime = r; break;
                case 4: f.size = r; break; /* sizes are the allocation times */
                case 5: f.live_at_set = 1, f.live_at = lo; break;
                }
                for (size_t i = 0; i < nb; i++) {
                    int want = model(&f, &blocks[i], E, E + 2);
                    int got = engine(&f, &blocks[i], E);
                    if (want != got)
                        fprintf(stderr, "kind %d [%llu, %llu], block %llu..%llu: %d, want %d\n",
                                kind, (unsigned long long)lo,
                                (unsigned long long)hi, (unsigned long long)blocks[i].alloc,
                                (unsigned long long)blocks[i].free, got, want);
                    CHECK(want == got);
                    compared++;
                    passed += (size_t)got;
                }
            }
        }
    }
    /* Not a vacuous comparison: both answers came up many times. */
    CHECK(passed > 1000 && compared - passed > 1000);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state % n;
}

static struct mtl_range rnd_range(uint64_t top)
{
    uint64_t a = rnd(top + 1), b = rnd(top + 1);
    struct mtl_range r = range(a < b ? a : b, a < b ? b : a);
    if (rnd(4) == 0)
        r.max = UINT64_MAX;
    if (rnd(4) == 0)
        r.min = 0;
    return r;
}

/* Random blocks and random conjunctions of two to four conditions. */
static void test_combined(void)
{
    enum { E = 40 };
    size_t passed = 0, total = 0;
    for (int round = 0; round < 20000; round++) {
        struct mtl_filter f = none();
        int nconds = 2 + (int)rnd(3);
        for (int c = 0; c < nconds; c++) {
            switch (rnd(9)) {
            case 0: f.allocated = rnd_range(E); break;
            case 1: f.freed = rnd_range(E); break;
            case 2: f.live_between = rnd_range(E); break;
            case 3: f.lifetime = rnd_range(E); break;
            case 4: f.size = rnd_range(64); break;
            case 5: f.live_at_set = 1, f.live_at = rnd(E + 1); break;
            case 6: f.never_freed = 1; break;
            case 7: f.thread_set = 1, f.thread_is_index = 0, f.thread = 100 + (uint32_t)rnd(3); break;
            case 8: f.thread_set = 1, f.thread_is_index = 1, f.thread = (uint32_t)rnd(3); break;
            }
        }
        for (int k = 0; k < 8; k++) {
            struct blk b;
            b.alloc = rnd(E + 1);
            b.free = rnd(3) == 0 ? MTL_NEVER : b.alloc + rnd(E + 1 - b.alloc);
            b.size = rnd(65);
            b.index = (uint32_t)rnd(3);
            b.tid = 100 + (uint32_t)rnd(3);
            int want = model(&f, &b, E, E + 1);
            CHECK(engine(&f, &b, E) == want);
            passed += (size_t)want;
            total++;
        }
    }
    CHECK(passed > 1000 && total - passed > 1000);
}

int main(void)
{
    test_parse_time();
    test_parse_size();
    test_parse_range();
    test_patterns();
    test_range_has();
    test_at_alloc();
    test_at_free();
    test_decidable();
    test_grid();
    test_combined();
    CHECKS_DONE();
}
