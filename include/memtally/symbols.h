/*
 * memtally/symbols.h: the symbolizer: the addresses of a trace's stacks
 * resolved to functions, source files, lines and inlined frames, with the
 * same code memtally's own commands use.
 *
 * A trace records each module (the executable, each shared library) with
 * its path, load bias, build id and PT_LOAD segments, and stacks as
 * addresses (docs/FORMAT.md); symbols are resolved when the trace is
 * analysed, on the machine that recorded it or on another one.
 *
 *     struct mtl_symbolizer *s;
 *     const struct mtl_symbol *e;
 *     char buf[256];
 *     int rc = mtl_symbolizer_open(&s, reader, NULL);
 *     if (rc < 0) ... mtl_strerror(rc)
 *     int n = mtl_symbolizer_resolve(s, frame.module, frame.addr, &e);
 *     for (int i = 0; i < n; i++)    innermost (inlined) first, real function last
 *         printf("%s\n", mtl_symbol_name(&e[i], buf, sizeof buf));
 *     mtl_symbolizer_warnings(s, print_line, NULL);
 *     mtl_symbolizer_close(s);
 *
 * Where a module's symbols come from, in this order (docs/ANALYSIS.md,
 * "Symbols"):
 *
 *   1. its file: the recorded path under the sysroot, if it has the
 *      recorded build id (or, when none was recorded, the recorded
 *      segments); else the recorded path itself (when a sysroot is set and
 *      the build id matches);
 *   2. when that is missing or changed, a separate debug file with the
 *      recorded build id stands in for it: DIR/.build-id/xx/rest.debug in
 *      each debug directory (the ones given, then SYSROOT/usr/lib/debug,
 *      then /usr/lib/debug when a sysroot is set), then debuginfod (the
 *      debug file, then the executable);
 *   3. in the file found: its .symtab and DWARF; if it has no DWARF or no
 *      .symtab, its separate debug file: by build id in each debug
 *      directory, then by the name in its .gnu_debuglink: next to the
 *      file, in its .debug/ directory, then for each debug directory DIR
 *      in turn DIR/<the file's directory>/NAME and, for the directories
 *      given, DIR/NAME; then debuginfod.  A debug file must have the
 *      file's build id (or, without one, the CRC its debuglink names).
 *      dwz supplementary files (.gnu_debugaltlink) are found at their
 *      path under the sysroot, by build id, in DIR/.dwz/, then debuginfod;
 *   4. failing a .symtab, the MiniDebugInfo symbols (.gnu_debugdata, an
 *      xz-compressed ELF holding a .symtab) and the .dynsym.
 *
 * debuginfod is asked only when DEBUGINFOD_URLS is set (its other
 * variables, DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT..., apply) and the
 * options do not forbid it.
 *
 * Link: libmemtally-trace.a, -ldw -lelf -lstdc++ (libstdc++'s demangler)
 * and the reader's -lzstd -lm, or `pkg-config --static --libs
 * memtally-trace`.
 *
 * Calls that can fail return 0 (or a positive count) or a negative MTL_E*
 * code (memtally/errors.h).  A module that cannot be symbolized is not an
 * error: its frames show as "module+0xOFFSET" and
 * mtl_symbolizer_warnings() says why, once.  A symbolizer is used by one
 * thread at a time; different symbolizers are independent.
 */
#ifndef MEMTALLY_SYMBOLS_H
#define MEMTALLY_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "memtally/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mtl_reader;
struct mtl_module;
struct mtl_symbolizer;

/* One function at an address.  Its strings stay valid until
 * mtl_symbolizer_close(). */
struct mtl_symbol {
    const char *function; /* demangled name; NULL when unknown */
    const char *file;     /* source file; NULL when unknown */
    unsigned line;        /* 0 when unknown */
    const char *module;   /* the module's recorded path ("" without a module) */
    uint64_t offset;      /* the address in the module's file, addr - load
                           * bias: what objdump and addr2line take (the
                           * address itself without a module) */
    int inlined;          /* 1: this function is inlined into the next entry */
};

struct mtl_symbolizer_options {
    /* NULL: "/".  Recorded paths are looked up under it (binaries recorded
     * in a container or on another machine, copied here), and so is
     * /usr/lib/debug. */
    const char *sysroot;
    /* More directories searched for separate debug files, first: by build
     * id (DIR/.build-id/xx/rest.debug) and by debuglink name (DIR/NAME,
     * DIR/<the module's directory>/NAME). */
    const char *const *debug_dirs;
    size_t ndebug_dirs;
    /* 1: never ask debuginfod, even when DEBUGINFOD_URLS is set. */
    int no_debuginfod;
    /* NULL: none.  A directory (made if missing) where a copy of each
     * separate debug file whose sections are compressed (as Debian's
     * debug packages are) is kept with them decompressed, by build id:
     * reading libc's compressed DWARF costs some 35 ms at every analysis,
     * its copy nothing. */
    const char *cache_dir;
};

/* Prepares symbolization for the modules of r.  Modules are read from r
 * when a frame in them is first resolved, so r may still be reading; r
 * must outlive the symbolizer.  opt may be NULL (the defaults); it and its
 * strings are copied.  On success *out is a symbolizer that
 * mtl_symbolizer_close() releases.  Returns 0, MTL_ENOMEM, or for a
 * sysroot or debug directory that is not a directory MTL_ENOENT,
 * MTL_EACCES or MTL_EINVAL. */
int mtl_symbolizer_open(struct mtl_symbolizer **out, const struct mtl_reader *r,
                        const struct mtl_symbolizer_options *opt);

/* The same, with the modules given by get(arg, index), which returns the
 * module with that index or NULL when there is none (yet).  A module
 * returned by get is copied, so it need not outlive the call; an index
 * must not be redefined differently later.  mtl_symbolizer_open() is this
 * with mtl_reader_module(). */
int mtl_symbolizer_open_modules(struct mtl_symbolizer **out,
                                const struct mtl_module *(*get)(void *arg,
                                                                uint32_t index),
                                void *arg,
                                const struct mtl_symbolizer_options *opt);

/* Resolves one native frame (struct mtl_frame of memtally/trace.h):
 * module is its module index (UINT32_MAX for none) and addr its address as
 * recorded, a return address, so the call instruction at addr - 1 is
 * looked up.  Sets *out to an array of n >= 1 entries, innermost first:
 * the functions inlined at that point (inlined = 1), then the real
 * function (inlined = 0, last).  Unknown: one entry with function NULL.
 * Returns n, or MTL_ENOMEM (then *out is unchanged).  Results are cached
 * per (module, addr): resolving an address again costs a hash lookup.  The
 * entries and their strings stay valid until mtl_symbolizer_close(). */
int mtl_symbolizer_resolve(struct mtl_symbolizer *s, uint32_t module,
                           uint64_t addr, const struct mtl_symbol **out);

/* A display name for an entry: its function when known, else
 * "module_basename+0xOFFSET" ("0xADDR" without a module) written into
 * buf[0..cap) (cut short if cap is too small).  Returns the function or
 * buf. */
const char *mtl_symbol_name(const struct mtl_symbol *e, char *buf, size_t cap);

/* The name of the function that holds the return address addr of module,
 * from the module's symbol tables alone (never its DWARF): much cheaper
 * than mtl_symbolizer_resolve when a module's DWARF is large, for telling
 * what a frame is before deciding to show it.  Where code was inlined, it
 * names the function the code was inlined into.  Returns 1 with *name
 * (valid until mtl_symbolizer_close()), 0 when the tables name none. */
int mtl_symbolizer_function(struct mtl_symbolizer *s, uint32_t module, uint64_t addr,
                            const char **name);

/* The readable form of a mangled symbol name: C++ (Itanium ABI) and Rust's
 * legacy mangling (whose "::h<16 hex digits>" hash is dropped and whose
 * $LT$-style escapes are decoded).  Returns a string the caller frees with
 * free(), or NULL when name is not mangled or cannot be demangled (or on
 * out of memory): then name itself is the best name. */
char *mtl_demangle(const char *name);

/* Calls fn once for each module found unusable since the previous call
 * (missing, unreadable, not ELF, or changed since the recording), with a
 * one-line reason such as "/usr/lib/libfoo.so.1: changed since recording
 * (build id differs); showing addresses".  Modules are examined when a
 * frame in them is first resolved, so call this after resolving.  The same
 * message is never given twice.  Modules that have no file (the vDSO,
 * "linux-vdso.so.1") show as addresses without a warning. */
void mtl_symbolizer_warnings(struct mtl_symbolizer *s,
                             void (*fn)(const char *message, void *arg),
                             void *arg);

/* Releases s and everything it returned; closes every file it opened.  s
 * may be NULL. */
void mtl_symbolizer_close(struct mtl_symbolizer *s);

#ifdef __cplusplus
}
#endif

#endif
