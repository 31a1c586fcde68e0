/*
 * temporary.c: blocks freed right after their allocation, by site.  By
 * default a block is temporary when its free is the very next allocation
 * or free in the trace after its allocation (heaptrack's definition, see
 * docs/ANALYSIS.md); with within_us, when it was freed at most that long
 * after being allocated.  Two sums per stack: of every block that passes
 * the filters, and of the temporary ones.
 */
#include <string.h>

#include "analyze/internal.h"
#include "memtally/errors.h"

int mtl_temporary(struct mtl_engine *e, const struct mtl_filter *f,
                  const struct mtl_temporary_options *o, struct mtl_temporary *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    struct mtl_filter temp = *f;
    if (o->within_set) {
        /* Freed, and at most within_us after its allocation. */
        temp.freed = (struct mtl_range){ 1, 0, UINT64_MAX };
        temp.lifetime.set = 1;
        temp.lifetime.min = f->lifetime.set ? f->lifetime.min : 0;
        temp.lifetime.max = f->lifetime.set && f->lifetime.max < o->within_us
                                ? f->lifetime.max : o->within_us;
        if (f->freed.set)
            temp.freed = f->freed;
    } else {
        temp.temporary = 1;
    }
    struct mtl_stackagg all = MTL_STACKAGG_INIT(0), tmp = MTL_STACKAGG_INIT(0);
    int rc = mtl_engine_sums(e, f, &all);
    if (rc == 0 && temp.lifetime.min <= temp.lifetime.max)
        rc = mtl_engine_sums(e, &temp, &tmp);
    /* The temporary calls of a stack go in its entry's extra. */
    for (size_t i = 0; rc == 0 && i < tmp.n; i++) {
        out->temporary_calls += tmp.e[i].calls;
        out->temporary_bytes += tmp.e[i].bytes;
        rc = mtl_stackagg_add(&all, 0, tmp.e[i].stack, 0, 0, tmp.e[i].calls);
    }
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = mtl_rows_fold(&out->rows, &all, v, mtl_engine_defs(e), MTL_BY_FUNCTION, 0,
                           MTL_ALL_THREADS);
    if (rc == 0) {
        /* Only sites with temporary blocks; percent of all temporary calls. */
        struct mtl_rows *rows = &out->rows;
        size_t keep = 0;
        for (size_t i = 0; i < rows->n; i++) {
            if (rows->row[i].extra <= 0)
                continue;
            rows->row[i].percent = out->temporary_calls > 0
                                       ? 100.0 * rows->row[i].extra / out->temporary_calls
                                       : 0;
            rows->row[keep++] = rows->row[i];
        }
        rows->n = keep;
        mtl_rows_sort(rows, MTL_SORT_EXTRA, 1);
        mtl_rows_truncate(rows, o->top);
        out->calls = rows->calls;
    }
    mtl_stackagg_release(&all);
    mtl_stackagg_release(&tmp);
    if (rc < 0)
        mtl_temporary_release(out);
    return rc;
}

void mtl_temporary_release(struct mtl_temporary *t)
{
    mtl_rows_release(&t->rows);
}
