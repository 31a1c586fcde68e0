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
#include <string.h>

#include "symbols/internal.h"

/* The sort key's byte d: d < 8 is byte d of the address, d == 8 the
 * rank, best first. */
static unsigned key_byte(const struct mtl_funcsym *s, int d)
{
    return d < 8 ? (unsigned)(s->lo >> (8 * d)) & 0xff : 255u - (unsigned)s->rank;
}

/* Sorts by address, aliases best first.  A stable radix sort, a byte at a
 * time from the least significant (the rank), over only the bytes where the
 * addresses differ: qsort took 4 ms on the 27,000 functions of gcc's cc1,
 * as long as reading them, which a cold report waits for; this takes a
 * tenth of that.  Returns -1 when out of memory. */
static int sort_syms(struct mtl_funcsym *a, size_t n)
{
    struct mtl_funcsym *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -1;
    uint64_t differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= a[i].lo ^ a[0].lo;
    struct mtl_funcsym *src = a, *dst = tmp;
    static const int order[9] = { 8, 0, 1, 2, 3, 4, 5, 6, 7 };
    for (int p = 0; p < 9; p++) {
        int digit = order[p];
        if (digit < 8 && !((differ >> (8 * digit)) & 0xff))
            continue;
        size_t start[256] = { 0 };
        for (size_t i = 0; i < n; i++)
            start[key_byte(&src[i], digit)]++;
        for (size_t k = 0, sum = 0; k < 256; k++) {
            size_t c = start[k];
            start[k] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[start[key_byte(&src[i], digit)]++] = src[i];
        struct mtl_funcsym *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(tmp);
    return 0;
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
    if (f->nsyms > 1 && sort_syms(f->syms, f->nsyms) < 0) {
        free(f->syms); /* unsorted is unusable: no names from this table */
        f->syms = NULL;
        f->nsyms = 0;
    }
}

void mtl__symtab_load(struct mtl_symfile *f)
{
    if (!f->syms_loaded)
        load_syms(f);
}

/* The name of the function symbol containing a, NULL when none. */
const char *mtl__symtab_name(struct mtl_symfile *f, uint64_t a)
{
    mtl__symtab_load(f);
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
