/*
 * leaks.c: what was still live at the end of the trace, by site, less
 * what the suppressions name (a block with a frame matching one).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/view.h"
#include "memtally/errors.h"

struct leak_scan {
    struct mtl_view *v;
    const char *const *supp;
    size_t nsupp;
    int8_t *suppressed;        /* per stack: -1 unknown, 0, 1 */
    size_t cap;
    double supp_bytes, supp_blocks;
    struct mtl_stackagg agg;
};

static int is_suppressed(struct leak_scan *l, uint32_t stack)
{
    if (!l->nsupp)
        return 0;
    if (stack >= l->cap) {
        size_t cap = l->cap ? l->cap : 1024;
        while (cap <= stack)
            cap *= 2;
        int8_t *p = realloc(l->suppressed, cap);
        if (!p)
            return MTL_ENOMEM;
        memset(p + l->cap, -1, cap - l->cap);
        l->suppressed = p;
        l->cap = cap;
    }
    if (l->suppressed[stack] < 0) {
        int m = 0;
        for (size_t i = 0; i < l->nsupp && !m; i++)
            if ((m = mtl_view_stack_matches(l->v, stack, l->supp[i])) < 0)
                return m;
        l->suppressed[stack] = (int8_t)m;
    }
    return l->suppressed[stack];
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct leak_scan *l = arg;
    if (b->free_us != MTL_NEVER)
        return 0;
    int s = is_suppressed(l, b->stack);
    if (s < 0)
        return s;
    if (s) {
        l->supp_bytes += b->weight_bytes;
        l->supp_blocks += b->weight_count;
        return 0;
    }
    return mtl_stackagg_add(&l->agg, 0, b->stack, b->weight_count, b->weight_bytes, 0);
}

int mtl__leaked_stacks(struct mtl_engine *e, const struct mtl_filter *f,
                       const char *const *suppressions, size_t nsuppressions,
                       struct mtl_stackagg *agg, double *supp_bytes, double *supp_blocks)
{
    struct leak_scan l = { .supp = suppressions, .nsupp = nsuppressions,
                           .agg = MTL_STACKAGG_INIT(0) };
    l.v = mtl_engine_view(e, f);
    if (!l.v)
        return MTL_ENOMEM;
    struct mtl_scan_ops ops = { .block = on_block };
    int rc = mtl_engine_scan(e, f, &ops, &l, NULL);
    free(l.suppressed);
    *agg = l.agg;
    if (supp_bytes)
        *supp_bytes = l.supp_bytes;
    if (supp_blocks)
        *supp_blocks = l.supp_blocks;
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
