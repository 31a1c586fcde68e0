/*
 * scan.h: one pass over a trace's events that turns them into blocks (an
 * allocation with its fate) and applies the filters (filter.h): the loop
 * under every analysis when the trace is read as a stream.
 *
 * A block is reported to ops->block when its fate is known: at its free,
 * or at the end of the trace for blocks never freed.  ops->event, when
 * set, sees every allocation and free in trace order with whether its
 * block passes; when the filters need free times to decide, that takes a
 * first pass (which reports the blocks) to decide, and a second for the
 * events, with a bit per allocation in between.
 */
#ifndef MTL_ANALYZE_SCAN_H
#define MTL_ANALYZE_SCAN_H

#include <stdint.h>

#include "analyze/filter.h"
#include "memtally/trace.h"

struct mtl_view;
struct mtl_defs;
struct mtl_stackagg;

struct mtl_block {
    uint64_t ptr, size;
    uint64_t alloc_us, free_us;  /* free_us: MTL_NEVER if never freed */
    uint64_t ordinal;            /* the allocation's number, from 0 */
    uint64_t alloc_seq, free_seq;/* positions among allocations and frees
                                    (from 0); free_seq MTL_NEVER if never */
    uint32_t stack, thread;      /* thread: the trace's thread index */
    uint32_t tag;                /* type tag string id, 0 when none */
    double weight_count, weight_bytes;
    int temporary;               /* freed right after it was allocated: no
                                    other allocation or free in between */
    int free_lost;               /* its free was not recorded (recording
                                    was paused): it ends where its address
                                    was allocated again */
};

struct mtl_scan_ops {
    /* A block that passes every filter.  Non-zero stops the scan. */
    int (*block)(void *arg, const struct mtl_block *b);
    /* Optional: every event in order (ALLOC, FREE, RSS...); for ALLOC and
     * FREE, b is the block (free_us not yet known at ALLOC) and passes
     * whether it passes the filters; b is NULL for the others and for
     * frees of blocks from before the trace. */
    int (*event)(void *arg, const struct mtl_event *ev,
                 const struct mtl_block *b, int passes);
    /* Optional: progress, fraction done in [0, 1]. */
    void (*progress)(void *arg, double done);
    /* Set when ops->block needs nothing known only at a block's free
     * (free_us, free_seq, temporary): then, if the filters need nothing of
     * the kind either, blocks are reported at their allocation and frees
     * are not followed at all, which is much faster. */
    int alloc_only;
    /* Set when ops needs what only the trace holds: addresses, every event
     * (threads, modules), the thread of a free.  The engine then reads the
     * trace itself, never its index. */
    int raw;
    /* What of a block the callbacks use (MTL_NEED_*), 0 for everything:
     * an index decodes only these.  In events, a free's block has its
     * size, free time and number (ordinal) only, from an index. */
    unsigned needs;
    /* Instead of block: the weights of the blocks that pass are added
     * up here per (thread, stack), which an index knows without reading
     * the blocks (alloc_only must be set as well). */
    struct mtl_stackagg *sums;
    /* Instead of block, for a callback that keeps a state of its own per
     * part (0 .. parts - 1): the blocks that pass, each with its part.
     * An index hands out parts on several threads at once, each part on
     * one thread, in no order across parts; a stream uses part 0 only.
     * For analyses whose states add up in any order. */
    int (*part_block)(void *arg, unsigned part, const struct mtl_block *b);
    unsigned parts;
};

enum mtl_need {
    MTL_NEED_ALLOC_TIME = 1,
    MTL_NEED_FREE_TIME = 2,   /* free_us (and so alloc_us) */
    MTL_NEED_SIZE = 4,        /* size and the weights */
    MTL_NEED_STACK = 8,
    MTL_NEED_THREAD = 16,
    MTL_NEED_FLAGS = 32,      /* temporary, free_lost */
    MTL_NEED_TAG = 64,
};

struct mtl_scan_result {
    uint64_t allocations;         /* all of them, filtered or not */
    uint64_t end_us;              /* the trace's duration */
};

/* Where a scan reads: r, just opened (or positioned at the start of its
 * events); reopen gives a new reader on the same trace for a second pass;
 * d the definitions the view v uses, refreshed from r as it reads, and
 * then defs_read called (when set); arg is both callbacks'. */
struct mtl_scan_input {
    struct mtl_reader *r;
    int (*reopen)(void *arg, struct mtl_reader **out);
    void *reopen_arg;
    struct mtl_defs *d;
    struct mtl_view *v;
    void (*defs_read)(void *arg);
};

/* Scans with filter f.  Returns 0, or a negative MTL_E* code when the
 * trace is corrupt (what came before was reported), MTL_ENOMEM, or
 * MTL_ESTOPPED when a callback stopped it. */
int mtl_scan(const struct mtl_scan_input *in, const struct mtl_filter *f,
             const struct mtl_scan_ops *ops, void *arg, struct mtl_scan_result *res);

#endif
