/* hmap.c: see hmap.h.  The table is kept at most half full. */
#include "common/hmap.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memtally/errors.h"

#define HUGE_TABLE (2u << 20) /* bytes from which a table gets huge pages */

static inline size_t home(const struct mtl_hmap *m, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> m->shift);
}

static struct mtl_hmap_slot *table_alloc(size_t bytes)
{
    if (bytes < HUGE_TABLE)
        return calloc(1, bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    return p; /* zeroed */
}

static void table_free(struct mtl_hmap_slot *t, size_t bytes)
{
    if (!t)
        return;
    if (bytes < HUGE_TABLE)
        free(t);
    else
        munmap(t, bytes);
}

static int rehash(struct mtl_hmap *m, size_t cap)
{
    unsigned bits = 0;
    while (((size_t)1 << bits) < cap)
        bits++;
    cap = (size_t)1 << bits;
    size_t bytes = cap * sizeof(struct mtl_hmap_slot);
    struct mtl_hmap_slot *t = table_alloc(bytes);
    if (!t)
        return MTL_ENOMEM;
    struct mtl_hmap n = *m;
    n.slots = t;
    n.cap = cap;
    n.bytes = bytes;
    n.shift = 64 - bits;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = m->slots[i].key;
        if (!k)
            continue;
        size_t j = home(&n, k);
        while (t[j].key)
            j = (j + 1) & (cap - 1);
        t[j] = m->slots[i];
    }
    table_free(m->slots, m->bytes);
    *m = n;
    return 0;
}

int mtl_hmap_reserve(struct mtl_hmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 16;
    while (cap < 2 * n)
        cap *= 2;
    return cap > m->cap ? rehash(m, cap) : 0;
}

int mtl_hmap_get(const struct mtl_hmap *m, uint64_t key, uint64_t *val)
{
    if (key == 0) {
        if (m->has_zero && val)
            *val = m->zero_val;
        return m->has_zero;
    }
    if (!m->cap)
        return 0;
    for (size_t i = home(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) {
            if (val)
                *val = m->slots[i].val;
            return 1;
        }
        if (!m->slots[i].key)
            return 0;
    }
}

uint64_t *mtl_hmap_slot(struct mtl_hmap *m, uint64_t key, int *created)
{
    *created = 0;
    if (key == 0) {
        if (!m->has_zero) {
            m->has_zero = 1;
            m->count++;
            *created = 1;
        }
        return &m->zero_val;
    }
    if ((m->count + 1) * 2 > m->cap && rehash(m, m->cap ? m->cap * 2 : 16) < 0)
        return NULL;
    size_t i = home(m, key);
    for (; m->slots[i].key; i = (i + 1) & (m->cap - 1))
        if (m->slots[i].key == key)
            return &m->slots[i].val;
    m->slots[i].key = key;
    m->count++;
    *created = 1;
    return &m->slots[i].val;
}

int mtl_hmap_put(struct mtl_hmap *m, uint64_t key, uint64_t val, uint64_t *old)
{
    int created;
    uint64_t *v = mtl_hmap_slot(m, key, &created);
    if (!v)
        return MTL_ENOMEM;
    if (!created && old)
        *old = *v;
    *v = val;
    return !created;
}

int mtl_hmap_take(struct mtl_hmap *m, uint64_t key, uint64_t *val)
{
    if (key == 0) {
        if (!m->has_zero)
            return 0;
        if (val)
            *val = m->zero_val;
        m->has_zero = 0;
        m->count--;
        return 1;
    }
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1, i = home(m, key);
    for (; m->slots[i].key != key; i = (i + 1) & mask)
        if (!m->slots[i].key)
            return 0;
    if (val)
        *val = m->slots[i].val;
    /* Backward shift: move later entries of the run into the hole when
     * their home is at or before it (cyclically). */
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t h = home(m, m->slots[j].key);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = 0;
    m->count--;
    return 1;
}

int mtl_hmap_next(const struct mtl_hmap *m, size_t *i, uint64_t *key, uint64_t *val)
{
    /* Position 0 is key 0 (if there); table slot k is position k + 1. */
    if (*i == 0) {
        *i = 1;
        if (m->has_zero) {
            *key = 0;
            *val = m->zero_val;
            return 1;
        }
    }
    for (; *i <= m->cap; (*i)++) {
        size_t s = *i - 1;
        if (m->slots[s].key) {
            *key = m->slots[s].key;
            *val = m->slots[s].val;
            (*i)++;
            return 1;
        }
    }
    return 0;
}

void mtl_hmap_clear(struct mtl_hmap *m)
{
    if (m->cap)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->count = 0;
    m->has_zero = 0;
}

void mtl_hmap_release(struct mtl_hmap *m)
{
    table_free(m->slots, m->bytes);
    *m = (struct mtl_hmap)MTL_HMAP_INIT;
}

uint64_t mtl_hash_bytes(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return mtl_hash_u64(h);
}
