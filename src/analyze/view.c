/*
 * view.c: see view.h.
 *
 * Three tables, each filled on first need:
 *   - frames: one per distinct frame (module and address, or custom name),
 *     holding its locations, contiguous in the location table: the
 *     functions inlined at that address, then the real function;
 *   - nodes: per stack node, its frame (so a node costs one lookup);
 *   - sites: per stack node, the site of the stack that ends there, which
 *     is the node's own innermost possible site or else its parent's,
 *     found from the innermost frame outwards and no further (and the
 *     innermost named frame, which decides whether an unnamed one can be a
 *     site).
 * Function ids come from interning display names.
 */
#include "analyze/view.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/allocframes.h"
#include "common/arena.h"
#include "common/intern.h"
#include "memtally/errors.h"
#include "trace/defs.h"

#define UNKNOWN (UINT32_MAX - 1) /* a memo not computed yet */

struct frame {
    uint32_t first;   /* first location */
    uint32_t n;
};

struct mtl_view {
    const struct mtl_defs *d;
    struct mtl_view_namer namer;
    struct mtl_view_options opt;
    struct mtl_arena arena;       /* names the view made */

    struct mtl_location *locs;
    const char **cut;             /* per location: its name cut at '(', or NULL */
    uint32_t nlocs, locs_cap;

    struct mtl_intern fnames;     /* function name -> function id */
    uint32_t *fn_first_loc;       /* per function id */
    uint32_t fns_cap;

    struct mtl_intern frame_keys; /* (module, address) or custom name -> frame */
    struct frame *frames;
    uint32_t frames_cap;

    /* per node, grown as nodes come: frame id, site, fallback site, and
     * the innermost named visible frame at or above it */
    uint32_t *node_frame, *site, *fallback, *named;
    uint32_t nodes_cap;

    uint32_t *buf;                /* mtl_view_frames' result */
    size_t buf_cap;
};

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q)
        return MTL_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static int matches(const char *pattern, const char *name, const char *cut)
{
    return fnmatch(pattern, name, 0) == 0 || (cut && fnmatch(pattern, cut, 0) == 0);
}

static int any_match(const char *const *patterns, size_t n, const char *name,
                     const char *cut)
{
    for (size_t i = 0; i < n; i++)
        if (matches(patterns[i], name, cut))
            return 1;
    return 0;
}

/* Adds a location; returns its id or a negative code. */
static int64_t add_location(struct mtl_view *v, const char *function, const char *file,
                            unsigned line, const char *module, int inlined, int unnamed)
{
    uint32_t id = v->nlocs, cap = v->locs_cap;
    if (grow((void **)&v->locs, &cap, id + 1, sizeof *v->locs) < 0)
        return MTL_ENOMEM;
    cap = v->locs_cap;
    if (grow((void **)&v->cut, &cap, id + 1, sizeof *v->cut) < 0)
        return MTL_ENOMEM;
    v->locs_cap = cap;
    /* glibc's internal aliases (__GI___strdup): show the name people know. */
    if (!strncmp(function, "__GI_", 5) && function[5])
        function += 5;
    const char *cut = NULL, *paren = strchr(function, '(');
    if (paren && paren != function &&
        !(cut = mtl_arena_strndup(&v->arena, function, (size_t)(paren - function))))
        return MTL_ENOMEM;
    uint32_t fid;
    int rc = mtl_intern_str(&v->fnames, function, &fid);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        if (grow((void **)&v->fn_first_loc, &v->fns_cap, fid + 1, sizeof *v->fn_first_loc) < 0)
            return MTL_ENOMEM;
        v->fn_first_loc[fid] = id;
    }
    struct mtl_location *l = &v->locs[id];
    memset(l, 0, sizeof *l);
    /* The interned copy lives as long as the view. */
    l->function = mtl_intern_at(&v->fnames, fid, NULL);
    l->file = file;
    l->line = line;
    l->module = module ? module : "";
    l->inlined = (uint8_t)inlined;
    l->unnamed = (uint8_t)unnamed;
    l->function_id = fid;
    v->cut[id] = cut;
    enum mtl_frame_role role = mtl_frame_role(l->function, cut);
    if (any_match(v->opt.hide, v->opt.nhide, l->function, cut))
        l->hidden = 1;
    else if (!v->opt.keep_alloc_frames)
        l->hidden = role == MTL_ROLE_PLUMBING;
    if (!l->hidden && !v->opt.keep_alloc_frames)
        l->passed = role == MTL_ROLE_WRAPPER ||
                    any_match(v->opt.wrappers, v->opt.nwrappers, l->function, cut);
    v->nlocs++;
    return id;
}

/* Whether the symbol table names the frame at addr as the allocator's
 * plumbing; then *loc is a hidden location made for it.  0 when it does
 * not (or plumbing is shown: --keep-alloc-frames). */
static int plumbing_by_name(struct mtl_view *v, uint32_t module, uint64_t addr, int64_t *loc)
{
    const char *name;
    if (v->opt.keep_alloc_frames || !v->namer.name ||
        v->namer.name(v->namer.arg, module, addr, &name) <= 0)
        return 0;
    const char *paren = strchr(name, '(');
    char cut[512];
    const char *c = NULL;
    if (paren && paren != name && (size_t)(paren - name) < sizeof cut) {
        memcpy(cut, name, (size_t)(paren - name));
        cut[paren - name] = '\0';
        c = cut;
    }
    if (mtl_frame_role(name, c) != MTL_ROLE_PLUMBING)
        return 0;
    const struct mtl_module *m = mtl_defs_module(v->d, module);
    *loc = add_location(v, name, NULL, 0, m ? m->path : "", 0, 0);
    return 1;
}

/* The frame of node id, resolved on first sight of its (module, address). */
static int node_frame(struct mtl_view *v, uint32_t id, uint32_t *out)
{
    if (id < v->nodes_cap && v->node_frame[id] != UNKNOWN) {
        *out = v->node_frame[id];
        return 0;
    }
    if (id >= v->d->nnodes)
        return MTL_EINVAL;
    if (id >= v->nodes_cap) {
        uint32_t old = v->nodes_cap, cap = old;
        uint32_t need = v->d->nnodes;
        if (grow((void **)&v->node_frame, &cap, need, sizeof(uint32_t)) < 0)
            return MTL_ENOMEM;
        cap = old;
        if (grow((void **)&v->site, &cap, need, sizeof(uint32_t)) < 0)
            return MTL_ENOMEM;
        cap = old;
        if (grow((void **)&v->fallback, &cap, need, sizeof(uint32_t)) < 0)
            return MTL_ENOMEM;
        cap = old;
        if (grow((void **)&v->named, &cap, need, sizeof(uint32_t)) < 0)
            return MTL_ENOMEM;
        for (uint32_t i = old; i < cap; i++)
            v->node_frame[i] = v->site[i] = v->fallback[i] = v->named[i] = UNKNOWN;
        v->nodes_cap = cap;
    }
    struct mtl_frame fr = mtl_defs_frame(v->d, id);
    uint64_t key[2] = { fr.kind == MTL_FRAME_CUSTOM ? UINT64_MAX : fr.module,
                        fr.kind == MTL_FRAME_CUSTOM ? fr.name : fr.addr };
    uint32_t k;
    int rc = mtl_intern_add(&v->frame_keys, key, sizeof key, &k);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        if (grow((void **)&v->frames, &v->frames_cap, k + 1, sizeof *v->frames) < 0)
            return MTL_ENOMEM;
        uint32_t first = v->nlocs;
        char name[512];
        int64_t loc = 0;
        if (fr.kind == MTL_FRAME_CUSTOM) {
            const char *s = mtl_defs_string(v->d, fr.name);
            loc = add_location(v, s ? s : "(unnamed frame)", NULL, 0, "", 0, !s);
        } else if (fr.module == UINT32_MAX) {
            snprintf(name, sizeof name, "0x%" PRIx64, fr.addr);
            const char *kept = mtl_arena_strdup(&v->arena, name);
            loc = kept ? add_location(v, kept, NULL, 0, "", 0, 1) : MTL_ENOMEM;
        } else if (plumbing_by_name(v, fr.module, fr.addr, &loc)) {
            /* The allocator's own frame: hidden, named by the symbol
             * table alone, its DWARF (libc's is large) not read for it. */
        } else {
            const struct mtl_symbol *syms;
            int n = v->namer.resolve(v->namer.arg, fr.module, fr.addr, &syms);
            if (n < 0)
                return n;
            for (int i = 0; i < n && loc >= 0; i++) {
                const char *fn = syms[i].function;
                int unnamed = !fn;
                if (!fn) {
                    /* No symbol: module+0xOFFSET, as objdump shows it. */
                    const char *mod = syms[i].module ? syms[i].module : "";
                    const char *base = strrchr(mod, '/');
                    if (*mod)
                        snprintf(name, sizeof name, "%s+0x%" PRIx64, base ? base + 1 : mod,
                                 syms[i].offset);
                    else
                        snprintf(name, sizeof name, "0x%" PRIx64, syms[i].offset);
                    if (!(fn = mtl_arena_strdup(&v->arena, name)))
                        return MTL_ENOMEM;
                }
                loc = add_location(v, fn, syms[i].file, syms[i].line, syms[i].module,
                                   syms[i].inlined, unnamed);
            }
        }
        if (loc < 0)
            return (int)loc;
        v->frames[k].first = first;
        v->frames[k].n = v->nlocs - first;
    }
    v->node_frame[id] = k;
    *out = k;
    return 0;
}

int mtl_view_node(struct mtl_view *v, uint32_t node, uint32_t *first, uint32_t *n)
{
    if (node == 0) {
        *first = 0;
        *n = 0;
        return 0;
    }
    uint32_t k;
    int rc = node_frame(v, node, &k);
    if (rc < 0)
        return rc;
    *first = v->frames[k].first;
    *n = v->frames[k].n;
    return 0;
}

uint32_t mtl_view_parent(const struct mtl_view *v, uint32_t node)
{
    return node && node < v->d->nnodes ? v->d->parent[node] : 0;
}

static int push(struct mtl_view *v, size_t *n, uint32_t loc)
{
    if (*n == v->buf_cap) {
        size_t cap = v->buf_cap ? v->buf_cap * 2 : 256;
        uint32_t *b = realloc(v->buf, cap * sizeof *b);
        if (!b)
            return MTL_ENOMEM;
        v->buf = b;
        v->buf_cap = cap;
    }
    v->buf[(*n)++] = loc;
    return 0;
}

static int collect(struct mtl_view *v, uint32_t stack, int all, const uint32_t **locs,
                   size_t *n)
{
    *n = 0;
    *locs = v->buf;
    for (uint32_t id = stack; id != 0; id = v->d->parent[id]) {
        uint32_t first, count;
        int rc = mtl_view_node(v, id, &first, &count);
        if (rc < 0)
            return rc;
        for (uint32_t i = first; i < first + count; i++)
            if ((all || !v->locs[i].hidden) && (rc = push(v, n, i)) < 0)
                return rc;
    }
    *locs = v->buf;
    return 0;
}

int mtl_view_frames(struct mtl_view *v, uint32_t stack, const uint32_t **locs, size_t *n)
{
    return collect(v, stack, 0, locs, n);
}

int mtl_view_frames_all(struct mtl_view *v, uint32_t stack, const uint32_t **locs,
                        size_t *n)
{
    return collect(v, stack, 1, locs, n);
}

/* The innermost named visible location at or above node, or
 * MTL_NO_LOCATION; memoized per node.  Walks up only as far as needed. */
static int named_of(struct mtl_view *v, uint32_t node, uint32_t *out)
{
    uint32_t path[256];
    size_t depth = 0;
    uint32_t id = node, found = MTL_NO_LOCATION;
    int rc;
    while (id != 0) {
        uint32_t k;
        if ((rc = node_frame(v, id, &k)) < 0)
            return rc;
        if (v->named[id] != UNKNOWN) {
            found = v->named[id];
            break;
        }
        const struct frame *f = &v->frames[k];
        for (uint32_t i = f->first; i < f->first + f->n && found == MTL_NO_LOCATION; i++)
            if (!v->locs[i].hidden && !v->locs[i].unnamed)
                found = i;
        if (depth == sizeof path / sizeof *path) {
            /* A stack this deep: settle what was walked, go on from here. */
            if (found == MTL_NO_LOCATION && (rc = named_of(v, v->d->parent[id], &found)) < 0)
                return rc;
            v->named[id] = found;
            break;
        }
        path[depth++] = id;
        if (found != MTL_NO_LOCATION)
            break;
        id = v->d->parent[id];
    }
    while (depth > 0)
        v->named[path[--depth]] = found;
    *out = found;
    return 0;
}

/* Whether location i of node's frame can be a site.  A function with no
 * symbol is passed over when a named function of the same module calls
 * it: a static function of a stripped library (sqlite3's, under
 * sqlite3Malloc) gives its blocks to the library's function that the user
 * knows; a stripped program, which only libc's start-up calls, keeps its
 * addresses. */
static int can_be_site(struct mtl_view *v, uint32_t node, uint32_t end, uint32_t i)
{
    const struct mtl_location *l = &v->locs[i];
    if (l->hidden || l->passed)
        return 0;
    if (!l->unnamed || v->opt.keep_alloc_frames)
        return 1;
    /* The named frame outside it: in its own frame (locations i+1..end-1),
     * else above. */
    uint32_t named = MTL_NO_LOCATION;
    for (uint32_t j = i + 1; j < end && named == MTL_NO_LOCATION; j++)
        if (!v->locs[j].hidden && !v->locs[j].unnamed)
            named = j;
    if (named == MTL_NO_LOCATION) {
        int rc = named_of(v, v->d->parent[node], &named);
        if (rc < 0)
            return rc;
    }
    /* named_of resolves frames, which may move the locations: index anew. */
    return named == MTL_NO_LOCATION || strcmp(v->locs[i].module, v->locs[named].module) != 0;
}

/* The site of the stack ending at node (see mtl_view_site) or, with
 * fallback, its innermost visible frame; memoized per node.  The stack is
 * resolved from its innermost frame outwards only as far as the answer:
 * the callers above a site are never looked at. */
static int find_site(struct mtl_view *v, uint32_t node, int fallback, uint32_t *out)
{
    /* The memo, looked up anew after node_frame, which may move it. */
#define memo (fallback ? v->fallback : v->site)
    uint32_t path[256];
    size_t depth = 0;
    uint32_t id = node, found = MTL_NO_LOCATION;
    int rc;
    while (id != 0) {
        uint32_t k;
        if ((rc = node_frame(v, id, &k)) < 0)
            return rc;
        if (memo[id] != UNKNOWN) {
            found = memo[id];
            break;
        }
        /* Copied: can_be_site resolves other frames, which may move these. */
        uint32_t first = v->frames[k].first, end = first + v->frames[k].n;
        for (uint32_t i = first; i < end && found == MTL_NO_LOCATION; i++) {
            int ok = fallback ? !v->locs[i].hidden : can_be_site(v, id, end, i);
            if (ok < 0)
                return ok;
            if (ok)
                found = i;
        }
        if (depth == sizeof path / sizeof *path) {
            if (found == MTL_NO_LOCATION &&
                (rc = find_site(v, v->d->parent[id], fallback, &found)) < 0)
                return rc;
            memo[id] = found;
            break;
        }
        path[depth++] = id;
        if (found != MTL_NO_LOCATION)
            break;
        id = v->d->parent[id];
    }
    while (depth > 0)
        memo[path[--depth]] = found;
    *out = found;
    return 0;
#undef memo
}

uint32_t mtl_view_site(struct mtl_view *v, uint32_t stack)
{
    uint32_t site;
    if (stack == 0 || find_site(v, stack, 0, &site) < 0)
        return MTL_NO_LOCATION;
    if (site == MTL_NO_LOCATION && find_site(v, stack, 1, &site) < 0)
        return MTL_NO_LOCATION;
    return site;
}

int mtl_view_location_matches(const struct mtl_view *v, uint32_t loc, const char *pattern)
{
    return matches(pattern, v->locs[loc].function, v->cut[loc]);
}

int mtl_view_stack_matches(struct mtl_view *v, uint32_t stack, const char *pattern)
{
    for (uint32_t id = stack; id != 0; id = v->d->parent[id]) {
        uint32_t first, n;
        int rc = mtl_view_node(v, id, &first, &n);
        if (rc < 0)
            return rc;
        for (uint32_t i = first; i < first + n; i++)
            if (mtl_view_location_matches(v, i, pattern))
                return 1;
    }
    return 0;
}

const struct mtl_location *mtl_view_location(const struct mtl_view *v, uint32_t loc)
{
    return loc < v->nlocs ? &v->locs[loc] : NULL;
}

uint32_t mtl_view_location_count(const struct mtl_view *v)
{
    return v->nlocs;
}

uint32_t mtl_view_function_count(const struct mtl_view *v)
{
    return v->fnames.n;
}

const char *mtl_view_function_name(const struct mtl_view *v, uint32_t fid)
{
    return mtl_intern_at(&v->fnames, fid, NULL);
}

uint32_t mtl_view_function_location(const struct mtl_view *v, uint32_t fid)
{
    return fid < v->fnames.n ? v->fn_first_loc[fid] : MTL_NO_LOCATION;
}

int mtl_view_open(struct mtl_view **out, const struct mtl_defs *d,
                  const struct mtl_view_namer *namer, const struct mtl_view_options *opt)
{
    struct mtl_view *v = calloc(1, sizeof *v);
    if (!v)
        return MTL_ENOMEM;
    v->d = d;
    v->namer = *namer;
    if (opt)
        v->opt = *opt;
    *out = v;
    return 0;
}

void mtl_view_close(struct mtl_view *v)
{
    if (!v)
        return;
    mtl_arena_release(&v->arena);
    mtl_intern_release(&v->fnames);
    mtl_intern_release(&v->frame_keys);
    free(v->locs);
    free(v->cut);
    free(v->fn_first_loc);
    free(v->frames);
    free(v->node_frame);
    free(v->site);
    free(v->fallback);
    free(v->named);
    free(v->buf);
    free(v);
}
