/*
 * storm: an allocation storm with deep and varied call stacks, for the
 * side-by-side benchmark (bench/README.md).
 *
 *   storm [THREADS [OPS_PER_THREAD]]      THREADS is 1 or 2 (default 1)
 *
 * Each operation picks a call path and walks it through a set of 16
 * distinct non-inlined functions that call each other (directly and
 * recursively) 10 to 40 frames deep, then, at the leaf, does one heap
 * operation: malloc, calloc or realloc of a small varied size, or a plain
 * free.  There are NPATHS paths (a few of them hot), each with its own
 * depth, frame sequence and few block sizes, and three distinct allocating
 * call sites at the leaf, so a run shows thousands of distinct allocation
 * stacks.
 *
 * New blocks go into one of two rings of live blocks: a short one (blocks
 * die a few operations later) and a long one (blocks live for thousands of
 * operations); the block a new one displaces is freed first.  Everything
 * still live is freed at the end.
 *
 * stdout: a checksum of the data written into the blocks (so nothing can be
 * optimised away).  stderr: the number of allocation and free calls made by
 * the storm code itself, counted by memtally's rules (a realloc of a live
 * block is one free plus one allocation); libc's own few internal
 * allocations (stdio buffer, thread set-up) are not in it.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_OPS 1000000L
/*
 * Distinct call paths.  Four times as many are too much for heaptrack 1.4's
 * interpreter, which then runs out of memory (see bench/README.md).
 */
#ifndef NPATHS
#define NPATHS      1024u
#endif
#define NHOT        64u      /* of which this many take half of the traffic */
#define SHORT_RING  16u
#define LONG_RING   4096u
#define MIN_DEPTH   10u
#define MAX_DEPTH   40u

struct block {
    unsigned char *p;
    size_t size;
};

/* Cache-line aligned, so that two workers never share a line. */
struct __attribute__((aligned(128))) worker {
    uint64_t rng;             /* xorshift64* state */
    struct block shortr[SHORT_RING];
    struct block longr[LONG_RING];
    unsigned shead, lhead;
    uint64_t allocs, frees, checksum;
    long ops;
    /* the path being walked */
    uint32_t path;
    unsigned depth;
};

static uint64_t rnd(struct worker *w)
{
    uint64_t x = w->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Function index for frame k of path p: a fixed mix of both. */
static inline unsigned step_of(uint32_t p, unsigned k)
{
    uint32_t h = p * 0x9E3779B1u ^ (k + 1) * 0x85EBCA77u;
    h ^= h >> 15;
    h *= 0xC2B2AE3Du;
    h ^= h >> 13;
    return h & 15u;
}

static inline unsigned depth_of(uint32_t p)
{
    uint32_t h = (p + 0x1234u) * 0x27D4EB2Fu;
    h ^= h >> 16;
    return MIN_DEPTH + h % (MAX_DEPTH - MIN_DEPTH + 1);
}

/*
 * Like most real call sites, each path allocates from a few sizes only: a
 * base size of its own (tiny, small, medium or up to 4 KiB) plus one of
 * four small variants.
 */
static size_t pick_size(struct worker *w, uint64_t r)
{
    uint32_t h = (w->path + 0x5bd1u) * 0x2C1B3C6Du;
    h ^= h >> 12;
    size_t base;
    switch (h & 7) {
    case 0: case 1: case 2: base = 8 + (h >> 8) % 24; break;      /* tiny */
    case 3: case 4: case 5: base = 32 + (h >> 8) % 224; break;    /* small */
    case 6: base = 256 + (h >> 8) % 768; break;                   /* medium */
    default: base = 1024 + (h >> 8) % 3072; break;                /* large */
    }
    return base + 16 * ((r >> 32) & 3);
}

static void fill(struct worker *w, unsigned char *p, size_t n)
{
    unsigned char v = (unsigned char)w->ops;
    p[0] = v;
    p[n / 2] = (unsigned char)(v + 1);
    p[n - 1] = (unsigned char)(v + 2);
}

static void sum(struct worker *w, const struct block *b)
{
    if (b->p)
        w->checksum = w->checksum * 31 + b->p[0] + b->p[b->size / 2] +
                      b->p[b->size - 1] + b->size;
}

/* Put a new block into a ring slot, freeing the block it displaces. */
static void store(struct worker *w, struct block *slot, unsigned char *p, size_t n)
{
    if (slot->p) {
        sum(w, slot);
        free(slot->p);
        w->frees++;
    }
    slot->p = p;
    slot->size = n;
}

static struct block *pick_slot(struct worker *w)
{
    if (rnd(w) & 1)
        return &w->shortr[w->shead++ % SHORT_RING];
    return &w->longr[w->lhead++ % LONG_RING];
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* The leaf: one heap operation, from one of three allocating call sites. */
static __attribute__((noinline)) uint64_t leaf(struct worker *w)
{
    uint64_t r = rnd(w);
    unsigned kind = r % 10;
    size_t n = pick_size(w, r);
    unsigned char *p;

    if (kind < 5) {                           /* malloc */
        p = malloc(n);
        if (!p)
            die("malloc");
        w->allocs++;
        fill(w, p, n);
        store(w, pick_slot(w), p, n);
    } else if (kind < 7) {                    /* calloc */
        size_t cnt = (size_t)1 << ((r >> 40) & 3), each = (n + cnt - 1) / cnt;
        p = calloc(cnt, each);
        if (!p)
            die("calloc");
        w->allocs++;
        n = cnt * each;
        w->checksum += p[n - 1];              /* zero */
        fill(w, p, n);
        store(w, pick_slot(w), p, n);
    } else if (kind < 9) {                    /* realloc a long-lived block */
        struct block *b = &w->longr[(r >> 20) % LONG_RING];
        if (b->p) {
            sum(w, b);
            n <<= (r >> 44) & 3;              /* grow (or shrink) it */
            p = realloc(b->p, n);
            if (!p)
                die("realloc");
            w->frees++;                       /* realloc of a live block */
            w->allocs++;
        } else {
            p = realloc(NULL, n);
            if (!p)
                die("realloc");
            w->allocs++;
        }
        fill(w, p, n);
        b->p = p;
        b->size = n;
    } else {                                  /* free a short-lived block */
        struct block *b = &w->shortr[(r >> 20) % SHORT_RING];
        if (b->p) {
            sum(w, b);
            free(b->p);
            w->frees++;
            b->p = NULL;
        }
    }
    return r;
}

typedef uint64_t (*frame_fn)(struct worker *, unsigned);
static const frame_fn frames[16];

/* Walk one more frame of the current path, or do the leaf operation. */
static inline uint64_t next(struct worker *w, unsigned k)
{
    if (k >= w->depth)
        return leaf(w);
    return frames[step_of(w->path, k)](w, k + 1);
}

/*
 * Sixteen frame functions of different shapes: each does a little local
 * work (with a frame of its own size) and uses the callee's result after
 * the call, so there are no tail calls and every frame stays on the stack.
 */
#define FRAME_PLAIN(NAME, MUL)                                              \
    static __attribute__((noinline, noclone)) uint64_t NAME(struct worker *w, unsigned k) \
    {                                                                       \
        uint64_t v = next(w, k);                                            \
        return v * (MUL) + k;                                               \
    }

#define FRAME_BUF(NAME, LEN)                                                \
    static __attribute__((noinline, noclone)) uint64_t NAME(struct worker *w, unsigned k) \
    {                                                                       \
        volatile unsigned char buf[LEN];                                    \
        buf[k % (LEN)] = (unsigned char)k;                                  \
        uint64_t v = next(w, k);                                            \
        return v ^ buf[k % (LEN)];                                          \
    }

#define FRAME_LOOP(NAME, N)                                                 \
    static __attribute__((noinline, noclone)) uint64_t NAME(struct worker *w, unsigned k) \
    {                                                                       \
        uint64_t acc = k;                                                   \
        for (unsigned i = 0; i < (N); i++)                                  \
            acc = acc * 6364136223846793005ULL + i;                         \
        uint64_t v = next(w, k);                                            \
        return v + (acc >> 60);                                             \
    }

#define FRAME_TWICE(NAME, ODD)                                              \
    static __attribute__((noinline, noclone)) uint64_t NAME(struct worker *w, unsigned k) \
    {                                                                       \
        uint64_t v;                                                         \
        if ((k & 1) == (ODD))                                               \
            v = next(w, k) + 1;                                             \
        else                                                                \
            v = next(w, k) * 3;                                             \
        return v - k;                                                       \
    }

FRAME_PLAIN(parse_expr, 3)
FRAME_PLAIN(eval_node, 5)
FRAME_PLAIN(visit_tree, 7)
FRAME_PLAIN(emit_token, 11)
FRAME_BUF(read_record, 24)
FRAME_BUF(format_field, 64)
FRAME_BUF(scan_buffer, 160)
FRAME_BUF(encode_chunk, 512)
FRAME_LOOP(hash_key, 3)
FRAME_LOOP(mix_state, 7)
FRAME_LOOP(walk_list, 13)
FRAME_LOOP(sort_run, 29)
FRAME_TWICE(lookup_symbol, 0)
FRAME_TWICE(resolve_name, 1)
FRAME_TWICE(build_index, 0)
FRAME_TWICE(merge_sets, 1)

static const frame_fn frames[16] = {
    parse_expr, eval_node, visit_tree, emit_token,
    read_record, format_field, scan_buffer, encode_chunk,
    hash_key, mix_state, walk_list, sort_run,
    lookup_symbol, resolve_name, build_index, merge_sets,
};

static void *run(void *arg)
{
    struct worker *w = arg;
    long total = w->ops;
    for (w->ops = 0; w->ops < total; w->ops++) {
        uint64_t r = rnd(w);
        w->path = (r & 1) ? (uint32_t)(r >> 8) % NHOT : (uint32_t)(r >> 8) % NPATHS;
        w->depth = depth_of(w->path);
        w->checksum += frames[step_of(w->path, 0)](w, 1) & 0xff;
    }
    for (unsigned i = 0; i < SHORT_RING; i++)
        store(w, &w->shortr[i], NULL, 0);
    for (unsigned i = 0; i < LONG_RING; i++)
        store(w, &w->longr[i], NULL, 0);
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 1;
    long ops = argc > 2 ? atol(argv[2]) : DEFAULT_OPS;
    if (nthreads < 1 || nthreads > 2 || ops < 1) {
        fprintf(stderr, "usage: storm [THREADS(1|2) [OPS_PER_THREAD]]\n");
        return 2;
    }

    static struct worker w[2];
    for (int i = 0; i < nthreads; i++) {
        w[i].rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
        w[i].ops = ops;
    }

    if (nthreads == 1) {
        run(&w[0]);
    } else {
        pthread_t t[2];
        for (int i = 0; i < nthreads; i++)
            if (pthread_create(&t[i], NULL, run, &w[i]) != 0)
                die("pthread_create");
        for (int i = 0; i < nthreads; i++)
            pthread_join(t[i], NULL);
    }

    uint64_t checksum = 0, allocs = 0, frees = 0;
    for (int i = 0; i < nthreads; i++) {
        checksum = checksum * 1000003 + w[i].checksum;
        allocs += w[i].allocs;
        frees += w[i].frees;
    }
    printf("checksum %016llx\n", (unsigned long long)checksum);
    fprintf(stderr, "storm: threads=%d ops=%ld allocs=%llu frees=%llu\n",
            nthreads, ops, (unsigned long long)allocs, (unsigned long long)frees);
    return 0;
}
