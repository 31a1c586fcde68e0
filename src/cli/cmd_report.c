/*
 * cmd_report.c: `memtally report`: the hprof table (docs/ANALYSIS.md):
 * FUNCTION, CALLS, BYTES, PER CALL, % per thread and in total.
 */
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally report [options] TRACE\n"
    "\n"
    "Who allocates, how often, how much, and how much per call: a table per\n"
    "thread and one for all threads.\n"
    "\n"
    "  --total                    only the table of all threads\n"
    "  --sort KEY[:asc|:desc]     calls, bytes (default), per-call, percent, function\n"
    "  --inclusive                a function counts all that is allocated below it\n"
    "                             (default: only what it allocates itself)\n"
    "  --by function|file|module|thread|type\n"
    "                             type: by the type tags of the program's\n"
    "                             allocations (docs/ANALYSIS.md)\n";

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct mtl_report_options *o = ctx;
    static const char *const names[] = { "--sort", "--by" };
    const char *s = argv[*i], *val;
    size_t k;
    if (!strcmp(s, "--total") || !strcmp(s, "--inclusive")) {
        *(s[2] == 't' ? &o->total_only : &o->inclusive) = 1;
        (*i)++;
        return 1;
    }
    int rc = option_value("report", argc, argv, i, names, 2, &k, &val);
    if (rc <= 0)
        return rc;
    if (k == 0) {
        static const struct { const char *name; enum mtl_sort key; } keys[] = {
            { "calls", MTL_SORT_CALLS }, { "bytes", MTL_SORT_BYTES },
            { "per-call", MTL_SORT_PER_CALL }, { "percent", MTL_SORT_PERCENT },
            { "function", MTL_SORT_FUNCTION },
        };
        const char *colon = strchr(val, ':');
        size_t n = colon ? (size_t)(colon - val) : strlen(val), j;
        for (j = 0; j < sizeof keys / sizeof *keys; j++)
            if (strlen(keys[j].name) == n && !strncmp(val, keys[j].name, n))
                break;
        if (j == sizeof keys / sizeof *keys ||
            (colon && strcmp(colon, ":asc") && strcmp(colon, ":desc"))) {
            cli_error("report: --sort takes calls, bytes, per-call, percent or "
                      "function, optionally with :asc or :desc");
            return -1;
        }
        o->sort = keys[j].key;
        o->descending = colon ? !strcmp(colon, ":desc") : o->sort != MTL_SORT_FUNCTION;
        return 1;
    }
    static const char *const groups[] = { "function", "file", "module", "thread", "type" };
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++)
        if (!strcmp(val, groups[g])) {
            o->by = (enum mtl_group)g;
            return 1;
        }
    cli_error("report: --by takes function, file, module, thread or type");
    return -1;
}

int cmd_report(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct mtl_report_options o = { .sort = MTL_SORT_BYTES, .descending = 1,
                                    .by = MTL_BY_FUNCTION };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_TOP | CLI_STACKS, parse_opt, &o, &code))
        return code;
    o.top = a.top;
    o.stacks = a.stacks;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_report r;
    int bad = analysis_done(&a, e, mtl_report(e, &a.filter, &o, &r));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_report(&b, &r, &o, &ro);
        mtl_report_release(&r);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
