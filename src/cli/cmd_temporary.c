/*
 * cmd_temporary.c: `memtally temporary`: blocks freed soon after their
 * allocation, by site.  "Soon" is heaptrack's: no other allocation, by any
 * thread, between the two; or, with --within-us N, at most N microseconds.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally temporary [options] TRACE\n"
    "\n"
    "Blocks freed right after their allocation (no other allocation in\n"
    "between), by site: work the allocator did for nothing.\n"
    "\n"
    "  --within-us N   instead: freed at most N microseconds after allocation\n"
    "  --top N         the first N sites\n"
    "  --json          JSON (docs/ANALYSIS.md)\n";

struct temporary {
    size_t top;
    int within_set;
    uint64_t within;
    double temp_calls, temp_bytes;
    struct mtl_stackagg agg;   /* calls, bytes, extra = temporary calls */
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct temporary *t = ctx;
    const char *s = argv[*i], *val = NULL;
    if (!strcmp(s, "--within-us")) {
        if (*i + 1 >= argc) {
            cli_error("temporary: --within-us needs a number");
            return -1;
        }
        val = argv[++*i];
    } else if (!strncmp(s, "--within-us=", 12)) {
        val = s + 12;
    } else {
        return parse_top("temporary", argc, argv, i, &t->top);
    }
    char *end;
    unsigned long long n = strtoull(val, &end, 10);
    if (!*val || *end || *val == '-') {
        cli_error("temporary: --within-us takes a number of microseconds");
        return -1;
    }
    t->within_set = 1;
    t->within = n;
    (*i)++;
    return 1;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct temporary *t = arg;
    int temp = t->within_set ? b->free_us != MTL_NEVER && b->free_us - b->alloc_us <= t->within
                             : b->temporary;
    if (temp) {
        t->temp_calls += b->weight_count;
        t->temp_bytes += b->weight_bytes;
    }
    return mtl_stackagg_add(&t->agg, 0, b->stack, b->weight_count, b->weight_bytes,
                            temp ? b->weight_count : 0) < 0 ? -1 : 0;
}

static int by_temporary(const void *pa, const void *pb)
{
    const struct mtl_row *a = pa, *b = pb;
    if (a->extra != b->extra)
        return a->extra < b->extra ? 1 : -1;
    return strcmp(a->function ? a->function : "", b->function ? b->function : "");
}

int cmd_temporary(int argc, char **argv)
{
    struct analysis a = {0};
    struct temporary t = {0};
    int code;
    if (analysis_parse(&a, argc, argv, usage, 1, parse_opt, &t, &code))
        return code;
    if (analysis_open(&a, NULL))
        return 1;
    struct mtl_scan_ops ops = { .block = on_block };
    struct mtl_rows rows = {0};
    int bad = analysis_scan(&a, &ops, &t, NULL);
    if (!bad) {
        int rc = mtl_rows_fold(&rows, &t.agg, a.v, a.r, MTL_BY_FUNCTION, 0,
                               MTL_ALL_THREADS);
        if (rc < 0) {
            cli_error("temporary: %s", mtl_strerror(rc));
            bad = 1;
        }
    }
    if (!bad) {
        /* Only sites with temporary blocks; percent of all temporary calls. */
        size_t keep = 0;
        for (size_t i = 0; i < rows.n; i++) {
            if (rows.row[i].extra <= 0)
                continue;
            rows.row[i].percent = t.temp_calls > 0 ? 100.0 * rows.row[i].extra / t.temp_calls : 0;
            rows.row[keep++] = rows.row[i];
        }
        rows.n = keep;
        qsort(rows.row, rows.n, sizeof *rows.row, by_temporary);
        size_t n = t.top && t.top < rows.n ? t.top : rows.n;
        if (a.json) {
            printf("{");
            json_estimated(&a);
            printf("\"temporary_calls\": ");
            json_number(stdout, t.temp_calls);
            printf(", \"calls\": ");
            json_number(stdout, rows.calls);
            printf(", \"temporary_bytes\": ");
            json_number(stdout, t.temp_bytes);
            printf(", \"rows\": [");
            for (size_t i = 0; i < n; i++) {
                const struct mtl_row *row = &rows.row[i];
                fputs(i ? ", {" : "{", stdout);
                json_row_location(stdout, row);
                fputs(", \"temporary_calls\": ", stdout);
                json_number(stdout, row->extra);
                fputs(", \"calls\": ", stdout);
                json_number(stdout, row->calls);
                fputs(", \"bytes\": ", stdout);
                json_number(stdout, row->bytes);
                printf(", \"percent\": %.4f}", row->percent);
            }
            printf("]}\n");
        } else {
            printf("%.0f temporary allocations of %.0f (%.2f%%)\n\n", t.temp_calls,
                   rows.calls, rows.calls > 0 ? 100.0 * t.temp_calls / rows.calls : 0);
            if (rows.n)
                print_rows_table(&a, &rows, t.top, "SITE", "CALLS", 1, "TEMPORARY");
        }
    }
    mtl_rows_release(&rows);
    mtl_stackagg_release(&t.agg);
    analysis_close(&a);
    return bad;
}
