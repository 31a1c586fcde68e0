/*
 * cmd_export.c: `memtally export TRACE --format F [-o OUT]`: the engine's
 * results in the formats other tools read: folded (flamegraph.pl, inferno,
 * speedscope), speedscope (its own JSON, a profile per thread), massif
 * (ms_print) and csv (the rows of report) in render/export.c; pprof (go
 * tool pprof, Pyroscope, Parca) in render/pprof.c; dhat (dh_view.html) in
 * render/dhat.c; sqlite (a database for SQL) in render/sqlite.c.  Every
 * analysis filter applies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/scan.h"
#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/errors.h"
#include "trace/defs.h"

static const char usage[] =
    "usage: memtally export [options] TRACE --format FORMAT [-o OUT]\n"
    "\n"
    "The trace's results in a format other tools read.\n"
    "\n"
    "  --format FORMAT            folded: \"outer;...;inner VALUE\" lines for\n"
    "                               flamegraph.pl, inferno and speedscope\n"
    "                             speedscope: speedscope's JSON, a profile per\n"
    "                               thread, weighted by bytes\n"
    "                             massif: valgrind massif's file (ms_print,\n"
    "                               massif-visualizer): the heap over time, the peak\n"
    "                             pprof: a gzip'd pprof heap profile (go tool pprof,\n"
    "                               Pyroscope, Parca): allocated, and in use at the\n"
    "                               end (or --at, --at-peak), per call stack\n"
    "                             dhat: DHAT's JSON for valgrind's dh_view.html:\n"
    "                               bytes, blocks, lifetimes, at the peak and at\n"
    "                               the end, per call stack\n"
    "                             sqlite: an SQLite database of every allocation,\n"
    "                               its stack, frames, threads, modules and the\n"
    "                               timeline, for SQL (needs -o)\n"
    "                             csv: the rows of report, one per function\n"
    "  --value bytes|calls|peak|leaked\n"
    "                             folded: what VALUE is (default bytes): bytes or\n"
    "                             calls allocated, bytes live at the peak, bytes\n"
    "                             never freed\n"
    "  --at TIME                  pprof: in use means live at TIME (\"2.5s\", \"300ms\")\n"
    "  --at-peak                  pprof: in use means live at the peak\n"
    "  -o, --output OUT           write to OUT (default, or -: standard output;\n"
    "                             pprof: not to a terminal)\n";

enum format { FMT_NONE, FMT_FOLDED, FMT_SPEEDSCOPE, FMT_MASSIF, FMT_PPROF, FMT_DHAT, FMT_SQLITE,
              FMT_CSV };
#define FORMATS "folded, speedscope, massif, pprof, dhat, sqlite, csv"
#define SQLITE_TIMELINE_POINTS 1000

#define MASSIF_POINTS 48       /* snapshots over the run, as massif keeps ~50 */
#define MASSIF_DETAIL_EVERY 10 /* every tenth detailed, as massif's default */
enum value { VAL_BYTES, VAL_CALLS, VAL_PEAK, VAL_LEAKED };

struct export_opts {
    enum format format;
    enum value value;
    const char *output;
    int at_set, at_peak;
    uint64_t at_us;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct export_opts *o = ctx;
    static const char *const names[] = { "--format", "--value", "--output", "-o", "--at" };
    static const char *const values[] = { "bytes", "calls", "peak", "leaked" };
    const char *val;
    size_t k;
    if (!strcmp(argv[*i], "--at-peak")) {
        o->at_peak = 1;
        (*i)++;
        return 1;
    }
    int rc = option_value("export", argc, argv, i, names, 5, &k, &val);
    if (rc <= 0)
        return rc;
    if (k == 0) {
        if (!strcmp(val, "folded"))
            o->format = FMT_FOLDED;
        else if (!strcmp(val, "speedscope"))
            o->format = FMT_SPEEDSCOPE;
        else if (!strcmp(val, "massif"))
            o->format = FMT_MASSIF;
        else if (!strcmp(val, "pprof"))
            o->format = FMT_PPROF;
        else if (!strcmp(val, "dhat"))
            o->format = FMT_DHAT;
        else if (!strcmp(val, "sqlite"))
            o->format = FMT_SQLITE;
        else if (!strcmp(val, "csv"))
            o->format = FMT_CSV;
        else {
            cli_error("export: unknown format %s (" FORMATS ")", val);
            return -1;
        }
    } else if (k == 1) {
        size_t v;
        for (v = 0; v < 4 && strcmp(val, values[v]); v++)
            ;
        if (v == 4) {
            cli_error("export: --value takes bytes, calls, peak or leaked");
            return -1;
        }
        o->value = (enum value)v;
    } else if (k == 4) {
        if (mtl_parse_time(val, &o->at_us) < 0) {
            cli_error("export: --at takes a time (\"2.5s\", \"300ms\", \"150us\"), not %s", val);
            return -1;
        }
        o->at_set = 1;
    } else {
        if (!*val) {
            cli_error("export: empty output path");
            return -1;
        }
        o->output = val;
    }
    return 1;
}

/* The folded lines of the call tree of the blocks the value is about. */
static int export_folded(struct analysis *a, struct mtl_engine *e, const struct export_opts *o,
                         struct mtl_buf *b)
{
    struct mtl_filter f = a->filter;
    if (o->value == VAL_LEAKED) {
        f.never_freed = 1;
    } else if (o->value == VAL_PEAK) {
        /* The peak's own rows, with every call path under them. */
        struct mtl_peak_options po = { .top = 0, .stacks = (size_t)1 << 30 };
        struct mtl_peak p;
        if (analysis_done(a, e, mtl_peak(e, &a->filter, &po, &p)))
            return 1;
        if (p.found)
            mtl_render_folded_paths(b, &p.rows);
        mtl_peak_release(&p);
        return 0;
    }
    struct mtl_tree_options to = { 0 }; /* every node, to the full depth */
    struct mtl_tree t;
    if (analysis_done(a, e, mtl_tree(e, &f, &to, &t)))
        return 1;
    mtl_render_folded(b, &t, o->value == VAL_CALLS);
    mtl_tree_release(&t);
    return 0;
}

static int export_csv(struct analysis *a, struct mtl_engine *e, struct mtl_buf *b)
{
    struct mtl_report_options ro = { .total_only = 1, .by = MTL_BY_FUNCTION,
                                     .sort = MTL_SORT_BYTES, .descending = 1 };
    struct mtl_report r;
    if (analysis_done(a, e, mtl_report(e, &a->filter, &ro, &r)))
        return 1;
    mtl_render_report_csv(b, &r);
    mtl_report_release(&r);
    return 0;
}

/* A call tree per thread that allocated, as speedscope profiles. */
static int export_speedscope(struct analysis *a, struct mtl_engine *e, struct mtl_buf *b)
{
    struct mtl_report_options ro = { .by = MTL_BY_FUNCTION, .top = 1 };
    struct mtl_report r;
    if (analysis_done(a, e, mtl_report(e, &a->filter, &ro, &r)))
        return 1;
    size_t n = r.nthreads;
    struct mtl_tree *trees = calloc(n ? n : 1, sizeof *trees);
    struct mtl_speedscope_profile *p = calloc(n ? n : 1, sizeof *p);
    char (*names)[64] = calloc(n ? n : 1, sizeof *names);
    int bad = !trees || !p || !names;
    if (bad)
        cli_error("export: out of memory");
    size_t made = 0;
    for (size_t i = 0; i < n && !bad; i++, made++) {
        struct mtl_filter f = a->filter;
        f.thread_set = f.thread_is_index = 1;
        f.thread = r.threads[i].index;
        struct mtl_tree_options to = { 0 };
        if ((bad = analysis_done(a, e, mtl_tree(e, &f, &to, &trees[i]))))
            break;
        snprintf(names[i], sizeof names[i], "thread %u%s%s%s", (unsigned)r.threads[i].tid,
                 *r.threads[i].name ? " (" : "", r.threads[i].name,
                 *r.threads[i].name ? ")" : "");
        p[i].name = names[i];
        p[i].tree = &trees[i];
    }
    if (!bad && mtl_render_speedscope(b, a->path, p, n) < 0) {
        cli_error("export: out of memory");
        bad = 1;
    }
    for (size_t i = 0; i < made; i++)
        mtl_tree_release(&trees[i]);
    free(trees);
    free(p);
    free(names);
    mtl_report_release(&r);
    return bad;
}

/* The live heap over time, every tenth snapshot with its tree from the
 * sites through their callers, and the peak with its sites. */
static int export_massif(struct analysis *a, struct mtl_engine *e, struct mtl_buf *b)
{
    struct mtl_info info;
    struct mtl_timeline tl;
    struct mtl_peak_options po = { 0 };
    struct mtl_peak p;
    if (analysis_done(a, e, mtl_info(e, &info)) ||
        analysis_done(a, e, mtl_timeline(e, &a->filter, MASSIF_POINTS, &tl)))
        return 1;
    if (analysis_done(a, e, mtl_peak(e, &a->filter, &po, &p))) {
        mtl_timeline_release(&tl);
        return 1;
    }
    size_t cap = tl.n + 2, n = 0, ntrees = 0;
    struct mtl_massif_snapshot *s = calloc(cap, sizeof *s);
    struct mtl_tree *trees = calloc(tl.n / MASSIF_DETAIL_EVERY + 1, sizeof *trees);
    int bad = !s || !trees;
    if (bad)
        cli_error("export: out of memory");
    if (!bad)
        s[n++] = (struct mtl_massif_snapshot){ 0, 0, NULL, NULL };
    int peak_done = !p.found;
    for (size_t i = 0; i < tl.n && !bad; i++) {
        const struct mtl_timeline_point *pt = &tl.points[i];
        if (!peak_done && p.peak_time_us <= pt->time_us) {
            s[n++] = (struct mtl_massif_snapshot){ p.peak_time_us, p.peak_bytes, NULL, &p.rows };
            peak_done = 1;
        }
        struct mtl_massif_snapshot snap = { pt->time_us, pt->live, NULL, NULL };
        if (i % MASSIF_DETAIL_EVERY == MASSIF_DETAIL_EVERY - 1 && pt->live > 0) {
            struct mtl_filter f = a->filter;
            f.live_at_set = 1;
            f.live_at = pt->time_us;
            struct mtl_tree_options to = { .inverted = 1, .min_percent = 1, .others = 1,
                                           .max_depth = 12 };
            if ((bad = analysis_done(a, e, mtl_tree(e, &f, &to, &trees[ntrees]))))
                break;
            snap.tree = &trees[ntrees++];
            /* Its figure is its tree's: "live at" a time and the timeline's
             * live bytes at an interval's end differ when events share a
             * microsecond, and massif's readers want the tree within it. */
            snap.heap = snap.tree->root.bytes;
        }
        s[n++] = snap;
    }
    if (!bad && !peak_done)
        s[n++] = (struct mtl_massif_snapshot){ p.peak_time_us, p.peak_bytes, NULL, &p.rows };
    if (!bad)
        mtl_render_massif(b, info.trace.command_line, s, n);
    for (size_t i = 0; i < ntrees; i++)
        mtl_tree_release(&trees[i]);
    free(trees);
    free(s);
    mtl_peak_release(&p);
    mtl_timeline_release(&tl);
    return bad;
}

/* Per call stack: allocated, and in use at the end, --at or --at-peak
 * (pprof); with lifetimes, at the peak and at the end (dhat). */
static int export_stacks(struct analysis *a, struct mtl_engine *e, const struct export_opts *o,
                         struct mtl_buf *b)
{
    struct mtl_stack_figures_options so = { .at_set = o->at_set, .at_us = o->at_us,
                                            .at_peak = o->at_peak,
                                            .lifetimes = o->format == FMT_DHAT };
    struct mtl_stack_figures s;
    if (analysis_done(a, e, mtl_stack_figures(e, &a->filter, &so, &s)))
        return 1;
    int bad = (o->format == FMT_DHAT ? mtl_render_dhat(b, &s) : mtl_render_pprof(b, &s)) < 0;
    if (bad)
        cli_error("export: out of memory");
    mtl_stack_figures_release(&s);
    return bad;
}

struct sqlite_export {
    struct mtl_sqlite *w;
    const struct mtl_defs *d;
};

static int sqlite_block(void *arg, const struct mtl_block *b)
{
    struct sqlite_export *x = arg;
    return mtl_sqlite_block(x->w, b, b->tag ? mtl_defs_string(x->d, b->tag) : NULL) < 0
               ? MTL_ESTOPPED : 0;
}

/* Every block that passes the filters, as it comes, then the stacks of
 * those blocks, the threads, the modules and the timeline. */
static int export_sqlite(struct analysis *a, struct mtl_engine *e, const char *out)
{
    char err[512];
    struct sqlite_export x = { NULL, NULL };
    if (mtl_sqlite_create(&x.w, out, err, sizeof err) < 0) {
        cli_error("export: %s", err);
        return 1;
    }
    struct mtl_stack_figures_options so = { 0 };
    struct mtl_stack_figures s;
    struct mtl_timeline tl = { 0 };
    int bad = analysis_done(a, e, mtl_stack_figures(e, &a->filter, &so, &s));
    if (!bad && (bad = analysis_done(a, e, mtl_timeline(e, &a->filter, SQLITE_TIMELINE_POINTS,
                                                        &tl))))
        mtl_stack_figures_release(&s);
    if (bad) {
        mtl_sqlite_abort(x.w);
        return 1;
    }
    x.d = mtl_engine_defs(e);
    struct mtl_scan_ops ops = { .block = sqlite_block };
    struct mtl_scan_result res;
    int rc = mtl_engine_scan(e, &a->filter, &ops, &x, &res);
    if (rc == MTL_ESTOPPED) {
        cli_error("export: %s", mtl_sqlite_error(x.w));
        bad = 1;
    } else {
        bad = analysis_done(a, e, rc);
    }
    struct mtl_sqlite_tables t = { &s, &tl, x.d->threads, x.d->nthreads };
    if (!bad && mtl_sqlite_finish(x.w, &t) < 0) {
        cli_error("export: %s", mtl_sqlite_error(x.w));
        bad = 1;
    }
    mtl_sqlite_abort(x.w);
    mtl_timeline_release(&tl);
    mtl_stack_figures_release(&s);
    return bad;
}

/* b to OUT (or standard output); 0, or 1 after saying why. */
static int write_output(struct analysis *a, const char *out, struct mtl_buf *b)
{
    if (!out || !strcmp(out, "-"))
        return analysis_output(a, b);
    int bad = 0;
    FILE *f = b->failed ? NULL : fopen(out, "w");
    if (b->failed) {
        cli_error("export: out of memory");
        bad = 1;
    } else if (!f) {
        cli_error("export: cannot write %s: %s", out, strerror(errno));
        bad = 1;
    } else {
        if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
            bad = 1;
        if (fclose(f) != 0)
            bad = 1;
        if (bad)
            cli_error("export: cannot write %s: %s", out, strerror(errno));
    }
    mtl_buf_release(b);
    return bad;
}

int cmd_export(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct export_opts o = { .format = FMT_NONE, .value = VAL_BYTES };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 0, parse_opt, &o, &code))
        return code;
    if (o.format == FMT_NONE) {
        cli_error("export: --format is needed (" FORMATS ")");
        return 2;
    }
    if ((o.at_set || o.at_peak) && o.format != FMT_PPROF) {
        cli_error("export: --at and --at-peak are for --format pprof");
        return 2;
    }
    if (o.at_set && o.at_peak) {
        cli_error("export: --at and --at-peak cannot go together");
        return 2;
    }
    if (o.format == FMT_SQLITE && (!o.output || !strcmp(o.output, "-"))) {
        cli_error("export: sqlite writes a database file: give -o FILE");
        return 2;
    }
    /* A binary format is not for a terminal. */
    if (o.format == FMT_PPROF && (!o.output || !strcmp(o.output, "-")) && isatty(1)) {
        cli_error("export: pprof is binary: give -o FILE, or redirect standard output");
        return 2;
    }
    if (o.format != FMT_FOLDED && o.value != VAL_BYTES) {
        cli_error("export: --value is for --format folded");
        return 2;
    }
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    if (o.format == FMT_SQLITE) {
        int bad = export_sqlite(&a, e, o.output);
        mtl_engine_close(e);
        return bad;
    }
    struct mtl_buf b = MTL_BUF_INIT;
    int bad = o.format == FMT_FOLDED       ? export_folded(&a, e, &o, &b)
              : o.format == FMT_SPEEDSCOPE ? export_speedscope(&a, e, &b)
              : o.format == FMT_MASSIF     ? export_massif(&a, e, &b)
              : o.format == FMT_PPROF || o.format == FMT_DHAT ? export_stacks(&a, e, &o, &b)
                                           : export_csv(&a, e, &b);
    if (!bad)
        bad = write_output(&a, o.output, &b);
    else
        mtl_buf_release(&b);
    mtl_engine_close(e);
    return bad;
}
