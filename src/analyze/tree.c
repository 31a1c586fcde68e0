/*
 * tree.c: the call tree of allocations.  Top down from the outermost
 * frames by default, or bottom up from the allocation sites, past the
 * wrappers, as report names them (inverted);
 * from the functions matching a pattern down to what they call (callees);
 * or bottom up from it through its callers (callers).
 * Nodes are functions (the same function at the same place in the tree is
 * one node), each with everything allocated below it.
 *
 * The whole tree is built from the per-stack totals, then what the result
 * shows (nodes above the threshold, largest first) is copied out.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/view.h"
#include "common/hmap.h"
#include "memtally/errors.h"

struct node {
    uint32_t fid, loc;        /* loc: a location of the function (first seen) */
    double calls, bytes;
    uint32_t first_child, next_sibling; /* 0: none (node 0 is the root) */
};

struct build {
    const struct mtl_tree_options *o;
    struct mtl_view *v;
    struct node *nodes;
    uint32_t n, cap;
    struct mtl_hmap children;  /* (parent << 32 | fid) -> node */
};

/* The child of parent for function fid, made if new; 0 on out of memory. */
static uint32_t child(struct build *t, uint32_t parent, uint32_t fid, uint32_t loc)
{
    int created;
    uint64_t *slot = mtl_hmap_slot(&t->children, (uint64_t)parent << 32 | fid, &created);
    if (!slot)
        return 0;
    if (!created)
        return (uint32_t)*slot;
    if (t->n == t->cap) {
        uint32_t cap = t->cap * 2;
        struct node *nn = realloc(t->nodes, cap * sizeof *nn);
        if (!nn) {
            mtl_hmap_take(&t->children, (uint64_t)parent << 32 | fid, NULL);
            return 0;
        }
        t->nodes = nn;
        t->cap = cap;
    }
    uint32_t c = t->n++;
    t->nodes[c] = (struct node){ fid, loc, 0, 0, 0, t->nodes[parent].first_child };
    t->nodes[parent].first_child = c;
    *slot = c;
    return c;
}

static int insert(struct build *t, const struct mtl_stackagg_entry *e)
{
    const uint32_t *locs;
    size_t n;
    /* Bottom up from the site as report names it: past the wrappers. */
    uint32_t site = t->o->inverted ? mtl_view_site(t->v, e->stack) : MTL_NO_LOCATION;
    int rc = mtl_view_frames(t->v, e->stack, &locs, &n);
    if (rc < 0)
        return rc;
    /* The path from the root, as indices into locs, and its direction. */
    long from, to, step;
    if (t->o->callers) {
        for (from = 0; from < (long)n; from++)
            if (mtl_view_location_matches(t->v, locs[from], t->o->callers))
                break;
        if (from == (long)n)
            return 0;
        from++; /* the root stands for the function itself */
        to = (long)n;
        step = 1;
    } else if (t->o->callees) {
        for (from = (long)n - 1; from >= 0; from--)
            if (mtl_view_location_matches(t->v, locs[from], t->o->callees))
                break;
        if (from < 0)
            return 0;
        from--;
        to = -1;
        step = -1;
    } else if (t->o->inverted) {
        for (from = 0; from < (long)n && locs[from] != site; from++)
            ;
        if (from == (long)n)
            from = 0;
        to = (long)n;
        step = 1;
    } else {
        from = (long)n - 1;
        to = -1;
        step = -1;
    }
    uint32_t node = 0;
    t->nodes[0].calls += e->calls;
    t->nodes[0].bytes += e->bytes;
    size_t depth = 0, limit = MTL_TREE_MAX_DEPTH;
    if (t->o->max_depth && t->o->max_depth < limit)
        limit = t->o->max_depth;
    for (long i = from; i != to && depth < limit; i += step, depth++) {
        const struct mtl_location *l = mtl_view_location(t->v, locs[i]);
        if (!(node = child(t, node, l->function_id, locs[i])))
            return MTL_ENOMEM;
        t->nodes[node].calls += e->calls;
        t->nodes[node].bytes += e->bytes;
    }
    return 0;
}

/* Largest first; ties by name (then function id), so that the order does
 * not depend on the order functions were first named in (which, in a
 * viewer's long-lived engine, depends on the queries before). */
static int by_bytes(const void *a, const void *b, void *arg)
{
    const struct build *t = arg;
    const struct node *x = &t->nodes[*(const uint32_t *)a], *y = &t->nodes[*(const uint32_t *)b];
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    const char *nx = mtl_view_location(t->v, x->loc)->function;
    const char *ny = mtl_view_location(t->v, y->loc)->function;
    int c = strcmp(nx ? nx : "", ny ? ny : "");
    if (c)
        return c;
    return x->fid < y->fid ? -1 : x->fid > y->fid;
}

/* The node that sums a parent's children below min_bytes (options.others). */
static void others_node(const struct build *t, const struct node *parent, double min_bytes,
                        double root, struct mtl_tree_node *out)
{
    out->where = (struct mtl_location){ .function = "(others)", .module = "" };
    for (uint32_t c = parent->first_child; c; c = t->nodes[c].next_sibling) {
        const struct node *k = &t->nodes[c];
        if (k->bytes < min_bytes && k->bytes > 0) {
            out->calls += k->calls;
            out->bytes += k->bytes;
            out->merged++;
        }
    }
    out->percent = root > 0 ? 100.0 * out->bytes / root : 0;
}

/* Copies node i of the build, with its children above min_bytes, largest
 * first, into out; with options.others, then one node for the rest. */
static int copy_out(const struct build *t, uint32_t i, double min_bytes, double root,
                    struct mtl_tree_node *out)
{
    const struct node *nd = &t->nodes[i];
    out->calls = nd->calls;
    out->bytes = nd->bytes;
    out->percent = root > 0 ? 100.0 * nd->bytes / root : 0;
    if (i != 0) {
        out->where = *mtl_view_location(t->v, nd->loc);
        out->where.line = 0; /* a node stands for every line of its function */
        out->where.inlined = 0;
    }
    size_t n = 0, small = 0;
    for (uint32_t c = nd->first_child; c; c = t->nodes[c].next_sibling) {
        if (t->nodes[c].bytes >= min_bytes && t->nodes[c].bytes > 0)
            n++;
        else if (t->nodes[c].bytes > 0)
            small++;
    }
    int others = t->o->others && small > 0;
    if (!n && !others)
        return 0;
    uint32_t *kids = malloc((n ? n : 1) * sizeof *kids);
    out->children = calloc(n + others, sizeof *out->children);
    if (!kids || !out->children) {
        free(kids);
        return MTL_ENOMEM;
    }
    size_t k = 0;
    for (uint32_t c = nd->first_child; c; c = t->nodes[c].next_sibling)
        if (t->nodes[c].bytes >= min_bytes && t->nodes[c].bytes > 0)
            kids[k++] = c;
    qsort_r(kids, k, sizeof *kids, by_bytes, (void *)t);
    int rc = 0;
    for (size_t c = 0; c < k && rc == 0; c++) {
        rc = copy_out(t, kids[c], min_bytes, root, &out->children[c]);
        out->nchildren = c + 1;
    }
    free(kids);
    if (rc == 0 && others)
        others_node(t, nd, min_bytes, root, &out->children[out->nchildren++]);
    return rc;
}

int mtl_tree(struct mtl_engine *e, const struct mtl_filter *f,
             const struct mtl_tree_options *o, struct mtl_tree *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    if (o->callers && o->callees)
        return MTL_EINVAL;
    struct mtl_stackagg a = MTL_STACKAGG_INIT(0);
    struct build t = { .o = o, .children = MTL_HMAP_INIT };
    int rc = mtl_engine_sums(e, f, &a);
    if (rc == 0 && !(t.v = mtl_engine_view(e, f)))
        rc = MTL_ENOMEM;
    if (rc == 0) {
        t.cap = 1024;
        t.n = 1;
        if (!(t.nodes = calloc(t.cap, sizeof *t.nodes)))
            rc = MTL_ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < a.n; i++)
        rc = insert(&t, &a.e[i]);
    if (rc == 0) {
        double root = t.nodes[0].bytes;
        rc = copy_out(&t, 0, root * o->min_percent / 100.0, root, &out->root);
    }
    free(t.nodes);
    mtl_hmap_release(&t.children);
    mtl_stackagg_release(&a);
    if (rc < 0)
        mtl_tree_release(out);
    return rc;
}

static void release_node(struct mtl_tree_node *n)
{
    for (size_t i = 0; i < n->nchildren; i++)
        release_node(&n->children[i]);
    free(n->children);
    n->children = NULL;
    n->nchildren = 0;
}

void mtl_tree_release(struct mtl_tree *t)
{
    release_node(&t->root);
}
