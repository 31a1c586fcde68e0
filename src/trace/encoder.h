/*
 * encoder.h: the writing half of the trace format (docs/FORMAT.md), beside
 * the reader: it turns a recorder region (common/region.h) into the trace
 * file, round by round.  Two writers run it: memtally record, for the
 * program it started (the region is shared with the program), and the
 * writer thread inside a program that records by itself (a private region).
 *
 * A round:
 *   1. collect every thread's chunk and note the cutoff time;
 *   2. write the definitions made since the last round: modules, then new
 *      stack nodes, so that every record refers only to what came before;
 *   3. merge the chunks by timestamp and encode the events older than the
 *      cutoff as varint records with deltas (time, pointer); younger ones
 *      stay for the next round;
 *   4. when the block holds its target of bytes or has waited long
 *      enough, compress it into one zstd frame with a checksum and hand it
 *      to the sink, header first: a self-delimiting block.
 *
 * A block's fields go to separate streams by kind (times, sizes, stacks,
 * pointers, the rest), each contiguous in the payload, so that zstd sees
 * runs of like values; addresses are coded by what the reader can predict
 * of them (trace/ptrcode.h).
 *
 * Nothing here calls malloc except ZSTD_createCCtx in mtl_encoder_setup
 * (the recorder marks itself inside memtally around it): buffers are
 * mmap'd, so the recorder's writer thread may run it.
 */
#ifndef MTL_TRACE_ENCODER_H
#define MTL_TRACE_ENCODER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/region.h"
#include "memtally/trace.h"
#include "trace/format.h"
#include "trace/ptrcode.h"

/* A lock of the program held this long (spins, yielding: a few ms) and a
 * round that may not wait is skipped: its holder may be dead. */
#define MTL_ENC_BUSY_SPINS 20000

/* zstd's levels for blocks, by how busy the writer is (its rounds' share
 * of the time since the last block): a writer with time to spare, on a core
 * the program does not use, compresses harder (docs/PERFORMANCE.md, "Trace
 * size").  Blocks written once the program has ended (someone waits for
 * them) and memtally merge take the base level; a block after one that
 * hardly shrank (random sizes and addresses, the storm's) level 1, which
 * packs such data as small as 3 does, with fewer instructions. */
#define MTL_ENC_ZSTD_LEVEL 3        /* the base: a writer busy 3/4 of the time */
#define MTL_ENC_ZSTD_LEVEL_HARD 1   /* after a block that hardly shrank */
#define MTL_ENC_ZSTD_LEVEL_SPARE 7  /* busy from 1/2 to 3/4 of the time */
#define MTL_ENC_ZSTD_LEVEL_IDLE 12  /* busy less than half of it */
/* The harder levels' match tables, 2^17 entries each (1 MiB for both):
 * they fit the writer's core's own cache, where zstd's for these levels
 * (several MiB) would evict the program's data from the shared one; the
 * trace grows by less than 0.2% for it. */
#define MTL_ENC_ZSTD_TABLE_LOG 17
/* Every level also looks for long repeats across the whole block (zstd's
 * long distance matching, whose window must then cover a block): a
 * program's loop writes the same run of record types, sizes and stacks
 * again further apart than the levels' own match finders reach.  At level
 * 3 perl's trace is 20% smaller for it, sqlite3's 16%, cc1's 14%,
 * python3's 10%; at 12, 2 to 8% on those, 1 to 2% larger on binary trees
 * and sqlite3 (docs/PERFORMANCE.md, "Trace size").  Not after a block that
 * hardly shrank: random data has no long repeats. */
#define MTL_ENC_ZSTD_WINDOW_LOG 23

/* What an observer of the encoder is told (struct mtl_encoder's observe):
 * the addresses' model knows the blocks of its window, so an observer that
 * keeps live bytes needs to keep only the blocks that left it. */
enum mtl_seen {
    MTL_SEEN_ALLOC,    /* ptr, size: a block allocated */
    MTL_SEEN_GONE,     /* size: a block of the window freed, or replaced by
                          a new one at its address (its free never seen) */
    MTL_SEEN_LEFT,     /* ptr, size: a live block left the window */
    MTL_SEEN_FREE_OLD, /* ptr: a free of no block of the window: one that
                          left it, or one never seen */
};

/* Where the bytes go: 0, or a negative errno. */
typedef int (*mtl_sink_fn)(void *ctx, const void *p, size_t n);

struct mtl_encoder {
    struct mtl_region *r;
    pid_t pid;                 /* the program, for /proc (0: this process) */
    mtl_sink_fn sink;
    void *sink_ctx;
    struct ZSTD_CCtx_s *zc;
    uint8_t *stream[MTL_STREAMS]; /* the block being filled, by stream */
    size_t used[MTL_STREAMS];
    size_t total;              /* bytes in all streams */
    uint8_t *raw;              /* the streams put together */
    uint8_t *prefix;           /* the last block's, which the next one may
                                  refer to (docs/FORMAT.md, "Block") */
    size_t prefix_len;         /* 0: none, as before a file's first block */
    uint8_t *out;              /* their compressed form */
    size_t out_cap;
    uint64_t block_started_ns;
    uint64_t raw_written;      /* streams' bytes in the blocks so far: their
                                  size (encoder.c, large_blocks) */
    /* The writer's business since the last block, for its zstd level. */
    uint64_t busy_since_ns;    /* when the last block was written */
    uint64_t busy_ns;          /* rounds' time since then, before this one */
    uint64_t round_started_ns; /* this round's start */
    int level;                 /* zstd's level as set now */
    int hard_to_pack;          /* the last block shrank less than half */
    int closing;               /* the trace is ending: the base level */
    uint32_t *runs;            /* chunks with unwritten events */
    size_t *heap;              /* the merge's, as many as runs */
    size_t nruns;
    /* encoder state, carried from block to block */
    uint64_t last_us;
    uint64_t time_step_us;     /* times written in steps of this (header's) */
    uint64_t time_zeros;       /* zero differences of time not yet written */
    uint32_t last_stack;       /* the block's last ALLOC's stack id */
    uint8_t run_type;          /* the open run's record type (0: none) */
    size_t run_main_end;       /* MAIN's length after its type byte */
    uint64_t run_more;         /* its records after the first */
    struct mtl_ptrcode *pc;    /* the addresses' model (mapped in setup) */
    uint32_t cur_thread;
    uint64_t last_rss;
    uint32_t nodes_emitted;
    uint32_t strings_emitted;    /* type names written as STRING records */
    uint64_t block_seq;        /* the next block's number in the file */
    uint64_t allocations, frees, bytes; /* written so far */
    uint64_t calls_records;             /* CALLS records written (record --calls) */
    int failed;                /* the sink failed: nothing more is written */
    int err;                   /* its errno */
    int ended;                 /* the END record is written */
    int owner_dead;            /* the program is gone: its locks are ignored */
    int skip_when_busy;        /* a lock held past the spins: no round now
                                  (the program may be dead: see owner_dead) */
    uint64_t claimed[MTL_MAX_STATES / 64]; /* collect's: states held */
    /* Records from values (memtally merge): new stack nodes, and the
     * allocations and frees after them, held to be written as one
     * STACK_NODES record and then the runs of events, as a recording
     * writes its rounds, rather than a record for each node between. */
    uint8_t *held_nodes;       /* the nodes' fields, as STACK_NODES has them */
    size_t held_nodes_len;
    uint32_t held_first, held_count;
    struct mtl_event *held;
    size_t nheld;
    /* Optional: told of the malloc heap's blocks as they are written
     * (memtally record keeps live bytes with it, for status lines). */
    void (*observe)(void *ctx, enum mtl_seen seen, uint64_t ptr, uint64_t size);
    void *observe_ctx;
    /* For a measurement only: the chunks' events are merged and dropped,
     * not encoded, so the trace holds none (memtally record under
     * MEMTALLY_WRITER=discard: what encoding costs the program, `sh
     * bench/compare.sh build/memtally -p -e MEMTALLY_WRITER=discard`). */
    int discard_events;
};

/* Buffers and the compressor, once: 0 or -ENOMEM. */
int mtl_encoder_setup(struct mtl_encoder *e);

/* Gives back what setup (and merge's held records) took: memtally record
 * writes a trace for each process it follows, thousands in a build. */
void mtl_encoder_release(struct mtl_encoder *e);

/* A new trace of region r (its info filled, its clock started): the file
 * header and the header record, through sink.  Chunks left from an earlier
 * trace go back to r's pool.  0, or a negative errno. */
int mtl_encoder_begin(struct mtl_encoder *e, struct mtl_region *r, pid_t pid,
                      mtl_sink_fn sink, void *ctx);

/* The trace's clock now: ns since r->start_ns. */
uint64_t mtl_encoder_now(const struct mtl_encoder *e);

/* One round (see above).  final: every event collected is written, young
 * or not; until: events from then on are dropped (UINT64_MAX: none);
 * trylock_spins: 0 waits for every thread's lock, else a thread that holds
 * its lock that long is passed over this round (a stopped thread), or,
 * with skip_when_busy, the round is (the program may have died holding
 * it: the caller finds out, and sets owner_dead); max_age_ms: a block that
 * waited that long goes to the sink.  Returns 1 when the round was
 * skipped, else 0. */
int mtl_encoder_round(struct mtl_encoder *e, int final, uint64_t until,
                      unsigned trylock_spins, unsigned max_age_ms);

/* Records the names that threads took since they were last read
 * (pthread_setname_np, prctl), from /proc/PID/task/TID/comm. */
void mtl_encoder_refresh_names(struct mtl_encoder *e);

/* The END record (reason: enum mtl__end_reason), and the last block. */
void mtl_encoder_end(struct mtl_encoder *e, unsigned reason, int detail);

/* The block being filled goes to the sink now (after what the records
 * from values hold). */
void mtl_encoder_flush(struct mtl_encoder *e);

/* Writes to out the trace so far, read from src (the file the sink has
 * written), and an END record of its own; the trace goes on as if this
 * never was.  0, or a negative errno. */
int mtl_encoder_dump(struct mtl_encoder *e, int src, int out);

/* Publishes the counts into the region, for status lines. */
void mtl_encoder_publish_counts(struct mtl_encoder *e);

/* ---- records from values, without a region (memtally merge) -------------
 * After mtl_encoder_setup: a trace written record by record, its times in
 * microseconds, every record in time order (dt never negative) and every
 * definition before what refers to it, as docs/FORMAT.md says.  Errors of
 * the sink are kept in e->failed and e->err, as for rounds. */

/* The file header and the HEADER record of info (a sample rate of 0: full
 * mode).  0, or a negative errno. */
int mtl_encoder_begin_values(struct mtl_encoder *e, const struct mtl_trace_info *info,
                             mtl_sink_fn sink, void *ctx);
/* MODULE_LOAD of m as module index (its time m->load_us). */
void mtl_encoder_put_module(struct mtl_encoder *e, uint32_t index, const struct mtl_module *m);
/* A STACK_NODES record of node id (the next one) below parent: a native
 * frame at addr (parent_addr: the parent's address, 0 for the root or a
 * custom parent), or with custom set a custom frame named by string id. */
void mtl_encoder_put_node(struct mtl_encoder *e, uint32_t id, uint32_t parent, int custom,
                          uint64_t addr, uint64_t parent_addr);
/* STRING id (the next one). */
void mtl_encoder_put_string(struct mtl_encoder *e, uint32_t id, const char *text);
/* An event of the reader's kinds: ALLOC (ALLOC_EX with tag), FREE,
 * THREAD_START (tid), THREAD_NAME (name), THREAD_EXIT, RSS; others are
 * not events of a trace's stream and are left out. */
void mtl_encoder_put_event(struct mtl_encoder *e, const struct mtl_event *ev, uint32_t tid,
                           const char *name);
/* END at time_us, and the last block. */
void mtl_encoder_end_values(struct mtl_encoder *e, uint64_t time_us, unsigned reason,
                            int detail);

#endif
