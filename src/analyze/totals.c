/* totals.c: see totals.h.  Frees count only when they match a block
 * allocated in the same trace (a forked child freeing its parent's
 * blocks, say); the others are unmatched_frees. */
#include "analyze/totals.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/ptrmap.h"
#include "memtally/trace.h"

int mtl_totals_compute(struct mtl_reader *r, struct mtl_totals *t)
{
    struct mtl_ptrmap live = MTL_PTRMAP_INIT;
    struct mtl_event ev;
    uint8_t *allocated = NULL; /* per thread index: it allocated */
    size_t nallocated = 0;
    uint8_t *seen = NULL;      /* per stack id, a bit: an allocation used it */
    size_t seen_bytes = 0;
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
            if (ev.thread >= nallocated) {
                size_t n = ((size_t)ev.thread + 1) * 2;
                uint8_t *a = realloc(allocated, n);
                if (!a) {
                    rc = MTL_ENOMEM;
                    break;
                }
                memset(a + nallocated, 0, n - nallocated);
                allocated = a;
                nallocated = n;
            }
            if (!allocated[ev.thread]) {
                allocated[ev.thread] = 1;
                t->threads_allocating++;
            }
            if (ev.stack / 8 >= seen_bytes) {
                size_t n = (ev.stack / 8 + 1) * 2;
                uint8_t *b = realloc(seen, n);
                if (!b) {
                    rc = MTL_ENOMEM;
                    break;
                }
                memset(b + seen_bytes, 0, n - seen_bytes);
                seen = b;
                seen_bytes = n;
            }
            if (!(seen[ev.stack / 8] & (1u << (ev.stack % 8)))) {
                seen[ev.stack / 8] |= (uint8_t)(1u << (ev.stack % 8));
                t->unique_stacks++;
            }
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
    free(allocated);
    free(seen);
    mtl_ptrmap_release(&live);
    return rc;
}
