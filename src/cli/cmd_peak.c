/*
 * cmd_peak.c: `memtally peak`: the moment the live bytes were highest, and
 * what was live then, by site.  Two passes: the first finds the peak (the
 * event after which the live bytes were highest, the first such), the
 * second gathers the blocks live right after that event.
 */
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally peak [options] TRACE\n"
    "\n"
    "When the live bytes were highest, and which sites held them.\n"
    "\n"
    "  --top N     the first N sites\n"
    "  --json      JSON (docs/ANALYSIS.md)\n";

struct peak {
    size_t top;
    double live, peak;
    uint64_t peak_seq, peak_us;
    int found;
    struct mtl_stackagg agg;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct peak *p = ctx;
    return parse_top("peak", argc, argv, i, &p->top);
}

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct peak *p = arg;
    if (!b || !passes)
        return 0;
    if (ev->type == MTL_EV_ALLOC) {
        p->live += b->weight_bytes;
        if (p->live > p->peak) {
            p->peak = p->live;
            p->peak_seq = b->alloc_seq;
            p->peak_us = ev->time_us;
            p->found = 1;
        }
    } else if (ev->type == MTL_EV_FREE) {
        p->live -= b->weight_bytes;
    }
    return 0;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct peak *p = arg;
    if (b->alloc_seq > p->peak_seq || b->free_seq <= p->peak_seq)
        return 0;
    return mtl_stackagg_add(&p->agg, 0, b->stack, b->weight_count, b->weight_bytes,
                            0) < 0 ? -1 : 0;
}

int cmd_peak(int argc, char **argv)
{
    struct analysis a = {0};
    struct peak p = {0};
    int code;
    if (analysis_parse(&a, argc, argv, usage, 1, parse_opt, &p, &code))
        return code;
    if (analysis_open(&a, NULL))
        return 1;
    struct mtl_scan_ops first = { .event = on_event }, second = { .block = on_block };
    struct mtl_rows rows = {0};
    int bad = analysis_scan(&a, &first, &p, NULL);
    if (!bad && p.found)
        bad = analysis_rescan(&a, &second, &p, NULL);
    if (!bad) {
        int rc = mtl_rows_fold(&rows, &p.agg, a.v, a.r, MTL_BY_FUNCTION, 0,
                               MTL_ALL_THREADS);
        if (rc < 0) {
            cli_error("peak: %s", mtl_strerror(rc));
            bad = 1;
        }
    }
    if (!bad) {
        mtl_rows_sort(&rows, a.r, MTL_SORT_BYTES, 1);
        if (a.json) {
            printf("{");
            json_estimated(&a);
            printf("\"peak_bytes\": ");
            json_number(stdout, p.peak);
            printf(", \"peak_time_us\": %llu, \"blocks\": ", (unsigned long long)p.peak_us);
            json_number(stdout, rows.calls);
            printf(", \"rows\": [");
            size_t n = p.top && p.top < rows.n ? p.top : rows.n;
            for (size_t i = 0; i < n; i++) {
                fputs(i ? ", {" : "{", stdout);
                json_row_location(stdout, &rows.row[i]);
                fputs(", \"blocks\": ", stdout);
                json_number(stdout, rows.row[i].calls);
                fputs(", \"bytes\": ", stdout);
                json_number(stdout, rows.row[i].bytes);
                printf(", \"percent\": %.4f}", rows.row[i].percent);
            }
            printf("]}\n");
        } else if (!p.found) {
            printf("no allocation passes the filters: there is no peak\n");
        } else {
            char size[32];
            printf("peak: %s live in %.0f blocks at %.3f s\n\n",
                   human_bytes(size, sizeof size, p.peak), rows.calls,
                   (double)p.peak_us / 1e6);
            print_rows_table(&a, &rows, p.top, "SITE", "BLOCKS", 0, NULL);
        }
    }
    mtl_rows_release(&rows);
    mtl_stackagg_release(&p.agg);
    analysis_close(&a);
    return bad;
}
