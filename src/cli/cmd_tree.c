/*
 * cmd_tree.c: `memtally tree`: the call tree of allocations.  Top down
 * from the outermost frames by default; from the functions matching NAME
 * down to what they call (--callees); or bottom up from NAME through its
 * callers (--callers).  Nodes are functions (same function, same place in
 * the tree: one node), each with everything allocated below it.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally tree [options] TRACE\n"
    "\n"
    "The call tree of allocations, each node with all it allocated below.\n"
    "\n"
    "  --callees NAME       top down from the functions matching NAME\n"
    "  --callers NAME       bottom up: who calls NAME, and their callers\n"
    "  --min-percent X      leave out nodes below X%% of the root (default 1)\n"
    "  --max-depth N        at most N levels\n"
    "  --json               JSON (docs/ANALYSIS.md)\n";

struct node {
    uint32_t fid, loc;        /* loc: a location of the function (first seen) */
    uint32_t parent;
    double calls, bytes;
    uint32_t first_child, next_sibling; /* 0: none (node 0 is the root) */
};

struct tree {
    const char *callees, *callers;
    double min_percent;
    long max_depth;
    struct analysis *a;
    struct mtl_stackagg agg;
    struct node *nodes;
    uint32_t n, cap;
    uint32_t *slots;          /* hash (parent, fid) -> node index */
    size_t nslots;
    int err;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct tree *t = ctx;
    static const char *const names[] = { "--callees", "--callers", "--min-percent",
                                         "--max-depth" };
    const char *val;
    size_t k;
    int rc = option_value("tree", argc, argv, i, names, 4, &k, &val);
    if (rc <= 0)
        return rc;
    char *end;
    switch (k) {
    case 0: t->callees = val; break;
    case 1: t->callers = val; break;
    case 2:
        t->min_percent = strtod(val, &end);
        if (!*val || *end || t->min_percent < 0 || t->min_percent > 100) {
            cli_error("tree: --min-percent takes a number from 0 to 100");
            return -1;
        }
        break;
    case 3:
        t->max_depth = strtol(val, &end, 10);
        if (!*val || *end || t->max_depth < 1) {
            cli_error("tree: --max-depth takes a positive number");
            return -1;
        }
        break;
    }
    if ((t->callees && !*t->callees) || (t->callers && !*t->callers)) {
        cli_error("tree: empty function pattern");
        return -1;
    }
    return 1;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct tree *t = arg;
    return mtl_stackagg_add(&t->agg, 0, b->stack, b->weight_count, b->weight_bytes,
                            0) < 0 ? -1 : 0;
}

static size_t slot_of(uint32_t parent, uint32_t fid, size_t mask)
{
    uint64_t k = ((uint64_t)parent << 32 | fid) * 0x9e3779b97f4a7c15ull;
    return (size_t)(k >> 20) & mask;
}

static uint32_t child(struct tree *t, uint32_t parent, uint32_t fid, uint32_t loc)
{
    if ((t->n + 1) * 2 > t->nslots) {
        size_t cap = t->nslots ? t->nslots * 2 : 4096;
        uint32_t *s = calloc(cap, sizeof *s);
        if (!s) {
            t->err = 1;
            return 0;
        }
        /* Re-index every node but the root under its parent. */
        for (uint32_t p = 0; p < t->n; p++)
            for (uint32_t c = t->nodes[p].first_child; c; c = t->nodes[c].next_sibling) {
                size_t j = slot_of(p, t->nodes[c].fid, cap - 1);
                while (s[j])
                    j = (j + 1) & (cap - 1);
                s[j] = c;
            }
        free(t->slots);
        t->slots = s;
        t->nslots = cap;
    }
    size_t mask = t->nslots - 1, j = slot_of(parent, fid, mask);
    for (; t->slots[j]; j = (j + 1) & mask) {
        uint32_t c = t->slots[j];
        if (t->nodes[c].fid == fid && t->nodes[c].parent == parent)
            return c;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 1024;
        struct node *nn = realloc(t->nodes, cap * sizeof *nn);
        if (!nn) {
            t->err = 1;
            return 0;
        }
        t->nodes = nn;
        t->cap = cap;
    }
    uint32_t c = t->n++;
    t->nodes[c] = (struct node){ fid, loc, parent, 0, 0, 0, t->nodes[parent].first_child };
    t->nodes[parent].first_child = c;
    t->slots[j] = c;
    return c;
}

static void insert(const struct mtl_stackagg_entry *e, void *arg)
{
    struct tree *t = arg;
    const uint32_t *locs;
    size_t n;
    if (t->err || mtl_view_frames(t->a->v, e->stack, &locs, &n) < 0) {
        t->err = 1;
        return;
    }
    /* The path from the root, as indices into locs, and its direction. */
    long from, to, step;
    if (t->callers) {
        for (from = 0; from < (long)n; from++)
            if (mtl_view_location_matches(t->a->v, locs[from], t->callers))
                break;
        if (from == (long)n)
            return;
        from++; /* the root stands for the function itself */
        to = (long)n;
        step = 1;
    } else if (t->callees) {
        for (from = (long)n - 1; from >= 0; from--)
            if (mtl_view_location_matches(t->a->v, locs[from], t->callees))
                break;
        if (from < 0)
            return;
        from--;
        to = -1;
        step = -1;
    } else {
        from = (long)n - 1;
        to = -1;
        step = -1;
    }
    uint32_t node = 0;
    t->nodes[0].calls += e->calls;
    t->nodes[0].bytes += e->bytes;
    long depth = 0;
    for (long i = from; i != to && (!t->max_depth || depth < t->max_depth);
         i += step, depth++) {
        const struct mtl_location *l = mtl_view_location(t->a->v, locs[i]);
        node = child(t, node, l->function_id, locs[i]);
        if (t->err)
            return;
        t->nodes[node].calls += e->calls;
        t->nodes[node].bytes += e->bytes;
    }
}

/* Children of a node, largest first, above the threshold. */
static size_t sorted_children(const struct tree *t, uint32_t node, double min_bytes,
                              uint32_t **out)
{
    size_t n = 0;
    for (uint32_t c = t->nodes[node].first_child; c; c = t->nodes[c].next_sibling)
        n++;
    uint32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        *out = NULL;
        return 0;
    }
    size_t k = 0;
    for (uint32_t c = t->nodes[node].first_child; c; c = t->nodes[c].next_sibling)
        if (t->nodes[c].bytes >= min_bytes && t->nodes[c].bytes > 0)
            v[k++] = c;
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0; j--) {
            const struct node *x = &t->nodes[v[j - 1]], *y = &t->nodes[v[j]];
            if (x->bytes > y->bytes || (x->bytes == y->bytes && x->fid <= y->fid))
                break;
            uint32_t tmp = v[j - 1];
            v[j - 1] = v[j];
            v[j] = tmp;
        }
    *out = v;
    return k;
}

static const char *root_name(const struct tree *t)
{
    return t->callers ? t->callers : t->callees ? t->callees : "(all)";
}

static void print_text(const struct tree *t, uint32_t node, int depth, double min_bytes)
{
    const struct node *nd = &t->nodes[node];
    double root = t->nodes[0].bytes;
    char size[32];
    printf("%7.2f%% %10s %10.0f  %*s", root > 0 ? 100.0 * nd->bytes / root : 0,
           human_bytes(size, sizeof size, nd->bytes), nd->calls, depth * 2, "");
    if (node == 0) {
        printf("%s%s\n", t->callers ? "callers of " : t->callees ? "callees of " : "",
               root_name(t));
    } else {
        const struct mtl_location *l = mtl_view_location(t->a->v, nd->loc);
        const char *base = l->file ? strrchr(l->file, '/') : NULL;
        base = base ? base + 1 : l->file;
        printf("%s", l->function);
        if (base)
            printf(" (%s)", base);
        putchar('\n');
    }
    uint32_t *kids;
    size_t n = sorted_children(t, node, min_bytes, &kids);
    for (size_t i = 0; i < n; i++)
        print_text(t, kids[i], depth + 1, min_bytes);
    free(kids);
}

static void print_json(const struct tree *t, uint32_t node, double min_bytes)
{
    const struct node *nd = &t->nodes[node];
    double root = t->nodes[0].bytes;
    fputs("{", stdout);
    if (node == 0) {
        fputs("\"function\": ", stdout);
        json_string(stdout, root_name(t));
        fputs(", \"file\": null, \"line\": null", stdout);
    } else {
        const struct mtl_location *l = mtl_view_location(t->a->v, nd->loc);
        fputs("\"function\": ", stdout);
        json_string(stdout, l->function);
        fputs(", \"file\": ", stdout);
        if (l->file)
            json_string(stdout, l->file);
        else
            fputs("null", stdout);
        fputs(", \"line\": null", stdout);
    }
    fputs(", \"calls\": ", stdout);
    json_number(stdout, nd->calls);
    fputs(", \"bytes\": ", stdout);
    json_number(stdout, nd->bytes);
    printf(", \"percent\": %.4f, \"children\": [", root > 0 ? 100.0 * nd->bytes / root : 0);
    uint32_t *kids;
    size_t n = sorted_children(t, node, min_bytes, &kids);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", stdout);
        print_json(t, kids[i], min_bytes);
    }
    free(kids);
    fputs("]}", stdout);
}

int cmd_tree(int argc, char **argv)
{
    struct analysis a = {0};
    struct tree t = { .min_percent = 1, .a = &a };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 1, parse_opt, &t, &code))
        return code;
    if (t.callers && t.callees) {
        cli_error("tree: --callers and --callees go one at a time");
        return 2;
    }
    if (analysis_open(&a, NULL))
        return 1;
    t.nodes = calloc(1024, sizeof *t.nodes);
    t.cap = 1024;
    t.n = 1;
    struct mtl_scan_ops ops = { .block = on_block, .alloc_only = 1 };
    int bad = !t.nodes || analysis_scan(&a, &ops, &t, NULL);
    if (!bad) {
        mtl_stackagg_each(&t.agg, insert, &t);
        if (t.err) {
            cli_error("tree: out of memory");
            bad = 1;
        }
    }
    if (!bad) {
        double min_bytes = t.nodes[0].bytes * t.min_percent / 100.0;
        if (a.json) {
            fputs("{", stdout);
            json_estimated(&a);
            fputs("\"root\": ", stdout);
            print_json(&t, 0, min_bytes);
            fputs("}\n", stdout);
        } else {
            printf("%8s %10s %10s  %s\n", "%", "BYTES", "CALLS", "FUNCTION");
            print_text(&t, 0, 0, min_bytes);
        }
    }
    free(t.nodes);
    free(t.slots);
    mtl_stackagg_release(&t.agg);
    analysis_close(&a);
    return bad;
}
