/*
 * leaks.c: what was still live at the end of the trace, by site, less
 * what the suppressions name (a block with a frame matching one): the
 * sums per stack of the blocks never freed, each stack then kept or
 * suppressed whole.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/view.h"
#include "memtally/errors.h"

int mtl__leaked_stacks(struct mtl_engine *e, const struct mtl_filter *f,
                       const char *const *suppressions, size_t nsuppressions,
                       struct mtl_stackagg *agg, double *supp_bytes, double *supp_blocks)
{
    struct mtl_filter never = *f;
    never.never_freed = 1;
    struct mtl_stackagg all = MTL_STACKAGG_INIT(0);
    *agg = (struct mtl_stackagg)MTL_STACKAGG_INIT(0);
    double sb = 0, sk = 0;
    int rc = mtl_engine_sums(e, &never, nsuppressions ? &all : agg);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    for (size_t i = 0; rc == 0 && nsuppressions && i < all.n; i++) {
        const struct mtl_stackagg_entry *en = &all.e[i];
        int m = 0;
        for (size_t k = 0; k < nsuppressions && !m && rc == 0; k++)
            if ((m = mtl_view_stack_matches(v, en->stack, suppressions[k])) < 0)
                rc = m;
        if (rc < 0)
            break;
        if (m) {
            sb += en->bytes;
            sk += en->calls;
        } else {
            rc = mtl_stackagg_add(agg, 0, en->stack, en->calls, en->bytes, 0);
        }
    }
    mtl_stackagg_release(&all);
    if (supp_bytes)
        *supp_bytes = sb;
    if (supp_blocks)
        *supp_blocks = sk;
    return rc;
}

int mtl_leaks(struct mtl_engine *e, const struct mtl_filter *f,
              const struct mtl_leaks_options *o, struct mtl_leaks *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    struct mtl_stackagg agg;
    int rc = mtl__leaked_stacks(e, f, o->suppressions, o->nsuppressions, &agg,
                                &out->suppressed_bytes, &out->suppressed_blocks);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = mtl_rows_fold(&out->rows, &agg, v, mtl_engine_defs(e), MTL_BY_FUNCTION, 0,
                           MTL_ALL_THREADS);
    if (rc == 0) {
        mtl_rows_sort(&out->rows, MTL_SORT_BYTES, 1);
        mtl_rows_truncate(&out->rows, o->top);
        rc = mtl_rows_paths(&out->rows, &agg, v, 0, MTL_ALL_THREADS,
                            o->stacks ? o->stacks : 1, 0);
    }
    mtl_stackagg_release(&agg);
    if (rc < 0)
        mtl_leaks_release(out);
    return rc;
}

void mtl_leaks_release(struct mtl_leaks *l)
{
    mtl_rows_release(&l->rows);
}
