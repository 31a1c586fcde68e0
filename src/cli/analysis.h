/*
 * analysis.h: what the analysis commands share: the options every one
 * takes (filters, frame options, symbol and index options, --json,
 * --wide), opening the trace's engine with progress and warnings on
 * stderr, saying why a query failed, and writing its rendered output.
 */
#ifndef MTL_CLI_ANALYSIS_H
#define MTL_CLI_ANALYSIS_H

#include <stddef.h>

#include "analyze/analyses.h"
#include "analyze/engine.h"
#include "analyze/filter.h"
#include "common/buf.h"
#include "render/render.h"

#define CLI_MAX_DEBUG_DIRS 16

/* Which of the optional common options a command takes. */
enum {
    CLI_TOP = 1,         /* --top N */
    CLI_STACKS = 2,      /* --stacks N: call paths under each row */
    CLI_TWO_TRACES = 4,  /* BASE NEW */
    CLI_WHOLE_TRACE = 8, /* about the whole trace: no filters, frames, tables */
    CLI_SYMBOLS = 16,    /* with CLI_WHOLE_TRACE: --sysroot and --debug-dir all the same */
};

struct analysis {
    const char *name;          /* the command, for messages */
    const char *path, *path2;  /* the traces */
    struct mtl_filter filter;
    int json, wide;
    size_t top, stacks;
    struct mtl_engine_options eopt;
    const char *debug_dirs[CLI_MAX_DEBUG_DIRS];
    int noted;                 /* the truncation note was printed */
    int progress_shown;
};

/* A command's own options: called for each argument that is not a common
 * one; returns 1 if it consumed argv[*i] (advancing *i), 0 if unknown, -1
 * (after printing why) if malformed. */
typedef int (*analysis_opt_fn)(void *ctx, int argc, char **argv, int *i);

/* Parses argv.  Returns 0 to go on, or 1 with *exit_code set (0 after
 * --help, 2 after a usage error it printed). */
int analysis_parse(struct analysis *a, int argc, char **argv, const char *usage,
                   unsigned flags, analysis_opt_fn opt, void *ctx, int *exit_code);

/* Opens the engine on path; NULL after printing why. */
struct mtl_engine *analysis_open(struct analysis *a, const char *path);

/* After a query on e returned rc: prints why it failed (returns 1), or the
 * note of a truncated trace once (returns 0). */
int analysis_done(struct analysis *a, struct mtl_engine *e, int rc);

/* The options of the renderers, for this command's output. */
struct mtl_render_options analysis_render_options(const struct analysis *a);

/* Writes b to stdout and releases it.  Returns 0, or 1 after saying why. */
int analysis_output(struct analysis *a, struct mtl_buf *b);

/* If argv[*i] is one of the n options names, as "--name VALUE" or
 * "--name=VALUE": sets *which to its index and *val, advances *i past it,
 * returns 1.  Returns 0 when it is none of them, -1 (after saying so)
 * when its value is missing. */
int option_value(const char *cmd, int argc, char **argv, int *i,
                 const char *const *names, size_t n, size_t *which, const char **val);

/* A whole number of at least min for option opt; -1 after saying why. */
int parse_count(const char *cmd, const char *opt, const char *val, long min, size_t *out);

#endif
