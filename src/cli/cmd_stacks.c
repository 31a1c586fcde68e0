/*
 * cmd_stacks.c: `memtally stacks --target NAME`: the most frequent distinct
 * call stacks that lead to allocations in functions matching NAME, cut to
 * N frames from the innermost matching frame outwards (Crystal's
 * TRACE_TARGET report, docs/ANALYSIS.md).  Frames are compared by function
 * and line, so two calls from different lines are different stacks.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally stacks --target NAME [options] TRACE\n"
    "\n"
    "The most frequent call stacks that lead to allocations in functions\n"
    "matching NAME (a pattern: parse*, std::vector<*>::push_back...).\n"
    "\n"
    "  --target NAME      the function (required)\n"
    "  --depth N          frames kept from the target outwards (default 6)\n"
    "  --min-count N      only stacks with at least N blocks (default 1)\n"
    "  --top N            the first N stacks\n"
    "  --json             JSON (docs/ANALYSIS.md)\n";

#define MAX_CUT 256

struct group {
    double count, bytes;
    uint32_t n;
    uint32_t locs[MAX_CUT];
};

struct stacks {
    const char *target;
    long depth, min_count;
    size_t top;
    struct analysis *a;
    struct mtl_stackagg agg;
    struct group **groups;
    size_t ngroups, groups_cap;
    size_t *index;           /* hash of a group's key -> group + 1 */
    size_t index_cap;
    double blocks, bytes;
    int err;
};

static int parse_long(const char *opt, const char *val, long min, long *out)
{
    char *end;
    long n = strtol(val, &end, 10);
    if (!*val || *end || n < min) {
        cli_error("stacks: %s takes a number of at least %ld", opt, min);
        return -1;
    }
    *out = n;
    return 0;
}

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct stacks *s = ctx;
    static const char *const names[] = { "--target", "--depth", "--min-count" };
    const char *val;
    size_t k;
    int rc = option_value("stacks", argc, argv, i, names, 3, &k, &val);
    if (rc == 0)
        return parse_top("stacks", argc, argv, i, &s->top);
    if (rc < 0)
        return -1;
    if (k == 0) {
        s->target = val;
        if (*val)
            return 1;
        cli_error("stacks: empty --target");
        return -1;
    }
    return parse_long(names[k], val, 1, k == 1 ? &s->depth : &s->min_count) < 0 ? -1 : 1;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct stacks *s = arg;
    return mtl_stackagg_add(&s->agg, 0, b->stack, b->weight_count, b->weight_bytes,
                            0) < 0 ? -1 : 0;
}

static uint64_t key_hash(const struct stacks *s, const uint32_t *locs, uint32_t n)
{
    uint64_t h = n;
    for (uint32_t i = 0; i < n; i++) {
        const struct mtl_location *l = mtl_view_location(s->a->v, locs[i]);
        h = (h ^ l->function_id) * 0x100000001b3ull;
        h = (h ^ l->line) * 0x100000001b3ull;
    }
    return h;
}

static int same_key(const struct stacks *s, const struct group *g, const uint32_t *locs,
                    uint32_t n)
{
    if (g->n != n)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct mtl_location *x = mtl_view_location(s->a->v, g->locs[i]);
        const struct mtl_location *y = mtl_view_location(s->a->v, locs[i]);
        if (x->function_id != y->function_id || x->line != y->line)
            return 0;
    }
    return 1;
}

static struct group *group_for(struct stacks *s, const uint32_t *locs, uint32_t n)
{
    if ((s->ngroups + 1) * 2 > s->index_cap) {
        size_t cap = s->index_cap ? s->index_cap * 2 : 1024;
        size_t *idx = calloc(cap, sizeof *idx);
        if (!idx)
            return NULL;
        for (size_t g = 0; g < s->ngroups; g++) {
            size_t j = key_hash(s, s->groups[g]->locs, s->groups[g]->n) & (cap - 1);
            while (idx[j])
                j = (j + 1) & (cap - 1);
            idx[j] = g + 1;
        }
        free(s->index);
        s->index = idx;
        s->index_cap = cap;
    }
    size_t mask = s->index_cap - 1, j = key_hash(s, locs, n) & mask;
    for (; s->index[j]; j = (j + 1) & mask)
        if (same_key(s, s->groups[s->index[j] - 1], locs, n))
            return s->groups[s->index[j] - 1];
    if (s->ngroups == s->groups_cap) {
        size_t cap = s->groups_cap ? s->groups_cap * 2 : 256;
        struct group **g = realloc(s->groups, cap * sizeof *g);
        if (!g)
            return NULL;
        s->groups = g;
        s->groups_cap = cap;
    }
    struct group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->n = n;
    memcpy(g->locs, locs, n * sizeof *locs);
    s->groups[s->ngroups++] = g;
    s->index[j] = s->ngroups;
    return g;
}

static void cut_entry(const struct mtl_stackagg_entry *e, void *arg)
{
    struct stacks *s = arg;
    const uint32_t *locs;
    const uint8_t *hidden;
    size_t n;
    if (s->err)
        return;
    if (mtl_view_frames_all(s->a->v, e->stack, &locs, &hidden, &n) < 0) {
        s->err = 1;
        return;
    }
    size_t at = n;
    for (size_t i = 0; i < n && at == n; i++)
        if (mtl_view_location_matches(s->a->v, locs[i], s->target))
            at = i;
    if (at == n)
        return;
    uint32_t cut[MAX_CUT], m = 0;
    for (size_t i = at; i < n && m < (uint32_t)s->depth && m < MAX_CUT; i++)
        if (i == at || !hidden[i])
            cut[m++] = locs[i];
    struct group *g = group_for(s, cut, m);
    if (!g) {
        s->err = 1;
        return;
    }
    g->count += e->calls;
    g->bytes += e->bytes;
    s->blocks += e->calls;
    s->bytes += e->bytes;
}

static int by_count(const void *pa, const void *pb)
{
    const struct group *a = *(const struct group *const *)pa, *b = *(const struct group *const *)pb;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->n < b->n ? -1 : a->n > b->n;
}

int cmd_stacks(int argc, char **argv)
{
    struct analysis a = {0};
    struct stacks s = { .depth = 6, .min_count = 1, .a = &a };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 1, parse_opt, &s, &code))
        return code;
    if (!s.target) {
        cli_error("stacks: --target NAME is required (see memtally stacks --help)");
        return 2;
    }
    if (analysis_open(&a, NULL))
        return 1;
    struct mtl_scan_ops ops = { .block = on_block, .alloc_only = 1 };
    int bad = analysis_scan(&a, &ops, &s, NULL);
    if (!bad) {
        mtl_stackagg_each(&s.agg, cut_entry, &s);
        if (s.err) {
            cli_error("stacks: out of memory");
            bad = 1;
        }
    }
    if (!bad) {
        qsort(s.groups, s.ngroups, sizeof *s.groups, by_count);
        size_t shown = 0;
        if (a.json) {
            printf("{");
            json_estimated(&a);
            printf("\"target\": ");
            json_string(stdout, s.target);
            printf(", \"depth\": %ld, \"blocks\": ", s.depth);
            json_number(stdout, s.blocks);
            printf(", \"rows\": [");
        } else {
            char size[32];
            printf("%.0f blocks (%s) allocated in functions matching '%s'; stacks cut to "
                   "%ld frames\n", s.blocks, human_bytes(size, sizeof size, s.bytes),
                   s.target, s.depth);
        }
        for (size_t g = 0; g < s.ngroups; g++) {
            const struct group *gr = s.groups[g];
            if (gr->count < (double)s.min_count || (s.top && shown >= s.top))
                continue;
            double pct = s.blocks > 0 ? 100.0 * gr->count / s.blocks : 0;
            if (a.json) {
                printf("%s{\"count\": ", shown ? ", " : "");
                json_number(stdout, gr->count);
                printf(", \"bytes\": ");
                json_number(stdout, gr->bytes);
                printf(", \"percent\": %.4f, \"frames\": [", pct);
                for (uint32_t i = 0; i < gr->n; i++) {
                    if (i)
                        fputs(", ", stdout);
                    json_frame(stdout, mtl_view_location(a.v, gr->locs[i]));
                }
                printf("]}");
            } else {
                char size[32];
                printf("\n%.0f blocks (%.2f%%), %s\n", gr->count, pct,
                       human_bytes(size, sizeof size, gr->bytes));
                for (uint32_t i = 0; i < gr->n; i++) {
                    const struct mtl_location *l = mtl_view_location(a.v, gr->locs[i]);
                    const char *base = l->file ? strrchr(l->file, '/') : NULL;
                    base = base ? base + 1 : l->file;
                    printf("    #%u %s", i, l->function);
                    if (base && l->line)
                        printf(" (%s:%u)", base, l->line);
                    else if (base)
                        printf(" (%s)", base);
                    printf("%s\n", l->inlined ? " [inlined]" : "");
                }
            }
            shown++;
        }
        if (a.json)
            printf("]}\n");
        else if (!shown)
            printf("no stack reaches '%s'%s\n", s.target,
                   s.ngroups ? " often enough (--min-count)" : "");
    }
    for (size_t g = 0; g < s.ngroups; g++)
        free(s.groups[g]);
    free(s.groups);
    free(s.index);
    mtl_stackagg_release(&s.agg);
    analysis_close(&a);
    return bad;
}
