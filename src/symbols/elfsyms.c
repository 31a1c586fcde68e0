/*
 * elfsyms.c: the ELF symbol table of a file, as a sorted index of its
 * function symbols, which names functions when DWARF does not (or has no
 * name for one).
 *
 * The table is libdw's dwfl_module_getsymtab(): the file's .symtab; if it
 * has none, the .symtab of its separate debug file (found by find.c's
 * callback); failing that, the .dynsym together with the MiniDebugInfo
 * table, if any.  MiniDebugInfo (Fedora ships it; see "MiniDebugInfo" in
 * gdb's manual) is a .gnu_debugdata section holding an xz-compressed ELF
 * whose .symtab has the functions the .dynsym lacks; libdw 0.188, as
 * Debian builds it, decompresses it with liblzma and merges the two
 * tables, so we need no decoder of our own.
 *
 * Our own index, because libdw's dwfl_module_addrinfo scans the whole
 * table on every call, and we resolve tens of thousands of addresses.
 */
#include <gelf.h>
#include <stdlib.h>

#include "symbols/internal.h"

static int cmp_sym(const void *a, const void *b)
{
    const struct mtl_funcsym *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return y->rank - x->rank;
}

static void load_syms(struct mtl_symfile *f)
{
    f->syms_loaded = 1;
    int n = dwfl_module_getsymtab(f->mod);
    if (n <= 0)
        return;
    f->syms = malloc((size_t)n * sizeof *f->syms);
    if (!f->syms)
        return;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr,
                                                   &shndx, NULL, NULL);
        if (!name || !*name || shndx == SHN_UNDEF)
            continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC)
            continue;
        int bind = GELF_ST_BIND(sym.st_info);
        struct mtl_funcsym *fs = &f->syms[f->nsyms++];
        fs->lo = addr;
        fs->size = sym.st_size;
        fs->name = name;
        fs->rank = (bind == STB_GLOBAL ? 8 : bind == STB_WEAK ? 4 : 0) +
                   (name[0] != '_' ? 2 : 0) + (sym.st_size > 0);
    }
    if (f->nsyms > 1)
        qsort(f->syms, f->nsyms, sizeof *f->syms, cmp_sym);
}

/* The name of the function symbol containing a, NULL when none. */
const char *mtl__symtab_name(struct mtl_symfile *f, uint64_t a)
{
    if (!f->syms_loaded)
        load_syms(f);
    size_t lo = 0, hi = f->nsyms; /* first symbol with lo > a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->syms[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct mtl_funcsym *best = NULL;
    /* Aliases share an address (sorted best first); a sized symbol may
     * cover a past a sizeless one. */
    for (size_t i = lo, k = 0; i-- > 0 && k < 64; k++) {
        const struct mtl_funcsym *fs = &f->syms[i];
        if (best && fs->lo != best->lo)
            break;
        if (fs->size > 0 && a - fs->lo < fs->size)
            best = fs;
    }
    if (!best && f->syms[lo - 1].size == 0) {
        best = &f->syms[lo - 1];
        while (best > f->syms && best[-1].lo == best->lo)
            best--;
    }
    return best ? best->name : NULL;
}
