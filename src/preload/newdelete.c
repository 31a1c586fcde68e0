/*
 * newdelete.c: C++'s operator new and delete, every form (plain, array,
 * sized, aligned, nothrow).
 *
 * libstdc++'s and libc++'s operators allocate through malloc and free,
 * which hooks.c records already: ours then only pass the call on, and the
 * stacks keep their operator new frame.  Allocators that bring operators
 * of their own (jemalloc, tcmalloc, mimalloc) allocate inside them without
 * calling malloc: for those the operator itself is recorded here.  Which
 * is which is decided per operator, by the object that defines the one
 * our call goes to (dlsym RTLD_NEXT, then dladdr).
 *
 * A direct operator runs outside the hook (in_hook clear): what it
 * allocates through malloc on its own is the program's too (the exception
 * object of a failing new: libstdc++ mallocs it), and a throw leaves no
 * state of ours behind.  Should an operator taken for direct call malloc
 * for the very block it returns, malloc's hook has recorded it already
 * (tls.last_alloc says so) and it is not counted twice.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum op {
    NW, NA, NW_NT, NA_NT, NW_AL, NA_AL, NW_AL_NT, NA_AL_NT,
    DL, DA, DL_SZ, DA_SZ, DL_AL, DA_AL, DL_SZ_AL, DA_SZ_AL, DL_NT, DA_NT,
    DL_AL_NT, DA_AL_NT, OPS
};

static const char *const names[OPS] = {
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

static struct {
    void *fn[OPS];
    unsigned char direct[OPS]; /* its allocator does not go through malloc */
    atomic_int resolved;
} ops;

/* Whether the object defining fn allocates through malloc and free. */
static int through_malloc(void *fn)
{
    Dl_info info;
    if (!dladdr(fn, &info) || !info.dli_fname)
        return 1;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return !strncmp(base, "libstdc++.so", 12) || !strncmp(base, "libc++.so", 9);
}

/* Once, from the first operator called (C++'s runtime is loaded by then).
 * Racing threads compute the same answers. */
static void resolve(void)
{
    struct mtl__tls *tls = &mtl__tls;
    tls->in_hook++; /* dlsym and dladdr may allocate */
    for (int i = 0; i < OPS; i++) {
        ops.fn[i] = dlsym(RTLD_NEXT, names[i]);
        ops.direct[i] = ops.fn[i] && !through_malloc(ops.fn[i]);
    }
    tls->in_hook--;
    atomic_store_explicit(&ops.resolved, 1, memory_order_release);
}

static inline void *fn(enum op o)
{
    if (MTL_UNLIKELY(!atomic_load_explicit(&ops.resolved, memory_order_acquire)))
        resolve();
    return ops.fn[o];
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);

/* The fast path: the operator goes through malloc or free, whose hooks
 * record it, so ours is a jump to it.  No call in it, so that the
 * compiler saves no register for it; the rest is in the slow paths. */
#define PASSES(o)                                                           \
    MTL_LIKELY(atomic_load_explicit(&ops.resolved, memory_order_acquire) && \
               ops.fn[o] && !ops.direct[o])

/* The operator's call, whichever its parameters (al and t unused by the
 * forms without them). */
static void *call_new(enum op o, size_t n, size_t al, const void *t)
{
    switch (o) {
    case NW: case NA: return ((new_fn)ops.fn[o])(n);
    case NW_NT: case NA_NT: return ((new_nt_fn)ops.fn[o])(n, t);
    case NW_AL: case NA_AL: return ((new_al_fn)ops.fn[o])(n, al);
    default: return ((new_al_nt_fn)ops.fn[o])(n, al, t);
    }
}

/* An operator new not on the fast path: passed on, or recorded after the
 * call when direct.  It is a frame of the stacks it records under (the
 * real operator may call malloc, whose hook then records): its name
 * begins as operator new's mangled name does, so that analyses take it
 * for operator new (an allocator's frame, never a site). */
#define new_slow _Znwm_memtally_slow
static __attribute__((noinline)) void *new_slow(enum op o, size_t n, size_t al, const void *t)
{
    if (!fn(o) || !ops.direct[o])
        return call_new(o, n, al, t);
    mtl__tls.last_alloc = NULL;
    void *p = call_new(o, n, al, t);
    if (p && p != mtl__tls.last_alloc && mtl__hook_wanted(n)) {
        mtl__tls.in_hook = 1;
        mtl__hook_allocated(p, n);
        mtl__tls.in_hook = 0;
    }
    return p;
}

/* An operator delete not on the fast path: when direct, the free recorded
 * before the block goes back.  n, al and t as the form has them. */
static __attribute__((noinline)) void delete_slow(enum op o, void *p, size_t n, size_t al,
                                                  const void *t)
{
    if (fn(o) && ops.direct[o] && p)
        mtl__hook_freeing(p);
    switch (o) {
    case DL: case DA: ((del_fn)ops.fn[o])(p); break;
    case DL_SZ: case DA_SZ: ((del_sz_fn)ops.fn[o])(p, n); break;
    case DL_AL: case DA_AL: ((del_sz_fn)ops.fn[o])(p, al); break;
    case DL_SZ_AL: case DA_SZ_AL: ((del_sz_al_fn)ops.fn[o])(p, n, al); break;
    case DL_NT: case DA_NT: ((del_nt_fn)ops.fn[o])(p, t); break;
    default: ((del_al_nt_fn)ops.fn[o])(p, al, t); break;
    }
}

#define NEW_BODY(o, n, al, t, call)                                         \
    do {                                                                    \
        if (PASSES(o))                                                      \
            return call;                                                    \
        return new_slow(o, n, al, t);                                       \
    } while (0)

#define DELETE_BODY(o, p, n, al, t, call)                                   \
    do {                                                                    \
        if (PASSES(o))                                                      \
            call;                                                           \
        else                                                                \
            delete_slow(o, p, n, al, t);                                    \
    } while (0)

/* A C++ program has these from its runtime; a C program never calls them,
 * so a missing real operator (fn NULL) is never called either. */
EXPORT void *_Znwm(size_t n) { NEW_BODY(NW, n, 0, NULL, ((new_fn)ops.fn[NW])(n)); }
EXPORT void *_Znam(size_t n) { NEW_BODY(NA, n, 0, NULL, ((new_fn)ops.fn[NA])(n)); }
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *t)
{
    NEW_BODY(NW_NT, n, 0, t, ((new_nt_fn)ops.fn[NW_NT])(n, t));
}
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *t)
{
    NEW_BODY(NA_NT, n, 0, t, ((new_nt_fn)ops.fn[NA_NT])(n, t));
}
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al)
{
    NEW_BODY(NW_AL, n, al, NULL, ((new_al_fn)ops.fn[NW_AL])(n, al));
}
EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al)
{
    NEW_BODY(NA_AL, n, al, NULL, ((new_al_fn)ops.fn[NA_AL])(n, al));
}
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *t)
{
    NEW_BODY(NW_AL_NT, n, al, t, ((new_al_nt_fn)ops.fn[NW_AL_NT])(n, al, t));
}
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *t)
{
    NEW_BODY(NA_AL_NT, n, al, t, ((new_al_nt_fn)ops.fn[NA_AL_NT])(n, al, t));
}

EXPORT void _ZdlPv(void *p) { DELETE_BODY(DL, p, 0, 0, NULL, ((del_fn)ops.fn[DL])(p)); }
EXPORT void _ZdaPv(void *p) { DELETE_BODY(DA, p, 0, 0, NULL, ((del_fn)ops.fn[DA])(p)); }
EXPORT void _ZdlPvm(void *p, size_t n) { DELETE_BODY(DL_SZ, p, n, 0, NULL, ((del_sz_fn)ops.fn[DL_SZ])(p, n)); }
EXPORT void _ZdaPvm(void *p, size_t n) { DELETE_BODY(DA_SZ, p, n, 0, NULL, ((del_sz_fn)ops.fn[DA_SZ])(p, n)); }
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al)
{
    DELETE_BODY(DL_AL, p, 0, al, NULL, ((del_sz_fn)ops.fn[DL_AL])(p, al));
}
EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al)
{
    DELETE_BODY(DA_AL, p, 0, al, NULL, ((del_sz_fn)ops.fn[DA_AL])(p, al));
}
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al)
{
    DELETE_BODY(DL_SZ_AL, p, n, al, NULL, ((del_sz_al_fn)ops.fn[DL_SZ_AL])(p, n, al));
}
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al)
{
    DELETE_BODY(DA_SZ_AL, p, n, al, NULL, ((del_sz_al_fn)ops.fn[DA_SZ_AL])(p, n, al));
}
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *t)
{
    DELETE_BODY(DL_NT, p, 0, 0, t, ((del_nt_fn)ops.fn[DL_NT])(p, t));
}
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *t)
{
    DELETE_BODY(DA_NT, p, 0, 0, t, ((del_nt_fn)ops.fn[DA_NT])(p, t));
}
EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *t)
{
    DELETE_BODY(DL_AL_NT, p, 0, al, t, ((del_al_nt_fn)ops.fn[DL_AL_NT])(p, al, t));
}
EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *t)
{
    DELETE_BODY(DA_AL_NT, p, 0, al, t, ((del_al_nt_fn)ops.fn[DA_AL_NT])(p, al, t));
}
