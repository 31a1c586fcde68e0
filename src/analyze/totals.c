/* totals.c: see totals.h.  Frees count only when they match a block
 * allocated in the same trace (a forked child freeing its parent's
 * blocks, say); the others are unmatched_frees. */
#include "analyze/totals.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/ptrmap.h"
#include "memtally/trace.h"

/* Sets bit i of a growing bitset: 1 if it was clear, 0 if set already,
 * -1 when out of memory. */
static int mark(uint8_t **bits, size_t *nbytes, uint64_t i)
{
    if (i / 8 >= *nbytes) {
        size_t n = (size_t)(i / 8 + 1) * 2;
        uint8_t *b = realloc(*bits, n);
        if (!b)
            return -1;
        memset(b + *nbytes, 0, n - *nbytes);
        *bits = b;
        *nbytes = n;
    }
    uint8_t bit = (uint8_t)(1u << (i % 8));
    if ((*bits)[i / 8] & bit)
        return 0;
    (*bits)[i / 8] |= bit;
    return 1;
}

int mtl_totals_compute(struct mtl_reader *r, struct mtl_totals *t)
{
    struct mtl_ptrmap live = MTL_PTRMAP_INIT;
    struct mtl_event ev;
    uint8_t *threads_seen = NULL, *stacks_seen = NULL; /* bits: it allocated */
    size_t threads_bytes = 0, stacks_bytes = 0;
    int rc;
    memset(t, 0, sizeof *t);
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        t->events++;
        if (ev.type == MTL_EV_ALLOC) {
            struct mtl_ptrmap_val v = { .size = ev.size, .time_us = ev.time_us,
                                        .weight_count = ev.weight_count,
                                        .weight_bytes = ev.weight_bytes }, old;
            int put = mtl_ptrmap_put(&live, ev.ptr, &v, &old);
            if (put < 0) {
                rc = MTL_ENOMEM;
                break;
            }
            if (put == 1) {
                t->live_bytes -= old.size; /* its free was lost: drop it */
                t->est_live_bytes -= old.weight_bytes;
            }
            t->allocations++;
            t->bytes_allocated += ev.size;
            t->est_allocations += ev.weight_count;
            t->est_bytes += ev.weight_bytes;
            t->live_bytes += ev.size;
            if (t->live_bytes > t->peak_live_bytes) {
                t->peak_live_bytes = t->live_bytes;
                t->peak_time_us = ev.time_us;
            }
            t->est_live_bytes += ev.weight_bytes;
            if (t->est_live_bytes > t->est_peak_live_bytes) {
                t->est_peak_live_bytes = t->est_live_bytes;
                t->est_peak_time_us = ev.time_us;
            }
            int m1 = mark(&threads_seen, &threads_bytes, ev.thread);
            int m2 = mark(&stacks_seen, &stacks_bytes, ev.stack);
            if (m1 < 0 || m2 < 0) {
                rc = MTL_ENOMEM;
                break;
            }
            t->threads_allocating += (uint32_t)m1;
            t->unique_stacks += (uint32_t)m2;
        } else if (ev.type == MTL_EV_FREE) {
            struct mtl_ptrmap_val v;
            if (mtl_ptrmap_take(&live, ev.ptr, &v)) {
                t->frees++;
                t->live_bytes -= v.size;
                t->est_frees += v.weight_count;
                t->est_live_bytes -= v.weight_bytes;
            } else {
                t->unmatched_frees++;
            }
        } else if (ev.type == MTL_EV_RSS && ev.size > t->peak_rss) {
            t->peak_rss = ev.size;
        }
    }
    t->live_blocks = live.count;
    free(threads_seen);
    free(stacks_seen);
    mtl_ptrmap_release(&live);
    return rc;
}
