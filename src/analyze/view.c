/*
 * view.c: see view.h.
 *
 * Per stack node (a frame below its parent, docs/FORMAT.md) the view keeps
 * the node's resolved entries: one per function at that address, inlined
 * ones first, each marked hidden or not.  A stack's frames are its nodes'
 * entries from the innermost node to the root, so each node is resolved
 * once however many stacks share it.
 */
#include "analyze/view.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/filter.h"
#include "memtally/symbols.h"
#include "memtally/trace.h"

/* What the allocator and the C++ runtime add on top of the program's own
 * frames (docs/ANALYSIS.md).  Matched against the name cut at '('. */
static const char *const plumbing[] = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "__libc_*alloc*",
    "operator new*", "operator delete*",
    "std::allocator<*", "std::allocator_traits<*", "std::__allocator_traits_base*",
    "__gnu_cxx::new_allocator<*", "std::__new_allocator<*",
    "__gnu_cxx::__alloc_traits<*",
    "*::_M_allocate", "*::_M_create", "*::_M_get_node", "*::_M_allocate_node",
    "*::_M_allocate_buckets", "*::_M_allocate_map",
    "std::__allocate_guarded<*", "std::__allocated_ptr<*",
};

struct entry {
    uint32_t loc;
    uint8_t hidden;
};

struct name_slot {
    const char *name;
    uint32_t fid;
};

struct mtl_view {
    const struct mtl_reader *r;
    const struct mtl_filter *f;
    struct mtl_symbolizer *syms;

    struct mtl_location *locs;
    char **cut;              /* per location: function name cut at '(' */
    uint32_t nlocs, locs_cap;

    uint32_t *fn_first_loc;  /* per function id */
    uint32_t nfns, fns_cap;
    struct name_slot *names; /* function name -> id */
    size_t names_cap;

    /* per node: entries [first, first + n) of ents; n == UINT16_MAX: not yet */
    uint32_t *node_first;
    uint16_t *node_n;
    uint32_t nodes_cap;
    struct entry *ents;
    uint32_t nents, ents_cap;

    int8_t *passes;          /* per stack: -1 unknown, 0, 1 */
    uint32_t passes_cap;

    uint32_t *buf;           /* mtl_view_frames' result */
    size_t buf_cap;
    uint8_t *hid;            /* mtl_view_frames_all's hidden flags */
    size_t hid_cap;
    int all;                 /* collecting hidden frames too */

    char **owned;            /* strings the view made */
    size_t nowned, owned_cap;

    void (*warn)(const char *message, void *arg);
    void *warn_arg;
};

static int grow_array(void **p, uint32_t *cap, uint32_t need, size_t elem)
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

static char *keep(struct mtl_view *v, const char *s)
{
    if (v->nowned == v->owned_cap) {
        size_t n = v->owned_cap ? v->owned_cap * 2 : 256;
        char **o = realloc(v->owned, n * sizeof *o);
        if (!o)
            return NULL;
        v->owned = o;
        v->owned_cap = n;
    }
    char *d = strdup(s);
    if (d)
        v->owned[v->nowned++] = d;
    return d;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The function id of a display name, made on first sight. */
static int function_id(struct mtl_view *v, const char *name, uint32_t loc,
                       uint32_t *out)
{
    if ((v->nfns + 1) * 2 > v->names_cap) {
        size_t n = v->names_cap ? v->names_cap * 2 : 1024;
        struct name_slot *t = calloc(n, sizeof *t);
        if (!t)
            return MTL_ENOMEM;
        for (size_t i = 0; i < v->names_cap; i++) {
            if (!v->names[i].name)
                continue;
            size_t j = hash_str(v->names[i].name) & (n - 1);
            while (t[j].name)
                j = (j + 1) & (n - 1);
            t[j] = v->names[i];
        }
        free(v->names);
        v->names = t;
        v->names_cap = n;
    }
    size_t mask = v->names_cap - 1, i = hash_str(name) & mask;
    for (; v->names[i].name; i = (i + 1) & mask) {
        if (!strcmp(v->names[i].name, name)) {
            *out = v->names[i].fid;
            return 0;
        }
    }
    if (grow_array((void **)&v->fn_first_loc, &v->fns_cap, v->nfns + 1,
                   sizeof *v->fn_first_loc) < 0)
        return MTL_ENOMEM;
    v->names[i].name = name;
    v->names[i].fid = v->nfns;
    v->fn_first_loc[v->nfns] = loc;
    *out = v->nfns++;
    return 0;
}

static int matches(const char *pattern, const char *name, const char *cut)
{
    return fnmatch(pattern, name, 0) == 0 || (cut && fnmatch(pattern, cut, 0) == 0);
}

static int is_hidden(const struct mtl_view *v, uint32_t loc)
{
    const char *name = v->locs[loc].function, *cut = v->cut[loc];
    if (!v->f->keep_alloc_frames)
        for (size_t i = 0; i < sizeof plumbing / sizeof *plumbing; i++)
            if (matches(plumbing[i], name, cut))
                return 1;
    for (size_t i = 0; i < v->f->nhide; i++)
        if (matches(v->f->hide[i], name, cut))
            return 1;
    return 0;
}

/* Adds a location for one resolved entry. */
static int add_location(struct mtl_view *v, const char *function,
                        const char *file, unsigned line, const char *module,
                        int inlined)
{
    uint32_t id = v->nlocs;
    uint32_t cap = v->locs_cap;
    if (grow_array((void **)&v->locs, &cap, id + 1, sizeof *v->locs) < 0)
        return MTL_ENOMEM;
    cap = v->locs_cap;
    if (grow_array((void **)&v->cut, &cap, id + 1, sizeof *v->cut) < 0)
        return MTL_ENOMEM;
    v->locs_cap = cap;
    struct mtl_location *l = &v->locs[id];
    /* glibc's internal aliases (__GI___strdup): show the name people know. */
    if (!strncmp(function, "__GI_", 5) && function[5])
        function += 5;
    l->function = function;
    l->file = file;
    l->line = line;
    l->module = module ? module : "";
    l->inlined = inlined;
    v->cut[id] = NULL;
    const char *paren = strchr(function, '(');
    if (paren && paren != function) {
        char tmp[4096];
        size_t n = (size_t)(paren - function);
        if (n >= sizeof tmp)
            n = sizeof tmp - 1;
        memcpy(tmp, function, n);
        tmp[n] = '\0';
        if (!(v->cut[id] = keep(v, tmp)))
            return MTL_ENOMEM;
    }
    int rc = function_id(v, function, id, &l->function_id);
    if (rc < 0)
        return rc;
    v->nlocs++;
    return (int)id;
}

static int add_entry(struct mtl_view *v, uint32_t loc)
{
    if (grow_array((void **)&v->ents, &v->ents_cap, v->nents + 1, sizeof *v->ents) < 0)
        return MTL_ENOMEM;
    v->ents[v->nents].loc = loc;
    v->ents[v->nents].hidden = (uint8_t)is_hidden(v, loc);
    v->nents++;
    return 0;
}

/* Resolves node id's frame into entries, once. */
static int resolve_node(struct mtl_view *v, uint32_t id)
{
    uint32_t count = mtl_reader_stack_count(v->r);
    if (id >= v->nodes_cap) {
        uint32_t old = v->nodes_cap, cap = old;
        if (grow_array((void **)&v->node_first, &cap, count, sizeof *v->node_first) < 0)
            return MTL_ENOMEM;
        cap = old;
        if (grow_array((void **)&v->node_n, &cap, count, sizeof *v->node_n) < 0)
            return MTL_ENOMEM;
        for (uint32_t i = old; i < cap; i++)
            v->node_n[i] = UINT16_MAX;
        v->nodes_cap = cap;
    }
    if (v->node_n[id] != UINT16_MAX)
        return 0;
    uint32_t parent;
    struct mtl_frame fr;
    int rc = mtl_reader_stack_node(v->r, id, &parent, &fr);
    if (rc < 0)
        return rc;
    uint32_t first = v->nents;
    char name[512];
    if (fr.kind == MTL_FRAME_CUSTOM) {
        const char *s = mtl_reader_string(v->r, fr.name);
        rc = add_location(v, s ? s : "(unnamed frame)", NULL, 0, "", 0);
        if (rc >= 0)
            rc = add_entry(v, (uint32_t)rc);
    } else if (fr.module == UINT32_MAX) {
        snprintf(name, sizeof name, "0x%" PRIx64, fr.addr);
        const char *k = keep(v, name);
        rc = k ? add_location(v, k, NULL, 0, "", 0) : MTL_ENOMEM;
        if (rc >= 0)
            rc = add_entry(v, (uint32_t)rc);
    } else {
        const struct mtl_symbol *syms;
        int n = mtl_symbolizer_resolve(v->syms, fr.module, fr.addr, &syms);
        if (n < 0)
            return n;
        for (int i = 0; i < n && rc >= 0; i++) {
            const char *fn = syms[i].function;
            if (!fn) {
                mtl_symbol_name(&syms[i], name, sizeof name);
                fn = keep(v, name);
                if (!fn)
                    return MTL_ENOMEM;
            }
            rc = add_location(v, fn, syms[i].file, syms[i].line, syms[i].module,
                              syms[i].inlined);
            if (rc >= 0)
                rc = add_entry(v, (uint32_t)rc);
        }
    }
    if (rc < 0)
        return rc;
    v->node_first[id] = first;
    v->node_n[id] = (uint16_t)(v->nents - first);
    return 0;
}

/* Calls fn for every entry of the stack, innermost first, until it
 * returns non-zero (which is returned). */
static int walk(struct mtl_view *v, uint32_t stack,
                int (*fn)(struct mtl_view *, const struct entry *, void *), void *arg)
{
    for (uint32_t id = stack; id != 0;) {
        int rc = resolve_node(v, id);
        if (rc < 0)
            return rc;
        for (uint32_t k = 0; k < v->node_n[id]; k++) {
            rc = fn(v, &v->ents[v->node_first[id] + k], arg);
            if (rc)
                return rc;
        }
        uint32_t parent;
        struct mtl_frame fr;
        if ((rc = mtl_reader_stack_node(v->r, id, &parent, &fr)) < 0)
            return rc;
        id = parent;
    }
    return 0;
}

static int collect_visible(struct mtl_view *v, const struct entry *e, void *arg)
{
    size_t *n = arg;
    if (e->hidden && !v->all)
        return 0;
    if (*n == v->buf_cap) {
        size_t cap = v->buf_cap ? v->buf_cap * 2 : 256;
        uint32_t *b = realloc(v->buf, cap * sizeof *b);
        uint8_t *h = realloc(v->hid, cap);
        if (b)
            v->buf = b;
        if (h)
            v->hid = h;
        if (!b || !h)
            return MTL_ENOMEM;
        v->buf_cap = cap;
    }
    v->hid[*n] = e->hidden;
    v->buf[(*n)++] = e->loc;
    return 0;
}

int mtl_view_frames_all(struct mtl_view *v, uint32_t stack, const uint32_t **locs,
                        const uint8_t **hidden, size_t *n)
{
    *n = 0;
    v->all = 1;
    int rc = walk(v, stack, collect_visible, n);
    v->all = 0;
    *locs = v->buf;
    *hidden = v->hid;
    return rc < 0 ? rc : 0;
}

int mtl_view_frames(struct mtl_view *v, uint32_t stack, const uint32_t **locs,
                    size_t *n)
{
    *n = 0;
    int rc = walk(v, stack, collect_visible, n);
    *locs = v->buf;
    return rc < 0 ? rc : 0;
}

static int first_visible(struct mtl_view *v, const struct entry *e, void *arg)
{
    if (e->hidden)
        return 0;
    *(uint32_t *)arg = e->loc;
    return 1;
}

uint32_t mtl_view_site(struct mtl_view *v, uint32_t stack)
{
    uint32_t loc = MTL_NO_LOCATION;
    if (walk(v, stack, first_visible, &loc) < 0)
        return MTL_NO_LOCATION;
    return loc;
}

struct match_arg {
    const char *pattern;
};

static int entry_matches(struct mtl_view *v, const struct entry *e, void *arg)
{
    const struct match_arg *m = arg;
    return mtl_view_location_matches(v, e->loc, m->pattern);
}

int mtl_view_stack_matches(struct mtl_view *v, uint32_t stack, const char *pattern)
{
    struct match_arg m = { pattern };
    return walk(v, stack, entry_matches, &m);
}

int mtl_view_location_matches(const struct mtl_view *v, uint32_t loc,
                              const char *pattern)
{
    return matches(pattern, v->locs[loc].function, v->cut[loc]);
}

int mtl_view_passes(struct mtl_view *v, uint32_t stack)
{
    if (!v->f->ninside && !v->f->nnot_inside)
        return 1;
    if (stack >= v->passes_cap) {
        uint32_t old = v->passes_cap, cap = old;
        if (grow_array((void **)&v->passes, &cap, stack + 1, sizeof *v->passes) < 0)
            return MTL_ENOMEM;
        memset(v->passes + old, -1, cap - old);
        v->passes_cap = cap;
    }
    if (v->passes[stack] >= 0)
        return v->passes[stack];
    int ok = 1;
    for (size_t i = 0; ok && i < v->f->ninside; i++) {
        int m = mtl_view_stack_matches(v, stack, v->f->inside[i]);
        if (m < 0)
            return m;
        ok = m;
    }
    for (size_t i = 0; ok && i < v->f->nnot_inside; i++) {
        int m = mtl_view_stack_matches(v, stack, v->f->not_inside[i]);
        if (m < 0)
            return m;
        ok = !m;
    }
    v->passes[stack] = (int8_t)ok;
    return ok;
}

const struct mtl_location *mtl_view_location(const struct mtl_view *v, uint32_t loc)
{
    return loc < v->nlocs ? &v->locs[loc] : NULL;
}

uint32_t mtl_view_function_count(const struct mtl_view *v)
{
    return v->nfns;
}

uint32_t mtl_view_function_location(const struct mtl_view *v, uint32_t fid)
{
    return fid < v->nfns ? v->fn_first_loc[fid] : MTL_NO_LOCATION;
}

int mtl_view_open(struct mtl_view **out, const struct mtl_reader *r,
                  const struct mtl_filter *f,
                  const struct mtl_symbolizer_options *sym,
                  void (*warn)(const char *message, void *arg), void *arg)
{
    struct mtl_view *v = calloc(1, sizeof *v);
    if (!v)
        return MTL_ENOMEM;
    v->r = r;
    v->f = f;
    int rc = mtl_symbolizer_open(&v->syms, r, sym);
    if (rc < 0) {
        free(v);
        return rc;
    }
    v->warn = warn;
    v->warn_arg = arg;
    *out = v;
    return 0;
}

void mtl_view_close(struct mtl_view *v)
{
    if (!v)
        return;
    if (v->warn)
        mtl_symbolizer_warnings(v->syms, v->warn, v->warn_arg);
    mtl_symbolizer_close(v->syms);
    for (size_t i = 0; i < v->nowned; i++)
        free(v->owned[i]);
    free(v->owned);
    free(v->locs);
    free(v->cut);
    free(v->fn_first_loc);
    free(v->names);
    free(v->node_first);
    free(v->node_n);
    free(v->ents);
    free(v->passes);
    free(v->buf);
    free(v->hid);
    free(v);
}
