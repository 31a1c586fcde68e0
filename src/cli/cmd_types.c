/* cmd_types.c: `memtally types`: objects and bytes by type tag (mtl_type),
 * allocated, live at the end and at the peak. */
#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally types [options] TRACE\n"
    "\n"
    "Objects and bytes by type tag (mtl_type, mtl_alloc): allocated, live at\n"
    "the end, and live at the peak.\n"
    "\n";

int cmd_types(int argc, char **argv)
{
    struct analysis a = { 0 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 0, NULL, NULL, &code))
        return code;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_types t;
    int bad = analysis_done(&a, e, mtl_types(e, &a.filter, &t));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_types(&b, &t, &ro);
        mtl_types_release(&t);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
