/*
 * index.h: a trace's index: what queries need of every block, in columns
 * that a query decodes chunk by chunk instead of decoding the trace
 * (docs/FORMAT.md, "The index").  Built by reading the trace once; kept
 * in a cache file keyed by the trace's identity, and mapped when the trace
 * is analysed again.
 *
 *   blocks, in allocation order, by chunks of MTL_IX_CHUNK: allocation
 *     time, lifetime, size, stack, thread, flags, type tag;
 *   frees, in trace order, by chunks: the block, the time, its size;
 *   a bit per event (allocation or free), 1 for an allocation;
 *   the RSS samples, the totals, the definitions.
 *
 * With the bit per event, the allocations and frees replay in trace order
 * (peak, timeline) reading both tables front to back; the block columns
 * answer every filter.  Columns are compressed (ixcol.h): an index is a
 * few times smaller than the trace's blocks would be raw, and a query
 * needs no memory beyond a chunk's worth per thread.
 */
#ifndef MTL_ANALYZE_INDEX_H
#define MTL_ANALYZE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/analyses.h"
#include "analyze/ixcol.h"
#include "trace/defs.h"

struct mtl_index;
struct mtl_ix_cursor;
struct mtl_reader;

#define MTL_IX_TEMPORARY 1u   /* freed by the very next allocation or free */
#define MTL_IX_FREE_LOST 2u   /* its free was not recorded: it ends where its
                                 address was allocated again */

/* The columns of a block chunk.  LIFE is 0 for a block never freed, else
 * its lifetime in microseconds plus 1. */
enum { MTL_IXA_TIME, MTL_IXA_LIFE, MTL_IXA_SIZE, MTL_IXA_STACK, MTL_IXA_THREAD,
       MTL_IXA_FLAGS, MTL_IXA_TAG, MTL_IXA_COLUMNS };
/* The columns of a free chunk. */
enum { MTL_IXF_BLOCK, MTL_IXF_TIME, MTL_IXF_SIZE, MTL_IXF_COLUMNS };

struct mtl_ix_rss {
    uint64_t time_us, bytes;
};

/* (thread, stack) and what its blocks add up to: the answer of a query
 * without filters, kept so that it costs nothing. */
struct mtl_ix_stack_total {
    uint32_t thread, stack;
    double calls, bytes;
};

struct mtl_ix_summary {
    uint64_t nblocks, nfrees, nevents;
    uint64_t nachunks, nfchunks;     /* chunks of blocks, of frees */
    uint64_t end_us;                 /* the trace's duration */
    uint64_t trace_blocks;           /* whole blocks of the trace */
    int truncated;
    struct mtl_totals totals;        /* of the whole trace */
    const uint64_t *events;          /* nevents bits */
    const struct mtl_ix_rss *rss;
    uint64_t nrss;
    const struct mtl_ix_stack_total *stack_totals;
    uint64_t nstack_totals;
};

/* Where indexes are kept: dir, else $MEMTALLY_INDEX_DIR, else
 * $XDG_CACHE_HOME/memtally, else $HOME/.cache/memtally.  Into buf; NULL
 * when there is no such place. */
const char *mtl_index_dir(const char *dir, char *buf, size_t cap);

/* The index of the trace open on trace_fd, from the cache in dir (as
 * mtl_index_dir): 0 with *out, or MTL_ENOENT when there is none that
 * matches the trace as it is now. */
int mtl_index_load(struct mtl_index **out, int trace_fd, const char *dir);

/* Builds the index from r (just opened on the trace open on trace_fd,
 * nothing read yet), saves it in the cache when it can (a cache it cannot
 * write is no error: the index then lives in memory), and returns it.
 * progress, when set, gets the fraction read.  0, or a negative code:
 * MTL_ECORRUPT (the trace is damaged: see mtl_reader_blocks(r)). */
int mtl_index_build(struct mtl_index **out, struct mtl_reader *r, int trace_fd,
                    const char *dir, void (*progress)(void *arg, double done), void *arg);

const struct mtl_ix_summary *mtl_index_summary(const struct mtl_index *ix);

/* Points d at the index's definitions. */
void mtl_index_defs(const struct mtl_index *ix, struct mtl_defs *d);

/* The file the index was saved in ("" when it lives in memory only), and
 * its size in bytes. */
const char *mtl_index_path(const struct mtl_index *ix);
uint64_t mtl_index_size(const struct mtl_index *ix);

/* Removes the index's file (found damaged); it stays mapped until closed. */
void mtl_index_discard(struct mtl_index *ix);

void mtl_index_close(struct mtl_index *ix);

/* Reading chunks: a cursor has its own buffers and zstd context, so one
 * per thread.  Decoded columns are valid until the cursor's next call. */
int mtl_ix_cursor_open(struct mtl_ix_cursor **out, const struct mtl_index *ix);
void mtl_ix_cursor_close(struct mtl_ix_cursor *cur);

/* The columns in mask (bits 1 << MTL_IXA_*) of block chunk c: col[k] the
 * values of column k, *n of them, for blocks first .. first + *n - 1.
 * LIFE holds the frees recorded after the chunk was written too.  0, or
 * MTL_ECORRUPT. */
int mtl_ix_blocks(struct mtl_ix_cursor *cur, uint64_t c, unsigned mask,
                  const uint64_t *col[MTL_IXA_COLUMNS], size_t *n, uint64_t *first);

/* The same for free chunk c (bits 1 << MTL_IXF_*). */
int mtl_ix_frees(struct mtl_ix_cursor *cur, uint64_t c, unsigned mask,
                 const uint64_t *col[MTL_IXF_COLUMNS], size_t *n);

#endif
