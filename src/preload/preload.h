/*
 * preload.h: internals of libmemtally.so, the recorder that LD_PRELOAD puts
 * in front of the program's allocator.
 *
 * The data path (docs/DESIGN.md tells the why):
 *
 *   hook (hooks.c) -> unwind + intern the stack (stacks.c)
 *        -> append a fixed-size event to the calling thread's chunk (events.c)
 *   writer thread (writer.c), every MTL_ROUND_MS or when chunks fill:
 *        detach every thread's chunk, merge them by timestamp, encode as
 *        varint records, zstd-compress into a block, write(2) it.
 *
 * Rules for everything reachable from a hook: no malloc, no stdio, no lock
 * that the allocator may hold.  Memory comes from mmap (mtl__pages_alloc),
 * messages go through mtl__say (write(2) on a stack buffer), and the only
 * locks are memtally's own, never held across a call into the allocator.
 */
#ifndef MTL_PRELOAD_H
#define MTL_PRELOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define MTL_HIDDEN __attribute__((visibility("hidden")))
#define MTL_LIKELY(x) __builtin_expect(!!(x), 1)
#define MTL_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define MTL_MAX_DEPTH 256       /* frames kept at most (--depth) */
#define MTL_DEFAULT_DEPTH 64
#define MTL_ROUND_MS 20         /* writer wakes at least this often */
#define MTL_CHUNK_EVENTS 2048   /* events per chunk: 64 KiB */
#define MTL_CHUNK_BUDGET 1024   /* chunks at most: 64 MiB of buffers */

/* Event types in chunks (not the file's record types). */
enum mtl__ev_type {
    MTL__EV_ALLOC = 1,
    MTL__EV_FREE,
    MTL__EV_THREAD_START,   /* a: tid */
    MTL__EV_THREAD_NAME,    /* a, b: the name, 16 bytes, NUL padded */
    MTL__EV_THREAD_EXIT,
};

/* One event in a chunk: 32 bytes.  The time's top 8 bits hold the type so
 * that the struct stays at 32 bytes; 56 bits of nanoseconds last 2 years. */
struct mtl__ev {
    uint64_t t_type; /* ns since start << 8 | type */
    uint64_t a;      /* ALLOC, FREE: ptr */
    uint64_t b;      /* ALLOC: size */
    uint32_t stack;  /* ALLOC: stack id */
    uint32_t thread; /* thread index */
};

#define MTL__EV_TIME(e) ((e)->t_type >> 8)
#define MTL__EV_TYPE(e) ((unsigned)((e)->t_type & 0xff))

struct mtl__chunk {
    struct mtl__chunk *next; /* in the pool's free list or full queue */
    uint32_t n;              /* events written */
    uint32_t pos;            /* events the writer has consumed */
    struct mtl__ev ev[MTL_CHUNK_EVENTS];
};

/* A thread's recording state, mmap'd and never freed: a thread that exits
 * leaves it for the next new thread to reuse. */
struct mtl__tstate {
    struct mtl__tstate *next_all;  /* list of every state, for the writer */
    atomic_int lock;               /* owner appends, writer detaches */
    atomic_int in_use;             /* owned by a live thread */
    struct mtl__chunk *cur;        /* chunk being filled, or NULL */
    uint64_t pending_ns;           /* UINT64_MAX, or the time of an event
                                      stamped but not yet appended (realloc) */
    uint64_t last_ns;              /* latest stamp: stamps strictly rise */
    uint32_t cache_gen;            /* stack cache generation, see stacks.c */
    uint32_t index;                /* the owner's thread index */
    int tid;                       /* the owner's kernel thread id */
    char name[16];                 /* the name last recorded */
    struct mtl__stack_cache *cache;
};

/* The per-thread part that must be reachable without locks. */
struct mtl__tls {
    struct mtl__tstate *ts; /* NULL until the thread's first event */
    uint32_t index;         /* thread index in the trace */
    int in_hook;            /* inside memtally: calls pass straight through */
    int dead;               /* after its exit destructor: use the orphan */
    int writer;             /* the writer thread: never waits for itself */
    int sample_init;        /* sampled mode: sample_left was drawn */
    int64_t sample_left;    /* bytes to the next sample point */
    uint64_t rng;           /* the sampler's random state */
    void *last_alloc;       /* the block malloc's hook recorded last */
};

extern __thread struct mtl__tls mtl__tls MTL_HIDDEN;

/* Recording state: 0 before init, then one of these. */
enum mtl__state {
    MTL_OFF = 0,       /* no trace open: hooks only forward */
    MTL_RECORDING = 1,
    MTL_FINISHED = 2,  /* recording failed or the process is ending */
    MTL_PAUSED = 3,    /* a trace is open but nothing is recorded */
};

/* The module's state in one struct (hooks.c owns it). */
struct mtl__options {
    char output[4096];     /* the trace's path (exact, expanded) */
    char pattern[4096];    /* for children: %p pid, %e program */
    uint32_t depth;
    uint64_t sample_rate;  /* 0: full mode; else mean bytes between samples */
    uint64_t seed;         /* sampling's random seed (0: from time and tid) */
    int follow_fork, follow_exec;
    int idle;              /* start paused (memtally record --idle) */
};

struct mtl__preload {
    atomic_int state;
    int ready;                  /* set up: a trace may begin */
    struct mtl__options opt;
    uint64_t start_ns;          /* CLOCK_MONOTONIC at start */
    int pid;
    int fd;                     /* the trace, or -1 */
    struct mtl_ring *ring;      /* memtally record's ring, until a trace
                                   takes it (writer.c) */
    struct mtl_ring *mailbox;   /* the same region, for control.c */
    int mailbox_pid;            /* the process it belongs to */
    atomic_uint next_thread;    /* next thread index */
};
extern struct mtl__preload mtl__pl MTL_HIDDEN;

/* sys.c: small helpers that never allocate. */
uint64_t mtl__now_ns(void) MTL_HIDDEN;                   /* since start */
uint64_t mtl__monotonic_ns(void) MTL_HIDDEN;
void *mtl__pages_alloc(size_t size) MTL_HIDDEN;         /* zeroed, or NULL */
void mtl__pages_free(void *p, size_t size) MTL_HIDDEN;
void mtl__say(const char *fmt, ...) MTL_HIDDEN __attribute__((format(printf, 1, 2)));
int mtl__write_all(int fd, const void *buf, size_t n) MTL_HIDDEN; /* 0 or -errno */
size_t mtl__fmt(char *buf, size_t cap, const char *fmt, ...) MTL_HIDDEN
    __attribute__((format(printf, 3, 4)));
int mtl__gettid(void) MTL_HIDDEN;
void mtl__spin_lock(atomic_int *l) MTL_HIDDEN;
int mtl__spin_trylock(atomic_int *l, unsigned spins) MTL_HIDDEN;
static inline void mtl__spin_unlock(atomic_int *l)
{
    atomic_store_explicit(l, 0, memory_order_release);
}

/* events.c: per-thread states, the chunk pool, appending. */
int mtl__events_init(void) MTL_HIDDEN;
struct mtl__tstate *mtl__thread_state(void) MTL_HIDDEN; /* creates on first use */
void mtl__record_alloc(uint64_t ptr, uint64_t size, uint32_t stack) MTL_HIDDEN;
void mtl__record_free(uint64_t ptr) MTL_HIDDEN;
uint64_t mtl__begin_pending(void) MTL_HIDDEN;   /* realloc: stamp the free */
void mtl__end_pending_realloc(uint64_t t_free, uint64_t old_ptr, int freed,
                              uint64_t new_ptr, uint64_t size,
                              uint32_t stack) MTL_HIDDEN;
void mtl__thread_exit(void) MTL_HIDDEN;
/* Writer: records the names that threads took since they were last read
 * (pthread_setname_np, prctl), from /proc/self/task/TID/comm. */
void mtl__refresh_thread_names(void) MTL_HIDDEN;
/* For the writer: detach every thread's chunk into runs; returns the
 * cutoff time below which every event has been collected.  trylock_spins
 * of 0 means wait for every lock. */
uint64_t mtl__collect(struct mtl__chunk **runs, size_t *nruns, size_t cap,
                      unsigned trylock_spins) MTL_HIDDEN;
void mtl__chunk_release(struct mtl__chunk *c) MTL_HIDDEN;
void mtl__events_after_fork_child(void) MTL_HIDDEN;
/* A new trace begins: drops what chunks hold, restarts the threads'
 * clocks and says again which threads there are. */
void mtl__events_begin_trace(void) MTL_HIDDEN;
void mtl__events_atfork(int phase) MTL_HIDDEN;   /* 0 prepare, 1 parent, 2 child */

/* stacks.c: unwinding and interning. */
int mtl__stacks_init(void) MTL_HIDDEN;
uint32_t mtl__capture_stack(struct mtl__tstate *ts, unsigned skip) MTL_HIDDEN;
/* Writer: encodes the nodes defined since the last call (all of them after
 * mtl__stacks_rewind) as one STACK_NODES record; returns bytes or 0. */
size_t mtl__stacks_emit(uint8_t *out, size_t cap, int *more) MTL_HIDDEN;
void mtl__stacks_rewind(void) MTL_HIDDEN;
void mtl__stacks_forget_addresses(void) MTL_HIDDEN; /* after an unload */
void mtl__stacks_atfork(int phase) MTL_HIDDEN;

/* modules.c: the module map. */
int mtl__modules_init(void) MTL_HIDDEN;
void mtl__modules_rescan(void) MTL_HIDDEN;       /* after dlopen/dlclose */
int mtl__modules_changed(void) MTL_HIDDEN;       /* cheap check for the writer */
/* Module records not yet written: with unloads_before 0 the loads, else
 * the unloads that happened before that time (ns since start). */
size_t mtl__modules_emit(uint8_t *out, size_t cap, uint64_t unloads_before,
                         int *more) MTL_HIDDEN;
void mtl__modules_rewind(void) MTL_HIDDEN;
void mtl__modules_atfork(int phase) MTL_HIDDEN;

/* writer.c: the background writer. */
/* Begins a trace at path (truncating it if clobber, else never overwriting:
 * path.1...), writing its header; start_thread: start the writer thread
 * too (else mtl__writer_start later).  0 or a negative errno. */
int mtl__writer_begin(const char *path, int clobber, int start_thread) MTL_HIDDEN;
int mtl__writer_start(void) MTL_HIDDEN;  /* starts the thread */
/* Writes the trace so far, with an END, to path; recording goes on. */
int mtl__writer_dump(const char *path) MTL_HIDDEN;
struct mtl__counts {
    uint64_t allocations, frees, bytes; /* written to the trace so far */
};
void mtl__writer_counts(struct mtl__counts *c) MTL_HIDDEN;
void mtl__expand_pattern(char *out, size_t cap, const char *pattern) MTL_HIDDEN;
void mtl__writer_wake(void) MTL_HIDDEN;
/* Writes everything and the END record, closes the file.  From any thread,
 * also from a signal handler; waits at most timeout_ms for busy threads. */
void mtl__writer_finish(int reason, int detail, unsigned timeout_ms) MTL_HIDDEN;
/* Before exec: writes everything so far and an END record, and keeps the
 * writer from adding more until mtl__writer_exec_end (exec failed). */
void mtl__writer_exec_begin(void) MTL_HIDDEN;
void mtl__writer_exec_end(void) MTL_HIDDEN;
void mtl__writer_after_fork_child(void) MTL_HIDDEN;

/* sampled.c: sampled mode.  The countdown and the free filter are inline:
 * they are all an unsampled call costs. */
int mtl__sample_slow(struct mtl__tls *tls, uint64_t size) MTL_HIDDEN;
static inline int mtl__sample_hit(struct mtl__tls *tls, uint64_t size)
{
    tls->sample_left -= (int64_t)(size > INT64_MAX ? INT64_MAX : size);
    if (MTL_LIKELY(tls->sample_left > 0))
        return 0;
    return mtl__sample_slow(tls, size);
}
#define MTL_FILTER_BITS 16
extern _Atomic(uint8_t *) mtl__sample_filter MTL_HIDDEN;
/* 0 when ptr was surely not sampled; 1 when it may have been. */
static inline int mtl__sampled_maybe(uint64_t ptr)
{
    uint8_t *f = atomic_load_explicit(&mtl__sample_filter, memory_order_acquire);
    return f && atomic_load_explicit((_Atomic uint8_t *)&f[(ptr * 0x9e3779b97f4a7c15ull) >>
                                                          (64 - MTL_FILTER_BITS)],
                                     memory_order_acquire);
}
int mtl__sampled_add(uint64_t ptr) MTL_HIDDEN;
int mtl__sampled_take(uint64_t ptr) MTL_HIDDEN;  /* 1: it was sampled */
void mtl__sampled_clear(void) MTL_HIDDEN;
void mtl__sampled_atfork(int phase) MTL_HIDDEN;

/* environ.c: the options memtally record put in the environment
 * (common/recenv.h).  find: at start-up, 1 when there are some; get: one of
 * them (without a block: getenv); hide: takes them out of the program's
 * sight, from our constructor. */
int mtl__env_find(void) MTL_HIDDEN;
const char *mtl__env_get(const char *name) MTL_HIDDEN;
void mtl__env_hide(void) MTL_HIDDEN;
void mtl__env_drop(const char *name) MTL_HIDDEN; /* one entry of the block */
/* --follow-exec: envp with our block appended when it has none, in pages
 * of *made_size bytes (0: envp itself) to free if exec fails. */
char *const *mtl__env_for_exec(char *const envp[], size_t *made_size) MTL_HIDDEN;

/* hooks.c */
void mtl__hooks_first_use(void) MTL_HIDDEN;
/* For hooks elsewhere, as malloc and free do it: whether to record an
 * allocation of size (the caller then sets in_hook around its call and
 * reports the block); the block p came out; p is about to be freed. */
int mtl__hook_wanted(size_t size) MTL_HIDDEN;
void mtl__hook_allocated(void *p, size_t size) MTL_HIDDEN;
void mtl__hook_freeing(void *p) MTL_HIDDEN;

/* lifecycle.c */
void mtl__init(void) MTL_HIDDEN;       /* first hook call or constructor */
/* signals.c: the fatal-signal handlers, hidden from the program. */
void mtl__install_signal_handlers(void) MTL_HIDDEN; /* once a trace begins */
/* lifecycle.c, for signals.c: whether this process records (not a vfork
 * child), and the trace's end when a fatal signal arrives. */
int mtl__recording_here(void) MTL_HIDDEN;
void mtl__finish_on_signal(int sig) MTL_HIDDEN;

/* api.c: begins a trace at path (NULL: the one configured at start-up),
 * resetting the clock and the threads' state; the caller sets the state.
 * start_thread as for mtl__writer_begin.  0 or a negative errno. */
int mtl__begin_trace(const char *path, int start_thread) MTL_HIDDEN;
void mtl__api_atfork_child(void) MTL_HIDDEN; /* a fork may have held it */
void mtl__stop_recording(const char *why, int err) MTL_HIDDEN;

#endif
