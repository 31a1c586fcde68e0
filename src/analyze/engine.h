/*
 * engine.h: the analysis engine on one trace.  An engine opens a trace
 * from a source (a file, a descriptor, memory, or a file still being
 * written), keeps its definitions and a symbol view, and runs the block
 * scans every analysis is made of (analyses.h).  Nothing here prints: the
 * caller gets codes, and messages through the warn callback.
 *
 *     struct mtl_engine *e;
 *     struct mtl_source src = { .kind = MTL_SOURCE_PATH, .path = "x.mtly" };
 *     if (mtl_engine_open(&e, &src, NULL) < 0) ...
 *     struct mtl_report rep;
 *     mtl_report(e, &filter, &options, &rep);   results point into e:
 *     ... render rep ...                         use them before closing it
 *     mtl_report_release(&rep);
 *     mtl_engine_close(e);
 */
#ifndef MTL_ANALYZE_ENGINE_H
#define MTL_ANALYZE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/filter.h"
#include "analyze/scan.h"
#include "memtally/symbols.h"

struct mtl_engine;
struct mtl_view;
struct mtl_defs;

enum mtl_source_kind { MTL_SOURCE_PATH, MTL_SOURCE_FD, MTL_SOURCE_MEMORY };

struct mtl_source {
    enum mtl_source_kind kind;
    const char *path;       /* PATH: the file; others: a name for messages */
    int fd;                 /* FD: read with pread, never closed by the engine */
    const void *data;       /* MEMORY */
    size_t size;
    int growing;            /* still being written: read what is there and
                               follow (mtl_engine_follow); never indexed */
};

enum mtl_index_policy {
    MTL_INDEX_AUTO = 0,     /* use the trace's index; build it when a query
                               needs what only it gives quickly */
    MTL_INDEX_OFF = 1,      /* stream the trace for every query */
};

struct mtl_engine_options {
    struct mtl_symbolizer_options symbols; /* where binaries and debug files are */
    enum mtl_index_policy index;
    const char *index_dir;            /* NULL: MEMTALLY_INDEX_DIR, XDG_CACHE_HOME... */
    unsigned threads;                 /* 0: one per core */
    /* For a caller that asks every view of one filter in a row (the
     * viewer): with an index, the sums, the timeline and the lifetimes of
     * a filter come from one pass (digest.h), kept for the next query of
     * the same filter. */
    int digest;
    /* The heaps analysed (MTL_HEAPS_*, memtally/trace.h), 0 for malloc's:
     * one heap at a time, so that malloc's and a collector's are never
     * summed.  Only malloc's is indexed; another is read from the trace. */
    unsigned heaps;
    /* Progress of a long step: what, and the fraction done in [0, 1];
     * done is 1 when the step ends. */
    void (*progress)(void *arg, const char *what, double done);
    /* A one-line note: a module whose symbols cannot be used, and the
     * like.  Each is given once. */
    void (*warn)(void *arg, const char *message);
    void *arg;
};

/* Opens the source and reads the trace's header.  On success *out is an
 * engine that mtl_engine_close() releases.  MTL_E* codes as the reader's. */
int mtl_engine_open(struct mtl_engine **out, const struct mtl_source *src,
                    const struct mtl_engine_options *opt);

/* Passes the symbol warnings gathered so far to opt->warn, then releases
 * e.  e may be NULL. */
void mtl_engine_close(struct mtl_engine *e);

/* The heaps its analyses read (MTL_HEAPS_*). */
unsigned mtl_engine_heaps(const struct mtl_engine *e);

/* The trace's definitions: complete once a scan has read the trace. */
const struct mtl_defs *mtl_engine_defs(struct mtl_engine *e);

/* The view for the frame options of f (hide, wrappers, keep): made on
 * first need, and again when the options change.  NULL on out of memory. */
struct mtl_view *mtl_engine_view(struct mtl_engine *e, const struct mtl_filter *f);

/* Runs a scan (scan.h) of the blocks that pass f: from the trace's index
 * when it has one, or when building it costs less than the scan would
 * without (see mtl_engine_index); else by reading the trace.  Returns 0, or a
 * negative code: MTL_ECORRUPT (what came before was reported; see
 * mtl_engine_blocks), MTL_ENOMEM, MTL_ESTOPPED when a callback stopped it. */
int mtl_engine_scan(struct mtl_engine *e, const struct mtl_filter *f,
                    const struct mtl_scan_ops *ops, void *arg,
                    struct mtl_scan_result *res);

/* The blocks that pass f and are live right after the event numbered seq
 * (an allocation's alloc_seq, as a scan gives it). */
int mtl_engine_live_after(struct mtl_engine *e, const struct mtl_filter *f, uint64_t seq,
                          int (*block)(void *arg, const struct mtl_block *b), void *arg);

/* Starts reading the symbols of the modules that the stacks known so far
 * use, on a thread beside the scan that follows (symbols/prefetch.h), for
 * an analysis that will name its stacks.  Once per engine; not when the
 * engine may use one thread only.  mtl_engine_sums and _live_sums call it. */
void mtl_engine_prefetch_symbols(struct mtl_engine *e);

struct mtl_digest;
/* The digest of f (opt.digest; made now, or the last one if f is the
 * same), built on the index (made now if need be).  MTL_EINVAL when the
 * engine keeps none (no opt.digest, no index). */
int mtl_engine_digest(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_digest **out);

struct mtl_stackagg;
/* The weights of the blocks that pass f, summed per (thread, stack) into
 * out (per thread when out->per_thread): the core of most analyses, which
 * an index answers on every core, from its own sums when f has no
 * condition but on threads and stacks. */
int mtl_engine_sums(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_stackagg *out);

/* The same of the blocks that pass f and are live right after event seq. */
int mtl_engine_live_sums(struct mtl_engine *e, const struct mtl_filter *f, uint64_t seq,
                         struct mtl_stackagg *out);

struct mtl_curve;
/* The live curve of the blocks that pass f (curve.h): its peak, and with
 * c->buckets its buckets of time.  c must be zeroed but for c->buckets. */
int mtl_engine_curve(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_curve *c);

/* The trace's index, built now if it has none: its file ("" when it could
 * not be saved and lives in memory) and size.  MTL_EINVAL for a source
 * that is not indexed (memory, a growing trace, MTL_INDEX_OFF). */
int mtl_engine_index(struct mtl_engine *e, const char **path, uint64_t *size);

struct mtl_totals;
/* The totals of the whole trace from its index; MTL_ENOENT without one. */
int mtl_engine_totals(struct mtl_engine *e, struct mtl_totals *t);

/* A growing trace: reads what was written since the last call, passing
 * its new blocks (at their allocation, those that pass f's conditions at
 * allocation) and every event to ops (b NULL).  0, or a negative code. */
int mtl_engine_follow(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_scan_ops *ops, void *arg);

/* 1 when the trace is sampled (figures are estimates), with its rate. */
int mtl_engine_estimated(const struct mtl_engine *e, uint64_t *sample_rate);

/* Whole blocks read by the last scan, whether the trace was found cut
 * short, and the source's name: for messages. */
uint64_t mtl_engine_blocks(const struct mtl_engine *e);
int mtl_engine_truncated(const struct mtl_engine *e);
const char *mtl_engine_name(const struct mtl_engine *e);

/* Passes the symbol warnings gathered so far to opt->warn. */
void mtl_engine_warnings(struct mtl_engine *e);

#endif
