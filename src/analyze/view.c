/*
 * view.c: see view.h.
 *
 * Three tables, each filled on first need:
 *   - frames: one per distinct frame (module and address, or custom name),
 *     holding its locations, contiguous in the location table: the
 *     functions inlined at that address, then the real function;
 *   - nodes: per stack node, its frame (so a node costs one lookup);
 *   - sites: per stack node, the site of the stack that ends there, which
 *     is the node's own innermost possible site or else its parent's (and
 *     the innermost named frame, which decides whether an unnamed one can
 *     be a site).
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

/* Whether location loc can be a site of a stack whose nearest named frame
 * outside it is named (MTL_NO_LOCATION: none).  A function with no symbol
 * is passed over when a named function of the same module calls it: a
 * static function of a stripped library (sqlite3's, under sqlite3Malloc)
 * gives its blocks to the library's function that the user knows; a
 * stripped program, which only libc's start-up calls, keeps its
 * addresses. */
static int can_be_site(const struct mtl_view *v, uint32_t loc, uint32_t named)
{
    const struct mtl_location *l = &v->locs[loc];
    if (l->hidden || l->passed)
        return 0;
    if (!l->unnamed || v->opt.keep_alloc_frames || named == MTL_NO_LOCATION)
        return 1;
    return strcmp(l->module, v->locs[named].module) != 0;
}

/* Fills the site memos of node and of its ancestors that lack them. */
static int settle_site(struct mtl_view *v, uint32_t node)
{
    /* Walk up to the first node already known (or the root), then down. */
    uint32_t path[1024];
    size_t depth = 0;
    uint32_t id = node;
    while (id != 0) {
        uint32_t k;
        int rc = node_frame(v, id, &k); /* also sizes the memos */
        if (rc < 0)
            return rc;
        if (v->site[id] != UNKNOWN)
            break;
        if (depth == sizeof path / sizeof *path) {
            /* Deeper than any stack we keep: settle the upper part first. */
            if ((rc = settle_site(v, id)) < 0)
                return rc;
            break;
        }
        path[depth++] = id;
        id = v->d->parent[id];
    }
    uint32_t site = id ? v->site[id] : MTL_NO_LOCATION;
    uint32_t fallback = id ? v->fallback[id] : MTL_NO_LOCATION;
    uint32_t named = id ? v->named[id] : MTL_NO_LOCATION;
    while (depth > 0) {
        id = path[--depth];
        const struct frame *f = &v->frames[v->node_frame[id]];
        /* The node's locations from its real function inwards through
         * what is inlined into it: each knows the named frame outside it. */
        for (uint32_t i = f->first + f->n; i-- > f->first;) {
            const struct mtl_location *l = &v->locs[i];
            if (l->hidden)
                continue;
            fallback = i;
            if (can_be_site(v, i, named))
                site = i;
            if (!l->unnamed)
                named = i;
        }
        v->site[id] = site;
        v->fallback[id] = fallback;
        v->named[id] = named;
    }
    return 0;
}

uint32_t mtl_view_site(struct mtl_view *v, uint32_t stack)
{
    if (stack == 0 || settle_site(v, stack) < 0)
        return MTL_NO_LOCATION;
    return v->site[stack] != MTL_NO_LOCATION ? v->site[stack] : v->fallback[stack];
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
    free(v->buf);
    free(v);
}
