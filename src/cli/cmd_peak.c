/* cmd_peak.c: `memtally peak`: the moment the live bytes were highest, and
 * what was live then, by site (and with --threads, by thread). */
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally peak [options] TRACE\n"
    "\n"
    "When the live bytes were highest, and which sites held them.\n"
    "\n"
    "  --threads                  also what each thread's blocks held then (after\n"
    "                             merge --tree: each process's)\n";

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    (void)argc;
    if (strcmp(argv[*i], "--threads"))
        return 0;
    *(int *)ctx = 1;
    (*i)++;
    return 1;
}

int cmd_peak(int argc, char **argv)
{
    struct analysis a = { 0 };
    int code;
    int threads = 0;
    if (analysis_parse(&a, argc, argv, usage, CLI_TOP | CLI_STACKS, parse_opt, &threads, &code))
        return code;
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    struct mtl_peak_options o = { a.top, a.stacks, threads };
    struct mtl_peak p;
    int bad = analysis_done(&a, e, mtl_peak(e, &a.filter, &o, &p));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_peak(&b, &p, &ro);
        mtl_peak_release(&p);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
