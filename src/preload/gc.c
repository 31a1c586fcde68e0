/*
 * gc.c: the Boehm-Demers-Weiser collector's heap (libgc), recorded without
 * recompiling: its allocation functions are defined here, in front of
 * libgc's as malloc's are in front of libc's, and each block is recorded
 * with its stack as a block of the collector's heap (MTL_CEV_GC: ALLOC_EX
 * with the GC flag in the trace), never summed with malloc's.
 *
 * The collector frees blocks by itself, without a call anyone can hook.
 * So each recorded block gets a disappearing link (libgc's weak pointer,
 * GC_general_register_disappearing_link): a word of ours, holding the
 * block's address disguised, that the collector clears during the
 * collection that finds the block unreachable.  A callback on the
 * collector's events (GC_set_on_collection_event) counts collections and
 * reads the heap size; it runs with the collector's lock held and perhaps
 * the world stopped, so it takes no lock of ours.  Then, on the way out
 * of the next call into the collector (most often the very allocation
 * that triggered the collection, or GC_gcollect), the table of links is
 * walked: each cleared link is a FREE of its block, and the heap size
 * goes into the trace (GC_HEAP).  docs/DESIGN.md tells what it costs.
 *
 * libgc calls its own exported functions through its PLT (GC_debug_malloc
 * calls GC_malloc): only the outermost call of a thread is recorded
 * (tls->in_gc).  An explicit GC_free takes the block's link back first.
 * Nothing here includes gc.h: the library builds without libgc, and the
 * functions are looked up with dlsym(RTLD_NEXT) when first called.
 *
 * The table lives in pages of ours (mmap), which the collector does not
 * scan, so recording keeps nothing alive.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

#define GC_EVENT_RECLAIM_END 4  /* GC_EventType in gc.h (8.x) */
#define MAX_ENTRIES (1u << 26)  /* blocks tracked at once: 1 GiB reserved, sparse */

typedef void (*event_fn)(int);

/* One recorded block: the link the collector clears (the block's base
 * address, disguised), and the address the program was given. */
struct entry {
    _Atomic uintptr_t link;
    uint64_t ptr;              /* 0: free entry (then next holds the list) */
    uint32_t next_free;
};

static struct {
    atomic_int lock;
    struct entry *entries;     /* MAX_ENTRIES reserved */
    uint32_t used;             /* entries handed out at most (from 1) */
    uint32_t free_list;        /* 0: none */
    uint32_t *slot;            /* open addressing: address -> entry, 0 empty,
                                  UINT32_MAX deleted */
    uint32_t cap, count, deleted;
    atomic_uint collections;   /* counted by on_event */
    atomic_ullong heap_size;   /* after the latest collection */
    unsigned scanned;          /* collections walked so far */
    atomic_int installed;
    _Atomic(event_fn) program_fn; /* the program's own collection callback */
} gc;

/* libgc's functions used here besides the ones defined below. */
static struct {
    int (*register_link)(void **, const void *);
    int (*unregister_link)(void **);
    void *(*base)(void *);
    size_t (*heap_size)(void);
    void (*set_event)(event_fn);
    event_fn (*get_event)(void);
    int resolved;
} lib;

static void *next_fn(const char *name)
{
    struct mtl__tls *tls = &mtl__tls;
    int saved = tls->in_hook;
    tls->in_hook = 1; /* dlsym's own allocations are not the program's */
    void *f = dlsym(RTLD_NEXT, name);
    tls->in_hook = saved;
    return f;
}

static void on_event(int event)
{
    if (event == GC_EVENT_RECLAIM_END) {
        if (lib.heap_size) /* an unsynchronized getter, meant for callbacks */
            atomic_store(&gc.heap_size, lib.heap_size());
        atomic_fetch_add(&gc.collections, 1);
    }
    event_fn f = atomic_load(&gc.program_fn);
    if (f)
        f(event);
}

/* The functions this file needs, and our collection callback in place,
 * keeping the program's. */
static void install(void)
{
    if (atomic_load_explicit(&gc.installed, memory_order_acquire))
        return;
    mtl_spin_lock(&gc.lock);
    if (!lib.resolved) {
        lib.register_link = next_fn("GC_general_register_disappearing_link");
        lib.unregister_link = next_fn("GC_unregister_disappearing_link");
        lib.base = next_fn("GC_base");
        lib.heap_size = next_fn("GC_get_heap_size");
        lib.set_event = next_fn("GC_set_on_collection_event");
        lib.get_event = next_fn("GC_get_on_collection_event");
        lib.resolved = 1;
    }
    mtl_spin_unlock(&gc.lock);
    if (atomic_exchange(&gc.installed, 1))
        return;
    if (lib.get_event && lib.set_event) {
        event_fn f = lib.get_event();
        if (f != on_event)
            atomic_store(&gc.program_fn, f);
        lib.set_event(on_event);
    }
}

/* ---- the table ------------------------------------------------------------------ */

static uint32_t hash_of(uint64_t p, uint32_t cap)
{
    return (uint32_t)((p * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* With the lock: the slot holding p, or (found 0) where it would go. */
static uint32_t find_slot(uint64_t p, int *found)
{
    uint32_t at = UINT32_MAX;
    *found = 0;
    for (uint32_t k = hash_of(p, gc.cap);; k = (k + 1) & (gc.cap - 1)) {
        uint32_t e = gc.slot[k];
        if (e == 0)
            return at != UINT32_MAX ? at : k;
        if (e == UINT32_MAX) {
            if (at == UINT32_MAX)
                at = k;
        } else if (gc.entries[e].ptr == p) {
            *found = 1;
            return k;
        }
    }
}

/* With the lock: room for one more address (0), or -1.  Deleted slots
 * are dropped by a rehash at the same size when the table is not full. */
static int grow_slots(void)
{
    if (gc.cap && (uint64_t)(gc.count + gc.deleted + 1) * 2 <= gc.cap)
        return 0;
    uint32_t cap = !gc.cap ? 4096 : (uint64_t)(gc.count + 1) * 4 > gc.cap ? gc.cap * 2 : gc.cap;
    uint32_t *old = gc.slot, old_cap = gc.cap;
    uint32_t *slot = mtl__pages_alloc((size_t)cap * sizeof *slot);
    if (!slot)
        return -1;
    gc.slot = slot;
    gc.cap = cap;
    gc.deleted = 0;
    for (uint32_t i = 0; i < old_cap; i++) {
        uint32_t e = old[i];
        if (e && e != UINT32_MAX) {
            int found;
            slot[find_slot(gc.entries[e].ptr, &found)] = e;
        }
    }
    mtl__pages_free(old, (size_t)old_cap * sizeof *old);
    return 0;
}

/* With the lock: a new entry for p (its number), or 0 when full. */
static uint32_t add_entry(uint64_t p, uintptr_t base)
{
    if (!gc.entries && !(gc.entries = mtl__pages_alloc((size_t)MAX_ENTRIES * sizeof *gc.entries)))
        return 0;
    if (grow_slots() < 0)
        return 0;
    int found;
    uint32_t k = find_slot(p, &found);
    if (found)
        return 0; /* recorded already: a block handed out twice is not ours to judge */
    uint32_t e = gc.free_list;
    if (e)
        gc.free_list = gc.entries[e].next_free;
    else if (gc.used + 1 < MAX_ENTRIES)
        e = ++gc.used;
    else
        return 0;
    gc.entries[e].ptr = p;
    atomic_store_explicit(&gc.entries[e].link, ~base, memory_order_relaxed);
    if (gc.slot[k] == UINT32_MAX)
        gc.deleted--;
    gc.slot[k] = e;
    gc.count++;
    return e;
}

/* With the lock: entry e (in slot k) is done with. */
static void drop_entry(uint32_t k, uint32_t e)
{
    gc.slot[k] = UINT32_MAX;
    gc.deleted++;
    gc.count--;
    gc.entries[e].ptr = 0;
    gc.entries[e].next_free = gc.free_list;
    gc.free_list = e;
}

/* fork: the child gets the table unlocked (phase 0 prepare, 1 parent,
 * 2 child). */
void mtl__gc_atfork(int phase)
{
    if (phase == 0)
        mtl_spin_lock(&gc.lock);
    else
        mtl_spin_unlock(&gc.lock);
}

/* After a collection: every block whose link the collector cleared is
 * freed.  Its FREE is recorded under the lock, which only this walk and
 * the calls below take. */
static void walk_links(void)
{
    unsigned n = atomic_load(&gc.collections);
    if (n == gc.scanned)
        return;
    mtl_spin_lock(&gc.lock);
    if (n != gc.scanned) {
        gc.scanned = n;
        for (uint32_t e = 1; e <= gc.used; e++) {
            struct entry *x = &gc.entries[e];
            if (!x->ptr || atomic_load_explicit(&x->link, memory_order_relaxed) != 0)
                continue;
            int found;
            uint32_t k = find_slot(x->ptr, &found);
            mtl__record_gc_free(x->ptr);
            if (found)
                drop_entry(k, e);
        }
        mtl__record_gc_heap(atomic_load(&gc.heap_size));
    }
    mtl_spin_unlock(&gc.lock);
}

/* ---- recording -------------------------------------------------------------------- */

ALWAYS_INLINE int wanted(struct mtl__tls *tls)
{
    return mtl__pl.ready && !tls->in_hook && !tls->in_gc &&
           atomic_load_explicit(mtl__pl.state, memory_order_relaxed) == MTL_RECORDING;
}

/* After the collector's call: the collections it made, then block p of
 * size bytes (NULL: none).  Inlined, so that the stack starts at the
 * caller of the function defined below. */
ALWAYS_INLINE void after_call(struct mtl__tls *tls, void *p, size_t size)
{
    if (!wanted(tls))
        return;
    int saved = errno;
    tls->in_hook = 1;
    walk_links();
    /* The sample first: GC_base only for a block that is recorded. */
    uintptr_t base = p && lib.base && (!mtl__pl.opt.sample_rate || mtl__sample_hit(tls, size))
                         ? (uintptr_t)lib.base(p)
                         : 0;
    if (base && mtl__thread_state()) {
        mtl_spin_lock(&gc.lock);
        uint32_t e = add_entry((uint64_t)(uintptr_t)p, base);
        mtl_spin_unlock(&gc.lock);
        if (e) {
            uint64_t b = (size < MTL_CEV_GC - 1 ? size : MTL_CEV_GC - 1) | MTL_CEV_GC;
            mtl__record_alloc((uint64_t)(uintptr_t)p, b, mtl__capture_stack(tls->slot, 0));
            /* The link is registered outside our lock: the collector takes
             * its own, and its callback never waits for ours. */
            tls->in_gc = 1;
            if (lib.register_link)
                lib.register_link((void **)&gc.entries[e].link, (void *)base);
            tls->in_gc = 0;
        }
    }
    tls->in_hook = 0;
    errno = saved;
}

/* Before the collector frees p explicitly (GC_free, GC_realloc): its FREE,
 * and its link taken back (the entry is reused only after). */
ALWAYS_INLINE void before_free(struct mtl__tls *tls, void *p)
{
    if (!p || !wanted(tls) || !gc.cap)
        return;
    int saved = errno;
    tls->in_hook = 1;
    mtl_spin_lock(&gc.lock);
    int found;
    uint32_t k = find_slot((uint64_t)(uintptr_t)p, &found);
    uint32_t e = found ? gc.slot[k] : 0;
    if (e) {
        mtl__record_gc_free((uint64_t)(uintptr_t)p);
        /* Out of the table and of the walk (ptr 0), but not reused until
         * its link is taken back. */
        gc.slot[k] = UINT32_MAX;
        gc.deleted++;
        gc.count--;
        gc.entries[e].ptr = 0;
    }
    mtl_spin_unlock(&gc.lock);
    if (e) {
        tls->in_gc = 1;
        if (lib.unregister_link)
            lib.unregister_link((void **)&gc.entries[e].link);
        tls->in_gc = 0;
        mtl_spin_lock(&gc.lock);
        gc.entries[e].next_free = gc.free_list;
        gc.free_list = e;
        mtl_spin_unlock(&gc.lock);
    }
    tls->in_hook = 0;
    errno = saved;
}

/* ---- the collector's functions ---------------------------------------------------- */

/* Each looks its libgc function up once; a call from inside the collector
 * or from memtally goes straight through. */
#define NEXT(name, type)                                                                     \
    static type next;                                                                        \
    if (!next && !(next = (type)next_fn(#name))) {                                           \
        errno = ENOSYS;                                                                      \
        return 0;                                                                            \
    }                                                                                        \
    install()

/* p = the collector's call, straight through (returned) when inside it. */
#define CALL_INSIDE(call)                                                                    \
    struct mtl__tls *tls = &mtl__tls;                                                        \
    if (tls->in_gc)                                                                          \
        return call;                                                                         \
    tls->in_gc = 1;                                                                          \
    void *p = call;                                                                          \
    tls->in_gc = 0

#define ALLOCATOR(name, params, args, size)                                                  \
    EXPORT void *name params                                                                 \
    {                                                                                        \
        typedef void *(*fn) params;                                                          \
        NEXT(name, fn);                                                                      \
        CALL_INSIDE(next args);                                                              \
        after_call(tls, p, size);                                                            \
        return p;                                                                            \
    }

typedef uintptr_t gc_descr; /* GC_descr */

ALLOCATOR(GC_malloc, (size_t n), (n), n)
ALLOCATOR(GC_malloc_atomic, (size_t n), (n), n)
ALLOCATOR(GC_malloc_uncollectable, (size_t n), (n), n)
ALLOCATOR(GC_malloc_atomic_uncollectable, (size_t n), (n), n)
ALLOCATOR(GC_malloc_ignore_off_page, (size_t n), (n), n)
ALLOCATOR(GC_malloc_atomic_ignore_off_page, (size_t n), (n), n)
ALLOCATOR(GC_memalign, (size_t align, size_t n), (align, n), n)
ALLOCATOR(GC_strdup, (const char *s), (s), p ? strlen(p) + 1 : 0)
ALLOCATOR(GC_strndup, (const char *s, size_t n), (s, n), p ? strlen(p) + 1 : 0)
ALLOCATOR(GC_malloc_explicitly_typed, (size_t n, gc_descr d), (n, d), n)
ALLOCATOR(GC_malloc_explicitly_typed_ignore_off_page, (size_t n, gc_descr d), (n, d), n)
ALLOCATOR(GC_calloc_explicitly_typed, (size_t k, size_t n, gc_descr d), (k, n, d), k * n)
ALLOCATOR(GC_debug_malloc, (size_t n, const char *s, int i), (n, s, i), n)
ALLOCATOR(GC_debug_malloc_atomic, (size_t n, const char *s, int i), (n, s, i), n)
ALLOCATOR(GC_debug_malloc_uncollectable, (size_t n, const char *s, int i), (n, s, i), n)
ALLOCATOR(GC_debug_malloc_atomic_uncollectable, (size_t n, const char *s, int i), (n, s, i), n)
ALLOCATOR(GC_debug_malloc_ignore_off_page, (size_t n, const char *s, int i), (n, s, i), n)
ALLOCATOR(GC_debug_malloc_atomic_ignore_off_page, (size_t n, const char *s, int i), (n, s, i),
          n)
ALLOCATOR(GC_debug_strdup, (const char *x, const char *s, int i), (x, s, i),
          p ? strlen(p) + 1 : 0)
ALLOCATOR(GC_debug_strndup, (const char *x, size_t n, const char *s, int i), (x, n, s, i),
          p ? strlen(p) + 1 : 0)

EXPORT int GC_posix_memalign(void **out, size_t align, size_t n)
{
    typedef int (*fn)(void **, size_t, size_t);
    static fn next;
    if (!next && !(next = (fn)next_fn("GC_posix_memalign")))
        return ENOMEM;
    install();
    struct mtl__tls *tls = &mtl__tls;
    if (tls->in_gc)
        return next(out, align, n);
    tls->in_gc = 1;
    int rc = next(out, align, n);
    tls->in_gc = 0;
    after_call(tls, rc == 0 ? *out : NULL, n);
    return rc;
}

#define FREER(name)                                                                          \
    EXPORT void name(void *p)                                                                \
    {                                                                                        \
        typedef void (*fn)(void *);                                                          \
        static fn next;                                                                      \
        if (!next && !(next = (fn)next_fn(#name)))                                           \
            return;                                                                          \
        install();                                                                           \
        struct mtl__tls *tls = &mtl__tls;                                                    \
        if (tls->in_gc) {                                                                    \
            next(p);                                                                         \
            return;                                                                          \
        }                                                                                    \
        before_free(tls, p);                                                                 \
        tls->in_gc = 1;                                                                      \
        next(p);                                                                             \
        tls->in_gc = 0;                                                                      \
    }

FREER(GC_free)
FREER(GC_debug_free)

/* realloc: when it succeeds, the old block is freed and the new one
 * allocated (even at the same address), as malloc's realloc is counted;
 * a failed one leaves the old block as it was.  The old block's FREE is
 * stamped after the call (the collector may have freed it inside): if
 * another thread is handed its address in between, the reader ends the
 * old block there. */
#define REALLOCATOR(name, params, args)                                                      \
    EXPORT void *name params                                                                 \
    {                                                                                        \
        typedef void *(*fn) params;                                                          \
        NEXT(name, fn);                                                                      \
        CALL_INSIDE(next args);                                                              \
        if (old && (p || !n))                                                                \
            before_free(tls, old);                                                           \
        after_call(tls, n ? p : NULL, n);                                                    \
        return p;                                                                            \
    }

REALLOCATOR(GC_realloc, (void *old, size_t n), (old, n))
REALLOCATOR(GC_debug_realloc, (void *old, size_t n, const char *s, int i), (old, n, s, i))

/* Collections asked for: the blocks they reclaimed, recorded at once. */
EXPORT int GC_try_to_collect(int (*stop)(void))
{
    typedef int (*fn)(int (*)(void));
    NEXT(GC_try_to_collect, fn);
    int rc = next(stop);
    after_call(&mtl__tls, NULL, 0);
    return rc;
}

#define COLLECT(name)                                                                        \
    EXPORT void name(void)                                                                   \
    {                                                                                        \
        typedef void (*fn)(void);                                                            \
        static fn next;                                                                      \
        if (!next && !(next = (fn)next_fn(#name)))                                           \
            return;                                                                          \
        install();                                                                           \
        next();                                                                              \
        after_call(&mtl__tls, NULL, 0);                                                      \
    }

COLLECT(GC_gcollect)
COLLECT(GC_gcollect_and_unmap)

/* The program's own collection callback is kept and called from ours. */
EXPORT void GC_set_on_collection_event(event_fn f)
{
    install();
    atomic_store(&gc.program_fn, f == on_event ? NULL : f);
}

EXPORT event_fn GC_get_on_collection_event(void)
{
    install();
    return atomic_load(&gc.program_fn);
}
