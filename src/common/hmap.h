/*
 * hmap.h: a hash map from 64-bit keys to 64-bit values, the one map under
 * memtally's tables (block addresses, (thread, stack) pairs, node keys).
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones), so a map that sees billions of insertions and removals
 * stays as small as what it holds.  A key and its value sit side by side,
 * so a lookup costs one cache miss; a large table is mapped on huge pages
 * where the system has them, as lookups in a map of millions of live
 * blocks are mostly misses of the TLB.  Keys are spread by a multiplicative
 * hash, so keys that differ in any bits spread well; every key is allowed,
 * 0 included (it lives outside the table).  Iteration order is the
 * table's: deterministic for the same insertions, otherwise meaningless.
 *
 *     struct mtl_hmap m = MTL_HMAP_INIT;
 *     uint64_t *v = mtl_hmap_slot(&m, key, &created);  NULL: out of memory
 *     if (created) *v = 0;
 *     *v += 1;
 *     mtl_hmap_release(&m);
 */
#ifndef MTL_COMMON_HMAP_H
#define MTL_COMMON_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct mtl_hmap_slot {
    uint64_t key;        /* 0 = empty */
    uint64_t val;
};

struct mtl_hmap {
    struct mtl_hmap_slot *slots; /* a key and its value share a cache line */
    size_t cap, count;   /* cap is 0 or a power of two; count includes key 0 */
    size_t bytes;        /* of slots (mapped, when large) */
    unsigned shift;      /* 64 - log2(cap) */
    int has_zero;
    uint64_t zero_val;
};

#define MTL_HMAP_INIT { NULL, 0, 0, 0, 64, 0, 0 }

/* Makes room for n keys in all without growing again.  0 or MTL_ENOMEM. */
int mtl_hmap_reserve(struct mtl_hmap *m, size_t n);

/* 1 and the value in *val (if val) when key is there, else 0. */
int mtl_hmap_get(const struct mtl_hmap *m, uint64_t key, uint64_t *val);

/* The value's slot for key, made (uninitialised, *created = 1) if key was
 * not there.  Valid until the next insertion or removal.  NULL on out of
 * memory. */
uint64_t *mtl_hmap_slot(struct mtl_hmap *m, uint64_t key, int *created);

/* Sets key to val.  Returns 1 if it replaced a value (then in *old if
 * old), 0 if key is new, MTL_ENOMEM. */
int mtl_hmap_put(struct mtl_hmap *m, uint64_t key, uint64_t val, uint64_t *old);

/* Removes key: 1 and its value in *val (if val) when it was there, else 0. */
int mtl_hmap_take(struct mtl_hmap *m, uint64_t key, uint64_t *val);

/* Iteration: for (size_t i = 0; mtl_hmap_next(m, &i, &k, &v);) ...
 * Start i at 0.  The map must not change during the loop. */
int mtl_hmap_next(const struct mtl_hmap *m, size_t *i, uint64_t *key, uint64_t *val);

/* Empties the map, keeping its memory. */
void mtl_hmap_clear(struct mtl_hmap *m);

void mtl_hmap_release(struct mtl_hmap *m);

/* A 64-bit hash of bytes (FNV-1a, then mixed): for keys made of strings. */
uint64_t mtl_hash_bytes(const void *data, size_t n);

/* A 64-bit mix of one value (splitmix64's finaliser). */
static inline uint64_t mtl_hash_u64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#endif
