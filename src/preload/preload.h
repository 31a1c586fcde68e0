/*
 * preload.h: internals of libmemtally.so, the recorder that LD_PRELOAD puts
 * in front of the program's allocator.
 *
 * The data path (docs/DESIGN.md tells the why):
 *
 *   hook (hooks.c) -> unwind + intern the stack (stacks.c)
 *        -> append a fixed-size event to the calling thread's chunk (events.c)
 *   all of it in the recorder's region (common/region.h);
 *   the writer (trace/encoder.h), every MTL_ROUND_MS or when chunks fill:
 *        detach every thread's chunk, merge them by timestamp, encode as
 *        varint records, zstd-compress into a block, write it.
 *   Under memtally record the region is shared and memtally record is the
 *   writer; else a writer thread here runs it (writer.c).
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

#include "common/addrcount.h"
#include "common/region.h"

#define MTL_HIDDEN __attribute__((visibility("hidden")))
#define MTL_LIKELY(x) __builtin_expect(!!(x), 1)
#define MTL_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define MTL_MAX_DEPTH 256       /* frames kept at most (--depth) */
#define MTL_DEFAULT_DEPTH 64
#define MTL_ROUND_MS 20         /* writer wakes at least this often */

/* The per-thread part that must be reachable without locks. */
#define MTL_IFRAMES 64

struct mtl__tls {
    struct mtl_tstate *ts;  /* NULL until the thread's first event */
    uint32_t slot;          /* ts's number in the region */
    uint32_t index;         /* thread index in the trace */
    int in_hook;            /* inside memtally: calls pass straight through */
    int dead;               /* after its exit destructor: use the orphan */
    int writer;             /* the writer thread: never waits for itself */
    int sample_init;        /* sampled mode: sample_left was drawn */
    int64_t sample_left;    /* bytes to the next sample point */
    uint64_t rng;           /* the sampler's random state */
    void *last_alloc;       /* the block malloc's hook recorded last */
    int in_user_hook;       /* in the program's mtl_set_hook function */
    int in_gc;              /* inside the garbage collector (gc.c) */
    /* The interpreter's frames (mtl_frame_push), outermost first, each with
     * the stack pointer of the native function that pushed it; pushes past
     * MTL_IFRAMES are counted, not kept. */
    uint32_t iframes;
    uint32_t iframe_id[MTL_IFRAMES];
    uint64_t iframe_sp[MTL_IFRAMES];
};

extern __thread struct mtl__tls mtl__tls MTL_HIDDEN;

/* Recording state: enum mtl_rec_state (common/region.h), 0 before init. */

/* The module's state in one struct (hooks.c owns it). */
struct mtl__options {
    char output[4096];     /* the trace's path (exact, expanded) */
    char pattern[4096];    /* for children: %p pid, %e program */
    uint32_t depth;
    uint64_t sample_rate;  /* 0: full mode; else mean bytes between samples */
    uint64_t seed;         /* sampling's random seed (0: from time and tid) */
    uint32_t time_resolution_us; /* the trace's times in steps of this */
    int follow_fork, follow_exec;
    int idle;              /* start paused (memtally record --idle) */
    int unwinder;          /* enum mtl__unwinder (MEMTALLY_UNWIND) */
    char handover[108];    /* memtally record's socket for followed processes, or "" */
};

struct mtl__preload {
    atomic_int *state;          /* the region's (memtally record may change
                                   it), or a word of ours before there is one */
    int ready;                  /* set up: a trace may begin */
    struct mtl__options opt;
    uint64_t start_ns;          /* CLOCK_MONOTONIC at start */
    int pid;
    int fd;                     /* the trace, or -1 */
    struct mtl_region *region;  /* where events go */
    struct mtl_region *shared;  /* memtally record's region, until its
                                   trace ends (then a private one) */
    struct mtl_region *mailbox; /* memtally record's region: it serves control */
    int mailbox_pid;            /* the process it belongs to */
    atomic_uint next_thread;    /* next thread index */
    /* Threads that took a state to record (counted again from the fork's
     * thread in a child): from the second on, the events' clock waits
     * for the loads before it (append.h, mtl__stamp). */
    atomic_uint states_taken;
    int fast_owners;            /* registered for the claims' barrier: the
                                   threads hold their states lock-free
                                   (common/region.h, mtl_state_enter) */
};
extern struct mtl__preload mtl__pl MTL_HIDDEN;

/* sys.c: small helpers that never allocate. */
uint64_t mtl__monotonic_ns(void) MTL_HIDDEN;
void mtl__set_start(uint64_t ns) MTL_HIDDEN;            /* the trace's clock */
void *mtl__pages_alloc(size_t size) MTL_HIDDEN;         /* zeroed, or NULL */
void *mtl__pages_alloc_random(size_t size) MTL_HIDDEN;  /* the same, for random access */
void *mtl__pages_alloc_growing(size_t size) MTL_HIDDEN; /* the same, filled from its start */
void mtl__pages_free(void *p, size_t size) MTL_HIDDEN;
void mtl__say(const char *fmt, ...) MTL_HIDDEN __attribute__((format(printf, 1, 2)));
size_t mtl__fmt(char *buf, size_t cap, const char *fmt, ...) MTL_HIDDEN
    __attribute__((format(printf, 3, 4)));
int mtl__gettid(void) MTL_HIDDEN;
/* A mutex of ours around fork: 0 taken before, 1 given back after in the
 * parent, 2 made anew in the child. */
void mtl__mutex_atfork(pthread_mutex_t *mu, int phase) MTL_HIDDEN;
/* clock.c: CLOCK_MONOTONIC in ns, read through the TSC where it can be
 * (clock.h: mtl__clock_ns and mtl__now_ns, inline); its set-up at start,
 * and a forked child's. */
void mtl__clock_init(void) MTL_HIDDEN;
void mtl__clock_atfork_child(void) MTL_HIDDEN;

/* events.c: per-thread states, appending. */
/* Events go to region r from now on (its states laid out anew). */
void mtl__events_use_region(struct mtl_region *r) MTL_HIDDEN;
/* A forked child of a program whose region memtally record shares goes
 * on in a copy of it: into r (one handed to memtally record, handover.c),
 * or when r is NULL a private one.  0, or -1 when out of memory. */
int mtl__events_move_to(struct mtl_region *r) MTL_HIDDEN;
/* handover.c: a new region, handed to memtally record, which writes this
 * process's traces from it from now on; NULL when not under memtally
 * record with a follow option, or when it did not take it. */
struct mtl_region *mtl__handover_region(void) MTL_HIDDEN;
int mtl__events_init(void) MTL_HIDDEN;
/* This thread's state, made on first use (the slow path). */
struct mtl_tstate *mtl__thread_state_slow(void) MTL_HIDDEN;
static inline struct mtl_tstate *mtl__thread_state(void)
{
    struct mtl_tstate *ts = mtl__tls.ts;
    return MTL_LIKELY(ts != NULL) ? ts : mtl__thread_state_slow();
}
/* append.h: mtl__record_alloc and mtl__record_free, inline. */
/* gc.c: a collector's block freed, and its heap size after a collection. */
void mtl__record_gc_free(uint64_t ptr) MTL_HIDDEN;
void mtl__record_gc_heap(uint64_t bytes) MTL_HIDDEN;
void mtl__gc_atfork(int phase) MTL_HIDDEN;
/* calls.c (record --calls): thread index called the function of stack
 * calls more times; its counting set up with the patterns (NULL: off);
 * and the counts so far into the trace, of every thread or this one. */
void mtl__record_calls(uint32_t thread, uint32_t stack, uint64_t calls) MTL_HIDDEN;
void mtl__calls_init(const char *patterns) MTL_HIDDEN;
const char *mtl__calls_patterns(void) MTL_HIDDEN;   /* NULL: not counting */
void mtl__calls_flush_all(void) MTL_HIDDEN;
void mtl__calls_flush_mine(void) MTL_HIDDEN;
void mtl__calls_drop(void) MTL_HIDDEN;              /* a new trace: from 0 */
/* custom.c: pools' blocks (mtl_pool) whose free is not recorded: how many
 * there are, and taking one (1: ptr was one). */
extern _Atomic uint32_t mtl__pools MTL_HIDDEN;
/* The size of this thread's latest recorded allocation of ptr set to 0,
 * if the writer has not read it yet (1), else 0. */
int mtl__drop_alloc_size(uint64_t ptr) MTL_HIDDEN;
/* The live block at ptr has type tag from now on (mtl_tag). */
void mtl__record_tag(uint64_t ptr, uint32_t tag) MTL_HIDDEN;
/* userhook.c: the program's hook (mtl_set_hook), if any, told of an event
 * just recorded (type MTL_CEV_ALLOC, _FREE or _TAG; size_tag as an
 * allocation event's b).  Cheap when none is set. */
struct hook;
extern _Atomic(struct hook *) mtl__user_hook_set MTL_HIDDEN;
void mtl__call_user_hook(unsigned type, uint64_t ptr, uint64_t size_tag, uint32_t stack)
    MTL_HIDDEN;
static inline void mtl__user_hook(unsigned type, uint64_t ptr, uint64_t size_tag,
                                  uint32_t stack)
{
    if (__builtin_expect(atomic_load_explicit(&mtl__user_hook_set, memory_order_relaxed) != 0, 0))
        mtl__call_user_hook(type, ptr, size_tag, stack);
}
int mtl__pool_take(uint64_t ptr) MTL_HIDDEN;
uint64_t mtl__begin_pending(void) MTL_HIDDEN;   /* realloc: stamp the free */
void mtl__end_pending_realloc(uint64_t t_free, uint64_t old_ptr, int freed,
                              uint64_t new_ptr, uint64_t size,
                              uint32_t stack) MTL_HIDDEN;
void mtl__thread_exit(void) MTL_HIDDEN;
void mtl__events_after_fork_child(void) MTL_HIDDEN;
/* A new trace begins: drops what chunks hold, restarts the threads'
 * clocks and says again which threads there are. */
void mtl__events_begin_trace(void) MTL_HIDDEN;
void mtl__events_atfork(int phase) MTL_HIDDEN;   /* 0 prepare, 1 parent, 2 child */

/* unwind.c: our own stack walker (x86-64, DWARF CFI rules), which reuses
 * the frames of the thread's previous walk that still hold.  A walk: frame
 * k's instruction pointer (a return address for k > 0), stack pointer and
 * rbp, and where its caller's rbp was read from (0: not saved). */
#define MTL_UNWIND_CAP (MTL_MAX_DEPTH + 16)
/* Frames by index: frame k's state in each array. */
#define MTL_UNWIND_FRAMES(n)                                                  \
    void *ip[n];                                                              \
    uint64_t sp[n], rbp[n], rbp_at[n];                                        \
    /* hs[k]: the hash of frames k to the walk's end (mtl__stack_hash_step),  \
     * so that a stack's hash costs only the frames not reused. */            \
    uint64_t hs[n];                                                           \
    /* rule[k]: frame k's rule as stepped from (0: not stepped from), for     \
     * the next walk, whose frame k is often at the same address. */          \
    uint64_t rule[n];                                                         \
    /* rbp_need[k]: the walk from frame k outward used rbp[k] (a CFA on rbp,  \
     * or one passed on unsaved to such a frame; 1 for a walk's last frame    \
     * when it stopped at its limit, as a walk may go on from there). */      \
    uint8_t rbp_need[n];
/* A walk: its frames are ip[0 .. n) and so on, innermost first; the
 * arrays are those of a struct of MTL_UNWIND_FRAMES, from some index on. */
struct mtl__unwind_walk {
    uint32_t n;        /* frames */
    uint32_t complete; /* the walk reached the outermost frame */
    uint64_t end_at;   /* complete: where it read a return address of 0 (0: none) */
    void **ip;
    uint64_t *sp, *rbp, *rbp_at, *hs, *rule;
    uint8_t *rbp_need;
};
/* Where a thread's last walk is kept: in place from its frame 0 on, so
 * that the next walk, which most often shares its outer frames, writes
 * only its own new frames below them (unwind.c).  Twice a walk's most, so
 * that walks can go deeper many times before the kept one is moved. */
#define MTL_UNWIND_SPAN (2 * MTL_UNWIND_CAP)
struct mtl__unwind_kept {
    MTL_UNWIND_FRAMES(MTL_UNWIND_SPAN)
};
/* Where a walk steps its frames until it meets the kept ones. */
struct mtl__unwind_scratch {
    MTL_UNWIND_FRAMES(MTL_UNWIND_CAP)
};

/* A stack's hash, built from its outermost frame in: seed, then a step a
 * frame.  The same whichever walker found the frames. */
#define MTL_STACK_HASH_SEED 0x9e3779b97f4a7c15ull
static inline uint64_t mtl__stack_hash_step(uint64_t outer, uint64_t ip)
{
    uint64_t h = (outer ^ ip) * 0x9e3779b97f4a7c15ull;
    return h << 31 | h >> 33;
}
/* A thread's last walk (walk, in kept from index top on), the frames of
 * the one being made, and the frame rules it used last (a small cache
 * before the shared one). */
#define MTL_UNWIND_HOT 1024
struct mtl__unwind_memo {
    uint64_t owner;    /* the thread whose walk it is (0: none) */
    uint32_t top;
    uint64_t reused;   /* frames taken from a previous walk, in all */
    uint64_t stepped;  /* frames walked from their rules, in all */
    struct { uint64_t pc, rule; } hot[MTL_UNWIND_HOT];
    struct mtl__unwind_walk walk;
    struct mtl__unwind_scratch scratch;
    struct mtl__unwind_kept kept;
};
enum mtl__unwinder { MTL_UNWIND_OWN, MTL_UNWIND_LIBUNWIND, MTL_UNWIND_CHECK };
int mtl__unwind_init(void) MTL_HIDDEN;
/* Walks the caller's stack into m->walk, at most max frames, frame
 * 0 in mtl__unwind itself: how many, or -1 when a frame has a rule we do
 * not follow (ask libunwind). */
int mtl__unwind(struct mtl__unwind_memo *m, uint32_t max) MTL_HIDDEN;
/* The same from a frame of the program: its ip (a return address), its
 * stack pointer and its rbp, as a hook with a frame pointer finds them. */
int mtl__unwind_from(struct mtl__unwind_memo *m, uint32_t max, uint64_t ip, uint64_t sp,
                     uint64_t rbp) MTL_HIDDEN;
/* Code was unloaded: the shared rule cache emptied, and (by the thread
 * owning it, before its next walk) a memo's rules and walks. */
void mtl__unwind_forget(void) MTL_HIDDEN;
void mtl__unwind_memo_forget(struct mtl__unwind_memo *m) MTL_HIDDEN;
/* rules.h: mtl__unwind_caller, the return address in a frame's caller,
 * inline. */
void mtl__unwind_atfork(int phase) MTL_HIDDEN;

/* stacks.c: unwinding and interning. */
int mtl__stacks_init(void) MTL_HIDDEN;
uint32_t mtl__capture_stack(uint32_t slot, unsigned skip) MTL_HIDDEN;
/* The same, from a hook's frame (__builtin_frame_address(0) of a hook that
 * the program called, or that the exported hook jumped to): the walk then
 * begins at the program's frame, with none of memtally's to walk through.
 * skip: as above, for when it cannot. */
uint32_t mtl__capture_stack_at(uint32_t slot, const void *frame, unsigned skip) MTL_HIDDEN;
/* The one-frame stack of an address (0 when the table is full). */
uint32_t mtl__stack_of_address(uint64_t addr) MTL_HIDDEN;
void mtl__stacks_forget_addresses(void) MTL_HIDDEN; /* after an unload */
void mtl__stacks_atfork(int phase) MTL_HIDDEN;
/* MEMTALLY_UNWIND=check: what the check found, on stderr. */
void mtl__stacks_report(void) MTL_HIDDEN;

/* modules.c: the module map. */
int mtl__modules_init(void) MTL_HIDDEN;
void mtl__modules_rescan(void) MTL_HIDDEN;       /* after dlopen/dlclose */
int mtl__modules_changed(void) MTL_HIDDEN;       /* cheap check */
void mtl__modules_atfork(int phase) MTL_HIDDEN;

/* writer.c: where the trace goes: memtally record (the region is shared),
 * asked through the region, or a writer thread here (a private region). */
/* Begins a trace at path (truncating it if clobber, else never overwriting:
 * path.1...), writing its header; start_thread: start the writer thread
 * too (else mtl__writer_start later; none under memtally record).  0 or a
 * negative errno. */
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
 * also from a signal handler; waits at most timeout_ms for busy threads.
 * Under memtally record: a stop is asked for and waited on; an exit only
 * noted (memtally record ends the trace when the process is gone). */
void mtl__writer_finish(int reason, int detail, unsigned timeout_ms) MTL_HIDDEN;
/* Before exec: writes everything so far and an END record, and keeps the
 * writer from adding more until mtl__writer_exec_end (exec failed); under
 * memtally record, notes the exec in the region (cleared if it failed). */
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
/* The sampled blocks' filter (common/addrcount.h), once made. */
extern _Atomic(_Atomic uint8_t *) mtl__sample_filter MTL_HIDDEN;
/* 0 when ptr was surely not sampled; 1 when it may have been. */
static inline int mtl__sampled_maybe(uint64_t ptr)
{
    _Atomic uint8_t *f = atomic_load_explicit(&mtl__sample_filter, memory_order_acquire);
    return f && mtl_addrcount_maybe(&f[mtl_addrcount_slot(ptr, MTL_FILTER_BITS)]);
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

/* redirect.c: objects that bind past our hooks (RTLD_DEEPBIND) get their
 * references to what we hook pointed at our hooks. */
extern void *(*mtl__real_dlopen)(const char *, int) MTL_HIDDEN;
void mtl__redirect_loaded(void) MTL_HIDDEN;
/* memtally attach: set while attached (every object is redirected, each
 * slot's old value kept); restore puts them all back. */
extern int mtl__attached MTL_HIDDEN;
void mtl__redirect_restore(void) MTL_HIDDEN;
/* attach.c: a stop while attached: the bindings back before the trace
 * ends, our threads gone after. */
void mtl__attach_end(void) MTL_HIDDEN;
void mtl__attach_done(void) MTL_HIDDEN;

/* unwindfds.c: libunwind's memory check, answered without a descriptor. */
void mtl__unwindfds_resolve(void) MTL_HIDDEN; /* with the hooks' resolve */

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

#include "preload/clock.h"
#include "preload/append.h"

#endif
