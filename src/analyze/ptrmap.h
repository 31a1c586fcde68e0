/*
 * ptrmap.h: a hash map from block address to a small record, for the
 * analyses that follow live blocks.  Open addressing with linear probing
 * and backward-shift deletion (no tombstones), so a map that sees billions
 * of insert/remove pairs stays as small as its live set.
 */
#ifndef MTL_ANALYZE_PTRMAP_H
#define MTL_ANALYZE_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

struct mtl_ptrmap_val {
    uint64_t size;
    uint64_t time_us;
    uint64_t ordinal;   /* the allocation's number in the trace */
    uint64_t seq;       /* the allocation event's number among all
                           allocations and frees */
    uint32_t stack;
    uint32_t thread;
    uint32_t tag;       /* type tag string id, 0 when none */
    /* No weights: they follow from the size (mtl__weights), and a live
     * block's entry is kept small. */
};

struct mtl_ptrmap {
    uint64_t *keys;              /* 0 = empty (no block lives at address 0) */
    struct mtl_ptrmap_val *vals;
    size_t cap, count;           /* cap is 0 or a power of two */
};

#define MTL_PTRMAP_INIT { NULL, NULL, 0, 0 }

/* Inserts or replaces key.  Returns 1 if it replaced a live entry (whose
 * old value goes to *old when old is not NULL), 0 if new, negative on out
 * of memory. */
int mtl_ptrmap_put(struct mtl_ptrmap *m, uint64_t key,
                   const struct mtl_ptrmap_val *v, struct mtl_ptrmap_val *old);

/* Removes key; returns 1 and its value in *out if it was there, else 0. */
int mtl_ptrmap_take(struct mtl_ptrmap *m, uint64_t key,
                    struct mtl_ptrmap_val *out);

/* Calls fn for every entry, in no particular order. */
void mtl_ptrmap_each(const struct mtl_ptrmap *m,
                     void (*fn)(uint64_t key, const struct mtl_ptrmap_val *v,
                                void *arg),
                     void *arg);

void mtl_ptrmap_release(struct mtl_ptrmap *m);

#endif
