/* cmd_leaks.c: `memtally leaks`: what was still live at the end of the
 * trace, by site, less what a suppressions file names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: memtally leaks [options] TRACE\n"
    "\n"
    "What was live at the end of the trace, by site.\n"
    "\n"
    "  --suppressions FILE        one function pattern per line (# comments): blocks\n"
    "                             with a matching frame are not reported\n";

#define MAX_SUPPRESSIONS 1024

struct leaks_cli {
    const char *path;
    struct mtl_buf text;                 /* the patterns, NUL-separated */
    const char *supp[MAX_SUPPRESSIONS];
    size_t n;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct leaks_cli *l = ctx;
    static const char *const names[] = { "--suppressions" };
    size_t k;
    return option_value("leaks", argc, argv, i, names, 1, &k, &l->path);
}

static int load_suppressions(struct leaks_cli *l)
{
    FILE *f = fopen(l->path, "r");
    if (!f) {
        cli_error("leaks: %s: %s", l->path, strerror(errno));
        return -1;
    }
    size_t offsets[MAX_SUPPRESSIONS];
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *s = line, *e;
        while (*s == ' ' || *s == '\t')
            s++;
        for (e = s + strlen(s); e > s && strchr("\r\n \t", e[-1]);)
            *--e = '\0';
        if (!*s || *s == '#')
            continue;
        if (l->n == MAX_SUPPRESSIONS) {
            cli_error("leaks: %s: more than %d patterns", l->path, MAX_SUPPRESSIONS);
            fclose(f);
            return -1;
        }
        offsets[l->n++] = l->text.len;
        mtl_buf_add(&l->text, s, strlen(s) + 1);
    }
    fclose(f);
    if (l->text.failed) {
        cli_error("leaks: out of memory");
        return -1;
    }
    for (size_t i = 0; i < l->n; i++)
        l->supp[i] = l->text.data + offsets[i];
    return 0;
}

int cmd_leaks(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct leaks_cli l = { .text = MTL_BUF_INIT };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_TOP | CLI_STACKS, parse_opt, &l, &code))
        return code;
    if (l.path && load_suppressions(&l) < 0) {
        mtl_buf_release(&l.text);
        return 1;
    }
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e) {
        mtl_buf_release(&l.text);
        return 1;
    }
    struct mtl_leaks_options o = { l.supp, l.n, a.top, a.stacks };
    struct mtl_leaks r;
    int bad = analysis_done(&a, e, mtl_leaks(e, &a.filter, &o, &r));
    if (!bad) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(&a);
        mtl_render_leaks(&b, &r, &ro);
        mtl_leaks_release(&r);
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    mtl_buf_release(&l.text);
    return bad;
}
