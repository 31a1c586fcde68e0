/*
 * dwarf.c: functions, files, lines and inlining from a file's DWARF.
 *
 * Looking up an address.  The innermost DWARF subprogram containing it
 * comes from a per-CU index (the ranges of every subprogram, nested GNU C
 * functions included, sorted; built the first time an address falls in
 * that CU, one walk over the CU's DIEs).  libdw's dwarf_getscopes would
 * walk the CU's DIE tree on every call, several milliseconds for a large
 * C++ CU, and we resolve tens of thousands of addresses; with the index,
 * every byte of a -O2 -g C++ program's code (84k addresses, up to 23
 * functions deep in inlining) resolves in about 0.3s.  From the
 * subprogram we descend through the lexical blocks and inlined subroutines
 * that contain the address: each DW_TAG_inlined_subroutine is a function
 * inlined into the one above it, at that DIE's DW_AT_call_file and
 * DW_AT_call_line; the innermost function's line comes from the line
 * table.
 *
 * Names come from DW_AT_linkage_name (demangled), else DW_AT_name,
 * qualified for C++, Rust and D with the namespaces, classes and functions
 * around its declaration (an inlined lambda's operator() has no linkage
 * name); the caller falls back on the ELF symbol table.  A function's
 * name is computed once per DIE.
 *
 * DIEs are cached by their offset, with a bit for DIEs of the dwz
 * supplementary file (DW_FORM_GNU_ref_alt leads there), whose offsets
 * would collide with the main file's.
 */
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/internal.h"

#define MAX_DIE_DEPTH 32      /* namespace nesting followed by the CU index */

struct mtl_cu_index {
    struct mtl_range_die *funcs; /* sorted by lo */
    size_t n;
};

static uint64_t die_key(const struct mtl_symfile *f, Dwarf_Die *die)
{
    uint64_t off = dwarf_dieoffset(die);
    return off << 1 | (dwarf_cu_getdwarf(die->cu) != f->dw);
}

static int load_dwarf(struct mtl_symfile *f)
{
    if (!f->dw_loaded) {
        f->dw_loaded = 1;
        f->dw = dwfl_module_getdwarf(f->mod, &f->dwbias);
    }
    return f->dw != NULL;
}

/* ---- the CU index: subprograms by address ---- */

static int cmp_range(const void *a, const void *b)
{
    const struct mtl_range_die *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Appends die's address ranges to *v (n used of *cap).  0 or -1. */
static int add_ranges(struct mtl_range_die **v, size_t *n, size_t *cap,
                      Dwarf_Die *die)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (hi <= lo)
            continue;
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 64;
            struct mtl_range_die *p = realloc(*v, c * sizeof *p);
            if (!p)
                return -1;
            *v = p;
            *cap = c;
        }
        (*v)[*n].lo = lo;
        (*v)[*n].hi = hi;
        (*v)[*n].die = *die;
        (*n)++;
    }
    return 0;
}

/* Adds the ranges of the subprograms below die, looking into namespaces
 * and types (where some compilers put methods) and into functions and
 * their blocks (GNU C nested functions), not into anything else. */
static int index_dies(struct mtl_cu_index *ci, size_t *cap, Dwarf_Die *die,
                      int depth)
{
    Dwarf_Die child;
    if (depth > MAX_DIE_DEPTH || dwarf_child(die, &child) != 0)
        return 0;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
            if ((dwarf_hasattr(&child, DW_AT_low_pc) ||
                 dwarf_hasattr(&child, DW_AT_ranges)) &&
                add_ranges(&ci->funcs, &ci->n, cap, &child) < 0)
                return -1;
            if (index_dies(ci, cap, &child, depth + 1) < 0)
                return -1;
            break;
        case DW_TAG_lexical_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            if (index_dies(ci, cap, &child, depth + 1) < 0)
                return -1;
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static struct mtl_cu_index *get_cu_index(struct mtl_symfile *f, Dwarf_Die *cu)
{
    uint64_t key = die_key(f, cu), v;
    if (mtl_hmap_get(&f->cu_index, key, &v))
        return (struct mtl_cu_index *)(uintptr_t)v;
    struct mtl_cu_index *ci = calloc(1, sizeof *ci);
    if (!ci)
        return NULL;
    size_t cap = 0;
    if (index_dies(ci, &cap, cu, 0) < 0 ||
        mtl_hmap_put(&f->cu_index, key, (uintptr_t)ci, NULL) < 0) {
        free(ci->funcs);
        free(ci);
        return NULL;
    }
    if (ci->n > 1)
        qsort(ci->funcs, ci->n, sizeof *ci->funcs, cmp_range);
    return ci;
}

/* The innermost subprogram containing pc, into *fn.  Returns 1 or 0. */
static int find_subprogram(struct mtl_symfile *f, Dwarf_Die *cu, Dwarf_Addr pc,
                           Dwarf_Die *fn)
{
    struct mtl_cu_index *ci = get_cu_index(f, cu);
    if (!ci)
        return 0;
    size_t lo = 0, hi = ci->n; /* first range with lo > pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ci->funcs[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Ranges do not overlap but for nested functions: the smallest wins. */
    const struct mtl_range_die *best = NULL;
    for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++) {
        const struct mtl_range_die *r = &ci->funcs[i];
        if (pc < r->hi && (!best || r->hi - r->lo < best->hi - best->lo))
            best = r;
    }
    if (!best)
        return 0;
    *fn = best->die;
    return 1;
}

/* Fills chain[0] = fn, chain[1..] = the inlined subroutines containing pc,
 * outermost first; returns the number of DIEs. */
static int inline_chain(Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die *chain,
                        int cap)
{
    int n = 0;
    chain[n++] = *fn;
    Dwarf_Die cur = *fn;
    for (int depth = 0; depth < 256 && n < cap; depth++) {
        Dwarf_Die child;
        int found = 0;
        if (dwarf_child(&cur, &child) == 0) {
            do {
                int tag = dwarf_tag(&child);
                if (tag != DW_TAG_inlined_subroutine &&
                    tag != DW_TAG_lexical_block &&
                    tag != DW_TAG_try_block && tag != DW_TAG_catch_block)
                    continue;
                if (dwarf_haspc(&child, pc) == 1) {
                    if (tag == DW_TAG_inlined_subroutine)
                        chain[n++] = child;
                    cur = child;
                    found = 1;
                    break;
                }
            } while (dwarf_siblingof(&child, &child) == 0);
        }
        if (!found)
            break;
    }
    return n;
}

/* ---- finding the CU ---- */

/* Indexes the address ranges of the file's compilation units. */
static void load_cus(struct mtl_symfile *f)
{
    f->cus_loaded = 1;
    size_t cap = 0;
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t unit_type;
    while (dwarf_get_units(f->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
        if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton)
            continue;
        if (add_ranges(&f->cus, &f->ncus, &cap, &cudie) < 0)
            break;
    }
    if (f->ncus > 1)
        qsort(f->cus, f->ncus, sizeof *f->cus, cmp_range);
}

/* The CU containing file address a, into *cu with the DWARF bias (DWARF
 * address = a - bias).  Returns 1 or 0. */
static int find_cu(struct mtl_symfile *f, uint64_t a, Dwarf_Die *cu,
                   Dwarf_Addr *bias)
{
    if (!load_dwarf(f))
        return 0;
    Dwarf_Die *found = dwfl_module_addrdie(f->mod, a, bias);
    if (found) {
        *cu = *found;
        return 1;
    }
    /* libdw 0.188 finds CUs only through .debug_aranges: clang has none. */
    if (!f->cus_loaded)
        load_cus(f);
    uint64_t pc = a - f->dwbias;
    size_t lo = 0, hi = f->ncus; /* first range with lo > pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->cus[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || pc >= f->cus[lo - 1].hi)
        return 0;
    *cu = f->cus[lo - 1].die;
    *bias = f->dwbias;
    return 1;
}

void mtl__dwarf_prepare(struct mtl_symfile *f)
{
    Dwarf_Aranges *ar;
    size_t n;
    /* libdw keeps the ranges it reads, for find_cu's lookups; without
     * any (clang), find_cu falls back on its own index. */
    if (load_dwarf(f) && (dwarf_getaranges(f->dw, &ar, &n) != 0 || n == 0) &&
        !f->cus_loaded)
        load_cus(f);
}

/* ---- names ---- */

static int lang_has_scopes(Dwarf_Die *cu)
{
    switch (dwarf_srclang(cu)) {
    case DW_LANG_C_plus_plus:
    case DW_LANG_C_plus_plus_03:
    case DW_LANG_C_plus_plus_11:
    case DW_LANG_C_plus_plus_14:
    case DW_LANG_Rust:
    case DW_LANG_D:
        return 1;
    default:
        return 0;
    }
}

static const char *die_name(struct mtl_symbolizer *s, struct mtl_symfile *f,
                            Dwarf_Die *die, int scoped, int depth);

/* name, qualified by the namespaces, classes and functions around the DIE
 * that declares it: "std::vector<int>::vector", or for a lambda's
 * operator() inlined somewhere, "main::<lambda>::operator()". */
static const char *qualified(struct mtl_symbolizer *s, struct mtl_symfile *f,
                             Dwarf_Die *die, const char *name, int depth)
{
    /* Follow DW_AT_abstract_origin and DW_AT_specification to the DIE that
     * carries the name: that one sits in the class or namespace. */
    Dwarf_Die decl = *die;
    for (int i = 0; i < 8 && !dwarf_hasattr(&decl, DW_AT_name); i++) {
        Dwarf_Attribute at;
        Dwarf_Attribute *a = dwarf_attr(&decl, DW_AT_abstract_origin, &at);
        if (!a)
            a = dwarf_attr(&decl, DW_AT_specification, &at);
        Dwarf_Die next;
        if (!a || !dwarf_formref_die(a, &next))
            break;
        decl = next;
    }
    uint64_t key = die_key(f, &decl), known;
    if (mtl_hmap_get(&f->quals, key, &known))
        return (const char *)(uintptr_t)known;
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(&decl, &scopes);
    char buf[8192];
    size_t len = 0;
    for (int i = n - 1; i >= 1; i--) {
        const char *part;
        switch (dwarf_tag(&scopes[i])) {
        case DW_TAG_namespace:
            part = dwarf_diename(&scopes[i]);
            if (!part)
                part = "(anonymous namespace)";
            break;
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
            part = dwarf_diename(&scopes[i]);
            if (!part)
                part = "<lambda>"; /* what else has member functions */
            break;
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
        case DW_TAG_module:
            part = dwarf_diename(&scopes[i]);
            break;
        case DW_TAG_subprogram:
            /* A local class: its function's own full name replaces the
             * scopes outside it. */
            part = depth < 4 ? die_name(s, f, &scopes[i], 1, depth + 1) : NULL;
            if (part)
                len = 0;
            break;
        default:
            part = NULL;
        }
        if (part && len < sizeof buf)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s::", part);
    }
    free(scopes);
    const char *r = name;
    if (len > 0 && len < sizeof buf) {
        snprintf(buf + len, sizeof buf - len, "%s", name);
        char *copy = mtl_arena_strdup(&s->arena, buf);
        if (copy)
            r = copy;
    }
    mtl_hmap_put(&f->quals, key, (uintptr_t)r, NULL); /* or not cached */
    return r;
}

/* The name of a subprogram or inlined subroutine DIE, NULL when none;
 * scoped: qualify a bare DW_AT_name (C++, Rust, D). */
static const char *die_name(struct mtl_symbolizer *s, struct mtl_symfile *f,
                            Dwarf_Die *die, int scoped, int depth)
{
    static const char none[] = ""; /* cached "no name" */
    uint64_t key = die_key(f, die), known;
    if (mtl_hmap_get(&f->die_names, key, &known)) {
        const char *name = (const char *)(uintptr_t)known;
        return name == none ? NULL : name;
    }
    Dwarf_Attribute at, *a = dwarf_attr_integrate(die, DW_AT_linkage_name, &at);
    if (!a)
        a = dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at);
    const char *name = dwarf_formstring(a);
    if (name) {
        name = mtl__sym_readable(s, name);
    } else {
        name = dwarf_diename(die);
        if (name && scoped)
            name = qualified(s, f, die, name, depth);
    }
    mtl_hmap_put(&f->die_names, key, (uintptr_t)(name ? name : none), NULL);
    return name;
}

/* ---- looking up an address ---- */

static int v_ok(Dwarf_Attribute *at, Dwarf_Word *v)
{
    return dwarf_formudata(at, v) == 0;
}

/* Where inlined subroutine inl was inlined: the position in its caller. */
static void call_site(Dwarf_Die *inl, Dwarf_Files *files, size_t nfiles,
                      const char **file, unsigned *line)
{
    Dwarf_Attribute at;
    Dwarf_Word v;
    *file = NULL;
    *line = 0;
    if (files && v_ok(dwarf_attr(inl, DW_AT_call_file, &at), &v) && v < nfiles)
        *file = dwarf_filesrc(files, v, NULL, NULL);
    if (v_ok(dwarf_attr(inl, DW_AT_call_line, &at), &v) && v <= UINT32_MAX)
        *line = (unsigned)v;
}

int mtl__dwarf_lookup(struct mtl_symbolizer *s, struct mtl_symfile *f,
                      uint64_t a, struct mtl_symbol *e, int cap)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die cu, fn;
    if (cap < 1 || !find_cu(f, a, &cu, &bias))
        return 0;
    const char *file = NULL;
    unsigned line = 0;
    Dwarf_Line *l = dwarf_getsrc_die(&cu, a - bias);
    int lineno = 0;
    if (l && (file = dwarf_linesrc(l, NULL, NULL)) &&
        dwarf_lineno(l, &lineno) == 0 && lineno > 0)
        line = (unsigned)lineno;
    if (!find_subprogram(f, &cu, a - bias, &fn)) {
        e[0].function = NULL;
        e[0].file = file;
        e[0].line = line;
        e[0].inlined = 0;
        return 1;
    }
    Dwarf_Die chain[MTL_SYM_MAX_ENTRIES];
    int n = inline_chain(&fn, a - bias, chain,
                         cap < MTL_SYM_MAX_ENTRIES ? cap : MTL_SYM_MAX_ENTRIES);
    int scoped = lang_has_scopes(&cu);
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (n > 1 && dwarf_getsrcfiles(&cu, &files, &nfiles) != 0)
        files = NULL;
    for (int i = n - 1, k = 0; i >= 0; i--, k++) {
        e[k].function = die_name(s, f, &chain[i], scoped, 0);
        e[k].file = file;
        e[k].line = line;
        e[k].inlined = i > 0;
        if (i > 0)
            call_site(&chain[i], files, nfiles, &file, &line);
    }
    return n;
}

void mtl__dwarf_release(struct mtl_symfile *f)
{
    uint64_t key, v;
    for (size_t i = 0; mtl_hmap_next(&f->cu_index, &i, &key, &v);) {
        struct mtl_cu_index *ci = (struct mtl_cu_index *)(uintptr_t)v;
        free(ci->funcs);
        free(ci);
    }
    mtl_hmap_release(&f->cu_index);
    mtl_hmap_release(&f->die_names);
    mtl_hmap_release(&f->quals);
    free(f->cus);
    f->cus = NULL;
    f->ncus = 0;
}
