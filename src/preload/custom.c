/*
 * custom.c: what runtimes tell memtally through the API (include/
 * memtally.h): type names and tags (mtl_type, mtl_tag), interpreter frames
 * (mtl_frame, mtl_frame_push, mtl_frame_pop), and the blocks of the
 * program's own allocators (pools, arenas, a garbage collector: mtl_alloc,
 * mtl_free, mtl_realloc, mtl_pool), also through heaptrack's API
 * (heaptrack_api.h binds the weak symbols heaptrack_malloc, _realloc and
 * _free, which this library defines): recorded as malloc's blocks are,
 * with the caller's stack, thread and time, and a type tag.
 *
 * Each call is a no-op unless recording, and passes straight through when
 * it comes from inside memtally (a hook, the writer).
 *
 * A pool's own block (mtl_pool): the objects carved from it are the blocks
 * that count, and the first of them usually has the pool's address.  So
 * at mtl_pool the pool's allocation, still in its thread's chunk when the
 * program registers it right after malloc, is made one of 0 bytes (else it
 * stays as it was), and the block is released in the trace; the
 * program's later free of it is not recorded: the free hook takes the
 * address out of a small table instead (looked at only while pools
 * exist).
 */
#include "preload/preload.h"

#include <errno.h>
#include <string.h>

#include "memtally.h"

#define EXPORT __attribute__((visibility("default")))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

EXPORT uint32_t mtl_type(const char *name)
{
    if (!name || !mtl__pl.ready || !mtl__pl.region)
        return 0;
    return mtl_region_string(mtl__pl.region, name);
}

/* ---- interpreter frames ------------------------------------------------------ */

EXPORT uint32_t mtl_frame(const char *function, const char *file, unsigned line)
{
    char name[512];
    if (!function || !*function || !mtl__pl.ready || !mtl__pl.region)
        return 0;
    if (file && *file && line)
        mtl__fmt(name, sizeof name, "%s (%s:%u)", function, file, line);
    else if (file && *file)
        mtl__fmt(name, sizeof name, "%s (%s)", function, file);
    else
        mtl__fmt(name, sizeof name, "%s", function);
    return mtl_region_string(mtl__pl.region, name);
}

/* The pusher's stack pointer is this function's canonical frame address:
 * its caller's stack pointer at the call, which is what an unwind reports
 * for the caller while it runs whatever it calls next. */
EXPORT __attribute__((noinline)) void mtl_frame_push(uint32_t frame)
{
    struct mtl__tls *tls = &mtl__tls;
    if (tls->iframes < MTL_IFRAMES) {
        tls->iframe_id[tls->iframes] = frame;
        tls->iframe_sp[tls->iframes] = (uint64_t)(uintptr_t)__builtin_dwarf_cfa();
    }
    tls->iframes++;
}

EXPORT void mtl_frame_pop(void)
{
    struct mtl__tls *tls = &mtl__tls;
    if (tls->iframes)
        tls->iframes--;
}

/* Whether to record now: ready, recording, and not from inside memtally. */
ALWAYS_INLINE int wanted(struct mtl__tls *tls)
{
    return mtl__pl.ready && !tls->in_hook &&
           atomic_load_explicit(mtl__pl.state, memory_order_relaxed) == MTL_RECORDING;
}

/* Inlined into each entry point, so that the stack starts at its caller
 * as a hook's does. */
ALWAYS_INLINE void note_alloc(void *p, size_t size, uint32_t tag)
{
    struct mtl__tls *tls = &mtl__tls;
    if (!p || !wanted(tls))
        return;
    if (mtl__pl.opt.sample_rate && !mtl__sample_hit(tls, size))
        return;
    int saved = errno;
    tls->in_hook = 1;
    if (!mtl__pl.opt.sample_rate || mtl__sampled_add((uint64_t)(uintptr_t)p) == 0) {
        if (mtl__thread_state()) {
            uint64_t max = MTL_CEV_GC - 1;
            uint64_t b = (size < max ? size : max) |
                         (uint64_t)(tag <= 0xffff ? tag : 0) << MTL_CEV_SIZE_BITS;
            mtl__record_alloc((uint64_t)(uintptr_t)p, b, mtl__capture_stack(tls->slot, 0));
        }
    }
    tls->in_hook = 0;
    errno = saved;
}

ALWAYS_INLINE void note_free(void *p)
{
    struct mtl__tls *tls = &mtl__tls;
    if (!p || !wanted(tls))
        return;
    if (mtl__pl.opt.sample_rate && !mtl__sampled_maybe((uint64_t)(uintptr_t)p))
        return;
    int saved = errno;
    tls->in_hook = 1;
    if (!mtl__pl.opt.sample_rate || mtl__sampled_take((uint64_t)(uintptr_t)p))
        mtl__record_free((uint64_t)(uintptr_t)p);
    tls->in_hook = 0;
    errno = saved;
}

EXPORT void *mtl_tag(void *block, uint32_t tag)
{
    struct mtl__tls *tls = &mtl__tls;
    uint64_t p = (uint64_t)(uintptr_t)block;
    if (!block || !wanted(tls))
        return block;
    /* Sampled mode: a block never sampled has no event to tag. */
    if (mtl__pl.opt.sample_rate && !mtl__sampled_maybe(p))
        return block;
    int saved = errno;
    tls->in_hook = 1;
    mtl__record_tag(p, tag);
    tls->in_hook = 0;
    errno = saved;
    return block;
}

EXPORT void mtl_alloc(void *p, size_t size, uint32_t tag)
{
    note_alloc(p, size, tag);
}

EXPORT void mtl_free(void *p)
{
    note_free(p);
}

EXPORT void mtl_realloc(void *old, void *p, size_t size)
{
    note_free(old);
    if (size)
        note_alloc(p, size, 0);
}

/* heaptrack's API, for programs instrumented with heaptrack_api.h. */
EXPORT void heaptrack_malloc(void *ptr, size_t size)
{
    note_alloc(ptr, size, 0);
}

EXPORT void heaptrack_free(void *ptr)
{
    note_free(ptr);
}

EXPORT void heaptrack_realloc(void *ptr_in, size_t size, void *ptr_out)
{
    note_free(ptr_in);
    if (size)
        note_alloc(ptr_out, size, 0);
}

/* ---- pools ---------------------------------------------------------------- */

#define POOL_SLOTS 4096          /* open addressing; 0 empty, 1 deleted */

_Atomic uint32_t mtl__pools;
static struct {
    atomic_int lock;
    uint64_t slot[POOL_SLOTS];
} pools;

static size_t pool_hash(uint64_t p)
{
    return (size_t)((p * 0x9e3779b97f4a7c15ull) >> 52) & (POOL_SLOTS - 1);
}

/* With the lock: the slot of p, or of the first free place for it (found
 * 0), or POOL_SLOTS when full. */
static size_t pool_slot(uint64_t p, int *found)
{
    size_t free_at = POOL_SLOTS;
    *found = 0;
    for (size_t i = 0, k = pool_hash(p); i < POOL_SLOTS; i++, k = (k + 1) & (POOL_SLOTS - 1)) {
        if (pools.slot[k] == p) {
            *found = 1;
            return k;
        }
        if (pools.slot[k] <= 1 && free_at == POOL_SLOTS)
            free_at = k;
        if (pools.slot[k] == 0)
            break;
    }
    return free_at;
}

int mtl__pool_take(uint64_t p)
{
    int found;
    mtl_spin_lock(&pools.lock);
    size_t k = pool_slot(p, &found);
    if (found) {
        pools.slot[k] = 1;
        atomic_fetch_sub(&mtl__pools, 1);
    }
    mtl_spin_unlock(&pools.lock);
    return found;
}

EXPORT void mtl_pool(void *base, size_t size)
{
    (void)size;
    uint64_t p = (uint64_t)(uintptr_t)base;
    if (!base || !mtl__pl.ready)
        return;
    /* Its bytes out of the totals if the writer has not read them yet, and
     * the block out of the live heap. */
    struct mtl__tls *tls = &mtl__tls;
    if (wanted(tls)) {
        tls->in_hook = 1;
        mtl__drop_alloc_size(p);
        tls->in_hook = 0;
    }
    note_free(base);
    int found;
    mtl_spin_lock(&pools.lock);
    size_t k = pool_slot(p, &found);
    if (!found && k < POOL_SLOTS) {
        pools.slot[k] = p;
        atomic_fetch_add(&mtl__pools, 1);
    }
    mtl_spin_unlock(&pools.lock);
}

EXPORT void mtl_pool_free(void *base)
{
    if (base)
        mtl__pool_take((uint64_t)(uintptr_t)base);
}
