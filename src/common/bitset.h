/*
 * bitset.h: a set of small integers as bits that grows as needed (threads
 * seen, stacks seen, blocks that pass a filter).
 */
#ifndef MTL_COMMON_BITSET_H
#define MTL_COMMON_BITSET_H

#include <stddef.h>
#include <stdint.h>

struct mtl_bitset {
    uint64_t *w;
    size_t nwords;
};

#define MTL_BITSET_INIT { NULL, 0 }

/* Room for bits 0 .. n-1 (all clear).  0 or MTL_ENOMEM. */
int mtl_bitset_reserve(struct mtl_bitset *b, size_t n);

/* Sets bit i: 1 if it was clear, 0 if it was set already, MTL_ENOMEM. */
int mtl_bitset_set(struct mtl_bitset *b, size_t i);

static inline int mtl_bitset_test(const struct mtl_bitset *b, size_t i)
{
    return i / 64 < b->nwords && (b->w[i / 64] >> (i % 64) & 1);
}

static inline void mtl_bitset_clear(struct mtl_bitset *b, size_t i)
{
    if (i / 64 < b->nwords)
        b->w[i / 64] &= ~(1ull << (i % 64));
}

/* How many bits are set. */
size_t mtl_bitset_count(const struct mtl_bitset *b);

void mtl_bitset_release(struct mtl_bitset *b);

#endif
