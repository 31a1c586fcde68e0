/* region.c: see region.h. */
#include "common/region.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u

static size_t round_up(size_t n)
{
    return (n + PAGE - 1) & ~(size_t)(PAGE - 1);
}

/* Offsets of the parts, header first. */
struct layout {
    size_t chunks, states, parent, addr, modules, arena, types, end;
};

static struct layout layout(void)
{
    struct layout l;
    l.chunks = round_up(sizeof(struct mtl_region));
    l.states = l.chunks + round_up((size_t)MTL_CHUNK_BUDGET * sizeof(struct mtl_chunk));
    l.parent = l.states + round_up((size_t)MTL_MAX_STATES * sizeof(struct mtl_tstate));
    l.addr = l.parent + round_up((size_t)MTL_MAX_NODES * sizeof(uint32_t));
    l.modules = l.addr + round_up((size_t)MTL_MAX_NODES * sizeof(uint64_t));
    l.arena = l.modules + round_up((size_t)MTL_MAX_MODULES * sizeof(struct mtl_region_module));
    l.types = l.arena + round_up(MTL_PATH_ARENA);
    l.end = l.types + round_up(MTL_MAX_STRINGS * sizeof(struct mtl_region_string) +
                               MTL_STRING_SLOTS * sizeof(uint32_t) + MTL_STRING_ARENA);
    return l;
}

size_t mtl_region_size(void)
{
    return layout().end;
}

struct mtl_region *mtl_region_init(void *base)
{
    struct layout l = layout();
    struct mtl_region *r = base;
    r->size = l.end;
    r->chunks_off = l.chunks;
    r->states_off = l.states;
    r->parent_off = l.parent;
    r->addr_off = l.addr;
    r->modules_off = l.modules;
    r->arena_off = l.arena;
    r->strings_off = l.types;
    atomic_store(&r->end_reason, -1);
    atomic_store(&r->nnodes, 1); /* node 0: the root, no frame */
    atomic_store_explicit((_Atomic uint64_t *)&r->magic, MTL_REGION_MAGIC, memory_order_release);
    return r;
}

struct mtl_region *mtl_region_new_private(void)
{
    void *p = mmap(NULL, mtl_region_size(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : mtl_region_init(p);
}

void mtl_region_unmap(struct mtl_region *r)
{
    if (r)
        munmap(r, r->size);
}

void mtl_region_copy_definitions(struct mtl_region *dst, const struct mtl_region *src)
{
    uint32_t n = atomic_load(&src->nnodes);
    memcpy(mtl_region_parents(dst), mtl_region_parents(src), n * sizeof(uint32_t));
    memcpy(mtl_region_addrs(dst), mtl_region_addrs(src), n * sizeof(uint64_t));
    atomic_store(&dst->nnodes, n);
    uint32_t m = atomic_load(&src->nmodules);
    memcpy(mtl_region_module(dst, 0), mtl_region_module(src, 0), m * sizeof(struct mtl_region_module));
    atomic_store(&dst->nmodules, m);
    memcpy(mtl_region_arena(dst), mtl_region_arena(src), src->arena_used);
    dst->arena_used = src->arena_used;
    /* The types: table, slots and names lie together. */
    memcpy((char *)dst + dst->strings_off, (const char *)src + src->strings_off,
           MTL_MAX_STRINGS * sizeof(struct mtl_region_string) + MTL_STRING_SLOTS * sizeof(uint32_t) +
               src->string_arena_used);
    dst->string_arena_used = src->string_arena_used;
    atomic_store(&dst->nstrings, atomic_load(&src->nstrings));
}

/* --- type names ------------------------------------------------------------ */

static struct mtl_region_string *string_table(const struct mtl_region *r)
{
    return (struct mtl_region_string *)((char *)r + r->strings_off);
}

static uint32_t *string_slots(const struct mtl_region *r)
{
    return (uint32_t *)(string_table(r) + MTL_MAX_STRINGS);
}

static char *string_arena(const struct mtl_region *r)
{
    return (char *)(string_slots(r) + MTL_STRING_SLOTS);
}

const char *mtl_region_string_text(const struct mtl_region *r, uint32_t tag, size_t *len)
{
    const struct mtl_region_string *t = &string_table(r)[tag - 1];
    *len = t->len;
    return string_arena(r) + t->off;
}

uint32_t mtl_region_string(struct mtl_region *r, const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
    uint32_t *slots = string_slots(r), tag = 0;
    /* A name registered already is found without the lock: a slot is set
     * once, after its entry, and never changes. */
    uint32_t known = atomic_load_explicit(&r->nstrings, memory_order_acquire);
    for (size_t k = h & (MTL_STRING_SLOTS - 1);; k = (k + 1) & (MTL_STRING_SLOTS - 1)) {
        uint32_t t = __atomic_load_n(&slots[k], __ATOMIC_ACQUIRE);
        if (!t || t > known)
            break;
        size_t n;
        const char *s = mtl_region_string_text(r, t, &n);
        if (n == len && !memcmp(s, name, len))
            return t;
    }
    mtl_spin_lock(&r->string_lock);
    for (size_t k = h & (MTL_STRING_SLOTS - 1);; k = (k + 1) & (MTL_STRING_SLOTS - 1)) {
        uint32_t t = slots[k];
        if (t) {
            size_t n;
            const char *s = mtl_region_string_text(r, t, &n);
            if (n == len && !memcmp(s, name, len)) {
                tag = t;
                break;
            }
            continue;
        }
        /* New: room in the table and the arena (slots are twice the
         * table, so an empty one is always found). */
        uint32_t nt = atomic_load(&r->nstrings);
        if (nt >= MTL_MAX_STRINGS || r->string_arena_used + len > MTL_STRING_ARENA)
            break;
        memcpy(string_arena(r) + r->string_arena_used, name, len);
        string_table(r)[nt] = (struct mtl_region_string){ r->string_arena_used, (uint32_t)len };
        r->string_arena_used += (uint32_t)len;
        tag = nt + 1;
        __atomic_store_n(&slots[k], tag, __ATOMIC_RELEASE);
        /* The writer reads nstrings without the lock: the entry first. */
        atomic_store_explicit(&r->nstrings, tag, memory_order_release);
        break;
    }
    mtl_spin_unlock(&r->string_lock);
    return tag;
}

/* --- locks --------------------------------------------------------------- */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void mtl_spin_lock_wait(atomic_int *l)
{
    for (unsigned i = 0;; i++) {
        if (!atomic_exchange_explicit(l, 1, memory_order_acquire))
            return;
        if (i > 64)
            sched_yield();
        else
            cpu_relax();
    }
}

int mtl_spin_trylock(atomic_int *l, unsigned spins)
{
    for (unsigned i = 0; i < spins; i++) {
        if (!atomic_exchange_explicit(l, 1, memory_order_acquire))
            return 1;
        if (i > 64)
            sched_yield();
        else
            cpu_relax();
    }
    return 0;
}

/* Takes l: waiting (spins 0), or giving up after spins tries. */
static int take(atomic_int *l, unsigned spins)
{
    if (!spins) {
        mtl_spin_lock(l);
        return 1;
    }
    return mtl_spin_trylock(l, spins);
}

/* --- claims of a thread's state ------------------------------------------ */

int mtl_region_barrier_register(void)
{
    int saved = errno;
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    int ok = cmds >= 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
             syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
    errno = saved;
    return ok;
}

void mtl_region_barrier(struct mtl_region *r)
{
    if (!atomic_load(&r->fast_owners))
        return;
    int saved = errno;
    /* A barrier on every processor that runs a registered program now;
     * one not running passed one when it was switched out.  Refused only
     * where the program could not register either (then fast_owners is
     * 0), or where this process alone is filtered (seccomp): then a wait
     * far longer than any store takes to leave its processor's buffer. */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    errno = saved;
}

int mtl_state_claim_start(struct mtl_region *r, struct mtl_tstate *ts, unsigned spins)
{
    if (!take(&ts->lock, spins))
        return 0;
    if (atomic_load(&r->fast_owners) && ts != mtl_region_state(r, 0))
        atomic_store(&ts->revoke, 1);
    return 1;
}

int mtl_state_claim_finish(struct mtl_tstate *ts, unsigned spins)
{
    for (unsigned i = 0; atomic_load_explicit(&ts->busy, memory_order_acquire); i++) {
        if (spins && i >= spins) {
            mtl_state_unclaim(ts);
            return 0;
        }
        if (i > 64)
            sched_yield();
        else
            cpu_relax();
    }
    return 1;
}

int mtl_state_claim(struct mtl_region *r, struct mtl_tstate *ts, unsigned spins)
{
    if (!mtl_state_claim_start(r, ts, spins))
        return 0;
    mtl_region_barrier(r);
    return mtl_state_claim_finish(ts, spins);
}

void mtl_state_unclaim(struct mtl_tstate *ts)
{
    atomic_store(&ts->revoke, 0);
    mtl_spin_unlock(&ts->lock);
}

/* --- the pool ------------------------------------------------------------ */

uint32_t mtl_pool_try_get(struct mtl_region *r, unsigned spins)
{
    uint32_t id = 0;
    if (!take(&r->pool_lock, spins))
        return 0;
    if (r->free_head) {
        id = r->free_head;
        r->free_head = mtl_region_chunk(r, id)->next;
    } else if (r->allocated < MTL_CHUNK_BUDGET) {
        id = ++r->allocated;
    }
    mtl_spin_unlock(&r->pool_lock);
    if (id) {
        struct mtl_chunk *c = mtl_region_chunk(r, id);
        c->next = 0;
        c->pos = 0;
        atomic_store_explicit(&c->n, 0, memory_order_relaxed);
    }
    return id;
}

int mtl_pool_release(struct mtl_region *r, uint32_t id, unsigned spins)
{
    if (!take(&r->pool_lock, spins))
        return -1;
    mtl_region_chunk(r, id)->next = r->free_head;
    r->free_head = id;
    mtl_spin_unlock(&r->pool_lock);
    return 0;
}

int mtl_pool_queue_full(struct mtl_region *r, uint32_t id, unsigned spins)
{
    if (!take(&r->pool_lock, spins))
        return -1;
    mtl_region_chunk(r, id)->next = 0;
    if (r->full_tail)
        mtl_region_chunk(r, r->full_tail)->next = id;
    else
        r->full_head = id;
    r->full_tail = id;
    int n = (int)++r->nfull;
    mtl_spin_unlock(&r->pool_lock);
    return n;
}

struct mtl_cev *mtl_region_room_next(struct mtl_region *r, struct mtl_tstate *ts, unsigned spins)
{
    for (;;) {
        if (ts->cur) {
            struct mtl_chunk *c = mtl_region_chunk(r, ts->cur);
            uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
            if (n < MTL_CHUNK_EVENTS)
                return &c->ev[n];
            int queued = mtl_pool_queue_full(r, ts->cur, spins);
            if (queued < 0)
                return NULL; /* the chunk stays the thread's */
            ts->cur = 0;
            if (queued >= 8)
                mtl_region_wake(r);
        }
        uint32_t id = mtl_pool_try_get(r, spins);
        if (!id)
            return NULL;
        ts->cur = id;
    }
}

/* --- a new trace ----------------------------------------------------------- */

int mtl_region_drop_queued(struct mtl_region *r, unsigned spins)
{
    if (!take(&r->pool_lock, spins))
        return -1;
    uint32_t id = r->full_head;
    r->full_head = r->full_tail = 0;
    r->nfull = 0;
    /* Onto the free list, under the same hold. */
    while (id) {
        uint32_t next = mtl_region_chunk(r, id)->next;
        mtl_region_chunk(r, id)->next = r->free_head;
        r->free_head = id;
        id = next;
    }
    mtl_spin_unlock(&r->pool_lock);
    return 0;
}

int mtl_region_begin_trace(struct mtl_region *r, uint64_t start_ns, unsigned spins)
{
    if (mtl_region_drop_queued(r, spins) < 0)
        return -1;
    atomic_store(&r->start_ns, start_ns);
    uint32_t n = atomic_load(&r->nstates);
    for (uint32_t i = 0; i < n; i++) {
        struct mtl_tstate *ts = mtl_region_state(r, i);
        /* A thread stuck holding its lock (or dead) keeps its chunk: its
         * events come later, on the old clock, clamped by the writer. */
        if (!mtl_state_claim(r, ts, spins))
            continue;
        if (ts->cur)
            atomic_store(&mtl_region_chunk(r, ts->cur)->n, 0);
        ts->last_ns = 0;
        ts->pending_ns = UINT64_MAX;
        memset(ts->name, 0, sizeof ts->name);
        /* State 0 is shared by threads past their exit: no start. */
        if (i != 0 && atomic_load(&ts->in_use) && ts->tid) {
            struct mtl_cev *e = mtl_region_room(r, ts, spins);
            if (e) {
                e->t_type = mtl_region_stamp(ts, 0) << 8 | MTL_CEV_THREAD_START;
                e->a = (uint64_t)ts->tid;
                e->b = 0;
                e->stack = 0;
                e->thread = ts->index;
                mtl_cev_commit(r, ts);
            }
        }
        mtl_state_unclaim(ts);
    }
    atomic_fetch_add(&r->trace_gen, 1);
    return 0;
}

/* --- waking the writer ---------------------------------------------------- */

/* The system call only for a writer asleep: one at work goes round again
 * without sleeping, as the count it sleeps against (taken when its round
 * began) has moved, and a program whose writer cannot keep up (binary
 * trees: 20,000 wakes a run) would otherwise make one for every chunk it
 * fills.  Sequentially consistent on both sides: the count's increment
 * here and writer_sleeping's store there come before the other's load, so
 * a writer not seen asleep finds the count moved in its FUTEX_WAIT, which
 * returns at once. */
void mtl_region_wake(struct mtl_region *r)
{
    atomic_fetch_add(&r->wake, 1);
    if (atomic_load(&r->writer_sleeping))
        /* Not FUTEX_PRIVATE: the writer may be another process. */
        syscall(SYS_futex, &r->wake, FUTEX_WAKE, 1, NULL, NULL, 0);
}

uint32_t mtl_region_wakes(struct mtl_region *r)
{
    return atomic_load(&r->wake);
}

void mtl_region_sleep(struct mtl_region *r, uint32_t seen, unsigned timeout_ms)
{
    atomic_store(&r->writer_sleeping, 1);
    struct timespec t = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
    syscall(SYS_futex, &r->wake, FUTEX_WAIT, seen, &t, NULL, 0);
    atomic_store(&r->writer_sleeping, 0);
}

void mtl_region_answer(struct mtl_region *r, uint32_t seq)
{
    atomic_store(&r->ack_seq, seq);
    syscall(SYS_futex, &r->ack_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

void mtl_region_wait_answer(struct mtl_region *r, uint32_t seen, unsigned timeout_ms)
{
    struct timespec t = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
    syscall(SYS_futex, &r->ack_seq, FUTEX_WAIT, seen, &t, NULL, 0);
}
