/*
 * lazy.h: libraries the memtally binary loads when first called, not at
 * its start.
 *
 * Linked, libdw and libelf, libsqlite3, libprotobuf-c and zlib took 0.6 to
 * 0.9 ms of every command's start (loading and relocating them), memtally
 * record's included, which uses none of them (docs/PERFORMANCE.md,
 * "Start-up").  Each file here defines, under the libraries' own names
 * and prototypes (their headers check them), a function that looks the
 * real one up on its first call and calls it.  Only the binary is built
 * with them: libmemtally-trace.a, the tests and the examples link the
 * libraries as usual.  The definitions are hidden, so a library loaded
 * later still binds its own calls to its own functions.
 */
#ifndef MTL_LAZY_LAZY_H
#define MTL_LAZY_LAZY_H

/* A library by its soname; the Debian package that has it, for the
 * error when it cannot be loaded. */
struct mtl_lazy_lib {
    const char *soname;
    const char *package;
    void *handle; /* atomic: set once loaded */
};

/* The address of name in lib, loaded on first use.  When either cannot
 * be had, a one-line error and exit status 1: the caller has no way to
 * fail (these are the library's own functions). */
void *mtl_lazy_sym(struct mtl_lazy_lib *lib, const char *name);

/* Inside the definition of name: the real name, looked up on its first
 * use (a race looks it up twice, to the same address). */
#define MTL_LAZY_REAL(lib, name)                                                  \
    ({                                                                            \
        static __typeof__(&name) real;                                            \
        __typeof__(&name) f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);           \
        if (!f) {                                                                 \
            f = (__typeof__(&name))mtl_lazy_sym(&lib, #name);                     \
            __atomic_store_n(&real, f, __ATOMIC_RELEASE);                         \
        }                                                                         \
        f;                                                                        \
    })

/* ret name params, calling the real name with args; void ones apart, as
 * C returns no void expression. */
#define MTL_LAZY(lib, ret, name, params, args)                                    \
    ret name params { return MTL_LAZY_REAL(lib, name) args; }
#define MTL_LAZY_VOID(lib, name, params, args)                                    \
    void name params { MTL_LAZY_REAL(lib, name) args; }

#endif
