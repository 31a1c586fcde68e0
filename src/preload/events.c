/*
 * events.c: per-thread event chunks and the pool they come from.
 *
 * Each thread appends fixed-size events to a chunk of its own, under a
 * spinlock that only the writer ever contends for (once a round, to detach
 * the chunk), so the common path is an uncontended atomic exchange on a
 * cache line the thread owns.  A full chunk goes to the writer's queue and
 * the thread takes a fresh one from the pool.  The pool is bounded
 * (MTL_CHUNK_BUDGET): when it is empty the thread waits for the writer,
 * without holding any lock the writer needs.
 *
 * Ordering.  Events are stamped with CLOCK_MONOTONIC nanoseconds while the
 * thread holds its chunk lock, so each chunk is sorted by time, and a free
 * is stamped before the block goes back to the allocator (while an
 * allocation is stamped after the allocator returned it): a block handed
 * to another thread is always freed, in time, before it is allocated again.
 * The writer merges chunks by time and writes only events older than the
 * moment it started collecting (the cutoff): every such event was appended
 * before the writer detached its chunk.  A realloc stamps its free before
 * calling the allocator but appends it after; it publishes that stamp in
 * pending_ns so that the cutoff stays below it.
 *
 * Threads that exit leave their state for reuse; events made after a
 * thread's exit destructor (by other destructors) go to a shared orphan
 * state so that no free is lost.
 */
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static struct {
    pthread_mutex_t mu;
    pthread_cond_t room;          /* signalled when chunks are released */
    struct mtl__chunk *free_list;
    unsigned allocated;
    struct mtl__chunk *full_head, *full_tail;
    size_t nfull;
    _Atomic(struct mtl__tstate *) all; /* every state, newest first */
    struct mtl__tstate orphan;    /* shared by threads past their exit */
    pthread_key_t exit_key;
    int have_key;
} ev = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .room = PTHREAD_COND_INITIALIZER,
};

__thread struct mtl__tls mtl__tls;

static void thread_exit_destructor(void *arg);

int mtl__events_init(void)
{
    ev.orphan.pending_ns = UINT64_MAX;
    ev.orphan.in_use = 1;
    /* The orphan is on the list too, so the writer collects its events. */
    ev.orphan.next_all = atomic_load(&ev.all);
    atomic_store(&ev.all, &ev.orphan);
    if (pthread_key_create(&ev.exit_key, thread_exit_destructor) == 0)
        ev.have_key = 1;
    return 0;
}

/* Takes a chunk from the pool without waiting; NULL when none is free and
 * the budget is spent. */
static struct mtl__chunk *pool_try_get(void)
{
    struct mtl__chunk *c = NULL;
    pthread_mutex_lock(&ev.mu);
    if (ev.free_list) {
        c = ev.free_list;
        ev.free_list = c->next;
    } else if (ev.allocated < MTL_CHUNK_BUDGET) {
        ev.allocated++;
        pthread_mutex_unlock(&ev.mu);
        c = mtl__pages_alloc(sizeof *c);
        if (!c) {
            pthread_mutex_lock(&ev.mu);
            ev.allocated--;
            pthread_mutex_unlock(&ev.mu);
            return NULL;
        }
        return c;
    }
    pthread_mutex_unlock(&ev.mu);
    if (c) {
        c->next = NULL;
        c->n = c->pos = 0;
    }
    return c;
}

/* Waits until the writer releases a chunk.  Returns 0 when recording
 * stopped meanwhile or nobody will ever release one. */
extern int mtl__writer_running MTL_HIDDEN;

static int pool_wait(void)
{
    int ok = 1;
    if (mtl__tls.writer)
        return 0;
    pthread_mutex_lock(&ev.mu);
    while (!ev.free_list && ev.allocated >= MTL_CHUNK_BUDGET) {
        if (!mtl__writer_running ||
            atomic_load(&mtl__pl.state) != MTL_RECORDING) {
            ok = 0;
            break;
        }
        pthread_mutex_unlock(&ev.mu);
        mtl__writer_wake();
        pthread_mutex_lock(&ev.mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 10 * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&ev.room, &ev.mu, &until);
    }
    pthread_mutex_unlock(&ev.mu);
    return ok;
}

static void queue_full_chunk(struct mtl__chunk *c)
{
    size_t n;
    c->next = NULL;
    pthread_mutex_lock(&ev.mu);
    if (ev.full_tail)
        ev.full_tail->next = c;
    else
        ev.full_head = c;
    ev.full_tail = c;
    n = ++ev.nfull;
    pthread_mutex_unlock(&ev.mu);
    if (n >= 8)
        mtl__writer_wake();
}

void mtl__chunk_release(struct mtl__chunk *c)
{
    pthread_mutex_lock(&ev.mu);
    c->next = ev.free_list;
    ev.free_list = c;
    pthread_cond_signal(&ev.room);
    pthread_mutex_unlock(&ev.mu);
}

/* With ts locked: returns a slot for one event, or NULL when recording has
 * to stop.  May unlock and relock ts while waiting for the writer, so
 * callers stamp the time after this returns. */
static struct mtl__ev *room(struct mtl__tstate *ts)
{
    for (;;) {
        struct mtl__chunk *c = ts->cur;
        if (c && c->n < MTL_CHUNK_EVENTS)
            return &c->ev[c->n++];
        if (c) {
            ts->cur = NULL;
            queue_full_chunk(c);
        }
        c = pool_try_get();
        if (c) {
            ts->cur = c;
            continue;
        }
        mtl__spin_unlock(&ts->lock);
        int ok = pool_wait();
        mtl__spin_lock(&ts->lock);
        if (!ok)
            return NULL;
    }
}

/* With ts locked: a timestamp strictly above the thread's previous one, so
 * that the writer's merge keeps each thread's events in their order. */
static uint64_t stamp(struct mtl__tstate *ts)
{
    uint64_t t = mtl__now_ns();
    if (t <= ts->last_ns)
        t = ts->last_ns + 1;
    ts->last_ns = t;
    return t;
}

static void put(struct mtl__tstate *ts, struct mtl__ev *e, uint64_t t,
                unsigned type, uint64_t a, uint64_t b, uint32_t stack)
{
    e->t_type = t << 8 | type;
    e->a = a;
    e->b = b;
    e->stack = stack;
    /* The orphan state is shared by exiting threads: ask the caller's. */
    e->thread = ts == &ev.orphan ? mtl__tls.index : ts->index;
}

static void append(struct mtl__tstate *ts, unsigned type, uint64_t a,
                   uint64_t b, uint32_t stack)
{
    mtl__spin_lock(&ts->lock);
    struct mtl__ev *e = room(ts);
    if (e)
        put(ts, e, stamp(ts), type, a, b, stack);
    mtl__spin_unlock(&ts->lock);
    if (!e)
        mtl__stop_recording("event buffers full and the writer is gone", 0);
}

static void read_own_name(uint64_t name[2])
{
    char buf[17] = {0};
    prctl(PR_GET_NAME, buf, 0, 0, 0);
    memcpy(name, buf, 16);
}

/* With ts locked: appends a THREAD_NAME event for ts's owner if its name
 * changed since the last one. */
static void note_name(struct mtl__tstate *ts, const uint64_t name[2])
{
    if (memcmp(ts->name, name, 16) == 0)
        return;
    memcpy(ts->name, name, 16);
    struct mtl__ev *e = room(ts);
    if (e)
        put(ts, e, stamp(ts), MTL__EV_THREAD_NAME, name[0], name[1], 0);
}

static void note_own_name(struct mtl__tstate *ts)
{
    uint64_t name[2];
    read_own_name(name);
    mtl__spin_lock(&ts->lock);
    note_name(ts, name);
    mtl__spin_unlock(&ts->lock);
}

static void start_thread_events(struct mtl__tstate *ts)
{
    mtl__spin_lock(&ts->lock);
    ts->index = mtl__tls.index;
    ts->tid = mtl__gettid();
    memset(ts->name, 0, sizeof ts->name);
    mtl__spin_unlock(&ts->lock);
    append(ts, MTL__EV_THREAD_START, (uint64_t)ts->tid, 0, 0);
    note_own_name(ts);
}

struct mtl__tstate *mtl__thread_state(void)
{
    struct mtl__tls *tls = &mtl__tls;
    if (MTL_LIKELY(tls->ts != NULL))
        return tls->ts;
    if (tls->dead)
        return &ev.orphan;

    struct mtl__tstate *ts;
    for (ts = atomic_load(&ev.all); ts; ts = ts->next_all) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&ts->in_use, &expected, 1))
            break;
    }
    if (!ts) {
        ts = mtl__pages_alloc(sizeof *ts);
        if (!ts)
            return NULL;
        ts->in_use = 1;
        ts->next_all = atomic_load(&ev.all);
        while (!atomic_compare_exchange_weak(&ev.all, &ts->next_all, ts))
            ;
    }
    ts->pending_ns = UINT64_MAX;
    tls->ts = ts;
    tls->index = atomic_fetch_add(&mtl__pl.next_thread, 1);
    if (ev.have_key)
        pthread_setspecific(ev.exit_key, (void *)1);
    start_thread_events(ts);
    return ts;
}

void mtl__record_alloc(uint64_t ptr, uint64_t size, uint32_t stack)
{
    struct mtl__tstate *ts = mtl__thread_state();
    if (ts)
        append(ts, MTL__EV_ALLOC, ptr, size, stack);
}

void mtl__record_free(uint64_t ptr)
{
    struct mtl__tstate *ts = mtl__thread_state();
    if (ts)
        append(ts, MTL__EV_FREE, ptr, 0, 0);
}

uint64_t mtl__begin_pending(void)
{
    struct mtl__tstate *ts = mtl__thread_state();
    if (!ts)
        return 0;
    mtl__spin_lock(&ts->lock);
    uint64_t t = stamp(ts);
    ts->pending_ns = t;
    mtl__spin_unlock(&ts->lock);
    return t;
}

void mtl__end_pending_realloc(uint64_t t_free, uint64_t old_ptr, int freed,
                              uint64_t new_ptr, uint64_t size, uint32_t stack)
{
    struct mtl__tstate *ts = mtl__thread_state();
    struct mtl__ev *e = NULL;
    if (!ts)
        return;
    mtl__spin_lock(&ts->lock);
    if (freed && (e = room(ts)) != NULL)
        put(ts, e, t_free, MTL__EV_FREE, old_ptr, 0, 0);
    if (new_ptr && (e = room(ts)) != NULL)
        put(ts, e, stamp(ts), MTL__EV_ALLOC, new_ptr, size, stack);
    ts->pending_ns = UINT64_MAX;
    mtl__spin_unlock(&ts->lock);
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
    struct mtl__tstate *ts = tls->ts;
    if (!ts)
        return;
    int saved = errno;
    if (atomic_load(&mtl__pl.state) == MTL_RECORDING) {
        note_own_name(ts);
        append(ts, MTL__EV_THREAD_EXIT, 0, 0, 0);
    }
    tls->ts = NULL;
    tls->dead = 1;
    atomic_store(&ts->in_use, 0);
    errno = saved;
}

uint64_t mtl__collect(struct mtl__chunk **runs, size_t *nruns, size_t cap,
                      unsigned trylock_spins)
{
    uint64_t cutoff = mtl__now_ns();
    for (struct mtl__tstate *ts = atomic_load(&ev.all); ts; ts = ts->next_all) {
        if (trylock_spins) {
            if (!mtl__spin_trylock(&ts->lock, trylock_spins))
                continue; /* a thread stopped inside memtally: skip it */
        } else {
            mtl__spin_lock(&ts->lock);
        }
        if (ts->pending_ns < cutoff)
            cutoff = ts->pending_ns;
        if (ts->cur && ts->cur->n > 0 && *nruns < cap) {
            runs[(*nruns)++] = ts->cur;
            ts->cur = NULL;
        }
        mtl__spin_unlock(&ts->lock);
    }
    /* After the threads' chunks, so that a chunk queued before we detached
     * its successor is not left for the next round. */
    pthread_mutex_lock(&ev.mu);
    while (ev.full_head && *nruns < cap) {
        struct mtl__chunk *c = ev.full_head;
        ev.full_head = c->next;
        c->next = NULL;
        runs[(*nruns)++] = c;
        ev.nfull--;
    }
    if (!ev.full_head)
        ev.full_tail = NULL;
    pthread_mutex_unlock(&ev.mu);
    return cutoff;
}

/* With ev.mu held: the queued chunks' events are dropped, the chunks go
 * back to the pool. */
static void drop_queued_locked(void)
{
    while (ev.full_head) {
        struct mtl__chunk *c = ev.full_head;
        ev.full_head = c->next;
        c->n = c->pos = 0;
        c->next = ev.free_list;
        ev.free_list = c;
    }
    ev.full_tail = NULL;
    ev.nfull = 0;
}

void mtl__events_atfork(int phase)
{
    if (phase == 0) {
        pthread_mutex_lock(&ev.mu);
        return;
    }
    if (phase == 1) {
        pthread_mutex_unlock(&ev.mu);
        return;
    }
    /* Child: the parent's buffered events belong to the parent's trace.
     * Only this thread survives; every other state is free for reuse. */
    pthread_mutex_init(&ev.mu, NULL);
    pthread_cond_init(&ev.room, NULL);
    for (struct mtl__tstate *ts = atomic_load(&ev.all); ts; ts = ts->next_all) {
        atomic_store(&ts->lock, 0);
        ts->pending_ns = UINT64_MAX;
        ts->last_ns = 0; /* the child's clock starts anew */
        if (ts->cur) {
            ts->cur->n = ts->cur->pos = 0;
            ts->cur->next = ev.free_list;
            ev.free_list = ts->cur;
            ts->cur = NULL;
        }
        if (ts != &ev.orphan && ts != mtl__tls.ts)
            atomic_store(&ts->in_use, 0);
    }
    drop_queued_locked();
}

/* Child that records on: this thread becomes thread 0 of the new trace. */
void mtl__events_after_fork_child(void)
{
    struct mtl__tls *tls = &mtl__tls;
    atomic_store(&mtl__pl.next_thread, 0);
    if (tls->ts) {
        tls->index = atomic_fetch_add(&mtl__pl.next_thread, 1);
        start_thread_events(tls->ts);
    }
}

void mtl__events_begin_trace(void)
{
    pthread_mutex_lock(&ev.mu);
    drop_queued_locked();
    pthread_mutex_unlock(&ev.mu);
    for (struct mtl__tstate *ts = atomic_load(&ev.all); ts; ts = ts->next_all) {
        mtl__spin_lock(&ts->lock);
        if (ts->cur)
            ts->cur->n = ts->cur->pos = 0;
        ts->last_ns = 0;
        ts->pending_ns = UINT64_MAX;
        memset(ts->name, 0, sizeof ts->name); /* named again below */
        if (ts != &ev.orphan && atomic_load(&ts->in_use) && ts->tid) {
            struct mtl__ev *e = room(ts);
            if (e)
                put(ts, e, stamp(ts), MTL__EV_THREAD_START, (uint64_t)ts->tid, 0, 0);
        }
        mtl__spin_unlock(&ts->lock);
    }
    mtl__refresh_thread_names();
}

void mtl__refresh_thread_names(void)
{
    for (struct mtl__tstate *ts = atomic_load(&ev.all); ts; ts = ts->next_all) {
        if (ts == &ev.orphan || !atomic_load(&ts->in_use) || !ts->tid)
            continue;
        char path[64], buf[32] = {0};
        mtl__fmt(path, sizeof path, "/proc/self/task/%d/comm", ts->tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* it exited meanwhile */
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        if (buf[n - 1] == '\n')
            n--;
        uint64_t name[2] = {0, 0};
        memcpy(name, buf, (size_t)n < 15 ? (size_t)n : 15);
        mtl__spin_lock(&ts->lock);
        if (atomic_load(&ts->in_use))
            note_name(ts, name);
        mtl__spin_unlock(&ts->lock);
    }
}
