/*
 * render.h: the engine's results (analyze/analyses.h) as text tables and
 * JSON (docs/ANALYSIS.md documents both).  Renderers append to a buffer
 * and decide nothing about the numbers: every figure was computed by the
 * analysis.  The CLI writes the buffer to stdout; the viewer and the
 * exports use the same functions.
 */
#ifndef MTL_RENDER_RENDER_H
#define MTL_RENDER_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/analyses.h"
#include "common/buf.h"
#include "common/json.h"

struct mtl_render_options {
    int json;
    size_t width;          /* text: the widest a name column gets, 0: no limit */
    size_t stacks;         /* text: call paths shown under each row */
    const char *trace;     /* the trace's name, for notes */
};

/* One table of rows, in the one layout of memtally's tables: a name
 * column, then the figures.  What the columns are: */
struct mtl_table_spec {
    const char *key;        /* FUNCTION, SITE, FILE, MODULE, THREAD */
    const char *calls;      /* CALLS or BLOCKS */
    const char *extra;      /* a column before calls (TEMPORARY), or NULL */
    int per_call;           /* a PER CALL column */
    int total;              /* a total row */
};

/* The rows as a text table, with at most `stacks` of each row's paths
 * under it. */
void mtl_render_table(struct mtl_buf *b, const struct mtl_rows *rows,
                      const struct mtl_table_spec *spec, size_t width, size_t stacks);

/* "== TITLE: P% of all bytes, B bytes in N calls ==" */
void mtl_render_banner(struct mtl_buf *b, const char *title, double percent,
                       double bytes, double calls);

/* "function (file.c:12)": a row's name with where it is. */
const char *mtl_render_row_label(const struct mtl_row *row, char *buf, size_t cap);

/* JSON pieces: a row's "function", "file", "line"; a frame object. */
void mtl_render_json_location(struct mtl_json *j, const struct mtl_row *row);
void mtl_render_json_frame(struct mtl_json *j, const struct mtl_location *l);
/* "estimated": true, "sample_rate": R (nothing for a full trace). */
void mtl_render_json_head(struct mtl_json *j, const struct mtl_result_head *h);
/* The note text output starts with for a sampled trace. */
void mtl_render_text_head(struct mtl_buf *b, const struct mtl_result_head *h);
/* The frames passed over on the way to sites, as a note (text) or
 * "skipped": [...] (JSON). */
void mtl_render_skipped(struct mtl_buf *b, const struct mtl_rows *rows);
void mtl_render_json_skipped(struct mtl_json *j, const struct mtl_rows *rows);
/* "1.5 MiB" style. */
const char *mtl_human_bytes(char *buf, size_t cap, double bytes);

void mtl_render_report(struct mtl_buf *b, const struct mtl_report *r,
                       const struct mtl_report_options *o,
                       const struct mtl_render_options *ro);
void mtl_render_peak(struct mtl_buf *b, const struct mtl_peak *p,
                     const struct mtl_render_options *ro);
void mtl_render_leaks(struct mtl_buf *b, const struct mtl_leaks *l,
                      const struct mtl_render_options *ro);
void mtl_render_temporary(struct mtl_buf *b, const struct mtl_temporary *t,
                          const struct mtl_render_options *ro);
void mtl_render_stacks(struct mtl_buf *b, const struct mtl_stacks *s,
                       const struct mtl_stacks_options *o,
                       const struct mtl_render_options *ro);
void mtl_render_tree(struct mtl_buf *b, const struct mtl_tree *t,
                     const struct mtl_tree_options *o,
                     const struct mtl_render_options *ro);
/* csv: time_us,live_bytes,alloc_bytes,alloc_calls,rss_bytes */
void mtl_render_timeline(struct mtl_buf *b, const struct mtl_timeline *t, int csv,
                         const struct mtl_render_options *ro);
/* memtally heap: the live heap of process pid running program. */
void mtl_render_heap(struct mtl_buf *b, const struct mtl_heap_snapshot *h, int pid,
                     const char *program, const struct mtl_render_options *ro);
void mtl_render_histogram(struct mtl_buf *b, const struct mtl_histogram *h,
                          const struct mtl_render_options *ro);
void mtl_render_diff(struct mtl_buf *b, const struct mtl_diff *d,
                     const struct mtl_render_options *ro);
void mtl_render_info(struct mtl_buf *b, const struct mtl_info *in,
                     const struct mtl_render_options *ro);
void mtl_render_types(struct mtl_buf *b, const struct mtl_types *t,
                      const struct mtl_render_options *ro);
/* JSON only: what the viewer draws. */
void mtl_render_lifetimes(struct mtl_buf *b, const struct mtl_lifetimes *l);

/* export.c: formats other tools read.  folded: "outer;...;inner VALUE"
 * lines from a call tree, VALUE its calls (calls) or bytes; csv: the
 * total rows of a report. */
void mtl_render_folded(struct mtl_buf *b, const struct mtl_tree *t, int calls);
/* Folded lines from the call paths under each row (their bytes). */
void mtl_render_folded_paths(struct mtl_buf *b, const struct mtl_rows *rows);
void mtl_render_report_csv(struct mtl_buf *b, const struct mtl_report *r);
/* speedscope's JSON: one sampled profile per tree (a thread's), samples
 * weighted by bytes.  0, or -1 when out of memory. */
struct mtl_speedscope_profile {
    const char *name;
    const struct mtl_tree *tree;
};
int mtl_render_speedscope(struct mtl_buf *b, const char *name,
                          const struct mtl_speedscope_profile *p, size_t n);
/* massif's file (ms_print, massif-visualizer): snapshots of the live heap,
 * detailed with a tree from the sites through their callers (tree), or
 * the peak's sites (peak_rows). */
struct mtl_massif_snapshot {
    uint64_t time_us;
    double heap;
    const struct mtl_tree *tree;       /* NULL: no detail */
    const struct mtl_rows *peak_rows;  /* the peak snapshot */
};
void mtl_render_massif(struct mtl_buf *b, const char *cmd,
                       const struct mtl_massif_snapshot *s, size_t n);

/* pprof.c: a gzip'd pprof profile (profile.proto) of the stack figures.
 * 0, or -1 when out of memory. */
int mtl_render_pprof(struct mtl_buf *b, const struct mtl_stack_figures *s);
/* dhat.c: DHAT's JSON (dh_view.html) of the stack figures, made with
 * lifetimes.  0, or -1 when out of memory. */
int mtl_render_dhat(struct mtl_buf *b, const struct mtl_stack_figures *s);

/* sqlite.c: an SQLite database of the trace, written as the blocks come
 * (mtl_sqlite_block, in any order), then the tables of stacks, frames,
 * threads, modules and the timeline (mtl_sqlite_finish), and renamed into
 * place.  Each returns 0, or -1 with mtl_sqlite_error's message;
 * mtl_sqlite_abort releases the writer (after finish too) and removes
 * what an unfinished one wrote. */
struct mtl_sqlite;
struct mtl_block;
struct mtl_sqlite_tables {
    const struct mtl_stack_figures *stacks; /* of the blocks given */
    const struct mtl_timeline *timeline;    /* NULL: none */
    const struct mtl_thread *threads;
    uint32_t nthreads;
};
int mtl_sqlite_create(struct mtl_sqlite **out, const char *path, char *err, size_t cap);
int mtl_sqlite_block(struct mtl_sqlite *w, const struct mtl_block *b, const char *type);
int mtl_sqlite_finish(struct mtl_sqlite *w, const struct mtl_sqlite_tables *t);
const char *mtl_sqlite_error(const struct mtl_sqlite *w);
void mtl_sqlite_abort(struct mtl_sqlite *w);

#endif
