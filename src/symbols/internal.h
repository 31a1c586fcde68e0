/*
 * symbols/internal.h: what the parts of the symbolizer share.
 *
 *     symbolizer.c   the public API: modules, the result cache, warnings
 *     find.c         finding each module's file and its debug files
 *     debuginfod.c   asking debuginfod, through libdebuginfod, loaded when needed
 *     debugcache.c   decompressed copies of compressed debug files, cached
 *     elfsyms.c      the ELF symbol table, as a sorted index of functions
 *     dwarf.c        DWARF: the CU and subprogram indexes, inline chains, names
 *     demangle.c     C++ and Rust (legacy) demangling
 *
 * One Dwfl per file, reported at base 0.  Each file gets its own Dwfl,
 * with the file reported with a load bias of 0, so libdw's addresses are
 * the file's own virtual addresses and a frame is looked up at
 * addr - base - 1 (base being the recorded load bias).  This way one Dwfl
 * serves every module that maps the same file (a library dlopened and
 * dlclosed again and again lands at a different base each time), modules
 * that overlapped in time at different moments of the trace never collide
 * in one address space, and the offset we show ("libfoo.so+0x1234") is
 * the one objdump and addr2line take.
 *
 * Everything returned lives until mtl_symbolizer_close(): results,
 * demangled and qualified names and copies of the modules in the
 * symbolizer's arena, file and function names in libdw's own data (each
 * Dwfl stays open until then).
 */
#ifndef MTL_SYMBOLS_INTERNAL_H
#define MTL_SYMBOLS_INTERNAL_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/hmap.h"
#include "common/intern.h"
#include "memtally/symbols.h"
#include "memtally/trace.h"

#define MTL_SYM_MAX_ENTRIES 64  /* inlining depth kept for one address */
#define MTL_SYM_MAX_BUILD_ID 64

struct mtl_funcsym {            /* a function symbol of the ELF symbol table */
    uint64_t lo, size;
    const char *name;           /* in libdw's data */
    int rank;                   /* higher: the better name among aliases */
};

struct mtl_range_die {          /* an address range of a CU or a subprogram */
    uint64_t lo, hi;
    Dwarf_Die die;
};

/* An ELF file opened with libdw: a module's binary, or a separate debug
 * file standing in for a binary that is gone.  Shared by every module
 * that maps it; found by its path. */
struct mtl_symfile {
    struct mtl_symbolizer *s;   /* for libdw's find_debuginfo callback */
    char *path;                 /* what libdw reads */
    char *recorded;             /* the path the trace recorded (the first
                                 * module's), for the debuglink search */
    Dwfl *dwfl;                 /* NULL when the file is unusable */
    Dwfl_Module *mod;
    const unsigned char *build_id; /* in libdw's data; NULL when none */
    int build_id_size;
    uint64_t lo, hi;            /* the file's address range */

    struct mtl_funcsym *syms;   /* sorted by lo, loaded when first needed */
    size_t nsyms;
    int syms_loaded;

    Dwarf *dw;                  /* NULL: no DWARF (loaded when first needed) */
    Dwarf_Addr dwbias;
    int dw_loaded;
    struct mtl_range_die *cus;  /* CU ranges, sorted by lo, for files whose */
    size_t ncus;                /* .debug_aranges libdw cannot use (clang */
    int cus_loaded;             /* emits none): loaded when first needed */
    struct mtl_hmap cu_index;   /* CU DIE key -> struct mtl_cu_index * */
    struct mtl_hmap die_names;  /* DIE key -> const char *, a function's name */
    struct mtl_hmap quals;      /* DIE key -> const char *, a qualified name */

    char error[200];            /* why unusable, "" when usable */
};

struct mtl_module_state {
    const char *path;           /* in the arena */
    uint64_t base;
    struct mtl_segment *segs;
    size_t nsegs;
    struct mtl_symfile *file;   /* NULL: addresses only */
    const char *warning;        /* why file is NULL, until reported */
    struct mtl_hmap results;    /* addr -> struct mtl_sym_result * */
};

struct mtl_sym_result {
    int n;
    struct mtl_symbol e[];
};

/* debuginfod's client, loaded on first use (debuginfod.c). */
struct mtl_debuginfod;

struct mtl_symbolizer {
    const struct mtl_module *(*get)(void *arg, uint32_t index);
    void *arg;

    /* The options, made ready for the search (find.c). */
    char *sysroot;              /* "" for "/", else without a trailing '/' */
    char **roots;               /* debug directories, searched in order */
    size_t nroots, nuser_roots; /* the first nuser_roots were given */
    int use_debuginfod;
    struct mtl_debuginfod *debuginfod;
    char *cache_dir;            /* for debugcache.c, or NULL */

    struct mtl_arena arena;
    struct mtl_hmap modules;    /* index -> struct mtl_module_state * */
    struct mtl_hmap no_module;  /* addr -> result, for frames without one */
    struct mtl_intern paths;    /* file paths; id -> files[id] */
    struct mtl_symfile **files;
    uint32_t files_cap;
    struct mtl_hmap names;      /* mangled string's address -> readable name */
    struct mtl_intern warnings; /* messages, in the order given; */
    uint32_t reported;          /* those below this id were reported */

    struct mtl_sym_prefetch *prefetch; /* its thread owns s while running */
    int prefetched;             /* one prefetch per symbolizer */
};

/* ---- debugcache.c ---- */

/* fd is a separate debug file found for a module (*path its name): when
 * its sections are compressed, a decompressed copy from the cache (made
 * now if need be) replaces it: fd is closed, *path freed and set to the
 * copy's, and the copy's descriptor returned.  Otherwise fd. */
int mtl__debug_cache(struct mtl_symbolizer *s, int fd, char **path);

/* ---- find.c ---- */

/* Copies the options into s.  0, MTL_ENOMEM, or why a directory is not
 * one (MTL_ENOENT, MTL_EACCES, MTL_EINVAL). */
int mtl__sym_set_options(struct mtl_symbolizer *s,
                         const struct mtl_symbolizer_options *opt);
void mtl__sym_release_options(struct mtl_symbolizer *s);

/* The usable file for module m (recorded path m_path), or NULL: then the
 * module's frames show as addresses, and maybe *warning (in the arena)
 * says why. */
struct mtl_symfile *mtl__sym_find_file(struct mtl_symbolizer *s,
                                       const struct mtl_module *m,
                                       const char *m_path, const char **warning);
void mtl__symfile_free(struct mtl_symfile *f);

/* ---- debuginfod.c ---- */

/* Asks debuginfod for the debug file (executable = 0) or the executable
 * (1) with this build id.  Returns an open descriptor with the file's
 * path in *path (malloc'd), or -1 (not found, not asked, no client). */
int mtl__debuginfod_find(struct mtl_symbolizer *s, int executable,
                         const unsigned char *build_id, size_t n, char **path);
void mtl__debuginfod_end(struct mtl_symbolizer *s);

/* ---- elfsyms.c ---- */

/* The name (as in the table, mangled) of the function symbol containing
 * file address a, NULL when none. */
const char *mtl__symtab_name(struct mtl_symfile *f, uint64_t a);
/* Loads f's table now if it is not loaded yet. */
void mtl__symtab_load(struct mtl_symfile *f);

/* ---- dwarf.c ---- */

/* Looks up file address a (the call instruction) in f's DWARF.  Fills
 * e[0..n) innermost first, as mtl_symbolizer_resolve() returns them (the
 * module and offset fields left as they are), and returns n: 0 when no
 * CU covers a; 1 with function NULL when a CU covers a but no subprogram
 * does (its file and line may still be known). */
int mtl__dwarf_lookup(struct mtl_symbolizer *s, struct mtl_symfile *f,
                      uint64_t a, struct mtl_symbol *e, int cap);
/* Opens f's DWARF and reads its CU address ranges now, as the first
 * lookup would. */
void mtl__dwarf_prepare(struct mtl_symfile *f);
void mtl__dwarf_release(struct mtl_symfile *f);

/* ---- demangle.c ---- */

/* The readable form of a symbol name from libdw's data, demangled once
 * per string; name itself when it is not mangled (or on out of memory). */
const char *mtl__sym_readable(struct mtl_symbolizer *s, const char *name);

/* ---- symbolizer.c ---- */

/* The warning "PATH: WHY; showing addresses", in the arena (NULL when out
 * of memory: the frames still show). */
const char *mtl__sym_warning(struct mtl_symbolizer *s, const char *path, const char *why);

/* The file of module index (made ready as a frame's lookup would make
 * it), NULL when it has none or there is no such module. */
struct mtl_symfile *mtl__sym_module_file(struct mtl_symbolizer *s, uint32_t index);

/* ---- prefetch.c ---- */

/* Waits for s's prefetch, if one is running: its thread owns s until
 * then.  Every entry point of the public API calls it first. */
void mtl__sym_prefetch_wait(struct mtl_symbolizer *s);

#endif
