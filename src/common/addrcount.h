/*
 * addrcount.h: a filter of addresses, a saturating count per slot of
 * address space: "surely not there" from one byte.  The sampled blocks
 * (src/preload/sampled.c, which frees ask) and memtally record's live
 * blocks older than the encoder's window (src/cli/record_writer.c, which
 * allocations ask) each keep one in front of their set.
 *
 * A slot is an address in 16-byte steps, folded every MiB, so that blocks
 * next to each other (a list or tree made or freed in order) share cache
 * lines; a hash spreading them missed the cache on most asks.  A count
 * that reaches 255 stays there: a slower "maybe", never a wrong "no".
 * Counts are atomic bytes: readers need no lock (the preloaded library's
 * hooks read while a writer holds its set's lock).
 */
#ifndef MTL_COMMON_ADDRCOUNT_H
#define MTL_COMMON_ADDRCOUNT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ptr's slot among 2^bits. */
static inline size_t mtl_addrcount_slot(uint64_t ptr, unsigned bits)
{
    return (size_t)((ptr >> 4) ^ (ptr >> 20)) & (((size_t)1 << bits) - 1);
}

/* 0 when no address of the set is in count c's slot. */
static inline int mtl_addrcount_maybe(_Atomic uint8_t *c)
{
    return atomic_load_explicit(c, memory_order_acquire) != 0;
}

/* An address of the slot joins the set (with the set's lock held). */
static inline void mtl_addrcount_add(_Atomic uint8_t *c)
{
    uint8_t v = atomic_load_explicit(c, memory_order_relaxed);
    if (v < 255)
        atomic_store_explicit(c, (uint8_t)(v + 1), memory_order_release);
}

/* An address of the slot leaves the set (with the set's lock held). */
static inline void mtl_addrcount_remove(_Atomic uint8_t *c)
{
    uint8_t v = atomic_load_explicit(c, memory_order_relaxed);
    if (v < 255)
        atomic_store_explicit(c, (uint8_t)(v - 1), memory_order_release);
}

#endif
