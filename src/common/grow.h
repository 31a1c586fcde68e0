/*
 * grow.h: a table indexed by small integers (stack ids, mostly) grown to
 * hold index need - 1, doubling from a first size, its new part zeroed:
 *
 *     if (id >= cap && mtl_grow_zeroed((void **)&t, &cap, id + 1, sizeof *t, 1024) < 0)
 *         return MTL_ENOMEM;
 */
#ifndef MTL_COMMON_GROW_H
#define MTL_COMMON_GROW_H

#include <stdlib.h>
#include <string.h>

#include "memtally/errors.h"

static inline int mtl_grow_zeroed(void **table, size_t *cap, size_t need, size_t elem,
                                  size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    char *p = realloc(*table, n * elem);
    if (!p)
        return MTL_ENOMEM;
    memset(p + *cap * elem, 0, (n - *cap) * elem);
    *table = p;
    *cap = n;
    return 0;
}

#endif
