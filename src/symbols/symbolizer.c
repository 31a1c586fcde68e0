/*
 * symbolizer.c: the public API of memtally/symbols.h: the modules, the
 * cache of results, the warnings.
 *
 * A module's state is made when a frame in it is first resolved: a copy
 * of the recorded module and the file find.c found for it (shared with
 * the other modules that map the same file).  Results are cached per
 * module and address, so each distinct frame is looked up once however
 * many stacks hold it; the views of the analysis commands resolve each
 * stack node once, and a node's address is seldom resolved twice, but
 * custom analyses that resolve every frame of every event rely on it.
 *
 * A frame is looked up in DWARF first (dwarf.c), for its inlined
 * functions, file and line; its function's name, when DWARF has none,
 * comes from the ELF symbol table (elfsyms.c).
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/internal.h"

/* ---- opening and closing ---- */

static const struct mtl_module *reader_get(void *arg, uint32_t index)
{
    return mtl_reader_module(arg, index);
}

int mtl_symbolizer_open(struct mtl_symbolizer **out, const struct mtl_reader *r,
                        const struct mtl_symbolizer_options *opt)
{
    assert(out && r);
    return mtl_symbolizer_open_modules(out, reader_get, (void *)r, opt);
}

int mtl_symbolizer_open_modules(struct mtl_symbolizer **out,
                                const struct mtl_module *(*get)(void *arg,
                                                                uint32_t index),
                                void *arg,
                                const struct mtl_symbolizer_options *opt)
{
    assert(out && get);
    struct mtl_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return MTL_ENOMEM;
    s->get = get;
    s->arg = arg;
    s->arena = (struct mtl_arena)MTL_ARENA_INIT;
    s->modules = (struct mtl_hmap)MTL_HMAP_INIT;
    s->no_module = (struct mtl_hmap)MTL_HMAP_INIT;
    s->names = (struct mtl_hmap)MTL_HMAP_INIT;
    s->paths = (struct mtl_intern)MTL_INTERN_INIT;
    s->warnings = (struct mtl_intern)MTL_INTERN_INIT;
    int rc = mtl__sym_set_options(s, opt);
    if (rc < 0) {
        mtl_symbolizer_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void mtl_symbolizer_close(struct mtl_symbolizer *s)
{
    if (!s)
        return;
    mtl__sym_prefetch_wait(s);
    uint64_t key, v;
    for (size_t i = 0; mtl_hmap_next(&s->modules, &i, &key, &v);) {
        struct mtl_module_state *ms = (struct mtl_module_state *)(uintptr_t)v;
        mtl_hmap_release(&ms->results);
    }
    for (uint32_t i = 0; i < s->files_cap; i++)
        mtl__symfile_free(s->files[i]);
    free(s->files);
    mtl__debuginfod_end(s);
    mtl__sym_release_options(s);
    mtl_hmap_release(&s->modules);
    mtl_hmap_release(&s->no_module);
    mtl_hmap_release(&s->names);
    mtl_intern_release(&s->paths);
    mtl_intern_release(&s->warnings);
    mtl_arena_release(&s->arena);
    free(s);
}

/* ---- warnings ---- */

const char *mtl__sym_warning(struct mtl_symbolizer *s, const char *path, const char *why)
{
    char msg[4400];
    snprintf(msg, sizeof msg, "%s: %s; showing addresses", path, why);
    return mtl_arena_strdup(&s->arena, msg);
}

/* Reports why ms shows addresses, when a frame of it is first resolved
 * (not when it was opened: a prefetch opens modules no frame may use). */
static void warn_once(struct mtl_symbolizer *s, struct mtl_module_state *ms)
{
    if (!ms || !ms->warning)
        return;
    uint32_t id;
    /* A warning lost to out of memory: the frames still show. */
    mtl_intern_str(&s->warnings, ms->warning, &id);
    ms->warning = NULL;
}

void mtl_symbolizer_warnings(struct mtl_symbolizer *s,
                             void (*fn)(const char *message, void *arg),
                             void *arg)
{
    assert(s && fn);
    mtl__sym_prefetch_wait(s);
    for (; s->reported < s->warnings.n; s->reported++)
        fn(mtl_intern_at(&s->warnings, s->reported, NULL), arg);
}

/* ---- modules ---- */

/* The state of module index, NULL when there is no such module (yet) or
 * on out of memory. */
static struct mtl_module_state *get_module(struct mtl_symbolizer *s,
                                           uint32_t index)
{
    uint64_t v;
    if (mtl_hmap_get(&s->modules, index, &v))
        return (struct mtl_module_state *)(uintptr_t)v;
    const struct mtl_module *m = s->get(s->arg, index);
    if (!m)
        return NULL;
    struct mtl_module_state *ms = mtl_arena_alloc(&s->arena, sizeof *ms);
    if (!ms)
        return NULL;
    memset(ms, 0, sizeof *ms);
    ms->results = (struct mtl_hmap)MTL_HMAP_INIT;
    ms->path = mtl_arena_strdup(&s->arena, m->path ? m->path : "");
    ms->base = m->base;
    if (m->nsegments && m->segments &&
        m->nsegments < SIZE_MAX / sizeof *ms->segs) {
        ms->segs = mtl_arena_memdup(&s->arena, m->segments,
                                    m->nsegments * sizeof *ms->segs);
        if (ms->segs)
            ms->nsegs = m->nsegments;
    }
    if (!ms->path)
        return NULL;
    ms->file = mtl__sym_find_file(s, m, ms->path, &ms->warning);
    if (mtl_hmap_put(&s->modules, index, (uintptr_t)ms, NULL) < 0)
        return NULL;
    return ms;
}

struct mtl_symfile *mtl__sym_module_file(struct mtl_symbolizer *s, uint32_t index)
{
    struct mtl_module_state *ms = get_module(s, index);
    return ms ? ms->file : NULL;
}

/* The state of module index for resolving a frame in it, its warning
 * reported. */
static struct mtl_module_state *use_module(struct mtl_symbolizer *s, uint32_t index)
{
    if (index == UINT32_MAX)
        return NULL;
    struct mtl_module_state *ms = get_module(s, index);
    warn_once(s, ms);
    return ms;
}

static int in_segments(const struct mtl_module_state *ms, uint64_t a)
{
    if (!ms->nsegs)
        return 1;
    for (size_t i = 0; i < ms->nsegs; i++)
        if (a >= ms->segs[i].vaddr && a - ms->segs[i].vaddr < ms->segs[i].memsz)
            return 1;
    return 0;
}

/* ---- resolving ---- */

/* Resolves file address a (the call instruction) into e[0..cap); returns
 * the number of entries filled, 0 when unknown. */
static int resolve_in_file(struct mtl_symbolizer *s, struct mtl_symfile *f,
                           uint64_t a, struct mtl_symbol *e, int cap)
{
    if (a < f->lo || a >= f->hi)
        return 0;
    int n = mtl__dwarf_lookup(s, f, a, e, cap);
    if (n == 0) {
        e[0].function = NULL;
        e[0].file = NULL;
        e[0].line = 0;
        e[0].inlined = 0;
        n = 1;
    }
    if (!e[n - 1].function)
        e[n - 1].function = mtl__sym_readable(s, mtl__symtab_name(f, a));
    return n > 1 || e[0].function || e[0].file ? n : 0;
}

int mtl_symbolizer_resolve(struct mtl_symbolizer *s, uint32_t module,
                           uint64_t addr, const struct mtl_symbol **out)
{
    assert(s && out);
    mtl__sym_prefetch_wait(s);
    struct mtl_module_state *ms = use_module(s, module);
    /* A module not defined yet may be defined later: not cached then. */
    struct mtl_hmap *cache = ms ? &ms->results
                             : module == UINT32_MAX ? &s->no_module : NULL;
    uint64_t v;
    if (cache && mtl_hmap_get(cache, addr, &v)) {
        const struct mtl_sym_result *r = (const struct mtl_sym_result *)(uintptr_t)v;
        *out = r->e;
        return r->n;
    }
    struct mtl_symbol e[MTL_SYM_MAX_ENTRIES];
    int n = 0;
    uint64_t offset = ms ? addr - ms->base : addr;
    if (ms && ms->file && in_segments(ms, offset - 1))
        n = resolve_in_file(s, ms->file, offset - 1, e, MTL_SYM_MAX_ENTRIES);
    if (n == 0) {
        memset(&e[0], 0, sizeof e[0]);
        n = 1;
    }
    struct mtl_sym_result *r =
        mtl_arena_alloc(&s->arena, sizeof *r + (size_t)n * sizeof r->e[0]);
    if (!r)
        return MTL_ENOMEM;
    r->n = n;
    for (int i = 0; i < n; i++) {
        r->e[i] = e[i];
        r->e[i].module = ms ? ms->path : "";
        r->e[i].offset = offset;
    }
    if (cache && mtl_hmap_put(cache, addr, (uintptr_t)r, NULL) < 0)
        return MTL_ENOMEM;
    *out = r->e;
    return n;
}

int mtl_symbolizer_function(struct mtl_symbolizer *s, uint32_t module, uint64_t addr,
                            const char **name)
{
    assert(s && name);
    mtl__sym_prefetch_wait(s);
    *name = NULL;
    struct mtl_module_state *ms = use_module(s, module);
    if (!ms || !ms->file)
        return 0;
    uint64_t a = addr - ms->base - 1;
    if (!in_segments(ms, a) || a < ms->file->lo || a >= ms->file->hi)
        return 0;
    *name = mtl__sym_readable(s, mtl__symtab_name(ms->file, a));
    return *name != NULL;
}

const char *mtl_symbol_name(const struct mtl_symbol *e, char *buf, size_t cap)
{
    assert(e && buf && cap > 0);
    if (e->function)
        return e->function;
    const char *m = e->module ? e->module : "";
    const char *base = strrchr(m, '/');
    base = base ? base + 1 : m;
    if (*base)
        snprintf(buf, cap, "%s+0x%" PRIx64, base, e->offset);
    else
        snprintf(buf, cap, "0x%" PRIx64, e->offset);
    return buf;
}
