/*
 * internal.h: what the analyses of src/analyze share among themselves and
 * nobody else needs.
 */
#ifndef MTL_ANALYZE_INTERNAL_H
#define MTL_ANALYZE_INTERNAL_H

#include "analyze/analyses.h"

/* Fills the head every result starts with. */
void mtl__result_head(struct mtl_engine *e, struct mtl_result_head *h);

/* The peak of the live bytes of the blocks that pass f, and what was live
 * right after it, per stack (threads not split). */
int mtl__peak_stacks(struct mtl_engine *e, const struct mtl_filter *f,
                     struct mtl_stackagg *agg, double *peak, uint64_t *peak_us,
                     int *found);

/* The blocks never freed that pass f, per stack; those with a frame that
 * matches one of the suppressions go to *supp_bytes and *supp_blocks. */
int mtl__leaked_stacks(struct mtl_engine *e, const struct mtl_filter *f,
                       const char *const *suppressions, size_t nsuppressions,
                       struct mtl_stackagg *agg, double *supp_bytes, double *supp_blocks);

/* The blocks that pass f summed per (thread, type tag): in out, each
 * entry's stack is the tag's string id, 0 for untagged blocks. */
/* The rows just made at out->threads[out->nthreads] are thread t's: named
 * and counted in (report.c). */
void mtl__report_thread_made(struct mtl_report *out, const struct mtl_defs *d, uint32_t t);
/* report's table when the trace counted true calls (calls.c): 0, a
 * negative code, or 1 when the trace has no count after all (then out is
 * left empty, for the usual table). */
int mtl__calls_report(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_report_options *o, struct mtl_report *out);
int mtl__type_sums(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_stackagg *out);

#endif
