/*
 * symbols.h: resolving trace addresses to functions, files and lines at
 * analysis time, from the module map in the trace (path, load bias, build
 * id, PT_LOAD segments), with elfutils' libdw.
 *
 *     struct mtl_symbols *s;
 *     const struct mtl_sym *e;
 *     if (mtl_symbols_open(&s, reader) < 0) ...
 *     int n = mtl_symbols_resolve(s, frame.module, frame.addr, &e);
 *     for (int i = 0; i < n; i++)   innermost (inlined) first, real function last
 *         puts(mtl_sym_name(&e[i], buf, sizeof buf));
 *     mtl_symbols_warnings(s, print_line, NULL);
 *     mtl_symbols_close(s);
 *
 * A module whose file is gone, unreadable or changed since the recording
 * (its build id differs) is not an error: its frames show as
 * "module+0xOFFSET" and mtl_symbols_warnings() says why, once.  A
 * symbolizer is used by one thread at a time.
 */
#ifndef MTL_ANALYZE_SYMBOLS_H
#define MTL_ANALYZE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct mtl_symbols;
struct mtl_reader;
struct mtl_module;

struct mtl_sym {
    const char *function;  /* demangled name; NULL when unknown */
    const char *file;      /* source file, NULL when unknown */
    unsigned line;         /* 0 when unknown */
    const char *module;    /* module path ("" when the frame has no module) */
    uint64_t offset;       /* the address in the module's file: addr - base
                            * (the address itself when there is no module) */
    int inlined;           /* 1: this entry is a function inlined into the next */
};

/* Prepares symbolization for the modules of r.  Modules are read from r
 * when first needed, so r may still be reading; r must outlive the
 * symbolizer.  On success *out is a symbolizer that mtl_symbols_close()
 * releases.  Returns 0 or MTL_ENOMEM. */
int mtl_symbols_open(struct mtl_symbols **out, const struct mtl_reader *r);

/* The same, with the modules given by get(arg, index), which returns the
 * module with that index or NULL when there is none (yet).  A module
 * returned by get is copied, so it need not outlive the call; its module
 * index must not be redefined differently later.  mtl_symbols_open() is
 * this with mtl_reader_module(); tests use it with hand-made modules. */
int mtl_symbols_open_modules(struct mtl_symbols **out,
                             const struct mtl_module *(*get)(void *arg,
                                                             uint32_t index),
                             void *arg);

/* Resolves one native frame: module is the module index as in struct
 * mtl_frame (UINT32_MAX for none) and addr the address as recorded, a
 * RETURN address, so the call instruction at addr - 1 is looked up.  Sets
 * *out to an array of n >= 1 entries, innermost first: the functions
 * inlined at that point (inlined = 1), then the real function (inlined =
 * 0, last).  Unknown: one entry with function NULL.  Returns n, or
 * MTL_ENOMEM (then *out is unchanged).  Results are cached per (module,
 * addr); the entries and their strings stay valid until
 * mtl_symbols_close(). */
int mtl_symbols_resolve(struct mtl_symbols *s, uint32_t module, uint64_t addr,
                        const struct mtl_sym **out);

/* A display name for an entry: its function when known, else
 * "module_basename+0xOFFSET" ("0xADDR" without a module) formatted into
 * buf[0..cap) (cut short if cap is too small).  Returns the function or
 * buf. */
const char *mtl_sym_name(const struct mtl_sym *e, char *buf, size_t cap);

/* The readable form of a mangled symbol name: C++ (Itanium ABI) and Rust's
 * legacy mangling (Itanium-style, whose "::h<16 hex digits>" hash suffix
 * and $LT$-style escapes are removed and decoded).  Returns a string the
 * caller frees, or NULL when name is not mangled or cannot be demangled
 * (or on out of memory): then name itself is the best name. */
char *mtl_sym_demangle(const char *name);

/* Calls fn once for each module found unusable since the previous call
 * (missing, unreadable, not ELF, or changed since the recording), with a
 * one-line reason such as "/usr/lib/libfoo.so.1: changed since recording
 * (build id differs); showing addresses".  Modules are examined when a
 * frame in them is first resolved, so call this after resolving.  The
 * same message is never given twice.  Modules that have no file (the
 * vDSO, "linux-vdso.so.1") show as addresses without a warning. */
void mtl_symbols_warnings(struct mtl_symbols *s,
                          void (*fn)(const char *message, void *arg),
                          void *arg);

/* Releases s and everything it returned.  s may be NULL. */
void mtl_symbols_close(struct mtl_symbols *s);

#endif
