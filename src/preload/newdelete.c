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

/* An operator new: passed on, or recorded after the call when direct. */
#define NEW_BODY(o, size, call)                                              \
    do {                                                                     \
        if (!fn(o) || !ops.direct[o])                                        \
            return call;                                                     \
        mtl__tls.last_alloc = NULL;                                          \
        void *p = call;                                                      \
        if (p && p != mtl__tls.last_alloc && mtl__hook_wanted(size)) {       \
            mtl__tls.in_hook = 1;                                            \
            mtl__hook_allocated(p, size);                                    \
            mtl__tls.in_hook = 0;                                            \
        }                                                                    \
        return p;                                                            \
    } while (0)

/* An operator delete: the free recorded before the block goes back. */
#define DELETE_BODY(o, ptr, call)                                            \
    do {                                                                     \
        if (fn(o) && ops.direct[o] && ptr)                                   \
            mtl__hook_freeing(ptr);                                          \
        call;                                                                \
    } while (0)

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);

/* A C++ program has these from its runtime; a C program never calls them,
 * so a missing real operator (fn NULL) is never called either. */
EXPORT void *_Znwm(size_t n) { NEW_BODY(NW, n, ((new_fn)ops.fn[NW])(n)); }
EXPORT void *_Znam(size_t n) { NEW_BODY(NA, n, ((new_fn)ops.fn[NA])(n)); }
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *t)
{
    NEW_BODY(NW_NT, n, ((new_nt_fn)ops.fn[NW_NT])(n, t));
}
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *t)
{
    NEW_BODY(NA_NT, n, ((new_nt_fn)ops.fn[NA_NT])(n, t));
}
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al)
{
    NEW_BODY(NW_AL, n, ((new_al_fn)ops.fn[NW_AL])(n, al));
}
EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al)
{
    NEW_BODY(NA_AL, n, ((new_al_fn)ops.fn[NA_AL])(n, al));
}
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *t)
{
    NEW_BODY(NW_AL_NT, n, ((new_al_nt_fn)ops.fn[NW_AL_NT])(n, al, t));
}
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *t)
{
    NEW_BODY(NA_AL_NT, n, ((new_al_nt_fn)ops.fn[NA_AL_NT])(n, al, t));
}

EXPORT void _ZdlPv(void *p) { DELETE_BODY(DL, p, ((del_fn)ops.fn[DL])(p)); }
EXPORT void _ZdaPv(void *p) { DELETE_BODY(DA, p, ((del_fn)ops.fn[DA])(p)); }
EXPORT void _ZdlPvm(void *p, size_t n) { DELETE_BODY(DL_SZ, p, ((del_sz_fn)ops.fn[DL_SZ])(p, n)); }
EXPORT void _ZdaPvm(void *p, size_t n) { DELETE_BODY(DA_SZ, p, ((del_sz_fn)ops.fn[DA_SZ])(p, n)); }
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al)
{
    DELETE_BODY(DL_AL, p, ((del_sz_fn)ops.fn[DL_AL])(p, al));
}
EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al)
{
    DELETE_BODY(DA_AL, p, ((del_sz_fn)ops.fn[DA_AL])(p, al));
}
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al)
{
    DELETE_BODY(DL_SZ_AL, p, ((del_sz_al_fn)ops.fn[DL_SZ_AL])(p, n, al));
}
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al)
{
    DELETE_BODY(DA_SZ_AL, p, ((del_sz_al_fn)ops.fn[DA_SZ_AL])(p, n, al));
}
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *t)
{
    DELETE_BODY(DL_NT, p, ((del_nt_fn)ops.fn[DL_NT])(p, t));
}
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *t)
{
    DELETE_BODY(DA_NT, p, ((del_nt_fn)ops.fn[DA_NT])(p, t));
}
EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *t)
{
    DELETE_BODY(DL_AL_NT, p, ((del_al_nt_fn)ops.fn[DL_AL_NT])(p, al, t));
}
EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *t)
{
    DELETE_BODY(DA_AL_NT, p, ((del_al_nt_fn)ops.fn[DA_AL_NT])(p, al, t));
}
