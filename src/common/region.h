/*
 * region.h: the recorder's memory, laid out at offsets so that it can be
 * shared: the per-thread event chunks and the pool they come from, the
 * threads' states, the stack nodes and the module table.  The hooks in the
 * program write it; a writer reads it and makes the trace file
 * (trace/encoder.h).  Under `memtally record` the region is a memory file
 * that memtally record made and the program mapped: memtally record is the
 * writer, so the program runs no writer of ours, holds no descriptor, and
 * every event appended before any death of the program (SIGKILL too) is
 * still there when memtally record writes it.  A program that records by
 * itself (MEMTALLY=, mtl_start, a followed child) has a private region
 * and a writer thread of its own.
 *
 * No pointers inside: chunk and state numbers, offsets from the region's
 * start.  Locks are spinlocks in the region, never held across a call into
 * the allocator; a writer in another process takes them too, and ignores
 * them once the program is dead.  Written once for both sides; nothing
 * here allocates.
 */
#ifndef MTL_COMMON_REGION_H
#define MTL_COMMON_REGION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>


#define MTL_REGION_MAGIC 0x3247455252544c4dull /* "MLTRREG2" */
#define MTL_CHUNK_EVENTS 2048   /* events per chunk: 64 KiB */
#define MTL_CHUNK_BUDGET 1024   /* chunks at most: 64 MiB of buffers */
#define MTL_MAX_STATES 8192     /* threads alive at once, at most */
#define MTL_MAX_NODES (1u << 26) /* stack nodes: 768 MiB reserved, sparse */
#define MTL_MAX_MODULES 8192
#define MTL_MODULE_SEGMENTS 8
#define MTL_MODULE_BUILD_ID 64
/* A stack node's address with this bit set is an interpreter's frame
 * (mtl_frame_push): the low bits are its name's string id. */
#define MTL_NODE_CUSTOM (1ull << 63)
#define MTL_PATH_ARENA (4u << 20)
#define MTL_MAX_STRINGS 4096    /* type names and interpreter frames: ids 1 .. 4096 */
#define MTL_STRING_ARENA (256u << 10)
#define MTL_STRING_SLOTS (2 * MTL_MAX_STRINGS)

/* Event types in chunks (not the file's record types). */
enum mtl_cev_type {
    MTL_CEV_ALLOC = 1,
    MTL_CEV_FREE,
    MTL_CEV_THREAD_START,   /* a: tid */
    MTL_CEV_THREAD_NAME,    /* a, b: the name, 16 bytes, NUL padded */
    MTL_CEV_THREAD_EXIT,
    MTL_CEV_TAG,            /* a: ptr, b: type tag (mtl_tag) */
    MTL_CEV_GC_HEAP,        /* a: the collector's heap size after a collection */
    MTL_CEV_CALLS,          /* a: calls, b: the counting thread's index, stack:
                               the function (record --calls) */
};

/* An ALLOC's b: the size in the low 47 bits, whether the block is a
 * garbage collector's (MTL_CEV_GC) in bit 47, its type tag (0: none) in
 * the 16 above. */
#define MTL_CEV_SIZE_BITS 48
#define MTL_CEV_GC (1ull << 47)
#define MTL_CEV_SIZE(b) ((b) & (MTL_CEV_GC - 1))
#define MTL_CEV_TAG(b) ((uint32_t)((b) >> MTL_CEV_SIZE_BITS))

/* One event in a chunk: 32 bytes.  The time's top 8 bits hold the type so
 * that the struct stays at 32 bytes; 56 bits of nanoseconds last 2 years. */
struct mtl_cev {
    uint64_t t_type; /* ns since start << 8 | type */
    uint64_t a;      /* ALLOC, FREE: ptr */
    uint64_t b;      /* ALLOC: size */
    uint32_t stack;  /* ALLOC: stack id */
    uint32_t thread; /* thread index */
};

#define MTL_CEV_TIME(e) ((e)->t_type >> 8)
#define MTL_CEV_TYPE(e) ((unsigned)((e)->t_type & 0xff))

struct mtl_chunk {
    uint32_t next;          /* in the free list or the full queue: 1-based */
    _Atomic uint32_t n;     /* events published (stored after the event) */
    uint32_t pos;           /* events the writer has consumed */
    uint32_t pad;
    struct mtl_cev ev[MTL_CHUNK_EVENTS];
};

/* A thread's recording state: a thread that exits leaves it for the next
 * new thread to take.  One cache line each: its owner writes it on every
 * event, and two threads sharing a line would slow each other. */
struct mtl_tstate {
    atomic_int lock;         /* claims (the writer's); the owner where it
                                cannot append lock-free (mtl_state_enter) */
    atomic_int in_use;       /* owned by a live thread */
    uint32_t cur;            /* chunk being filled (1-based), or 0 */
    uint32_t index;          /* the owner's thread index */
    uint64_t pending_ns;     /* UINT64_MAX, or the time of an event
                                stamped but not yet appended (realloc) */
    uint64_t last_ns;        /* latest stamp: stamps strictly rise */
    int32_t tid;             /* the owner's kernel thread id */
    char name[16];           /* the name last recorded */
    _Atomic uint8_t busy;    /* the owner is in it without the lock */
    _Atomic uint8_t revoke;  /* a claim is under way: the owner locks */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct mtl_tstate) == 64, "a thread state is one cache line");

/* A string of the program's (a type name, mtl_type; an interpreter frame,
 * mtl_frame): id = its index + 1, which is also its STRING id in the trace
 * (the writer defines them in order), a type's tag or a custom frame's
 * name. */
struct mtl_region_string {
    uint32_t off, len;      /* in the string arena */
};

struct mtl_region_module {
    uint64_t base;
    uint32_t path_off, path_len;        /* in the path arena */
    uint8_t build_id[MTL_MODULE_BUILD_ID];
    uint32_t build_id_size;
    uint32_t nseg;
    struct { uint64_t vaddr, memsz; uint32_t flags; } seg[MTL_MODULE_SEGMENTS];
    uint64_t load_ns, unload_ns;
    uint32_t loaded, seen;              /* the program's, while it scans */
    uint32_t emitted_load, emitted_unload; /* the writer's */
};

/* What the trace's header record says, filled by the program. */
struct mtl_region_info {
    int32_t pid, ppid;
    uint64_t start_unix_us;
    uint64_t sample_rate;   /* 0: full mode */
    uint32_t depth;
    uint32_t calls;         /* 1: record --calls counts calls */
    uint32_t attached;      /* 1: memtally attach: begun while the program ran */
    uint32_t time_resolution_us; /* times written in steps of this (0 or 1: 1 us) */
    uint32_t cmdline_len;   /* arguments separated by spaces */
    char exe[4096];
    char cmdline[8192];
};

struct mtl_region {
    uint64_t magic;
    uint64_t size;
    uint64_t chunks_off, states_off, parent_off, addr_off, modules_off, arena_off, strings_off;

    /* The trace's clock: CLOCK_MONOTONIC ns at its start. */
    _Atomic uint64_t start_ns;
    /* 1: the program's threads hold their states without the lock
     * (mtl_state_enter), as the program could register for the claims'
     * barrier; set before its first state is handed out. */
    _Atomic uint32_t fast_owners;
    atomic_int state;           /* enum mtl_rec_state: memtally record's
                                   control changes it too */
    _Atomic uint32_t trace_gen; /* bumped when a trace begins */
    struct mtl_region_info info;

    /* The chunk pool (pool_lock): free list, chunks never yet used, the
     * queue of full chunks for the writer. */
    atomic_int pool_lock;
    uint32_t free_head;
    uint32_t allocated;
    uint32_t full_head, full_tail, nfull;
    _Atomic uint32_t wake;      /* futex word the writer sleeps on */
    _Atomic uint32_t writer_sleeping; /* 1 from before it reads wake to
                                         after it wakes */
    _Atomic uint32_t nstates;   /* thread states handed out */
    _Atomic uint32_t nnodes;    /* stack nodes defined (node 0: the root) */

    /* The module table (mod_lock). */
    atomic_int mod_lock;
    _Atomic uint32_t nmodules;
    uint32_t arena_used;
    uint32_t mod_emit_next;     /* the writer's: first module with work */

    /* The strings (string_lock): the table, a hash of its slots, the
     * arena of their text, at strings_off. */
    atomic_int string_lock;
    _Atomic uint32_t nstrings;
    uint32_t string_arena_used;

    /* Program -> writer. */
    _Atomic uint32_t attached;  /* the program took the region */
    _Atomic int32_t end_reason; /* -1, or why the program ended the trace */
    _Atomic int32_t end_detail;
    _Atomic uint64_t end_ns;    /* when: events after it are not written */
    _Atomic uint64_t exec_ns;   /* an exec is under way since then, or 0 */

    /* Requests to memtally record (writer.c asks, cli/record_writer.c
     * answers): begin a trace at req_path (the name used comes back in
     * it), or end the trace at end_ns.  ack_seq = req_seq when done, with
     * ack_rc 0 or a negative errno. */
    _Atomic uint32_t req_seq, ack_seq;
    int32_t req_kind, req_clobber, ack_rc;
    char req_path[4096];

    /* Writer -> program. */
    _Atomic uint64_t beat;      /* the writer's CLOCK_MONOTONIC ns, kept fresh */
    _Atomic uint32_t gone;      /* the writer stopped: never wait for it */
    _Atomic uint32_t done;      /* the END record is written */
    _Atomic uint64_t allocations, frees, bytes; /* written so far */
    _Atomic uint64_t live_bytes; /* of the blocks written, if live_known */
    _Atomic uint32_t live_known;

    /* memtally record answers `memtally ctl` for the program: while it
     * is this process (not after exec or exit). */
    _Atomic uint32_t ctl_live;
};

enum { MTL_REQ_BEGIN = 1, MTL_REQ_END = 2 };

/* The recorder's state, which the hooks read on every call. */
enum mtl_rec_state {
    MTL_OFF = 0,       /* no trace open: hooks only forward */
    MTL_RECORDING = 1,
    MTL_FINISHED = 2,  /* recording failed or the process is ending */
    MTL_PAUSED = 3,    /* a trace is open but nothing is recorded */
};

/* The whole region's size (most of it reserved, never touched). */
size_t mtl_region_size(void);

/* Lays out a zeroed region of mtl_region_size() bytes at base. */
struct mtl_region *mtl_region_init(void *base);

/* A private region (anonymous memory), laid out; NULL when out of memory. */
struct mtl_region *mtl_region_new_private(void);
void mtl_region_unmap(struct mtl_region *r);

/* Copies the definitions (stack nodes, modules, paths) of src into the
 * fresh region dst: a process that goes on in a region of its own. */
void mtl_region_copy_definitions(struct mtl_region *dst, const struct mtl_region *src);

/* The id of a string (1 ..: a type's tag, a custom frame's name), made if
 * new; 0 for an empty string or a full table.  Takes string_lock when new:
 * not for a malloc hook. */
uint32_t mtl_region_string(struct mtl_region *r, const char *name);

/* The text of string id (1 .. nstrings) and its length. */
const char *mtl_region_string_text(const struct mtl_region *r, uint32_t tag, size_t *len);

static inline struct mtl_chunk *mtl_region_chunk(const struct mtl_region *r, uint32_t id)
{
    return (struct mtl_chunk *)((char *)r + r->chunks_off) + (id - 1);
}

static inline struct mtl_tstate *mtl_region_state(const struct mtl_region *r, uint32_t i)
{
    return (struct mtl_tstate *)((char *)r + r->states_off) + i;
}

static inline uint32_t *mtl_region_parents(const struct mtl_region *r)
{
    return (uint32_t *)((char *)r + r->parent_off);
}

static inline uint64_t *mtl_region_addrs(const struct mtl_region *r)
{
    return (uint64_t *)((char *)r + r->addr_off);
}

static inline struct mtl_region_module *mtl_region_module(const struct mtl_region *r, uint32_t i)
{
    return (struct mtl_region_module *)((char *)r + r->modules_off) + i;
}

static inline char *mtl_region_arena(const struct mtl_region *r)
{
    return (char *)r + r->arena_off;
}

/* Spinlocks.  trylock: 1 when taken within spins tries. */
void mtl_spin_lock_wait(atomic_int *l); /* held: spins, then yields */
/* Inline, as every event takes its thread's lock, which only the writer
 * takes too, once a round: a call there was 2 to 3.5% of binary trees'
 * recorded time (docs/PERFORMANCE.md). */
static inline void mtl_spin_lock(atomic_int *l)
{
    if (__builtin_expect(!atomic_exchange_explicit(l, 1, memory_order_acquire), 1))
        return;
    mtl_spin_lock_wait(l);
}
int mtl_spin_trylock(atomic_int *l, unsigned spins);
static inline void mtl_spin_unlock(atomic_int *l)
{
    atomic_store_explicit(l, 0, memory_order_release);
}

/* The pool.  spins, here and below: 0 waits for a lock; else the call
 * gives up after that many tries (a writer in another process, whose
 * program may die holding the lock).  try_get: a chunk (1-based,
 * emptied), or 0 when none is free, the budget is spent or the lock was
 * not had.  release: 0, or -1 (lock).  queue_full: the chunks queued, or
 * -1 (lock). */
uint32_t mtl_pool_try_get(struct mtl_region *r, unsigned spins);
int mtl_pool_release(struct mtl_region *r, uint32_t id, unsigned spins);
int mtl_pool_queue_full(struct mtl_region *r, uint32_t id, unsigned spins);

/* A thread's hold of its own state, to append (the owner's side).  A
 * locked instruction on every event, and the clock read that waited for
 * it, cost 17 ns where the clock alone costs 12 (docs/PERFORMANCE.md,
 * "The thread's hold without a locked instruction"), so the owner only
 * says it is busy and looks whether a claim is under way: plain stores
 * and a load.  The claimer (below) says
 * so first, then makes every thread of the program pass a memory barrier
 * (membarrier(2), which the program registered for) before it reads busy:
 * either the owner saw the claim, and locks, or the claimer sees it busy,
 * and waits.  Returns 1 when the hold is the lock: the state shared by
 * threads past their exit (state 0), a program that could not register,
 * or a claim under way. */
static inline int mtl_state_enter(struct mtl_region *r, struct mtl_tstate *ts)
{
    if (__builtin_expect(atomic_load_explicit(&r->fast_owners, memory_order_relaxed) &&
                             ts != mtl_region_state(r, 0), 1)) {
        atomic_store_explicit(&ts->busy, 1, memory_order_relaxed);
        /* The store before the load in the compiler's order; the
         * processor's is the claimer's barrier. */
        atomic_signal_fence(memory_order_seq_cst);
        if (__builtin_expect(!atomic_load_explicit(&ts->revoke, memory_order_relaxed), 1))
            return 0;
        atomic_store_explicit(&ts->busy, 0, memory_order_release);
    }
    mtl_spin_lock(&ts->lock);
    return 1;
}
static inline void mtl_state_leave(struct mtl_tstate *ts, int held)
{
    if (held)
        mtl_spin_unlock(&ts->lock);
    else
        atomic_store_explicit(&ts->busy, 0, memory_order_release);
}
/* From a hold without the lock to the lock, before waiting for anything
 * (the writer): a claim waits for the owner to be out. */
static inline void mtl_state_hold_lock(struct mtl_tstate *ts, int *held)
{
    if (*held)
        return;
    atomic_store_explicit(&ts->busy, 0, memory_order_release);
    mtl_spin_lock(&ts->lock);
    *held = 1;
}

/* Another's hold of a thread's state (the writer's, a new trace's): its
 * lock, and its owner out of any hold without it.  spins as for the pool
 * (0: wait).  claim: 1 when held.  For many states under one barrier:
 * claim_start each (1: its lock taken), mtl_region_barrier once, then
 * claim_finish each started (1: held; 0: the owner stayed busy, and the
 * claim was given up). */
int mtl_state_claim(struct mtl_region *r, struct mtl_tstate *ts, unsigned spins);
int mtl_state_claim_start(struct mtl_region *r, struct mtl_tstate *ts, unsigned spins);
void mtl_region_barrier(struct mtl_region *r);
int mtl_state_claim_finish(struct mtl_tstate *ts, unsigned spins);
void mtl_state_unclaim(struct mtl_tstate *ts);
/* The program: registers for the claims' barrier; 1 when its threads may
 * hold their states without the lock (fast_owners).  errno is kept. */
int mtl_region_barrier_register(void);

/* With ts held: a slot for one event, to fill and then publish with
 * mtl_cev_commit; NULL when no chunk is free (the caller waits or drops).
 * Inline for the thread's chunk with room; room_next queues a full one
 * and takes another. */
struct mtl_cev *mtl_region_room_next(struct mtl_region *r, struct mtl_tstate *ts, unsigned spins);
static inline struct mtl_cev *mtl_region_room(struct mtl_region *r, struct mtl_tstate *ts,
                                              unsigned spins)
{
    if (__builtin_expect(ts->cur != 0, 1)) {
        struct mtl_chunk *c = mtl_region_chunk(r, ts->cur);
        uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
        if (__builtin_expect(n < MTL_CHUNK_EVENTS, 1))
            return &c->ev[n];
    }
    return mtl_region_room_next(r, ts, spins);
}
static inline void mtl_cev_commit(struct mtl_region *r, struct mtl_tstate *ts)
{
    struct mtl_chunk *c = mtl_region_chunk(r, ts->cur);
    atomic_store_explicit(&c->n, atomic_load_explicit(&c->n, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* With ts held: a timestamp strictly above the thread's previous one, so
 * that the writer's merge keeps each thread's events in their order. */
static inline uint64_t mtl_region_stamp(struct mtl_tstate *ts, uint64_t now)
{
    if (now <= ts->last_ns)
        now = ts->last_ns + 1;
    ts->last_ns = now;
    return now;
}

/* The queued full chunks' events are dropped, the chunks go back: 0, or
 * -1 (lock). */
int mtl_region_drop_queued(struct mtl_region *r, unsigned spins);

/* A new trace begins at start_ns (CLOCK_MONOTONIC): the queued events are
 * dropped, every thread's clock restarts and each live thread's start is
 * said again (its name follows from the writer); trace_gen is bumped.
 * 0, or -1 when the pool's lock was not had. */
int mtl_region_begin_trace(struct mtl_region *r, uint64_t start_ns, unsigned spins);

/* Wakes the writer (a shared futex). */
void mtl_region_wake(struct mtl_region *r);
/* The writer's count of wakes, taken before it looks at what there is to
 * do; then it sleeps until a wake after that count (at once if one came
 * meanwhile) or until timeout_ms passed.  A count taken at the sleep
 * instead loses a wake that came during the round: the program's end
 * then waited out the timeout, 20 ms at the end of every busy run. */
uint32_t mtl_region_wakes(struct mtl_region *r);
void mtl_region_sleep(struct mtl_region *r, uint32_t seen, unsigned timeout_ms);
/* memtally record's answer to request seq (ack_seq): published, and the
 * program waiting for it woken at once (not at its next 1 ms poll). */
void mtl_region_answer(struct mtl_region *r, uint32_t seq);
/* The program: waits up to timeout_ms for ack_seq to leave seen. */
void mtl_region_wait_answer(struct mtl_region *r, uint32_t seen, unsigned timeout_ms);

#endif
