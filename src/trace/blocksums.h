/*
 * blocksums.h: a block's allocations summed per stack, from its SIZE and
 * STACK streams alone.  Only ALLOC and ALLOC_EX records use those streams,
 * one number of each per record, in order (docs/FORMAT.md), so the sums
 * need neither the records nor the state carried from block to block, and
 * the worker that decoded the block can make them.  An analysis that
 * wants totals per stack, and nothing per thread or time, then takes a few
 * thousand sums per block instead of every allocation
 * (mtl__reader_alloc_sums in allocs.h).
 */
#ifndef MTL_TRACE_BLOCKSUMS_H
#define MTL_TRACE_BLOCKSUMS_H

#include <stddef.h>
#include <stdint.h>

#include "common/hmap.h"
#include "common/varint.h"
#include "memtally/trace.h"

struct mtl_block_sums {
    /* 1: the sums; 0: the streams do not pair up (the block is corrupt,
     * which reading its records tells precisely); or MTL_ENOMEM */
    int status;
    size_t n;                      /* stacks, in the order first allocated from */
    const uint32_t *stack;
    const double *calls, *bytes;   /* weights, as mtl__weights gives them */
    uint64_t allocs;               /* the block's allocations */
    uint32_t max_stack;            /* the largest stack id (0 when none) */
};

/* Where the sums of one block are kept, reused from block to block. */
struct mtl_sums_buf {
    struct mtl_block_sums out;
    uint32_t *stack;
    double *calls, *bytes;
    size_t cap;
};

/* What making them needs, empty between blocks: one per thread that
 * makes them (not per block kept), as its table is as long as the
 * largest stack id. */
struct mtl_sums_scratch {
    uint32_t *dense;               /* stack id -> entry + 1, for small ids */
    size_t dense_cap;
    struct mtl_hmap far;           /* stack id -> entry, for the others */
};

#define MTL_SUMS_BUF_INIT { { 0, 0, NULL, NULL, NULL, 0, 0 }, NULL, NULL, NULL, 0 }
#define MTL_SUMS_SCRATCH_INIT { NULL, 0, MTL_HMAP_INIT }

/* The SIZE or STACK stream of a block, as varint bytes, and what summing
 * found of it: how many numbers, and whether a varint that does not
 * parse comes after them (as blocks.h counts a decoded stream). */
struct mtl_sums_stream {
    const uint8_t *p, *end;
    uint32_t n;
    uint8_t bad;
    uint8_t deltas;   /* numbers are differences from the one before */
    uint64_t sum;     /* with deltas: the last number */
};

/* Sums the allocations whose sizes and stacks these streams hold into
 * b->out, straight from their varints (decoding them into arrays first
 * cost more than the sums), and counts each stream's numbers; the block is
 * corrupt (status 0) unless they pair up. */
void mtl__sums_make(struct mtl_sums_buf *b, struct mtl_sums_scratch *t,
                    struct mtl_sums_stream *size, struct mtl_sums_stream *stack,
                    enum mtl_mode mode, uint64_t rate);

void mtl__sums_release(struct mtl_sums_buf *b);
void mtl__sums_scratch_release(struct mtl_sums_scratch *t);

#endif
