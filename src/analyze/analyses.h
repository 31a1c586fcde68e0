/*
 * analyses.h: every analysis of the engine, as a function that runs a
 * query on a trace and returns a result the caller owns (and releases
 * with the matching _release).  Results hold names that live in the
 * engine: use them before closing it.  Renderers (src/render) turn
 * results into text and JSON; nothing here prints.
 *
 * Every function returns 0 or a negative MTL_E* code (MTL_ECORRUPT: the
 * trace is damaged, the result holds nothing).  Figures are weights: exact
 * counts in full mode, unbiased estimates in sampled mode (`estimated`).
 */
#ifndef MTL_ANALYZE_ANALYSES_H
#define MTL_ANALYZE_ANALYSES_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/engine.h"
#include "analyze/filter.h"
#include "analyze/rows.h"
#include "common/bitset.h"

/* What every result starts with. */
struct mtl_result_head {
    int estimated;          /* a sampled trace: figures are estimates */
    uint64_t sample_rate;   /* bytes, when estimated */
    int attached;           /* begun by memtally attach: what was live
                               before it is not in the trace */
};

/* ---- report: the hprof table, per thread and in total ---------------- */

struct mtl_report_options {
    int total_only;         /* no per-thread tables */
    int inclusive;          /* a function counts all allocated below it */
    enum mtl_group by;
    enum mtl_sort sort;
    int descending;
    size_t top;             /* rows per table, 0: all */
    size_t stacks;          /* call paths under each row, 0: none */
};

struct mtl_thread_rows {
    uint32_t index, tid;
    const char *name;       /* "" when unnamed */
    double percent;         /* share of all bytes */
    struct mtl_rows rows;
};

struct mtl_report {
    struct mtl_result_head head;
    /* The trace counted true calls (record --calls) and the table is by
     * function: calls are the functions' true calls, bytes (and extra:
     * allocations) what was allocated while each was the innermost
     * counted function of the stack (calls.c). */
    int calls_counted;
    struct mtl_rows total;
    struct mtl_thread_rows *threads; /* those that allocated, in index order */
    size_t nthreads;
};

int mtl_report(struct mtl_engine *e, const struct mtl_filter *f,
               const struct mtl_report_options *o, struct mtl_report *out);
void mtl_report_release(struct mtl_report *r);

/* ---- peak: what was live when the live bytes were highest ------------ */

struct mtl_peak_options {
    size_t top, stacks;
    int by_thread;          /* also what each thread's blocks held then */
};

struct mtl_peak_thread {
    uint32_t index, tid;    /* the trace's thread index, the kernel's id */
    const char *name;       /* "" when unnamed */
    double bytes, blocks;
};

struct mtl_peak {
    struct mtl_result_head head;
    int found;              /* 0: no block passes the filters */
    double peak_bytes;
    uint64_t peak_time_us;
    struct mtl_rows rows;   /* calls: blocks */
    struct mtl_peak_thread *threads; /* with by_thread: those holding any,
                                        most bytes first */
    size_t nthreads;
};

int mtl_peak(struct mtl_engine *e, const struct mtl_filter *f,
             const struct mtl_peak_options *o, struct mtl_peak *out);
void mtl_peak_release(struct mtl_peak *p);

/* ---- leaks: what was live at the end --------------------------------- */

struct mtl_leaks_options {
    const char *const *suppressions; /* patterns: a block with a matching frame is not reported */
    size_t nsuppressions;
    size_t top, stacks;     /* stacks: paths per row (at least 1: the largest leak's stack) */
};

struct mtl_leaks {
    struct mtl_result_head head;
    double suppressed_bytes, suppressed_blocks;
    struct mtl_rows rows;   /* calls: blocks; paths[0]: the largest leak's stack, in full */
};

int mtl_leaks(struct mtl_engine *e, const struct mtl_filter *f,
              const struct mtl_leaks_options *o, struct mtl_leaks *out);
void mtl_leaks_release(struct mtl_leaks *l);

/* ---- temporary: blocks freed right after their allocation ------------ */

struct mtl_temporary_options {
    int within_set;         /* instead: freed at most within_us after allocation */
    uint64_t within_us;
    size_t top;
};

struct mtl_temporary {
    struct mtl_result_head head;
    double temporary_calls, temporary_bytes, calls;
    struct mtl_rows rows;   /* extra: temporary calls; percent: of all temporary calls */
};

int mtl_temporary(struct mtl_engine *e, const struct mtl_filter *f,
                  const struct mtl_temporary_options *o, struct mtl_temporary *out);
void mtl_temporary_release(struct mtl_temporary *t);

/* ---- stacks: the most frequent call stacks that reach a target ------- */

struct mtl_stacks_options {
    const char *target;     /* pattern (this or target_type) */
    const char *target_type;/* instead: the blocks of this type tag, cut
                               from their site outwards */
    size_t depth;           /* frames kept from the target outwards */
    double min_count;
    size_t top;
};

struct mtl_stack_group {
    double count, bytes, percent;
    size_t n;
    struct mtl_location *frames;
};

struct mtl_stacks {
    struct mtl_result_head head;
    double blocks, bytes;   /* of every block that reaches the target */
    size_t nreaching;       /* distinct cut stacks before --min-count and --top */
    struct mtl_stack_group *groups; /* most frequent first */
    size_t ngroups;
};

int mtl_stacks(struct mtl_engine *e, const struct mtl_filter *f,
               const struct mtl_stacks_options *o, struct mtl_stacks *out);
void mtl_stacks_release(struct mtl_stacks *s);

/* ---- tree: the call tree of allocations ------------------------------- */

/* How deep a tree goes at most, whatever max_depth says: a stack holds 256
 * frames at most as memtally records it, and JSON readers stop at some
 * depth of nesting (two levels per frame). */
#define MTL_TREE_MAX_DEPTH 500

struct mtl_tree_options {
    const char *callers;    /* bottom up from the functions matching it */
    const char *callees;    /* top down from the functions matching it */
    double min_percent;     /* nodes below this share of the root are left out */
    size_t max_depth;       /* 0: all, up to MTL_TREE_MAX_DEPTH */
    int inverted;           /* without callers or callees: from the allocation
                               sites down to their callers, not from main */
    int others;             /* the children left out by min_percent summed
                               into one last child, "(others)", instead */
};

struct mtl_tree_node {
    struct mtl_location where;  /* the function (the root: none) */
    double calls, bytes, percent; /* percent of the root's bytes */
    size_t merged;              /* "(others)": how many functions it sums;
                                   0 for a function's node */
    size_t nchildren;
    struct mtl_tree_node *children; /* largest first */
};

struct mtl_tree {
    struct mtl_result_head head;
    struct mtl_tree_node root;
};

int mtl_tree(struct mtl_engine *e, const struct mtl_filter *f,
             const struct mtl_tree_options *o, struct mtl_tree *out);
void mtl_tree_release(struct mtl_tree *t);

/* ---- types: objects and bytes by type tag ------------------------------ */

struct mtl_type_row {
    const char *type;       /* the tag's name, "(untagged)" for none */
    double calls, bytes;    /* allocated */
    double live_blocks, live_bytes; /* live at the end */
    double peak_blocks, peak_bytes; /* live at the peak of all that pass */
};

struct mtl_types {
    struct mtl_result_head head;
    struct mtl_type_row *rows;  /* most bytes allocated first */
    size_t n;
    struct mtl_type_row total;
    double peak_bytes;
    uint64_t peak_time_us;
};

int mtl_types(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_types *out);
void mtl_types_release(struct mtl_types *t);

/* ---- timeline: live bytes, allocation rate and RSS over time ---------- */

struct mtl_timeline_point {
    uint64_t time_us;       /* the end of the interval */
    double live;            /* live bytes at its end */
    double alloc_bytes, alloc_calls; /* allocated in it */
    uint64_t rss;           /* the last RSS sample so far, 0 before any */
    uint64_t gc_heap;       /* --heap gc: the collector's heap after the
                               last collection so far, 0 before any */
};

struct mtl_timeline {
    struct mtl_result_head head;
    int gc;                 /* of the collector's heap: gc_heap is filled */
    size_t n;
    struct mtl_timeline_point *points;
};

int mtl_timeline(struct mtl_engine *e, const struct mtl_filter *f, size_t points,
                 struct mtl_timeline *out);
void mtl_timeline_release(struct mtl_timeline *t);

/* ---- histogram: allocation sizes in power-of-two buckets -------------- */

struct mtl_histogram_bucket {
    uint64_t min, max;
    double calls, bytes, percent; /* percent of calls */
};

struct mtl_histogram {
    struct mtl_result_head head;
    double calls, bytes;
    size_t n;               /* non-empty buckets, smallest first */
    struct mtl_histogram_bucket buckets[65];
};

int mtl_histogram(struct mtl_engine *e, const struct mtl_filter *f,
                  struct mtl_histogram *out);

/* ---- lifetimes: when blocks were allocated against how long they lived -- */

/* Rows: lifetimes in powers of two of microseconds (row 0: under 1 us,
 * row k: [2^(k-1), 2^k) us, the last row: 2^(ROWS-2) us and more);
 * blocks still live at the end of the trace have a row of their own. */
#define MTL_LIFETIME_ROWS 40

struct mtl_lifetimes {
    struct mtl_result_head head;
    uint64_t width_us;      /* of a column: column c holds blocks allocated in
                               [c * width_us, (c + 1) * width_us) */
    size_t ncols;
    double calls, bytes;    /* of all blocks that pass */
    /* [row * ncols + col], rows 0 .. MTL_LIFETIME_ROWS - 1 */
    double *cell_calls, *cell_bytes;
    double *live_calls, *live_bytes; /* [col]: never freed */
};

/* The blocks that pass f, by allocation time (at most cols columns of
 * equal width, as few as cover the trace) and lifetime. */
int mtl_lifetimes(struct mtl_engine *e, const struct mtl_filter *f, size_t cols,
                  struct mtl_lifetimes *out);
void mtl_lifetimes_release(struct mtl_lifetimes *l);

/* ---- diff: what changed from one trace to another, by function ------- */

enum { MTL_DIFF_CALLS, MTL_DIFF_BYTES, MTL_DIFF_PEAK, MTL_DIFF_LEAKED, MTL_DIFF_FIELDS };

struct mtl_diff_row {
    const char *function;   /* NULL for the total */
    double v[2][MTL_DIFF_FIELDS]; /* [0] base, [1] new */
};

struct mtl_diff {
    int estimated;          /* either trace is sampled */
    struct mtl_diff_row *rows; /* largest change in bytes first */
    size_t n;
    struct mtl_diff_row total;
    char *names;            /* the rows' function names */
};

int mtl_diff(struct mtl_engine *base, struct mtl_engine *next,
             const struct mtl_filter *f, size_t top, struct mtl_diff *out);
void mtl_diff_release(struct mtl_diff *d);

/* ---- stack figures: per stack, whole, for the exports that keep stacks
 * (pprof, dhat) ------------------------------------------------------------ */

#define MTL_NO_FRAME UINT32_MAX

/* A frame of a stack as it ran: a native address (or a runtime's custom
 * frame) with the functions it stands for, inlined ones first.  Frames
 * whose every function is hidden (the allocator's plumbing, --hide) are
 * left out; wrappers stay: they are code that ran. */
struct mtl_stack_frame {
    uint64_t addr;          /* native: the address as recorded; custom: 0 */
    uint32_t module;        /* module index, UINT32_MAX when none */
    uint32_t parent;        /* the next frame outwards, or MTL_NO_FRAME */
    size_t first, nlocs;    /* its functions: locs[first .. first + nlocs - 1] */
};

struct mtl_stack_figure {
    uint32_t stack;
    uint32_t frame;                 /* its innermost frame, or MTL_NO_FRAME */
    const char *site;               /* the function report counts it under
                                       (its site), "(no stack)" for none */
    double alloc_calls, alloc_bytes;/* allocated */
    double inuse_calls, inuse_bytes;/* live at the moment asked (options) */
    /* With o->lifetimes (DHAT's figures): */
    double life_us;                 /* lifetimes added up (to the end for
                                       blocks never freed) */
    double max_calls, max_bytes;    /* live of this stack at its own highest */
    double peak_calls, peak_bytes;  /* live at the peak of all stacks */
    double end_calls, end_bytes;    /* live at the end */
};

struct mtl_stack_figures_options {
    /* In use: live at the end of the trace, unless one of these: */
    int at_set;
    uint64_t at_us;         /* live at this time */
    int at_peak;            /* live at the peak of the blocks that pass */
    int lifetimes;          /* the DHAT figures too (a pass over the trace) */
};

struct mtl_stack_figures {
    struct mtl_result_head head;
    struct mtl_stack_figure *figures; /* most bytes allocated first */
    size_t n;
    struct mtl_stack_frame *frames;
    size_t nframes;
    struct mtl_location *locs;  /* the frames' functions */
    size_t nlocs;
    uint64_t inuse_us;          /* the moment in use is about */
    uint64_t peak_us, end_us;   /* the peak (lifetimes) and the trace's end */
    double peak_bytes;
    struct mtl_trace_info trace;        /* its strings live in the engine */
    const struct mtl_module *modules;   /* by index, as the trace defines them */
    uint32_t nmodules;
};

int mtl_stack_figures(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_stack_figures_options *o,
                      struct mtl_stack_figures *out);
void mtl_stack_figures_release(struct mtl_stack_figures *s);

/* ---- heap: a running process's live heap, from a trace of it so far ---- */

#define MTL_HEAP_FRAMES 8
#define MTL_HEAP_PEEK 256

/* One live block: where it is, how big and old, who made it.  peek is
 * not the trace's: the caller reads it from the process (memtally heap). */
struct mtl_live_block {
    uint64_t ptr, size, alloc_us;
    uint32_t thread, tid;
    const char *type;                      /* its tag's name, NULL for none */
    struct mtl_location frames[MTL_HEAP_FRAMES]; /* visible, innermost first */
    size_t nframes;
    uint8_t peek[MTL_HEAP_PEEK];
    size_t npeek;                          /* bytes read into peek */
    int peek_errno;                        /* why none could be read, or 0 */
};

enum mtl_heap_by { MTL_HEAP_BY_SITE, MTL_HEAP_BY_TYPE, MTL_HEAP_BY_THREAD, MTL_HEAP_BY_SIZE };

struct mtl_heap_options {
    enum mtl_heap_by by;
    size_t top;                /* rows of the grouping and largest blocks (0: 10) */
    size_t stacks;             /* call paths under each site row */
};

struct mtl_heap_snapshot {
    struct mtl_result_head head;
    uint64_t at_us;            /* the trace's end: the snapshot's time */
    double live_bytes, live_blocks;
    enum mtl_heap_by by;
    struct mtl_rows rows;      /* by site (function), type or thread; calls: blocks */
    struct mtl_histogram sizes;/* by size */
    struct mtl_live_block *largest; /* the largest live blocks, largest first */
    size_t nlargest;
    /* Beside them, what the process says of itself (filled by the caller,
     * as peek: not the trace's): its RSS, and glibc's malloc's figures. */
    int have_rss, have_malloc;
    uint64_t rss, malloc_in_use, malloc_free, malloc_arena, malloc_free_chunks;
};

/* What is live at the end of the trace (for a dump of a running process:
 * its heap now), grouped, and its largest blocks. */
int mtl_heap_snapshot(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_heap_options *o, struct mtl_heap_snapshot *out);
void mtl_heap_snapshot_release(struct mtl_heap_snapshot *h);

/* ---- totals: what `memtally info` tells ------------------------------- */

struct mtl_totals {
    uint64_t allocations, frees, unmatched_frees, bytes_allocated;
    uint64_t live_bytes, live_blocks;    /* at the end */
    uint64_t peak_live_bytes, peak_time_us;
    uint64_t events, peak_rss;
    /* weighted (in sampled mode, estimates; in full mode, the same) */
    double est_allocations, est_bytes, est_frees;
    double est_live_bytes, est_peak_live_bytes;
    uint64_t est_peak_time_us;
    uint32_t threads_allocating;
    uint32_t unique_stacks;              /* distinct stacks of allocations */
    uint64_t duration_us;
    uint64_t tagged_allocations;         /* with a type tag (report --by type) */
    /* the garbage collector's heap (read with --heap gc): collections, and
     * its size after the last one and at most */
    uint64_t collections, gc_heap_bytes, gc_heap_peak;
    uint64_t other_heap_allocations;     /* of the heap not read (malloc's
                                            or the collector's) */
};

int mtl_totals(struct mtl_engine *e, struct mtl_totals *out);

/* The same, event by event, for a trace read as it grows (`top`): feed it
 * every event of a scan or mtl_engine_follow (ops->event). */
struct mtl_totals_acc {
    struct mtl_totals t;
    struct mtl_bitset threads, stacks;   /* seen allocating */
    double est_live;
};
#define MTL_TOTALS_ACC_INIT { { 0 }, MTL_BITSET_INIT, MTL_BITSET_INIT, 0 }
int mtl_totals_event(struct mtl_totals_acc *acc, const struct mtl_event *ev,
                     const struct mtl_block *b);
void mtl_totals_acc_release(struct mtl_totals_acc *acc);

/* ---- info: what a trace holds ------------------------------------------ */

struct mtl_info {
    struct mtl_trace_info trace;   /* its strings live in the engine */
    struct mtl_totals totals;
    uint32_t threads_seen, modules;
    uint32_t stack_nodes;          /* frames in the tree of stacks */
    uint64_t blocks;               /* of the trace file */
    enum mtl_heap heap;            /* the heap the totals are of */
};

int mtl_info(struct mtl_engine *e, struct mtl_info *out);

#endif
