/*
 * cmd_stacks.c: `memtally stacks --target NAME` (or --target-type TYPE):
 * the most frequent distinct call stacks that lead to allocations in
 * functions matching NAME, or that create blocks of type TYPE (Crystal's
 * TRACE_TARGET report, docs/ANALYSIS.md).
 */
#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally stacks --target NAME | --target-type TYPE [options] TRACE\n"
    "\n"
    "The most frequent call stacks that lead to allocations in functions\n"
    "matching NAME (a pattern: parse*, std::vector<*>::push_back...), or that\n"
    "create blocks of type TYPE (tagged with mtl_type).\n"
    "\n"
    "  --target NAME              the function\n"
    "  --target-type TYPE         instead: the type, stacks cut from the site\n"
    "  --depth N                  frames kept from the target outwards (default 6)\n"
    "  --min-count N              only stacks with at least N blocks (default 1)\n";

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct mtl_stacks_options *o = ctx;
    static const char *const names[] = { "--target", "--depth", "--min-count",
                                         "--target-type" };
    const char *val;
    size_t k, n;
    int rc = option_value("stacks", argc, argv, i, names, 4, &k, &val);
    if (rc <= 0)
        return rc;
    if (k == 0 || k == 3) {
        if (!*val) {
            cli_error("stacks: empty %s", names[k]);
            return -1;
        }
        if (k == 0)
            o->target = val;
        else
            o->target_type = val;
        return 1;
    }
    if (parse_count("stacks", names[k], val, 1, &n) < 0)
        return -1;
    if (k == 1)
        o->depth = n;
    else
        o->min_count = (double)n;
    return 1;
}

int cmd_stacks(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct mtl_stacks_options o = { .depth = 6, .min_count = 1 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_TOP, parse_opt, &o, &code))
        return code;
    if (!o.target == !o.target_type) {
        cli_error("stacks: --target NAME or --target-type TYPE is required, not both "
                  "(see memtally stacks --help)");
        return 2;
    }
    o.top = a.top;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_stacks s;
    int bad = analysis_done(&a, e, mtl_stacks(e, &a.filter, &o, &s));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_stacks(&b, &s, &o, &ro);
        mtl_stacks_release(&s);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
