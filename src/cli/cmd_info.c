/* cmd_info.c: `memtally info [--json] TRACE`: what a trace holds, with the
 * totals of valgrind's "total heap usage" line and the live heap's peak. */
#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally info [options] TRACE\n"
    "\n"
    "What a trace holds: program, mode, duration, threads, and the totals of\n"
    "allocations, frees, bytes, the peak of live bytes and what was live at\n"
    "the end.\n";

int cmd_info(int argc, char **argv)
{
    struct analysis a = { 0 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_WHOLE_TRACE, NULL, NULL, &code))
        return code;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_info in;
    int bad = analysis_done(&a, e, mtl_info(e, &in));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_info(&b, &in, &ro);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
