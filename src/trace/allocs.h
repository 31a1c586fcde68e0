/*
 * allocs.h: a trace's allocations in batches, for the analyses that need
 * nothing else (what was allocated where, not when it was freed): the
 * reader's hot loop without an event struct per record.  Frees are
 * skipped, definitions are taken in as mtl_reader_next takes them, and the
 * other events are dropped.
 */
#ifndef MTL_TRACE_ALLOCS_H
#define MTL_TRACE_ALLOCS_H

#include <stddef.h>
#include <stdint.h>

#include "memtally/trace.h"

#define MTL_ALLOCS_BATCH 4096

struct mtl_allocs {
    size_t n;
    uint64_t seq[MTL_ALLOCS_BATCH];     /* its number among allocations and frees */
    uint64_t time_us[MTL_ALLOCS_BATCH];
    uint64_t size[MTL_ALLOCS_BATCH];
    uint32_t stack[MTL_ALLOCS_BATCH];
    uint32_t thread[MTL_ALLOCS_BATCH];
    uint32_t tag[MTL_ALLOCS_BATCH];
};

/* The next allocations, at least one: 1; 0 at the end of the trace; or a
 * negative code, as mtl_reader_next (whose events it must not be mixed
 * with: seq counts from the first call).  Every stack of the batch is
 * defined by the time it returns. */
int mtl__reader_allocs(struct mtl_reader *r, struct mtl_allocs *out);

/* The heaps the reader gives (mtl_reader_heaps): the per-block sums are
 * for malloc's heap alone. */
unsigned mtl__reader_heaps(const struct mtl_reader *r);

struct mtl_block_sums;
/* The allocations of the next block summed per stack (blocksums.h: made
 * by the worker that decoded it, when the reader has workers): 1 and *out,
 * valid until the next call; 0 at the end; or a negative code.  For
 * analyses that want nothing per thread or time.  As mtl__reader_allocs,
 * from the start of the events and not mixed with other reads; every
 * stack of the sums is defined by the time it returns. */
int mtl__reader_alloc_sums(struct mtl_reader *r, const struct mtl_block_sums **out);

#endif
