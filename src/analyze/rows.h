/*
 * rows.h: folding per-stack totals (stackagg.h) into the rows of a table:
 * by function (self: the site; inclusive: every function on the stack),
 * by file, by module, by thread or by type tag; sorting them; and, for each row, its
 * heaviest call paths.  The first steps of report, peak, leaks,
 * temporary and diff.
 */
#ifndef MTL_ANALYZE_ROWS_H
#define MTL_ANALYZE_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/stackagg.h"
#include "analyze/view.h"

struct mtl_defs;

/* BY_TYPE folds sums made per (thread, type tag) (the entries' stack is
 * the tag: analyze/types.c), not per stack. */
enum mtl_group { MTL_BY_FUNCTION, MTL_BY_FILE, MTL_BY_MODULE, MTL_BY_THREAD, MTL_BY_TYPE };
enum mtl_sort { MTL_SORT_BYTES, MTL_SORT_CALLS, MTL_SORT_PER_CALL,
                MTL_SORT_PERCENT, MTL_SORT_FUNCTION, MTL_SORT_EXTRA };

#define MTL_ALL_THREADS UINT32_MAX

/* One call path under a row: visible frames, innermost first (copies of
 * the view's locations, whose strings live as long as the view). */
struct mtl_path {
    double calls, bytes;
    uint32_t stack;          /* a stack with these frames (the heaviest) */
    size_t n;
    struct mtl_location *frames;
};

struct mtl_row {
    const char *function;   /* BY_FUNCTION; NULL otherwise */
    const char *file;       /* BY_FUNCTION (the site's file), BY_FILE */
    unsigned line;          /* BY_FUNCTION: the line that allocated most */
    const char *module;     /* BY_MODULE (and the function's module) */
    uint32_t thread;        /* BY_THREAD: the thread index */
    uint32_t tid;           /* BY_THREAD: the kernel's id */
    const char *thread_name;/* BY_THREAD: "" when unnamed */
    const char *type;       /* BY_TYPE: the tag, "(untagged)" for none */
    uint32_t location;      /* BY_FUNCTION: the location of that line */
    uint32_t key;           /* the row's key: function id, thread... */
    double calls, bytes, extra;
    double percent;         /* of the table's total bytes */
    struct mtl_path *paths; /* mtl_rows_paths: heaviest first */
    size_t npaths;
};

/* A function passed over on the way to sites (a wrapper, or unnamed):
 * what it would have been given had it been a site. */
struct mtl_skipped {
    const char *function;
    double calls, bytes;
};

struct mtl_rows {
    struct mtl_row *row;
    size_t n;
    size_t cut;                 /* rows left out by mtl_rows_truncate */
    double calls, bytes, extra; /* totals (each block once) */
    struct mtl_skipped *skipped;/* self by function only; most bytes first */
    size_t nskipped;
};

/* Folds the entries of one thread (or MTL_ALL_THREADS) of a into rows.
 * Stacks with no visible frame make a row named "(no stack)".  d names
 * threads for BY_THREAD.  0 or a negative code. */
int mtl_rows_fold(struct mtl_rows *out, const struct mtl_stackagg *a,
                  struct mtl_view *v, const struct mtl_defs *d,
                  enum mtl_group by, int inclusive, uint32_t thread);

/* Sorts by key, descending or not; ties are broken by the row's name,
 * ascending either way, so the output is deterministic. */
void mtl_rows_sort(struct mtl_rows *rows, enum mtl_sort key, int descending);

/* Keeps the first n rows (n 0: all). */
void mtl_rows_truncate(struct mtl_rows *rows, size_t n);

/* For each row (by function, self or inclusive), its n heaviest call paths
 * from the entries of a (of one thread or MTL_ALL_THREADS), by bytes:
 * stacks with the same visible frames, at most depth of them (0: all), count
 * as one path.  0 or a negative code. */
int mtl_rows_paths(struct mtl_rows *rows, const struct mtl_stackagg *a,
                   struct mtl_view *v, int inclusive, uint32_t thread, size_t n,
                   size_t depth);

/* The name a row is shown under (function, file, module, thread or type). */
const char *mtl_row_name(const struct mtl_row *row, char *buf, size_t cap);

void mtl_rows_release(struct mtl_rows *rows);

#endif
