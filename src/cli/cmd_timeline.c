/* cmd_timeline.c: `memtally timeline`: live bytes, allocation rate and RSS
 * over time. */
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally timeline [options] TRACE\n"
    "\n"
    "Live bytes, bytes and calls allocated, and RSS, over N intervals.\n"
    "\n"
    "  --points N                 how many intervals (default 60; at most one\n"
    "                             per step of record --time-resolution)\n"
    "  --csv                      CSV: time_us,live_bytes,alloc_bytes,alloc_calls,rss_bytes\n";

struct timeline_cli {
    size_t points;
    int csv;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct timeline_cli *t = ctx;
    static const char *const names[] = { "--points" };
    const char *val;
    size_t k;
    if (!strcmp(argv[*i], "--csv")) {
        t->csv = 1;
        (*i)++;
        return 1;
    }
    int rc = option_value("timeline", argc, argv, i, names, 1, &k, &val);
    if (rc <= 0)
        return rc;
    char *end;
    long n = strtol(val, &end, 10);
    if (!*val || *end || n < 1 || n > 100000) {
        cli_error("timeline: --points takes a number from 1 to 100000");
        return -1;
    }
    t->points = (size_t)n;
    return 1;
}

int cmd_timeline(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct timeline_cli o = { 60, 0 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 0, parse_opt, &o, &code))
        return code;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_timeline t;
    int bad = analysis_done(&a, e, mtl_timeline(e, &a.filter, o.points, &t));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_timeline(&b, &t, o.csv, &ro);
        mtl_timeline_release(&t);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
