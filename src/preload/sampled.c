/*
 * sampled.c: sampled mode (memtally record --sample): which allocations
 * are recorded, and which live blocks were, so that their frees are too.
 *
 * Poisson sampling by bytes (as tcmalloc and jemalloc do): each thread
 * counts down the bytes to its next sample point, drawn from an
 * exponential distribution of mean R; an allocation that reaches the
 * point is sampled and the next point is drawn.  An allocation of n bytes
 * is then sampled with probability 1 - exp(-n/R), whatever came before,
 * which is what lets the reader weight each sample by its inverse (the
 * unbiased estimate, docs/FORMAT.md).  An allocation that is not sampled
 * costs a subtraction and a branch: no stack, no lock, no write.
 *
 * Frees: a free is recorded only for a block that was sampled.  Sampled
 * blocks are kept in a hash set under a mutex (they are few: one per R
 * bytes allocated), and in front of it a table of small counters indexed
 * by a hash of the address, read without a lock, so that the free of an
 * unsampled block costs one load.
 */
#include "preload/preload.h"

#include <math.h>
#include <string.h>

#define FILTER_BITS MTL_FILTER_BITS

_Atomic(_Atomic uint8_t *) mtl__sample_filter; /* 2^FILTER_BITS counts */

static struct {
    pthread_mutex_t mu;
    _Atomic uint8_t *filter;   /* the same, once made */
    uint64_t *keys;            /* open addressing, 0 empty, 1 deleted */
    size_t cap, count, used;   /* used counts deleted slots too */
    uint32_t gen;              /* the trace the set belongs to */
} sm = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void clear_locked(void)
{
    if (sm.keys)
        memset(sm.keys, 0, sm.cap * sizeof *sm.keys);
    if (sm.filter)
        memset((void *)sm.filter, 0, (size_t)1 << FILTER_BITS);
    sm.count = sm.used = 0;
}

/* With sm.mu held: a trace begun since (memtally record begins them too,
 * for `memtally ctl`) has no sampled blocks yet. */
static void follow_trace_locked(void)
{
    uint32_t gen = mtl__pl.region ? atomic_load(&mtl__pl.region->trace_gen) : 0;
    if (gen != sm.gen) {
        clear_locked();
        sm.gen = gen;
    }
}

static inline size_t key_slot(uint64_t p, size_t mask)
{
    p ^= p >> 31;
    p *= 0xbf58476d1ce4e5b9ull;
    return (size_t)(p ^ (p >> 29)) & mask;
}

/* splitmix64's finalizer: each bit of x changes about half of the
 * result's, so seeds that differ in one bit (2 and 3) start unrelated
 * streams.  (Or-ing 1 into seed ^ constant, as this once did, made every
 * even seed and the odd one after it the same.) */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A draw from the exponential distribution of mean rate. */
static int64_t next_gap(struct mtl__tls *tls, uint64_t rate)
{
    if (!tls->rng) {
        /* With a seed (MEMTALLY_SEED), threads draw in the order they
         * first allocate: runs of the same program repeat exactly. */
        static atomic_uint threads_seeded;
        uint64_t n = atomic_fetch_add(&threads_seeded, 1) + 1;
        uint64_t seed = mtl__pl.opt.seed ? mtl__pl.opt.seed
                                         : mtl__monotonic_ns() ^ (uint64_t)mtl__gettid();
        uint64_t state = mix64(mix64(seed) + n);
        tls->rng = state ? state : 0x9e3779b97f4a7c15ull; /* xorshift needs a bit set */
    }
    /* xorshift64*, then a uniform in (0, 1] from its top 53 bits */
    tls->rng ^= tls->rng >> 12;
    tls->rng ^= tls->rng << 25;
    tls->rng ^= tls->rng >> 27;
    uint64_t x = tls->rng * 0x2545f4914f6cdd1dull;
    double u = ((double)(x >> 11) + 1.0) / 9007199254740992.0;
    double gap = -log(u) * (double)rate;
    return gap > 4e18 ? INT64_MAX : (int64_t)gap + 1;
}

/* The countdown reached its point (mtl__sample_hit has subtracted size);
 * or this thread has no countdown yet. */
int mtl__sample_slow(struct mtl__tls *tls, uint64_t size)
{
    uint64_t rate = mtl__pl.opt.sample_rate;
    if (MTL_UNLIKELY(!tls->sample_init)) {
        tls->sample_init = 1;
        tls->sample_left = next_gap(tls, rate) -
                           (int64_t)(size > INT64_MAX ? INT64_MAX : size);
        if (tls->sample_left > 0)
            return 0;
    }
    tls->sample_left = next_gap(tls, rate);
    return 1;
}

static int grow_set(void)
{
    size_t cap = sm.cap ? sm.cap * 2 : 4096;
    uint64_t *keys = mtl__pages_alloc(cap * sizeof *keys);
    if (!keys)
        return -1;
    for (size_t i = 0; i < sm.cap; i++) {
        uint64_t k = sm.keys[i];
        if (k <= 1)
            continue;
        size_t j = key_slot(k, cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = k;
    }
    mtl__pages_free(sm.keys, sm.cap * sizeof *sm.keys);
    sm.keys = keys;
    sm.cap = cap;
    sm.used = sm.count;
    return 0;
}

int mtl__sampled_add(uint64_t p)
{
    if (p <= 1)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&sm.mu);
    follow_trace_locked();
    if (!sm.filter) {
        if (!(sm.filter = mtl__pages_alloc((size_t)1 << FILTER_BITS))) {
            rc = -1;
            goto out;
        }
        atomic_store_explicit(&mtl__sample_filter, sm.filter, memory_order_release);
    }
    if ((sm.used + 1) * 2 > sm.cap && grow_set() < 0) {
        rc = -1;
        goto out;
    }
    size_t mask = sm.cap - 1, i = key_slot(p, mask);
    while (sm.keys[i] > 1 && sm.keys[i] != p)
        i = (i + 1) & mask;
    if (sm.keys[i] != p) {
        if (sm.keys[i] == 0)
            sm.used++;
        sm.keys[i] = p;
        sm.count++;
        mtl_addrcount_add(&sm.filter[mtl_addrcount_slot(p, FILTER_BITS)]);
    }
out:
    pthread_mutex_unlock(&sm.mu);
    return rc;
}

int mtl__sampled_take(uint64_t p)
{
    _Atomic uint8_t *filter = sm.filter;
    if (!filter || !mtl_addrcount_maybe(&filter[mtl_addrcount_slot(p, FILTER_BITS)]))
        return 0;
    int found = 0;
    pthread_mutex_lock(&sm.mu);
    follow_trace_locked();
    if (sm.cap) {
        size_t mask = sm.cap - 1, i = key_slot(p, mask);
        for (; sm.keys[i]; i = (i + 1) & mask) {
            if (sm.keys[i] == p) {
                sm.keys[i] = 1; /* deleted */
                sm.count--;
                found = 1;
                mtl_addrcount_remove(&sm.filter[mtl_addrcount_slot(p, FILTER_BITS)]);
                break;
            }
        }
    }
    pthread_mutex_unlock(&sm.mu);
    return found;
}

/* A new trace: blocks sampled for the last one are not this one's. */
void mtl__sampled_clear(void)
{
    pthread_mutex_lock(&sm.mu);
    clear_locked();
    pthread_mutex_unlock(&sm.mu);
}

void mtl__sampled_atfork(int phase)
{
    mtl__mutex_atfork(&sm.mu, phase);
}
