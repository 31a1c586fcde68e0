/* ptrmap.c: see ptrmap.h. */
#include "analyze/ptrmap.h"

#include <stdlib.h>


static inline size_t slot_of(uint64_t key, size_t mask)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & mask;
}

static int grow(struct mtl_ptrmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    uint64_t *keys = calloc(cap, sizeof *keys);
    struct mtl_ptrmap_val *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = slot_of(m->keys[i], cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int mtl_ptrmap_put(struct mtl_ptrmap *m, uint64_t key,
                   const struct mtl_ptrmap_val *v, struct mtl_ptrmap_val *old)
{
    if (key == 0)
        key = 1; /* address 0 never holds a block; keep 0 as "empty" */
    if ((m->count + 1) * 4 > m->cap * 3 && grow(m) < 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t i = slot_of(key, mask);
    for (; m->keys[i]; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            if (old)
                *old = m->vals[i];
            m->vals[i] = *v;
            return 1;
        }
    }
    m->keys[i] = key;
    m->vals[i] = *v;
    m->count++;
    return 0;
}

int mtl_ptrmap_take(struct mtl_ptrmap *m, uint64_t key,
                    struct mtl_ptrmap_val *out)
{
    if (!m->cap)
        return 0;
    if (key == 0)
        key = 1;
    size_t mask = m->cap - 1;
    size_t i = slot_of(key, mask);
    for (; m->keys[i] != key; i = (i + 1) & mask)
        if (!m->keys[i])
            return 0;
    if (out)
        *out = m->vals[i];
    /* Backward-shift: move later entries of the cluster into the hole. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = slot_of(m->keys[j], mask);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->keys[hole] = 0;
    m->count--;
    return 1;
}

void mtl_ptrmap_each(const struct mtl_ptrmap *m,
                     void (*fn)(uint64_t, const struct mtl_ptrmap_val *, void *),
                     void *arg)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            fn(m->keys[i], &m->vals[i], arg);
}

void mtl_ptrmap_release(struct mtl_ptrmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}
