/* cmd_histogram.c: `memtally histogram`: allocation sizes in power-of-two
 * buckets. */
#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally histogram [options] TRACE\n"
    "\n"
    "How many allocations of each size, in power-of-two buckets.\n";

int cmd_histogram(int argc, char **argv)
{
    struct analysis a = { 0 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 0, NULL, NULL, &code))
        return code;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_histogram h;
    int bad = analysis_done(&a, e, mtl_histogram(e, &a.filter, &h));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_histogram(&b, &h, &ro);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
