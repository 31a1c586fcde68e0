/*
 * temporary.c: blocks freed right after their allocation, by site.  By
 * default a block is temporary when its free is the very next allocation
 * or free in the trace after its allocation (heaptrack's definition, see
 * docs/ANALYSIS.md); with within_us, when it was freed at most that long
 * after being allocated.
 */
#include <string.h>

#include "analyze/internal.h"
#include "memtally/errors.h"

struct temp_scan {
    const struct mtl_temporary_options *o;
    double calls, bytes;
    struct mtl_stackagg agg;   /* calls, bytes, extra = temporary calls */
};

static int on_block(void *arg, const struct mtl_block *b)
{
    struct temp_scan *t = arg;
    int temp = t->o->within_set
                   ? b->free_us != MTL_NEVER && b->free_us - b->alloc_us <= t->o->within_us
                   : b->temporary;
    if (temp) {
        t->calls += b->weight_count;
        t->bytes += b->weight_bytes;
    }
    return mtl_stackagg_add(&t->agg, 0, b->stack, b->weight_count, b->weight_bytes,
                            temp ? b->weight_count : 0);
}

int mtl_temporary(struct mtl_engine *e, const struct mtl_filter *f,
                  const struct mtl_temporary_options *o, struct mtl_temporary *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    struct temp_scan t = { .o = o, .agg = MTL_STACKAGG_INIT(0) };
    struct mtl_scan_ops ops = { .block = on_block };
    int rc = mtl_engine_scan(e, f, &ops, &t, NULL);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = mtl_rows_fold(&out->rows, &t.agg, v, mtl_engine_defs(e), MTL_BY_FUNCTION, 0,
                           MTL_ALL_THREADS);
    if (rc == 0) {
        /* Only sites with temporary blocks; percent of all temporary calls. */
        struct mtl_rows *rows = &out->rows;
        size_t keep = 0;
        for (size_t i = 0; i < rows->n; i++) {
            if (rows->row[i].extra <= 0)
                continue;
            rows->row[i].percent = t.calls > 0 ? 100.0 * rows->row[i].extra / t.calls : 0;
            rows->row[keep++] = rows->row[i];
        }
        rows->n = keep;
        mtl_rows_sort(rows, MTL_SORT_EXTRA, 1);
        mtl_rows_truncate(rows, o->top);
        out->temporary_calls = t.calls;
        out->temporary_bytes = t.bytes;
        out->calls = rows->calls;
    }
    mtl_stackagg_release(&t.agg);
    if (rc < 0)
        mtl_temporary_release(out);
    return rc;
}

void mtl_temporary_release(struct mtl_temporary *t)
{
    mtl_rows_release(&t->rows);
}
