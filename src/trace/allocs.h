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

#endif
