/* stackagg.c: see stackagg.h. */
#include "analyze/stackagg.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "memtally/errors.h"

static struct mtl_stackagg_entry *new_entry(struct mtl_stackagg *a, uint32_t thread,
                                            uint32_t stack)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        struct mtl_stackagg_entry *e = realloc(a->e, cap * sizeof *e);
        if (!e)
            return NULL;
        a->e = e;
        a->cap = cap;
    }
    struct mtl_stackagg_entry *e = &a->e[a->n++];
    *e = (struct mtl_stackagg_entry){ thread, stack, 0, 0, 0 };
    return e;
}

static struct mtl_stackagg_entry *entry_of(struct mtl_stackagg *a, uint32_t thread,
                                           uint32_t stack)
{
    if (thread < MTL_STACKAGG_DENSE_THREADS) {
        if (stack >= a->dense_cap[thread] &&
            mtl_grow_zeroed((void **)&a->dense[thread], &a->dense_cap[thread],
                            (size_t)stack + 1, sizeof *a->dense[thread], 1024) < 0)
            return NULL;
        uint32_t *slot = &a->dense[thread][stack];
        if (*slot)
            return &a->e[*slot - 1];
        struct mtl_stackagg_entry *e = new_entry(a, thread, stack);
        if (e)
            *slot = (uint32_t)a->n;
        return e;
    }
    int created;
    uint64_t *slot = mtl_hmap_slot(&a->others, (uint64_t)thread << 32 | stack, &created);
    if (!slot)
        return NULL;
    if (!created)
        return &a->e[*slot];
    struct mtl_stackagg_entry *e = new_entry(a, thread, stack);
    if (!e) {
        mtl_hmap_take(&a->others, (uint64_t)thread << 32 | stack, NULL);
        return NULL;
    }
    *slot = a->n - 1;
    return e;
}

int mtl_stackagg_add(struct mtl_stackagg *a, uint32_t thread, uint32_t stack,
                     double calls, double bytes, double extra)
{
    struct mtl_stackagg_entry *e = entry_of(a, a->per_thread ? thread : 0, stack);
    if (!e)
        return MTL_ENOMEM;
    e->calls += calls;
    e->bytes += bytes;
    e->extra += extra;
    return 0;
}

int mtl_stackagg_merge(struct mtl_stackagg *a, const struct mtl_stackagg *from)
{
    for (size_t i = 0; i < from->n; i++) {
        const struct mtl_stackagg_entry *f = &from->e[i];
        int rc = mtl_stackagg_add(a, f->thread, f->stack, f->calls, f->bytes, f->extra);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void mtl_stackagg_totals(const struct mtl_stackagg *a, double *calls, double *bytes,
                         double *extra)
{
    double c = 0, b = 0, x = 0;
    for (size_t i = 0; i < a->n; i++) {
        c += a->e[i].calls;
        b += a->e[i].bytes;
        x += a->e[i].extra;
    }
    if (calls)
        *calls = c;
    if (bytes)
        *bytes = b;
    if (extra)
        *extra = x;
}

void mtl_stackagg_release(struct mtl_stackagg *a)
{
    free(a->e);
    for (int t = 0; t < MTL_STACKAGG_DENSE_THREADS; t++) {
        free(a->dense[t]);
        a->dense[t] = NULL;
        a->dense_cap[t] = 0;
    }
    mtl_hmap_release(&a->others);
    a->e = NULL;
    a->n = a->cap = 0;
}
