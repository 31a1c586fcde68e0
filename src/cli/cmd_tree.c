/*
 * cmd_tree.c: `memtally tree`: the call tree of allocations, top down from
 * the outermost frames, bottom up from the allocation sites (--sites),
 * from the functions matching NAME (--callees), or bottom up through
 * NAME's callers (--callers).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally tree [options] TRACE\n"
    "\n"
    "The call tree of allocations, each node with all it allocated below.\n"
    "\n"
    "  --callees NAME             top down from the functions matching NAME\n"
    "  --callers NAME             bottom up: who calls NAME, and their callers\n"
    "  --sites                    bottom up from every allocation site through\n"
    "                             its callers (as a flame graph of sites)\n"
    "  --min-percent X            leave out nodes below X% of the root (default 1)\n"
    "  --others                   sum the nodes left out under each node into\n"
    "                             one, \"(others)\", so that every byte shows\n"
    "  --max-depth N              at most N levels\n";

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct mtl_tree_options *o = ctx;
    static const char *const names[] = { "--callees", "--callers", "--min-percent",
                                         "--max-depth" };
    const char *val;
    size_t k;
    if (!strcmp(argv[*i], "--sites") || !strcmp(argv[*i], "--others")) {
        *(argv[*i][2] == 's' ? &o->inverted : &o->others) = 1;
        (*i)++;
        return 1;
    }
    int rc = option_value("tree", argc, argv, i, names, 4, &k, &val);
    if (rc <= 0)
        return rc;
    char *end;
    switch (k) {
    case 0:
    case 1:
        if (!*val) {
            cli_error("tree: empty function pattern");
            return -1;
        }
        *(k == 0 ? &o->callees : &o->callers) = val;
        break;
    case 2:
        o->min_percent = strtod(val, &end);
        if (!*val || *end || o->min_percent < 0 || o->min_percent > 100) {
            cli_error("tree: --min-percent takes a number from 0 to 100");
            return -1;
        }
        break;
    case 3:
        if (parse_count("tree", "--max-depth", val, 1, &o->max_depth) < 0)
            return -1;
        break;
    }
    return 1;
}

int cmd_tree(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct mtl_tree_options o = { .min_percent = 1 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 0, parse_opt, &o, &code))
        return code;
    if (!!o.callers + !!o.callees + o.inverted > 1) {
        cli_error("tree: --callers, --callees and --sites go one at a time");
        return 2;
    }
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_tree t;
    int bad = analysis_done(&a, e, mtl_tree(e, &a.filter, &o, &t));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_tree(&b, &t, &o, &ro);
        mtl_tree_release(&t);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
