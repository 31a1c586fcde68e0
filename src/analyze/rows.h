/*
 * rows.h: folding per-stack totals (stackagg.h) into the rows of a table:
 * by function (self: the site; inclusive: every function on the stack),
 * by file, by module or by thread; then sorting them.
 */
#ifndef MTL_ANALYZE_ROWS_H
#define MTL_ANALYZE_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/stackagg.h"

struct mtl_view;
struct mtl_reader;

enum mtl_group { MTL_BY_FUNCTION, MTL_BY_FILE, MTL_BY_MODULE, MTL_BY_THREAD };
enum mtl_sort { MTL_SORT_BYTES, MTL_SORT_CALLS, MTL_SORT_PER_CALL,
                MTL_SORT_PERCENT, MTL_SORT_FUNCTION };

#define MTL_ALL_THREADS UINT32_MAX

struct mtl_row {
    const char *function;   /* BY_FUNCTION; NULL otherwise */
    const char *file;       /* BY_FUNCTION (the site's file), BY_FILE */
    unsigned line;          /* BY_FUNCTION: the line that allocated most */
    const char *module;     /* BY_MODULE (and the function's module) */
    uint32_t thread;        /* BY_THREAD: the thread index */
    uint32_t location;      /* BY_FUNCTION: the location of that line */
    double calls, bytes, extra;
    double percent;         /* of the table's total bytes */
};

struct mtl_rows {
    struct mtl_row *row;
    size_t n;
    double calls, bytes, extra; /* totals (each block once) */
};

/* Folds the entries of one thread (or MTL_ALL_THREADS) into rows.  Stacks
 * with no visible frame make a row named "(no stack)". */
int mtl_rows_fold(struct mtl_rows *out, const struct mtl_stackagg *a,
                  struct mtl_view *v, const struct mtl_reader *r,
                  enum mtl_group by, int inclusive, uint32_t thread);

/* Sorts; ties are broken by the key's name, so output is deterministic. */
void mtl_rows_sort(struct mtl_rows *rows, const struct mtl_reader *r,
                   enum mtl_sort key, int descending);

/* The name a row is shown under (function, file, module or thread). */
const char *mtl_row_name(const struct mtl_row *row, const struct mtl_reader *r,
                         char *buf, size_t cap);

void mtl_rows_release(struct mtl_rows *rows);

#endif
