/* digest.c: see digest.h. */
#include "analyze/digest.h"

void mtl_digest_curve(const struct mtl_digest *g, struct mtl_curve *c)
{
    double allocated = 0, freed = 0;
    c->width_us = g->width_us;
    for (size_t i = 0; i < MTL_CURVE_FINE; i++) {
        c->b[i].alloc_bytes = g->alloc[i].bytes;
        c->b[i].alloc_calls = g->alloc[i].calls;
        allocated += g->alloc[i].bytes;
        freed += g->freed[i];
        if (g->event[i]) {
            c->b[i].live = allocated - freed;
            c->b[i].has_live = 1;
        }
    }
}

void mtl_digest_release(struct mtl_digest *d)
{
    mtl_stackagg_release(&d->sums);
}
