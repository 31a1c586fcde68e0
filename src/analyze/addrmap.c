/* addrmap.c: see addrmap.h. */
#include "analyze/addrmap.h"

#include <stdlib.h>
#include <string.h>

#include "memtally/errors.h"

#define REGION_BITS 12
#define SLOTS (1u << (REGION_BITS - 3))   /* one per 8 bytes */

struct mtl_addrmap_leaf {
    uint32_t live;                      /* entries in use */
    uint32_t number;                    /* its index in leaves */
    uint64_t region;
    struct mtl_addrmap_leaf *next_spare;
    uint32_t v[SLOTS];                  /* value + 1; 0 = empty */
};

/* The leaf of addr's region, made when make is set; NULL when there is
 * none (or memory ran out: *err). */
static struct mtl_addrmap_leaf *leaf_of(struct mtl_addrmap *m, uint64_t addr, int make,
                                        int *err)
{
    uint64_t region = addr >> REGION_BITS;
    if (region == m->last_region && m->last_leaf)
        return m->last_leaf;
    uint64_t k;
    struct mtl_addrmap_leaf *l = NULL;
    if (mtl_hmap_get(&m->regions, region, &k)) {
        l = m->leaves[k];
    } else if (make) {
        if (m->spare) {
            l = m->spare;
            m->spare = l->next_spare;
        } else {
            if (m->nleaves == m->leaves_cap) {
                size_t cap = m->leaves_cap ? m->leaves_cap * 2 : 64;
                struct mtl_addrmap_leaf **ls = realloc(m->leaves, cap * sizeof *ls);
                if (!ls) {
                    *err = MTL_ENOMEM;
                    return NULL;
                }
                m->leaves = ls;
                m->leaves_cap = cap;
            }
            if (!(l = calloc(1, sizeof *l))) {
                *err = MTL_ENOMEM;
                return NULL;
            }
            l->number = (uint32_t)m->nleaves;
            m->leaves[m->nleaves++] = l;
        }
        l->region = region;
        if (mtl_hmap_put(&m->regions, region, l->number, NULL) < 0) {
            l->next_spare = m->spare;
            m->spare = l;
            *err = MTL_ENOMEM;
            return NULL;
        }
    } else {
        return NULL;
    }
    m->last_region = region;
    m->last_leaf = l;
    return l;
}

int mtl_addrmap_put(struct mtl_addrmap *m, uint64_t addr, uint32_t val, uint32_t *old)
{
    if (addr & 7) {
        uint64_t o;
        int rc = mtl_hmap_put(&m->odd, addr, val, &o);
        if (rc == 1 && old)
            *old = (uint32_t)o;
        m->count += rc == 0;
        return rc;
    }
    int err = 0;
    struct mtl_addrmap_leaf *l = leaf_of(m, addr, 1, &err);
    if (!l)
        return err;
    uint32_t *e = &l->v[(addr >> 3) & (SLOTS - 1)];
    int replaced = *e != 0;
    if (replaced && old)
        *old = *e - 1;
    if (!replaced) {
        l->live++;
        m->count++;
    }
    *e = val + 1;
    return replaced;
}

int mtl_addrmap_take(struct mtl_addrmap *m, uint64_t addr, uint32_t *val)
{
    if (addr & 7) {
        uint64_t v;
        int rc = mtl_hmap_take(&m->odd, addr, &v);
        if (rc && val)
            *val = (uint32_t)v;
        m->count -= rc;
        return rc;
    }
    int err = 0;
    struct mtl_addrmap_leaf *l = leaf_of(m, addr, 0, &err);
    if (!l)
        return 0;
    uint32_t *e = &l->v[(addr >> 3) & (SLOTS - 1)];
    if (!*e)
        return 0;
    if (val)
        *val = *e - 1;
    *e = 0;
    m->count--;
    if (--l->live == 0) {
        /* The region holds no block now: its leaf serves another. */
        mtl_hmap_take(&m->regions, l->region, NULL);
        l->next_spare = m->spare;
        m->spare = l;
        if (m->last_leaf == l)
            m->last_leaf = NULL;
    }
    return 1;
}

void mtl_addrmap_release(struct mtl_addrmap *m)
{
    for (size_t i = 0; i < m->nleaves; i++)
        free(m->leaves[i]);
    free(m->leaves);
    mtl_hmap_release(&m->regions);
    mtl_hmap_release(&m->odd);
    *m = (struct mtl_addrmap)MTL_ADDRMAP_INIT;
}
