/* bitset.c: see bitset.h. */
#include "common/bitset.h"

#include <stdlib.h>
#include <string.h>

#include "memtally/errors.h"

int mtl_bitset_reserve(struct mtl_bitset *b, size_t n)
{
    size_t words = (n + 63) / 64;
    if (words <= b->nwords)
        return 0;
    size_t cap = b->nwords ? b->nwords : 16;
    while (cap < words)
        cap *= 2;
    uint64_t *w = realloc(b->w, cap * sizeof *w);
    if (!w)
        return MTL_ENOMEM;
    memset(w + b->nwords, 0, (cap - b->nwords) * sizeof *w);
    b->w = w;
    b->nwords = cap;
    return 0;
}

int mtl_bitset_set(struct mtl_bitset *b, size_t i)
{
    if (i / 64 >= b->nwords && mtl_bitset_reserve(b, i + 1) < 0)
        return MTL_ENOMEM;
    uint64_t bit = 1ull << (i % 64);
    if (b->w[i / 64] & bit)
        return 0;
    b->w[i / 64] |= bit;
    return 1;
}

size_t mtl_bitset_count(const struct mtl_bitset *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->nwords; i++)
        n += (size_t)__builtin_popcountll(b->w[i]);
    return n;
}

void mtl_bitset_release(struct mtl_bitset *b)
{
    free(b->w);
    b->w = NULL;
    b->nwords = 0;
}
