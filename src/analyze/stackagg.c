/* stackagg.c: see stackagg.h. */
#include "analyze/stackagg.h"

#include <stdlib.h>

#include "memtally/trace.h"

static size_t slot_of(uint32_t thread, uint32_t stack, size_t mask)
{
    uint64_t k = ((uint64_t)thread << 32 | stack) * 0x9e3779b97f4a7c15ull;
    return (size_t)(k >> 17) & mask;
}

static int grow(struct mtl_stackagg *a)
{
    size_t cap = a->cap ? a->cap * 2 : 1024;
    struct mtl_stackagg_entry *e = malloc(cap * sizeof *e);
    if (!e)
        return MTL_ENOMEM;
    for (size_t i = 0; i < cap; i++)
        e[i].calls = -1;
    for (size_t i = 0; i < a->cap; i++) {
        if (a->e[i].calls < 0)
            continue;
        size_t j = slot_of(a->e[i].thread, a->e[i].stack, cap - 1);
        while (e[j].calls >= 0)
            j = (j + 1) & (cap - 1);
        e[j] = a->e[i];
    }
    free(a->e);
    a->e = e;
    a->cap = cap;
    a->last = NULL;
    return 0;
}

/* Without threads: the entry of a stack is dense[stack]. */
static int add_dense(struct mtl_stackagg *a, uint32_t stack, double calls,
                     double bytes, double extra)
{
    if (stack >= a->dense_cap) {
        size_t cap = a->dense_cap ? a->dense_cap : 1024;
        while (cap <= stack)
            cap *= 2;
        struct mtl_stackagg_entry *d = realloc(a->dense, cap * sizeof *d);
        if (!d)
            return MTL_ENOMEM;
        for (size_t i = a->dense_cap; i < cap; i++)
            d[i] = (struct mtl_stackagg_entry){ 0, (uint32_t)i, -1, 0, 0 };
        a->dense = d;
        a->dense_cap = cap;
    }
    struct mtl_stackagg_entry *e = &a->dense[stack];
    if (e->calls < 0) {
        e->calls = 0;
        a->count++;
    }
    e->calls += calls;
    e->bytes += bytes;
    e->extra += extra;
    return 0;
}

int mtl_stackagg_add(struct mtl_stackagg *a, uint32_t thread, uint32_t stack,
                     double calls, double bytes, double extra)
{
    if (!a->per_thread)
        return add_dense(a, stack, calls, bytes, extra);
    /* Runs of the same stack are common: try the last entry first. */
    struct mtl_stackagg_entry *last = a->last;
    if (last && last->thread == thread && last->stack == stack) {
        last->calls += calls;
        last->bytes += bytes;
        last->extra += extra;
        return 0;
    }
    if ((a->count + 1) * 2 > a->cap && grow(a) < 0)
        return MTL_ENOMEM;
    size_t mask = a->cap - 1, i = slot_of(thread, stack, mask);
    for (; a->e[i].calls >= 0; i = (i + 1) & mask) {
        if (a->e[i].thread == thread && a->e[i].stack == stack) {
            a->e[i].calls += calls;
            a->e[i].bytes += bytes;
            a->e[i].extra += extra;
            a->last = &a->e[i];
            return 0;
        }
    }
    a->e[i] = (struct mtl_stackagg_entry){ thread, stack, calls, bytes, extra };
    a->count++;
    a->last = &a->e[i];
    return 0;
}

void mtl_stackagg_each(const struct mtl_stackagg *a,
                       void (*fn)(const struct mtl_stackagg_entry *e, void *arg),
                       void *arg)
{
    for (size_t i = 0; i < a->cap; i++)
        if (a->e[i].calls >= 0)
            fn(&a->e[i], arg);
    for (size_t i = 0; i < a->dense_cap; i++)
        if (a->dense[i].calls >= 0)
            fn(&a->dense[i], arg);
}

void mtl_stackagg_release(struct mtl_stackagg *a)
{
    free(a->e);
    free(a->dense);
    a->e = a->dense = NULL;
    a->last = NULL;
    a->cap = a->count = a->dense_cap = 0;
}
