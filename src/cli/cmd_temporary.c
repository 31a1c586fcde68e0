/* cmd_temporary.c: `memtally temporary`: blocks freed right after their
 * allocation, by site. */
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally temporary [options] TRACE\n"
    "\n"
    "Blocks freed right after their allocation (no other allocation or free\n"
    "in between, as heaptrack counts them), by site: work the allocator did\n"
    "for nothing.\n"
    "\n"
    "  --within-us N              instead: freed at most N microseconds after\n"
    "                             allocation\n";

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct mtl_temporary_options *o = ctx;
    static const char *const names[] = { "--within-us" };
    const char *val;
    size_t k;
    int rc = option_value("temporary", argc, argv, i, names, 1, &k, &val);
    if (rc <= 0)
        return rc;
    char *end;
    unsigned long long n = strtoull(val, &end, 10);
    if (!*val || *end || *val == '-') {
        cli_error("temporary: --within-us takes a number of microseconds");
        return -1;
    }
    o->within_set = 1;
    o->within_us = n;
    return 1;
}

int cmd_temporary(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct mtl_temporary_options o = { 0 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_TOP, parse_opt, &o, &code))
        return code;
    o.top = a.top;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_temporary t;
    int bad = analysis_done(&a, e, mtl_temporary(e, &a.filter, &o, &t));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_temporary(&b, &t, &ro);
        mtl_temporary_release(&t);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
