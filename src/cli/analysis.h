/*
 * analysis.h: what the analysis commands share: the filter and common
 * options, opening the trace with its symbol view, scanning with progress
 * on a terminal, and printing rows in text and JSON.
 */
#ifndef MTL_CLI_ANALYSIS_H
#define MTL_CLI_ANALYSIS_H

#include <stdio.h>

#include "analyze/filter.h"
#include "analyze/rows.h"
#include "analyze/scan.h"
#include "analyze/view.h"
#include "memtally/symbols.h"

struct analysis {
    const char *name;          /* the command, for messages */
    const char *path;          /* the trace */
    const char *path2;         /* a second trace (diff) */
    struct mtl_filter filter;
    struct mtl_symbolizer_options sym; /* --sysroot, --debug-dir */
    const char *debug_dirs[MTL_MAX_PATTERNS];
    int json;
    struct mtl_reader *r;
    struct mtl_view *v;
    int noted;                 /* the truncation note was printed */
};

/* A command's own options: called for each argument that is not a common
 * one; returns 1 if it consumed argv[*i] (advancing *i), 0 if unknown, -1
 * (after printing why) if malformed. */
typedef int (*analysis_opt_fn)(void *ctx, int argc, char **argv, int *i);

/* Parses argv: the filters, --json, the symbol options (--sysroot DIR,
 * --debug-dir DIR), then the command's own.  Returns 0 to go on, or an exit status (0 after --help, 2
 * after a usage error it printed).  ntraces is 1, or 2 for diff. */
int analysis_parse(struct analysis *a, int argc, char **argv, const char *usage,
                   int ntraces, analysis_opt_fn opt, void *ctx, int *exit_code);

/* Opens path (a->path by default) and its view.  Returns 0, or 1 after
 * printing why not. */
int analysis_open(struct analysis *a, const char *path);

/* Scans the opened trace; progress on stderr when it is a terminal.
 * Returns 0, or 1 after printing why (corrupt trace...).  A truncated
 * trace gets its note here. */
int analysis_scan(struct analysis *a, const struct mtl_scan_ops *ops, void *arg,
                  struct mtl_scan_result *res);

/* Scans the trace again from its start, with the view of the first scan
 * (which knows every stack by then): for commands of two passes. */
int analysis_rescan(struct analysis *a, const struct mtl_scan_ops *ops, void *arg,
                    struct mtl_scan_result *res);

void analysis_close(struct analysis *a);

/* 1 when the trace is sampled: figures are estimates.  Text output gets a
 * note from analysis_scan; JSON objects start with json_estimated's
 * "estimated": true, "sample_rate": N (nothing for full traces). */
int analysis_estimated(const struct analysis *a);
void json_estimated(const struct analysis *a);

/* Helpers for output. */
void json_row_location(FILE *f, const struct mtl_row *row);
void json_number(FILE *f, double v);      /* integral values without ".0" */
void json_frame(FILE *f, const struct mtl_location *l);
/* "function (file.c:12)": a row's name with where it is. */
const char *row_label(const struct mtl_reader *r, const struct mtl_row *row,
                      char *buf, size_t cap);

/* A table of rows: KEY, [EXTRA,] CALLS, BYTES, %. */
void print_rows_table(const struct analysis *a, const struct mtl_rows *rows,
                      size_t top, const char *key_header, const char *calls_header,
                      int with_extra, const char *extra_header);

/* If argv[*i] is one of the n options names, as "--name VALUE" or
 * "--name=VALUE": sets *which to its index and *val, advances *i past it,
 * returns 1.  Returns 0 when it is none of them, -1 (after saying so)
 * when its value is missing. */
int option_value(const char *cmd, int argc, char **argv, int *i,
                 const char *const *names, size_t n, size_t *which, const char **val);

/* --top N, for the commands that take it (see analysis_opt_fn). */
int parse_top(const char *cmd, int argc, char **argv, int *i, size_t *top);

#endif
