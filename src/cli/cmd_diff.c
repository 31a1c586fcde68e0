/* cmd_diff.c: `memtally diff BASE NEW`: per function (site), what changed
 * from one trace to the other. */
#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally diff [options] BASE NEW\n"
    "\n"
    "What changed from trace BASE to trace NEW, by function: allocation calls,\n"
    "bytes, bytes live at the peak, bytes leaked.  Largest change first.\n";

int cmd_diff(int argc, char **argv)
{
    struct analysis a = { 0 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_TOP | CLI_TWO_TRACES, NULL, NULL, &code))
        return code;
    struct mtl_engine *base = analysis_open(&a, a.path);
    struct mtl_engine *next = base ? analysis_open(&a, a.path2) : NULL;
    if (!next) {
        mtl_engine_close(base);
        return 1;
    }
    struct mtl_diff d;
    int rc = mtl_diff(base, next, &a.filter, a.top, &d);
    /* A failure is the trace being read when it happened: say which. */
    int bad = rc < 0 && mtl_engine_blocks(next) == 0 ? analysis_done(&a, base, rc)
                                                      : analysis_done(&a, next, rc);
    if (!bad)
        bad = analysis_done(&a, base, 0);
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_diff(&b, &d, &ro);
        mtl_diff_release(&d);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(base);
    mtl_engine_close(next);
    return bad;
}
