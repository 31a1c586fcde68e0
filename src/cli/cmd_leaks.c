/*
 * cmd_leaks.c: `memtally leaks`: what was still live at the end of the
 * trace, by site, less what a suppressions file names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally leaks [options] TRACE\n"
    "\n"
    "What was live at the end of the trace, by site.\n"
    "\n"
    "  --suppressions FILE   one function pattern per line (# comments): blocks\n"
    "                        with a matching frame are not reported\n"
    "  --top N               the first N sites\n"
    "  --json                JSON (docs/ANALYSIS.md)\n";

#define MAX_SUPPRESSIONS 1024

struct leaks {
    size_t top;
    const char *supp_path;
    char *supp_text;
    const char *supp[MAX_SUPPRESSIONS];
    size_t nsupp;
    struct analysis *a;
    double supp_bytes, supp_blocks;
    struct mtl_stackagg agg;
    int err;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct leaks *l = ctx;
    const char *s = argv[*i];
    if (!strcmp(s, "--suppressions") || !strncmp(s, "--suppressions=", 15)) {
        if (s[14] == '=') {
            l->supp_path = s + 15;
        } else if (*i + 1 < argc) {
            l->supp_path = argv[++*i];
        } else {
            cli_error("leaks: --suppressions needs a file");
            return -1;
        }
        (*i)++;
        return 1;
    }
    return parse_top("leaks", argc, argv, i, &l->top);
}

static int load_suppressions(struct leaks *l)
{
    FILE *f = fopen(l->supp_path, "r");
    if (!f) {
        cli_error("leaks: %s: %s", l->supp_path, strerror(errno));
        return -1;
    }
    size_t cap = 0, len = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *s = line, *e;
        while (*s == ' ' || *s == '\t')
            s++;
        for (e = s + strlen(s); e > s && (e[-1] == '\n' || e[-1] == '\r' ||
                                          e[-1] == ' ' || e[-1] == '\t');)
            *--e = '\0';
        if (!*s || *s == '#')
            continue;
        if (l->nsupp >= MAX_SUPPRESSIONS) {
            cli_error("leaks: %s: more than %d patterns", l->supp_path, MAX_SUPPRESSIONS);
            fclose(f);
            return -1;
        }
        size_t n = strlen(s) + 1;
        if (len + n > cap) {
            /* Patterns point into one buffer: keep offsets until the end. */
            cap = (len + n) * 2;
            char *t = realloc(l->supp_text, cap);
            if (!t) {
                fclose(f);
                return -1;
            }
            l->supp_text = t;
        }
        memcpy(l->supp_text + len, s, n);
        l->supp[l->nsupp++] = (const char *)(uintptr_t)len;
        len += n;
    }
    fclose(f);
    for (size_t i = 0; i < l->nsupp; i++)
        l->supp[i] = l->supp_text + (uintptr_t)l->supp[i];
    return 0;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct leaks *l = arg;
    if (b->free_us != MTL_NEVER)
        return 0;
    for (size_t i = 0; i < l->nsupp; i++) {
        int m = mtl_view_stack_matches(l->a->v, b->stack, l->supp[i]);
        if (m < 0)
            return -1;
        if (m) {
            l->supp_bytes += b->weight_bytes;
            l->supp_blocks += b->weight_count;
            return 0;
        }
    }
    return mtl_stackagg_add(&l->agg, 0, b->stack, b->weight_count, b->weight_bytes,
                            0) < 0 ? -1 : 0;
}

/* The largest leaking stack of each site, for the "stack" field. */
struct biggest {
    struct analysis *a;
    uint32_t *stack;   /* by function id */
    double *bytes;
    uint32_t n;
};

static void find_biggest(const struct mtl_stackagg_entry *e, void *arg)
{
    struct biggest *g = arg;
    uint32_t loc = mtl_view_site(g->a->v, e->stack);
    uint32_t fid = loc == MTL_NO_LOCATION ? g->n - 1
                                          : mtl_view_location(g->a->v, loc)->function_id;
    if (fid < g->n && (e->bytes > g->bytes[fid] ||
                       (e->bytes == g->bytes[fid] && e->stack < g->stack[fid]))) {
        g->bytes[fid] = e->bytes;
        g->stack[fid] = e->stack;
    }
}

static void print_stack_json(struct analysis *a, uint32_t stack)
{
    const uint32_t *locs;
    size_t n;
    fputs("[", stdout);
    if (mtl_view_frames(a->v, stack, &locs, &n) == 0)
        for (size_t i = 0; i < n; i++) {
            if (i)
                fputs(", ", stdout);
            json_frame(stdout, mtl_view_location(a->v, locs[i]));
        }
    fputs("]", stdout);
}

int cmd_leaks(int argc, char **argv)
{
    struct analysis a = {0};
    struct leaks l = { .a = &a };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 1, parse_opt, &l, &code))
        return code;
    if (l.supp_path && load_suppressions(&l) < 0)
        return 1;
    if (analysis_open(&a, NULL)) {
        free(l.supp_text);
        return 1;
    }
    struct mtl_scan_ops ops = { .block = on_block };
    struct mtl_rows rows = {0};
    struct biggest g = { .a = &a };
    int bad = analysis_scan(&a, &ops, &l, NULL);
    if (!bad) {
        int rc = mtl_rows_fold(&rows, &l.agg, a.v, a.r, MTL_BY_FUNCTION, 0,
                               MTL_ALL_THREADS);
        if (rc < 0) {
            cli_error("leaks: %s", mtl_strerror(rc));
            bad = 1;
        }
    }
    if (!bad) {
        mtl_rows_sort(&rows, a.r, MTL_SORT_BYTES, 1);
        g.n = mtl_view_function_count(a.v) + 1; /* the last: "(no stack)" */
        g.stack = calloc(g.n, sizeof *g.stack);
        g.bytes = calloc(g.n, sizeof *g.bytes);
        if (!g.stack || !g.bytes) {
            cli_error("leaks: out of memory");
            bad = 1;
        } else {
            for (uint32_t i = 0; i < g.n; i++)
                g.bytes[i] = -1;
            mtl_stackagg_each(&l.agg, find_biggest, &g);
        }
    }
    size_t n = l.top && l.top < rows.n ? l.top : rows.n;
    if (!bad && a.json) {
        printf("{");
        json_estimated(&a);
        printf("\"leaked_bytes\": ");
        json_number(stdout, rows.bytes);
        printf(", \"leaked_blocks\": ");
        json_number(stdout, rows.calls);
        printf(", \"suppressed_bytes\": ");
        json_number(stdout, l.supp_bytes);
        printf(", \"suppressed_blocks\": ");
        json_number(stdout, l.supp_blocks);
        printf(", \"rows\": [");
        for (size_t i = 0; i < n; i++) {
            const struct mtl_row *row = &rows.row[i];
            fputs(i ? ", {" : "{", stdout);
            json_row_location(stdout, row);
            fputs(", \"blocks\": ", stdout);
            json_number(stdout, row->calls);
            fputs(", \"bytes\": ", stdout);
            json_number(stdout, row->bytes);
            printf(", \"percent\": %.4f, \"stack\": ", row->percent);
            uint32_t fid = row->location == MTL_NO_LOCATION
                               ? g.n - 1
                               : mtl_view_location(a.v, row->location)->function_id;
            if (g.bytes[fid] >= 0)
                print_stack_json(&a, g.stack[fid]);
            else
                fputs("[]", stdout);
            fputs("}", stdout);
        }
        printf("]}\n");
    } else if (!bad) {
        char size[32], supp[32];
        printf("live at the end: %s in %.0f blocks", human_bytes(size, sizeof size, rows.bytes),
               rows.calls);
        if (l.supp_blocks > 0)
            printf(" (and %s in %.0f blocks suppressed)",
                   human_bytes(supp, sizeof supp, l.supp_bytes), l.supp_blocks);
        printf("\n\n");
        if (rows.n)
            print_rows_table(&a, &rows, l.top, "SITE", "BLOCKS", 0, NULL);
    }
    free(g.stack);
    free(g.bytes);
    mtl_rows_release(&rows);
    mtl_stackagg_release(&l.agg);
    free(l.supp_text);
    analysis_close(&a);
    return bad;
}
