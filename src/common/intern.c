/* intern.c: see intern.h.  A table of ids, open addressing on the
 * keys' hashes, kept at most half full. */
#include "common/intern.h"

#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "memtally/errors.h"

static int regrow(struct mtl_intern *t)
{
    size_t cap = t->nslots ? t->nslots * 2 : 256;
    uint32_t *s = calloc(cap, sizeof *s);
    if (!s)
        return MTL_ENOMEM;
    for (uint32_t id = 0; id < t->n; id++) {
        size_t j = (size_t)t->items[id].hash & (cap - 1);
        while (s[j])
            j = (j + 1) & (cap - 1);
        s[j] = id + 1;
    }
    free(t->slots);
    t->slots = s;
    t->nslots = cap;
    return 0;
}

static size_t probe(const struct mtl_intern *t, const void *data, size_t len,
                    uint64_t h)
{
    size_t mask = t->nslots - 1, j = (size_t)h & mask;
    for (; t->slots[j]; j = (j + 1) & mask) {
        const struct mtl_intern_item *it = &t->items[t->slots[j] - 1];
        if (it->hash == h && it->len == len && !memcmp(it->data, data, len))
            break;
    }
    return j;
}

int mtl_intern_add(struct mtl_intern *t, const void *data, size_t len, uint32_t *id)
{
    if (len > UINT32_MAX)
        return MTL_EINVAL;
    if ((size_t)(t->n + 1) * 2 > t->nslots && regrow(t) < 0)
        return MTL_ENOMEM;
    uint64_t h = mtl_hash_bytes(data, len);
    size_t j = probe(t, data, len, h);
    if (t->slots[j]) {
        *id = t->slots[j] - 1;
        return 0;
    }
    if (t->n == t->items_cap) {
        uint32_t cap = t->items_cap ? t->items_cap * 2 : 256;
        struct mtl_intern_item *it = realloc(t->items, (size_t)cap * sizeof *it);
        if (!it)
            return MTL_ENOMEM;
        t->items = it;
        t->items_cap = cap;
    }
    char *copy = mtl_arena_alloc(&t->arena, len + 1);
    if (!copy)
        return MTL_ENOMEM;
    memcpy(copy, data, len);
    copy[len] = '\0';
    t->items[t->n] = (struct mtl_intern_item){ copy, (uint32_t)len, h };
    t->slots[j] = ++t->n;
    *id = t->n - 1;
    return 1;
}

int mtl_intern_str(struct mtl_intern *t, const char *s, uint32_t *id)
{
    return mtl_intern_add(t, s, strlen(s), id);
}

uint32_t mtl_intern_find(const struct mtl_intern *t, const void *data, size_t len)
{
    if (!t->nslots)
        return MTL_INTERN_NONE;
    size_t j = probe(t, data, len, mtl_hash_bytes(data, len));
    return t->slots[j] ? t->slots[j] - 1 : MTL_INTERN_NONE;
}

const void *mtl_intern_at(const struct mtl_intern *t, uint32_t id, size_t *len)
{
    if (id >= t->n)
        return NULL;
    if (len)
        *len = t->items[id].len;
    return t->items[id].data;
}

void mtl_intern_release(struct mtl_intern *t)
{
    mtl_arena_release(&t->arena);
    free(t->items);
    free(t->slots);
    *t = (struct mtl_intern)MTL_INTERN_INIT;
}
