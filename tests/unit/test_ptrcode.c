/* test_ptrcode: the address coding of versions 4 on gives back every address
 * exactly: the model alone (each prediction and each reference taken,
 * blocks older than the window, an address allocated twice, frees of
 * unknown blocks, several threads), the whole encoder and reader on the
 * same events (stack ids too, coded as differences), and corrupt values
 * refused without a crash. */
#include <string.h>

#include "check.h"
#include "common/hmap.h"
#include "common/varint.h"
#include "memtally/trace.h"
#include "encoder_mem.h"
#include "trace/ptrcode.h"

/* A small allocator to drive the model: per-thread LIFO free lists per
 * size class (as tcache), a bump pointer, and a few odd moves. */
#define MAXLIVE (1u << 21)
#define THREADS 3

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    return check_xorshift(&rng);
}

enum op { OP_ALLOC, OP_FREE, OP_TAG };
struct step {
    enum op op;
    uint32_t thread;
    uint64_t size, ptr;
    uint32_t stack; /* of an allocation: 0 to NSTACKS */
};
#define NSTACKS 300

static struct step *steps;
static size_t nsteps;
static uint64_t live[MAXLIVE], live_size[MAXLIVE];
static size_t nlive;
static uint64_t freelist[THREADS][64][16];
static unsigned nfree[THREADS][64];
static uint64_t top = 0x555500000000ull;

static void add(enum op op, uint32_t thread, uint64_t size, uint64_t ptr)
{
    /* stack ids up and down, near and far (coded as differences) */
    uint32_t stack = op == OP_ALLOC ? (uint32_t)(rnd() % 4 ? nsteps % 7 : rnd() % (NSTACKS + 1)) : 0;
    steps[nsteps++] = (struct step){ op, thread, size, ptr, stack };
}

/* The ends of the last allocations, as a chunk split again gives them. */
static uint64_t recent_end[8];
static unsigned nrecent;

static void do_alloc(uint32_t t, uint64_t size)
{
    unsigned c = (unsigned)((size + 23) / 16) & 63;
    uint64_t p;
    if (nfree[t][c] && rnd() % 8)
        p = freelist[t][c][--nfree[t][c]];
    else if (rnd() % 32 == 0 && nrecent >= 8)
        p = recent_end[(nrecent - 1 - rnd() % 8) % 8]; /* freed or live there: both happen */
    else if (rnd() % 16 == 0)
        p = (rnd() & 0xffffffffff0ull) | 0x7f0000000000ull; /* somewhere else */
    else
        p = top, top += (size + 23) & ~15ull;
    add(OP_ALLOC, t, size, p);
    recent_end[nrecent++ % 8] = p + (size + 23 < 32 ? 32 : (size + 23) & ~15ull);
    live[nlive] = p;
    live_size[nlive++] = size;
}

static void do_free(uint32_t t, size_t i)
{
    uint64_t p = live[i];
    unsigned c = (unsigned)((live_size[i] + 23) / 16) & 63;
    add(OP_FREE, t, 0, p);
    if (nfree[t][c] < 16)
        freelist[t][c][nfree[t][c]++] = p;
    live[i] = live[--nlive];
    live_size[i] = live_size[nlive];
}

/* A burst, as a program that frees a large table and builds another:
 * blocks of one size made and freed, many more than a list's 32, then
 * made again from those frees, mostly the newest first but not in
 * order (version 9 names them past the 32). */
static void burst(uint32_t t)
{
    enum { N = 300 };
    uint64_t made[N];
    size_t first = nlive;
    for (size_t i = 0; i < N; i++) {
        do_alloc(t, 72);
        made[i] = live[nlive - 1];
    }
    for (size_t i = 0; i < N; i++)
        do_free(t, first + rnd() % (nlive - first));
    for (size_t left = N; left > 0; left--) {
        size_t back = rnd() % 4 ? rnd() % 8 : rnd() % left; /* near the newest, or anywhere */
        size_t i = left - 1 - (back < left ? back : 0);
        add(OP_ALLOC, t, 72, made[i]);
        live[nlive] = made[i];
        live_size[nlive++] = 72;
        made[i] = made[left - 1];
    }
}

/* About n allocations: churn of short lives, long-lived blocks freed in
 * allocation order and in reverse, addresses allocated twice, frees of
 * blocks never seen, tags. */
static void make_steps(size_t n)
{
    steps = calloc(4 * n + 1000, sizeof *steps);
    nsteps = nlive = 0;
    nrecent = 0;
    /* Blocks that outlive the window, freed at the end. */
    static uint64_t kept[2000];
    for (size_t k = 0; k < 2000; k++) {
        kept[k] = top;
        top += 64;
        add(OP_ALLOC, 0, 40, kept[k]);
    }
    for (size_t k = 0; k < n; k++) {
        uint32_t t = (uint32_t)(rnd() % THREADS);
        uint64_t r = rnd() % 1000;
        do_alloc(t, 1 + rnd() % (r < 900 ? 200 : 5000));
        if (r < 5)
            add(OP_TAG, t, 0, live[nlive - 1]);
        if (r < 3) /* the same address again, without its free */
            add(OP_ALLOC, t, 8, live[rnd() % nlive]);
        if (r < 2)
            add(OP_FREE, t, 0, 0x1000 + rnd() % 0x100000); /* allocated before the trace */
        while (nlive > 1 && rnd() % 100 < 48) /* short lives: the newest mostly */
            do_free(t, rnd() % 4 ? nlive - 1 : (size_t)(rnd() % nlive));
        if (k % 20000 == 9999)
            burst(t);
        if (k % 50000 == 49999 && nlive > 100) { /* a bulk free in order */
            size_t m = nlive / 2;
            for (size_t i = 0; i < m; i++)
                do_free(t, 0);
        }
    }
    while (nlive)
        do_free((uint32_t)(rnd() % THREADS), nlive - 1);
    for (size_t k = 0; k < 2000; k++)
        add(OP_FREE, 1, 0, kept[k]);
}

/* Live bytes as memtally record keeps them from the encoder's news: a
 * map of the blocks that left the window only. */
struct live {
    struct mtl_hmap old;
    uint64_t bytes;
};

static void live_news(struct live *l, const struct mtl_pc_news *n)
{
    if (n->gone)
        l->bytes -= n->gone_size;
    if (n->left)
        CHECK(mtl_hmap_put(&l->old, n->left_ptr, n->left_size, NULL) == 0);
}

/* Of the last model_round_trip: the bytes of its allocations' values as
 * varints, and how many were coded 128 (version 9's place past a list's
 * first 32, docs/FORMAT.md "Addresses"). */
static size_t alloc_bytes, deep_codes;

/* The model alone, as a trace of version v codes addresses: every value
 * the encoder gives decodes to the address, and its news keep live bytes
 * exact.  Returns how many allocations took a second value. */
static size_t model_round_trip(uint32_t version)
{
    struct mtl_ptrcode *enc = mtl__pc_new(1, version), *dec = mtl__pc_new(0, version);
    size_t twos = 0;
    alloc_bytes = deep_codes = 0;
    CHECK(enc && dec);
    for (int pass = 0; pass < 2; pass++) {
        size_t wrong = 0, by_place = 0, escapes = 0;
        struct live l = { MTL_HMAP_INIT, 0 };
        struct mtl_hmap truth = MTL_HMAP_INIT; /* every live block: address -> size */
        uint64_t truth_bytes = 0, size;
        int left_seen = 0;
        for (size_t i = 0; i < nsteps; i++) {
            const struct step *s = &steps[i];
            uint64_t v[2] = { 0, 0 }, back = 0;
            int rc = 0;
            if (s->op == OP_TAG) {
                back = mtl__pc_get_tag(dec, mtl__pc_put_tag(enc, s->ptr));
            } else if (s->op == OP_ALLOC) {
                struct mtl_pc_news n = { 0 };
                unsigned nv = mtl__pc_put_alloc(enc, s->thread, s->size, s->ptr, 0, v, &n);
                twos += nv > 1;
                alloc_bytes += mtl__varint_len(v[0]) + (nv > 1 ? mtl__varint_len(v[1]) : 0);
                deep_codes += v[0] == 128;
                live_news(&l, &n);
                left_seen |= n.left;
                if (l.old.count && mtl_hmap_take(&l.old, s->ptr, &size))
                    l.bytes -= size;
                l.bytes += s->size;
                if (mtl_hmap_put(&truth, s->ptr, s->size, &size) == 1)
                    truth_bytes -= size;
                truth_bytes += s->size;
                rc = mtl__pc_get_alloc(dec, s->thread, s->size, v[0], v[1], &back);
            } else {
                struct mtl_pc_news n = { 0 };
                mtl__pc_put_free(enc, s->thread, s->ptr, v, &n);
                live_news(&l, &n);
                if (v[0] == 0 && mtl_hmap_take(&l.old, s->ptr, &size))
                    l.bytes -= size;
                if (mtl_hmap_take(&truth, s->ptr, &size))
                    truth_bytes -= size;
                by_place += v[0] != 0;
                escapes += v[0] == 0;
                rc = mtl__pc_get_free(dec, s->thread, v[0], v[1], &back);
            }
            if (i % 1000 == 0 || i == nsteps - 1)
                CHECK_EQ(l.bytes, truth_bytes);
            wrong += rc != 0 || back != s->ptr;
        }
        CHECK_EQ(wrong, 0);
        CHECK(by_place > escapes * 10); /* the window names most frees */
        CHECK(escapes > 0);             /* and some are older or unknown */
        CHECK(left_seen);               /* blocks outlived the window */
        mtl_hmap_release(&l.old);
        mtl_hmap_release(&truth);
        /* A new trace starts from scratch: the same again. */
        mtl__pc_reset(enc);
        mtl__pc_reset(dec);
    }
    mtl__pc_free(enc);
    mtl__pc_free(dec);
    return twos;
}

/* Frees far back, each just as the allocations have filled a word of the
 * window's live bits: the count of that word is the one change the model
 * may not have put in its tree yet, and a rank that missed it would name
 * another block. */
static void far_frees_at_word_ends(void)
{
    struct mtl_ptrcode *enc = mtl__pc_new(1, MTL_FORMAT_VERSION), *dec = mtl__pc_new(0, MTL_FORMAT_VERSION);
    CHECK(enc && dec);
    uint64_t base = 0x600000000000ull, v[2], back;
    size_t wrong = 0, frees = 0, n = 0;
    for (int round = 0; round < 40; round++) {
        do { /* to the end of a word of allocations */
            uint64_t p = base + 64 * n++;
            mtl__pc_put_alloc(enc, 0, 40, p, 0, v, NULL);
            wrong += mtl__pc_get_alloc(dec, 0, 40, v[0], v[1], &back) != 0 || back != p;
        } while (n % 64 || n < 2048);
        uint64_t p = base + 64 * (uint64_t)(round * 37 + 5); /* far back, still live */
        mtl__pc_put_free(enc, 1 + round % 2, p, v, NULL);
        wrong += mtl__pc_get_free(dec, 1 + round % 2, v[0], v[1], &back) != 0 || back != p;
        frees++;
    }
    CHECK_EQ(frees, 40);
    CHECK_EQ(wrong, 0);
    mtl__pc_free(enc);
    mtl__pc_free(dec);
}

/* Version 9's code 128: the (33 + j)-th of a list, past its first 32.
 * 40 blocks of 16 bytes made and freed newest first: their list holds
 * frees 40 to 9 in its array and 8 to 1 past it, newest first. */
static void deep_codes_checked(void)
{
    struct mtl_ptrcode *enc = mtl__pc_new(1, MTL_FORMAT_VERSION), *dec = mtl__pc_new(0, MTL_FORMAT_VERSION);
    struct mtl_ptrcode *v8 = mtl__pc_new(0, 8);
    CHECK(enc && dec && v8);
    uint64_t v[2], p;
    for (int i = 0; i < 40; i++) {
        unsigned n = mtl__pc_put_alloc(enc, 0, 16, 0x1000 + 32 * (uint64_t)i, 0, v, NULL);
        CHECK(mtl__pc_get_alloc(dec, 0, 16, v[0], n > 1 ? v[1] : 0, &p) == 0);
        CHECK(mtl__pc_get_alloc(v8, 0, 16, v[0], n > 1 ? v[1] : 0, &p) == 0);
    }
    for (int i = 39; i >= 0; i--) {
        unsigned n = mtl__pc_put_free(enc, 0, 0x1000 + 32 * (uint64_t)i, v, NULL);
        CHECK(mtl__pc_get_free(dec, 0, v[0], n > 1 ? v[1] : 0, &p) == 0);
        CHECK(mtl__pc_get_free(v8, 0, v[0], n > 1 ? v[1] : 0, &p) == 0);
    }
    CHECK(mtl__pc_alloc_two(128));
    CHECK(mtl__pc_get_alloc(v8, 0, 16, 128, 0, &p) < 0);    /* no such code before 9 */
    CHECK(mtl__pc_get_alloc(dec, 0, 48, 128, 0, &p) < 0);   /* another class: no list */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, 8, &p) < 0);   /* 8 past the array */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, 4096, &p) < 0);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, UINT64_MAX, &p) < 0);
    /* Free f is block 40 - f's.  Free 6, the third past the array; then
     * free 8, the first: past it are 7, 5, 4, 3, 2, 1. */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, 2, &p) == 0 && p == 0x1000 + 32 * 34);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, 0, &p) == 0 && p == 0x1000 + 32 * 32);
    /* The array's first taken (free 40): free 7 comes up as its 32nd;
     * that taken, free 5; that taken, free 4: past it are 3, 2, 1. */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 1, 0, &p) == 0 && p == 0x1000 + 32 * 0);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 32, 0, &p) == 0 && p == 0x1000 + 32 * 33);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 32, 0, &p) == 0 && p == 0x1000 + 32 * 35);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, 0, &p) == 0 && p == 0x1000 + 32 * 37);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, 2, &p) < 0);   /* 2 and 1 left */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 128, 1, &p) == 0 && p == 0x1000 + 32 * 39);
    mtl__pc_free(enc);
    mtl__pc_free(dec);
    mtl__pc_free(v8);
}

/* Corrupt values: refused or decoded, never a crash; the window's first
 * free cannot name a block that is not there. */
static void corrupt_values(void)
{
    /* The top's code (after the far free's) names nothing before the
     * lane's first allocation, and is no code at all in version 4. */
    uint64_t top_code = MTL_PC_CLASS_DEPTH + 2 + 8 + 64 + 1, p;
    struct mtl_ptrcode *old = mtl__pc_new(0, 4), *dec = mtl__pc_new(0, MTL_FORMAT_VERSION);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, top_code, 0, &p) < 0);
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 0, 0x2000, &p) == 0);        /* carved at 0x1000 */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, top_code, 0, &p) == 0 && p == 0x1020);
    CHECK(mtl__pc_get_alloc(old, 0, 16, 0, 0x2000, &p) == 0);
    CHECK(mtl__pc_get_alloc(old, 0, 16, top_code, 0, &p) < 0);
    /* The codes after the top's name the end of a recent allocation from
     * version 7: none before the first, the last one's after it, and no
     * code at all in version 6. */
    struct mtl_ptrcode *v6 = mtl__pc_new(0, 6), *v7 = mtl__pc_new(0, MTL_FORMAT_VERSION);
    CHECK(mtl__pc_get_alloc(v7, 0, 16, top_code + 1, 0, &p) < 0);
    CHECK(mtl__pc_get_alloc(v7, 5, 40, 0, 0x2000, &p) == 0 && p == 0x1000);
    CHECK(mtl__pc_get_alloc(v7, 6, 16, top_code + 1, 0, &p) == 0 && p == 0x1030);
    CHECK(mtl__pc_get_alloc(v7, 6, 16, top_code + 2, 0, &p) == 0 && p == 0x1030); /* the first's end again */
    CHECK(mtl__pc_get_alloc(v7, 6, 16, top_code + 4, 0, &p) < 0); /* three so far */
    CHECK(mtl__pc_get_alloc(v6, 5, 40, 0, 0x2000, &p) == 0);
    CHECK(mtl__pc_get_alloc(v6, 6, 16, top_code + 1, 0, &p) < 0);
    mtl__pc_free(v6);
    mtl__pc_free(v7);
    mtl__pc_free(old);
    mtl__pc_reset(dec);
    CHECK(mtl__pc_get_free(dec, 0, 1, 0, &p) < 0);  /* newest live: none */
    CHECK(mtl__pc_get_free(dec, 0, 2, 0, &p) < 0);  /* no previous free */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 3, 0, &p) < 0); /* no list */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, MTL_PC_CLASS_DEPTH + 2, 0, &p) < 0); /* no free */
    CHECK(mtl__pc_get_alloc(dec, 0, 16, 0, 200, &p) == 0);
    CHECK(mtl__pc_get_free(dec, 0, 3, 0, &p) < 0);  /* one live: rank 1 is none */
    CHECK(mtl__pc_get_free(dec, 0, UINT64_MAX, 0, &p) < 0);
    CHECK(mtl__pc_get_free(dec, 0, UINT64_MAX - 1, 0, &p) < 0);
    for (int i = 0; i < 100000; i++) {
        uint64_t v0 = rnd() % 4 ? rnd() % 200 : rnd(), v1 = rnd();
        if (rnd() % 2)
            (void)mtl__pc_get_alloc(dec, (uint32_t)rnd(), rnd() % 3000, v0, v1, &p);
        else
            (void)mtl__pc_get_free(dec, (uint32_t)rnd(), v0, v1, &p);
    }
    mtl__pc_free(dec);
    deep_codes_checked();
}

/* The encoder and the reader on the same events, through a trace. */
static struct em_trace trace;

static void trace_round_trip(void)
{
    struct mtl_encoder *e = em_begin(&trace);
    for (uint32_t id = 1; id <= NSTACKS; id++) /* a chain: stack id is id frames deep */
        mtl_encoder_put_node(e, id, id - 1, 0, 0x400000 + 16 * id, 0x400000 + 16 * (id - 1));
    for (uint32_t t = 0; t < THREADS; t++) {
        struct mtl_event ev = { .type = MTL_EV_THREAD_START, .thread = t };
        mtl_encoder_put_event(e, &ev, 100 + t, NULL);
    }
    for (size_t i = 0; i < nsteps; i++) {
        const struct step *s = &steps[i];
        struct mtl_event ev = { .thread = s->thread, .ptr = s->ptr, .size = s->size,
                                .stack = s->stack, .time_us = i / 16 };
        ev.type = s->op == OP_ALLOC ? MTL_EV_ALLOC : s->op == OP_FREE ? MTL_EV_FREE : MTL_EV_TAG;
        mtl_encoder_put_event(e, &ev, 0, NULL);
    }
    mtl_encoder_end_values(e, nsteps / 16 + 1, MTL_END_EXIT, 0);
    CHECK(!e->failed);

    struct mtl_reader *r = em_open(&trace);
    struct mtl_event ev;
    size_t i = 0, wrong = 0;
    int rc;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        if (ev.type != MTL_EV_ALLOC && ev.type != MTL_EV_FREE && ev.type != MTL_EV_TAG)
            continue;
        CHECK(i < nsteps);
        wrong += ev.ptr != steps[i].ptr ||
                 (ev.type != MTL_EV_TAG && ev.thread != steps[i].thread) ||
                 (ev.type == MTL_EV_ALLOC && ev.stack != steps[i].stack);
        i++;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(i, nsteps);
    CHECK_EQ(wrong, 0);
    CHECK(mtl_reader_info(r)->complete);
    mtl_reader_close(r);
}

int main(void)
{
    make_steps(700000); /* more than the window's 2^19 allocations */
    /* Version 4's coding, then 5's: the lane's top names allocations
     * that took a second value before; then 7's: so does the end of a
     * recent allocation (here, another thread's carved just before). */
    size_t twos4 = model_round_trip(4), twos5 = model_round_trip(5);
    size_t twos7 = model_round_trip(7), twos8 = model_round_trip(8);
    size_t bytes8 = alloc_bytes;
    CHECK_EQ(deep_codes, 0);
    CHECK(twos5 < twos4);
    CHECK(twos7 < twos5);
    CHECK(twos8 < twos7); /* 8: frees named by number leave their lists */
    printf("allocations with a second value: %zu, %zu, %zu, %zu (versions 4, 5, 7, 8)\n", twos4,
           twos5, twos7, twos8);
    /* 9: the bursts' frees past a list's 32, named by their place. */
    model_round_trip(9);
    CHECK(deep_codes > 1000);
    CHECK(alloc_bytes < bytes8);
    printf("allocations' address bytes: %zu (version 8), %zu (version 9, %zu coded 128)\n", bytes8,
           alloc_bytes, deep_codes);
    /* A new version must say here what it does to the model: 10 coded
     * the record types in runs, and no address differently. */
    CHECK_EQ(MTL_FORMAT_VERSION, 10);
    far_frees_at_word_ends();
    corrupt_values();
    trace_round_trip();
    free(steps);
    free(trace.data);
    CHECKS_DONE();
}
