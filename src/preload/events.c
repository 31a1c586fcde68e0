/*
 * events.c: per-thread event chunks and the pool they come from (the
 * append itself is inline, in append.h).
 *
 * Each thread appends fixed-size events to a chunk of its own, which only
 * the writer ever claims (once a round, to detach the chunk), so the
 * common path holds the thread's state with plain stores on a cache line
 * the thread owns (region.h, mtl_state_enter; the lock where it cannot).
 * A full chunk goes to the writer's queue and the thread takes a fresh
 * one from the pool.  The pool is bounded
 * (MTL_CHUNK_BUDGET): when it is empty the thread waits for the writer,
 * without holding any lock the writer needs.  All of it is in the region
 * (common/region.h); an event is published (the chunk's count stored)
 * only once it is whole, so that a writer reading the region of a program
 * that died mid-append finds only whole events.
 *
 * Ordering.  Events are stamped with CLOCK_MONOTONIC nanoseconds while the
 * thread holds its state, so each chunk is sorted by time, and a free
 * is stamped before the block goes back to the allocator (while an
 * allocation is stamped after the allocator returned it): a block handed
 * to another thread is always freed, in time, before it is allocated again.
 * The writer (trace/encoder.c) merges chunks by time and writes only events
 * older than the moment it started collecting (the cutoff): every such
 * event was appended before the writer's claim detached its chunk.  A realloc stamps its free before
 * calling the allocator but appends it after; it publishes that stamp in
 * pending_ns so that the cutoff stays below it.
 *
 * Threads that exit leave their state for reuse; events made after a
 * thread's exit destructor (by other destructors) go to a shared orphan
 * state (state 0) so that no free is lost.
 */
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define ORPHAN 0u

static struct {
    pthread_key_t exit_key;
    int have_key;
} ev;

__thread struct mtl__tls mtl__tls;

#define R (mtl__pl.region)

static void thread_exit_destructor(void *arg);

void mtl__events_use_region(struct mtl_region *r)
{
    /* The state and the clock move with the events. */
    atomic_store(&r->state, atomic_load(mtl__pl.state));
    if (!atomic_load(&r->start_ns))
        atomic_store(&r->start_ns, mtl__pl.start_ns);
    mtl__pl.state = &r->state;
    mtl__pl.region = r;
    /* Before a state is handed out: a claim reads it. */
    atomic_store(&r->fast_owners, (uint32_t)mtl__pl.fast_owners);
    struct mtl_tstate *o = mtl_region_state(r, ORPHAN);
    o->pending_ns = UINT64_MAX;
    atomic_store(&o->in_use, 1);
    if (atomic_load(&r->nstates) == 0)
        atomic_store(&r->nstates, 1);
}

int mtl__events_init(void)
{
    if (pthread_key_create(&ev.exit_key, thread_exit_destructor) == 0)
        ev.have_key = 1;
    return 0;
}

/* Whether a writer will empty the pool: our thread, or memtally record
 * with its heartbeat fresh. */
extern int mtl__writer_running MTL_HIDDEN;

static int writer_alive(void)
{
    if (R != mtl__pl.shared)
        return mtl__writer_running;
    if (atomic_load(&R->gone) || atomic_load(&R->done))
        return 0;
    uint64_t beat = atomic_load(&R->beat);
    if (beat && mtl__monotonic_ns() - beat > 10ull * 1000000000ull) {
        atomic_store(&R->gone, 1);
        return 0;
    }
    return 1;
}

/* With ts held: mtl__room's wait, when the thread's chunk is full and
 * none is free.  NULL when recording has to stop. */
struct mtl_cev *mtl__room_wait(struct mtl_tstate *ts, int *held)
{
    /* The writer's claim, which frees chunks, waits for a hold without
     * the lock to end; the lock it can take between our naps. */
    mtl_state_hold_lock(ts, held);
    for (;;) {
        struct mtl_cev *e = mtl_region_room(R, ts, 0);
        if (e)
            return e;
        if (mtl__tls.writer || !writer_alive() ||
            atomic_load(mtl__pl.state) != MTL_RECORDING)
            return NULL;
        mtl_spin_unlock(&ts->lock);
        mtl_region_wake(R);
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
        mtl_spin_lock(&ts->lock);
    }
}

void mtl__append_failed(void)
{
    /* No room and a writer alive: recording was paused or stopped while
     * this thread waited; the event is not wanted. */
    if (!writer_alive())
        mtl__stop_recording("event buffers full and the writer is gone", 0);
}

static void read_own_name(uint64_t name[2])
{
    char buf[17] = {0};
    prctl(PR_GET_NAME, buf, 0, 0, 0);
    memcpy(name, buf, 16);
}

/* With ts held: appends a THREAD_NAME event for ts's owner if its name
 * changed since the last one. */
static void note_name(struct mtl_tstate *ts, const uint64_t name[2], int *held)
{
    if (memcmp(ts->name, name, 16) == 0)
        return;
    memcpy(ts->name, name, 16);
    struct mtl_cev *e = mtl__room(ts, held);
    if (e)
        mtl__put(ts, e, mtl__stamp(ts), MTL_CEV_THREAD_NAME, name[0], name[1], 0);
}

static void note_own_name(struct mtl_tstate *ts)
{
    uint64_t name[2];
    read_own_name(name);
    int held = mtl__hold(ts);
    note_name(ts, name, &held);
    mtl_state_leave(ts, held);
}

static void start_thread_events(struct mtl_tstate *ts)
{
    int held = mtl__hold(ts);
    ts->index = mtl__tls.index;
    ts->tid = mtl__gettid();
    memset(ts->name, 0, sizeof ts->name);
    mtl_state_leave(ts, held);
    mtl__append(ts, MTL_CEV_THREAD_START, (uint64_t)ts->tid, 0, 0);
    note_own_name(ts);
}

struct mtl_tstate *mtl__thread_state_slow(void)
{
    struct mtl__tls *tls = &mtl__tls;
    if (tls->ts != NULL)
        return tls->ts;
    if (tls->dead)
        return mtl__orphan_state();
    /* Before this thread's first stamp, and seen by any thread that gets
     * a block from it, as the increment is a full barrier. */
    atomic_fetch_add(&mtl__pl.states_taken, 1);

    /* A state left by a thread that exited, else a new one; taken by
     * compare-and-swap either way, as another new thread may be scanning
     * the slot just handed out. */
    struct mtl_tstate *ts = NULL;
    uint32_t slot = 1;
    while (!ts) {
        uint32_t n = atomic_load(&R->nstates);
        for (; slot < n; slot++) {
            int expected = 0;
            ts = mtl_region_state(R, slot);
            if (atomic_compare_exchange_strong(&ts->in_use, &expected, 1))
                break;
            ts = NULL;
        }
        if (ts)
            break;
        if (n >= MTL_MAX_STATES)
            return mtl__orphan_state(); /* more threads alive than states: share */
        atomic_compare_exchange_strong(&R->nstates, &n, n + 1);
    }
    ts->pending_ns = UINT64_MAX;
    tls->ts = ts;
    tls->slot = slot;
    tls->index = atomic_fetch_add(&mtl__pl.next_thread, 1);
    if (ev.have_key)
        pthread_setspecific(ev.exit_key, (void *)1);
    start_thread_events(ts);
    return ts;
}

void mtl__record_gc_free(uint64_t ptr)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (ts) {
        mtl__append(ts, MTL_CEV_FREE, ptr, MTL_CEV_GC, 0);
        mtl__user_hook(MTL_CEV_FREE, ptr, MTL_CEV_GC, 0);
    }
}

void mtl__record_calls(uint32_t thread, uint32_t stack, uint64_t calls)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (ts)
        mtl__append(ts, MTL_CEV_CALLS, calls, thread, stack);
}

void mtl__record_gc_heap(uint64_t bytes)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (ts)
        mtl__append(ts, MTL_CEV_GC_HEAP, bytes, 0, 0);
}

/* With ts held: this thread's latest allocation event of ptr among its
 * last 64, if the writer has not read it (the thread's chunk is its own
 * until the writer's claim detaches it), else NULL. */
static struct mtl_cev *unread_alloc(struct mtl_tstate *ts, uint64_t ptr)
{
    if (!ts->cur)
        return NULL;
    struct mtl_chunk *c = mtl_region_chunk(R, ts->cur);
    uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
    for (uint32_t i = n; i-- > 0 && n - i <= 64;) {
        struct mtl_cev *e = &c->ev[i];
        if (MTL_CEV_TYPE(e) == MTL_CEV_ALLOC && e->a == ptr)
            return e;
    }
    return NULL;
}

int mtl__drop_alloc_size(uint64_t ptr)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (!ts)
        return 0;
    int held = mtl__hold(ts);
    struct mtl_cev *e = unread_alloc(ts, ptr);
    if (e)
        e->b = 0;
    mtl_state_leave(ts, held);
    return e != NULL;
}

void mtl__record_tag(uint64_t ptr, uint32_t tag)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (!ts)
        return;
    /* Most often the block was allocated just before, by this thread, and
     * its event not read yet: the tag goes in it.  Else a TAG event. */
    int held = mtl__hold(ts);
    struct mtl_cev *e = tag <= 0xffff ? unread_alloc(ts, ptr) : NULL;
    if (e)
        e->b = (e->b & ((1ull << MTL_CEV_SIZE_BITS) - 1)) | (uint64_t)tag << MTL_CEV_SIZE_BITS;
    mtl_state_leave(ts, held);
    if (!e)
        mtl__append(ts, MTL_CEV_TAG, ptr, tag, 0);
    mtl__user_hook(MTL_CEV_TAG, ptr, (uint64_t)(tag & 0xffff) << MTL_CEV_SIZE_BITS, 0);
}

uint64_t mtl__begin_pending(void)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (!ts)
        return 0;
    int held = mtl__hold(ts);
    uint64_t t = mtl__stamp(ts);
    ts->pending_ns = t;
    mtl_state_leave(ts, held);
    return t;
}

void mtl__end_pending_realloc(uint64_t t_free, uint64_t old_ptr, int freed,
                              uint64_t new_ptr, uint64_t size, uint32_t stack)
{
    struct mtl_tstate *ts = mtl__thread_state();
    struct mtl_cev *e = NULL;
    if (!ts)
        return;
    int held = mtl__hold(ts);
    int wrote_free = 0, wrote_alloc = 0;
    if (freed && (e = mtl__room(ts, &held)) != NULL) {
        mtl__put(ts, e, t_free, MTL_CEV_FREE, old_ptr, 0, 0);
        wrote_free = 1;
    }
    if (new_ptr && (e = mtl__room(ts, &held)) != NULL) {
        mtl__put(ts, e, mtl__stamp(ts), MTL_CEV_ALLOC, new_ptr, size, stack);
        wrote_alloc = 1;
    }
    ts->pending_ns = UINT64_MAX;
    mtl_state_leave(ts, held);
    if (wrote_free)
        mtl__user_hook(MTL_CEV_FREE, old_ptr, 0, 0);
    if (wrote_alloc)
        mtl__user_hook(MTL_CEV_ALLOC, new_ptr, size, stack);
}

/* Runs at thread exit.  glibc runs key destructors in up to
 * PTHREAD_DESTRUCTOR_ITERATIONS rounds; re-arming until the last one lets
 * other libraries' destructors free their blocks while this thread still
 * records under its own index. */
static void thread_exit_destructor(void *arg)
{
    uintptr_t round = (uintptr_t)arg;
    if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
        pthread_setspecific(ev.exit_key, (void *)(round + 1));
        return;
    }
    mtl__thread_exit();
}

void mtl__thread_exit(void)
{
    struct mtl__tls *tls = &mtl__tls;
    struct mtl_tstate *ts = tls->ts;
    if (!ts)
        return;
    int saved = errno;
    if (atomic_load(mtl__pl.state) == MTL_RECORDING) {
        note_own_name(ts);
        mtl__calls_flush_mine();
        mtl__append(ts, MTL_CEV_THREAD_EXIT, 0, 0, 0);
    }
    tls->ts = NULL;
    tls->slot = 0;
    tls->dead = 1;
    if (ts != mtl__orphan_state())
        atomic_store(&ts->in_use, 0);
    errno = saved;
}

void mtl__events_atfork(int phase)
{
    if (phase == 0) {
        mtl_spin_lock(&R->pool_lock);
        return;
    }
    /* Parent, and child (in the region it goes on in, lifecycle.c). */
    mtl_spin_unlock(&R->pool_lock);
    if (phase == 1)
        return;
    /* Child: the parent's buffered events belong to the parent's trace.
     * Only this thread survives; every other state is free for reuse. */
    uint32_t n = atomic_load(&R->nstates);
    atomic_store(&R->fast_owners, (uint32_t)mtl__pl.fast_owners);
    for (uint32_t i = 0; i < n; i++) {
        struct mtl_tstate *ts = mtl_region_state(R, i);
        atomic_store(&ts->lock, 0);
        atomic_store(&ts->busy, 0);
        atomic_store(&ts->revoke, 0);
        ts->pending_ns = UINT64_MAX;
        ts->last_ns = 0; /* the child's clock starts anew */
        if (ts->cur) {
            mtl_pool_release(R, ts->cur, 0);
            ts->cur = 0;
        }
        if (i != ORPHAN && ts != mtl__tls.ts)
            atomic_store(&ts->in_use, 0);
    }
    mtl_region_drop_queued(R, 0);
}

/* Child that records on: this thread becomes thread 0 of the new trace. */
void mtl__events_after_fork_child(void)
{
    struct mtl__tls *tls = &mtl__tls;
    /* One thread again. */
    atomic_store(&mtl__pl.states_taken, tls->ts ? 1 : 0);
    atomic_store(&mtl__pl.next_thread, 0);
    if (tls->ts) {
        tls->index = atomic_fetch_add(&mtl__pl.next_thread, 1);
        start_thread_events(tls->ts);
    }
}

void mtl__events_begin_trace(void)
{
    mtl_region_begin_trace(R, atomic_load(&R->start_ns), 0);
}

int mtl__events_move_to(struct mtl_region *r)
{
    struct mtl_region *old = R;
    if (!r)
        r = mtl_region_new_private();
    if (!r)
        return -1;
    mtl_region_copy_definitions(r, old);
    r->info = old->info;
    atomic_store(&r->start_ns, atomic_load(&old->start_ns));
    /* The states as they were, without their chunks (the parent's). */
    uint32_t n = atomic_load(&old->nstates);
    for (uint32_t i = 0; i < n; i++) {
        const struct mtl_tstate *from = mtl_region_state(old, i);
        struct mtl_tstate *to = mtl_region_state(r, i);
        atomic_store(&to->in_use, atomic_load(&from->in_use));
        to->index = from->index;
        to->tid = from->tid;
        to->last_ns = from->last_ns;
        memcpy(to->name, from->name, sizeof to->name);
    }
    atomic_store(&r->nstates, n);
    mtl__events_use_region(r);
    if (mtl__tls.ts)
        mtl__tls.ts = mtl_region_state(r, mtl__tls.slot);
    return 0;
}
