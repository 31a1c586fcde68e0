/*
 * addrmap.h: a map from block addresses to small numbers (the slot of a
 * live block's record), for matching frees to allocations.
 *
 * A hash of whole addresses makes every lookup a cache miss once millions
 * of blocks are live, and matching is most of the work of reading a
 * trace.  Allocators hand out addresses close together and reuse the ones
 * just freed, so this map is a small page table instead: an address's
 * 4 KiB region finds a leaf of 512 entries (one per 8 bytes) through a
 * hash of regions (few, and hot), and the entry is beside those of the
 * blocks around it.  Leaves are recycled when their last block goes, so
 * memory follows the regions that hold live blocks: 4 bytes for each 8 of
 * such regions at most.  Addresses not 8-byte aligned (custom allocators)
 * go to an ordinary hash.
 */
#ifndef MTL_ANALYZE_ADDRMAP_H
#define MTL_ANALYZE_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/hmap.h"

struct mtl_addrmap_leaf;

struct mtl_addrmap {
    struct mtl_hmap regions;            /* addr >> 12 -> leaf number */
    struct mtl_addrmap_leaf **leaves;
    size_t nleaves, leaves_cap;
    struct mtl_addrmap_leaf *spare;     /* leaves emptied, to reuse */
    uint64_t last_region;               /* the region looked up last */
    struct mtl_addrmap_leaf *last_leaf;
    struct mtl_hmap odd;                /* unaligned addresses */
    size_t count;
};

#define MTL_ADDRMAP_INIT { MTL_HMAP_INIT, NULL, 0, 0, NULL, UINT64_MAX, NULL, MTL_HMAP_INIT, 0 }

/* Maps addr to val (< UINT32_MAX).  Returns 1 if it replaced a value (the
 * old one in *old if old), 0 if addr is new, MTL_ENOMEM. */
int mtl_addrmap_put(struct mtl_addrmap *m, uint64_t addr, uint32_t val, uint32_t *old);

/* Removes addr: 1 and its value in *val (if val) when it was there. */
int mtl_addrmap_take(struct mtl_addrmap *m, uint64_t addr, uint32_t *val);

void mtl_addrmap_release(struct mtl_addrmap *m);

#endif
