/*
 * diff.c: per function (site), what changed from one trace to the other:
 * calls, bytes, bytes live at each trace's peak, bytes leaked.  Functions
 * are matched by name, so the two traces may come from different builds
 * or machines.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "common/intern.h"
#include "memtally/errors.h"

struct diff_build {
    struct mtl_intern names;     /* function -> row */
    struct mtl_diff_row *rows;
    size_t n, cap;
};

static struct mtl_diff_row *row_for(struct diff_build *d, const char *name)
{
    uint32_t id;
    int rc = mtl_intern_str(&d->names, name, &id);
    if (rc < 0)
        return NULL;
    if (rc == 1) {
        if (d->n == d->cap) {
            size_t cap = d->cap ? d->cap * 2 : 256;
            struct mtl_diff_row *r = realloc(d->rows, cap * sizeof *r);
            if (!r)
                return NULL;
            d->rows = r;
            d->cap = cap;
        }
        memset(&d->rows[d->n], 0, sizeof d->rows[0]);
        d->rows[d->n].function = mtl_intern_at(&d->names, id, NULL);
        d->n++;
    }
    return &d->rows[id];
}

/* Adds one per-stack aggregate of one side into the rows, under field. */
static int gather(struct diff_build *d, struct mtl_diff *out, struct mtl_engine *e,
                  struct mtl_view *v, const struct mtl_stackagg *agg, int side, int field)
{
    struct mtl_rows rows;
    int rc = mtl_rows_fold(&rows, agg, v, mtl_engine_defs(e), MTL_BY_FUNCTION, 0,
                           MTL_ALL_THREADS);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < rows.n; i++) {
        struct mtl_diff_row *r = row_for(d, rows.row[i].function);
        if (!r) {
            mtl_rows_release(&rows);
            return MTL_ENOMEM;
        }
        r->v[side][field] += field == MTL_DIFF_CALLS ? rows.row[i].calls : rows.row[i].bytes;
    }
    out->total.v[side][field] += field == MTL_DIFF_CALLS ? rows.calls : rows.bytes;
    mtl_rows_release(&rows);
    return 0;
}

static int one_side(struct diff_build *d, struct mtl_diff *out, struct mtl_engine *e,
                    const struct mtl_filter *f, int side)
{
    struct mtl_stackagg all = MTL_STACKAGG_INIT(0), peak, leaked;
    double peak_bytes, sb, sk;
    uint64_t peak_us;
    int found;
    out->estimated |= mtl_engine_estimated(e, NULL);
    int rc = mtl_engine_sums(e, f, &all);
    if (rc == 0)
        rc = mtl__peak_stacks(e, f, &peak, &peak_bytes, &peak_us, &found);
    else
        peak = (struct mtl_stackagg)MTL_STACKAGG_INIT(0);
    if (rc == 0)
        rc = mtl__leaked_stacks(e, f, NULL, 0, &leaked, &sb, &sk);
    else
        leaked = (struct mtl_stackagg)MTL_STACKAGG_INIT(0);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = gather(d, out, e, v, &all, side, MTL_DIFF_CALLS);
    if (rc == 0)
        rc = gather(d, out, e, v, &all, side, MTL_DIFF_BYTES);
    if (rc == 0)
        rc = gather(d, out, e, v, &peak, side, MTL_DIFF_PEAK);
    if (rc == 0)
        rc = gather(d, out, e, v, &leaked, side, MTL_DIFF_LEAKED);
    mtl_stackagg_release(&all);
    mtl_stackagg_release(&peak);
    mtl_stackagg_release(&leaked);
    return rc;
}

static double change(const struct mtl_diff_row *r, int f)
{
    return r->v[1][f] - r->v[0][f];
}

static int by_change(const void *pa, const void *pb)
{
    const struct mtl_diff_row *a = pa, *b = pb;
    /* bytes, peak, leaked, calls */
    for (int f = MTL_DIFF_BYTES; f < MTL_DIFF_FIELDS + MTL_DIFF_BYTES; f++) {
        double x = fabs(change(a, f % MTL_DIFF_FIELDS)), y = fabs(change(b, f % MTL_DIFF_FIELDS));
        if (x != y)
            return x < y ? 1 : -1;
    }
    return strcmp(a->function, b->function);
}

int mtl_diff(struct mtl_engine *base, struct mtl_engine *next,
             const struct mtl_filter *f, size_t top, struct mtl_diff *out)
{
    memset(out, 0, sizeof *out);
    struct diff_build d = { .names = MTL_INTERN_INIT };
    int rc = one_side(&d, out, base, f, 0);
    if (rc == 0)
        rc = one_side(&d, out, next, f, 1);
    if (rc == 0) {
        /* The names live in d.names: copy them into the rows' own memory. */
        size_t bytes = 0;
        for (size_t i = 0; i < d.n; i++)
            bytes += strlen(d.rows[i].function) + 1;
        char *names = malloc(bytes ? bytes : 1);
        if (!names) {
            rc = MTL_ENOMEM;
        } else {
            char *p = names;
            for (size_t i = 0; i < d.n; i++) {
                size_t len = strlen(d.rows[i].function) + 1;
                memcpy(p, d.rows[i].function, len);
                d.rows[i].function = p;
                p += len;
            }
            if (d.n) /* qsort(NULL, 0, ...) is undefined */
                qsort(d.rows, d.n, sizeof *d.rows, by_change);
            out->rows = d.rows;
            out->n = top && top < d.n ? top : d.n;
            out->names = names;
            d.rows = NULL;
        }
    }
    free(d.rows);
    mtl_intern_release(&d.names);
    return rc;
}

void mtl_diff_release(struct mtl_diff *d)
{
    free(d->rows);
    free(d->names);
    d->rows = NULL;
    d->names = NULL;
    d->n = 0;
}
