/*
 * ptrcode.h: how traces of version 4 on code addresses (docs/FORMAT.md,
 * "Addresses"), the one model that the encoder and the reader both keep.
 *
 * An address is coded by what the two sides can both predict from the
 * records so far, instead of by its value:
 *   - an allocation, as a block this thread freed lately of the same size
 *     class (allocators hand those out first), as the end of its previous
 *     allocation (a heap growing by bump), as the block freed next to the
 *     one its previous allocation took (free lists in order), as a free
 *     numbered back from the last, as the end of its last allocation that
 *     no free named (the heap's top, version 5 on), as the end of one of
 *     the last allocations of any thread (version 7 on), or else as a
 *     difference from that end;
 *   - a free, as its block's place among the live blocks of the last
 *     MTL_PC_WINDOW allocations: counted from the newest, or from the
 *     thread's previous free (blocks freed in the order they were made),
 *     whichever is smaller; an older block as a difference from the
 *     thread's previous such free.
 * Exact whatever the allocator: a prediction that misses costs bytes,
 * never the address.  Memory is fixed (about 12 MiB for the reader, 16 for
 * the encoder, mapped and touched as the trace grows), never the number of
 * live blocks.
 *
 * The encoder calls mtl__pc_put_*, the reader mtl__pc_get_* with the
 * values read back; both in the order of the records, with the thread of
 * the last THREAD_SWITCH.  Nothing here calls malloc (the recorder's
 * writer thread runs the encoder).
 */
#ifndef MTL_TRACE_PTRCODE_H
#define MTL_TRACE_PTRCODE_H

#include <stdint.h>

#define MTL_PC_WINDOW (1u << 19)  /* allocations whose blocks a free can name */
#define MTL_PC_LANES 256          /* threads are kept apart modulo this */
#define MTL_PC_CLASS_DEPTH 32      /* frees kept per (thread, size class) in an array
                                      (before version 9, all that are kept) */
#define MTL_PC_DEEP_REACH 2048      /* version 9 on: frees past those an allocation can name */
#define MTL_PC_FREES (1u << 18)   /* frees an allocation can name */

struct mtl_ptrcode;

/* A model in its start state (a new trace) of the given format version,
 * with the address index the encoder needs when encoder is non-zero.
 * NULL when out of memory. */
struct mtl_ptrcode *mtl__pc_new(int encoder, uint32_t version);
void mtl__pc_reset(struct mtl_ptrcode *pc);
void mtl__pc_free(struct mtl_ptrcode *pc);

/* What the encoder learns of the window's blocks that are not a
 * collector's (gc): one ended (freed, or replaced by a new block at its
 * address: its free never seen) and its size; one left the window live.
 * Enough to keep live bytes with a map of only the blocks older than the
 * window.  Zero it before each call. */
struct mtl_pc_news {
    int gone, left;
    uint64_t gone_size;
    uint64_t left_ptr, left_size;
};

/* Encoder: the values of an ALLOC's, a FREE's or a TAG's address, into
 * v[0] and, for some v[0] of an ALLOC or a FREE, v[1]; returns how many.
 * news may be NULL. */
unsigned mtl__pc_put_alloc(struct mtl_ptrcode *pc, uint32_t thread, uint64_t size,
                           uint64_t ptr, int gc, uint64_t v[2], struct mtl_pc_news *news);
unsigned mtl__pc_put_free(struct mtl_ptrcode *pc, uint32_t thread, uint64_t ptr, uint64_t v[2],
                          struct mtl_pc_news *news);
uint64_t mtl__pc_put_tag(struct mtl_ptrcode *pc, uint64_t ptr);

/* Encoder: ahead of their events, the index's line for the address far
 * (an event further on) and the block or free that the index names for
 * near (a nearer one, its line fetched by an earlier call): each is
 * otherwise a cache miss most of the time. */
void mtl__pc_prefetch(const struct mtl_ptrcode *pc, uint64_t far, uint64_t near);

/* Reader: whether an ALLOC's or a FREE's first value v0 has a second. */
int mtl__pc_alloc_two(uint64_t v0);
int mtl__pc_free_two(uint64_t v0);

/* Reader: the address from the values (v1 read only when there are two).
 * 0, or -1 when the values name no block (a corrupt trace). */
int mtl__pc_get_alloc(struct mtl_ptrcode *pc, uint32_t thread, uint64_t size, uint64_t v0,
                      uint64_t v1, uint64_t *ptr);
int mtl__pc_get_free(struct mtl_ptrcode *pc, uint32_t thread, uint64_t v0, uint64_t v1,
                     uint64_t *ptr);
uint64_t mtl__pc_get_tag(const struct mtl_ptrcode *pc, uint64_t v);

#endif
