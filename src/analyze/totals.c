/*
 * totals.c: the totals of a whole trace, as valgrind's "total heap usage"
 * counts them, with the peak of live bytes: what `memtally info` prints,
 * what `memtally record --max-peak/--max-leak` checks and what `memtally
 * top` shows.  Frees count only when they match a block allocated in the
 * same trace (a forked child freeing its parent's blocks, say); the others
 * are unmatched_frees.
 */
#include <string.h>

#include "analyze/internal.h"
#include "memtally/errors.h"
#include "trace/defs.h"

/* The estimate of live bytes after a free: the sum of the weights, which
 * rounding leaves a hair off zero when every block is gone ("-0 B"). */
static void est_live_after_free(struct mtl_totals_acc *acc)
{
    if (acc->t.live_blocks == 0 || acc->est_live < 0)
        acc->est_live = 0;
    acc->t.est_live_bytes = acc->est_live;
}

int mtl_totals_event(struct mtl_totals_acc *acc, const struct mtl_event *ev,
                     const struct mtl_block *b)
{
    struct mtl_totals *t = &acc->t;
    if (ev->type == MTL_EV_FREE && b && b->free_lost) {
        /* Not in the trace: the end of a block whose free was lost. */
        t->live_bytes -= b->size;
        t->live_blocks--;
        acc->est_live -= b->weight_bytes;
        est_live_after_free(acc);
        return 0;
    }
    t->events++;
    if (ev->time_us > t->duration_us)
        t->duration_us = ev->time_us;
    if (ev->type == MTL_EV_RSS) {
        if (ev->size > t->peak_rss)
            t->peak_rss = ev->size;
    } else if (ev->type == MTL_EV_GC_HEAP) {
        t->collections++;
        t->gc_heap_bytes = ev->size;
        if (ev->size > t->gc_heap_peak)
            t->gc_heap_peak = ev->size;
    } else if (ev->type == MTL_EV_ALLOC && b) {
        t->allocations++;
        t->tagged_allocations += b->tag != 0;
        t->bytes_allocated += b->size;
        t->est_allocations += b->weight_count;
        t->est_bytes += b->weight_bytes;
        t->live_bytes += b->size;
        t->live_blocks++;
        if (t->live_bytes > t->peak_live_bytes) {
            t->peak_live_bytes = t->live_bytes;
            t->peak_time_us = ev->time_us;
        }
        acc->est_live += b->weight_bytes;
        if (acc->est_live > t->est_peak_live_bytes) {
            t->est_peak_live_bytes = acc->est_live;
            t->est_peak_time_us = ev->time_us;
        }
        int m1 = mtl_bitset_set(&acc->threads, b->thread);
        int m2 = mtl_bitset_set(&acc->stacks, b->stack);
        if (m1 < 0 || m2 < 0)
            return MTL_ENOMEM;
        t->threads_allocating += (uint32_t)m1;
        t->unique_stacks += (uint32_t)m2;
    } else if (ev->type == MTL_EV_FREE) {
        if (!b) {
            t->unmatched_frees++;
            return 0;
        }
        t->frees++;
        t->live_bytes -= b->size;
        t->live_blocks--;
        t->est_frees += b->weight_count;
        acc->est_live -= b->weight_bytes;
        est_live_after_free(acc);
        return 0;
    }
    t->est_live_bytes = acc->est_live;
    return 0;
}

void mtl_totals_acc_release(struct mtl_totals_acc *acc)
{
    mtl_bitset_release(&acc->threads);
    mtl_bitset_release(&acc->stacks);
}

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    (void)passes;
    return mtl_totals_event(arg, ev, b);
}

int mtl_totals(struct mtl_engine *e, struct mtl_totals *out)
{
    if (mtl_engine_totals(e, out) == 0)
        return 0; /* the index counted them when it was built */
    struct mtl_totals_acc acc = MTL_TOTALS_ACC_INIT;
    struct mtl_filter all;
    memset(&all, 0, sizeof all);
    /* Every event counts, threads and modules too: the trace itself. */
    struct mtl_scan_ops ops = { .event = on_event, .raw = 1 };
    struct mtl_scan_result res;
    int rc = mtl_engine_scan(e, &all, &ops, &acc, &res);
    *out = acc.t;
    out->duration_us = res.end_us;
    out->other_heap_allocations = mtl_engine_defs(e)->info.other_heap_allocations;
    mtl_totals_acc_release(&acc);
    return rc;
}

int mtl_info(struct mtl_engine *e, struct mtl_info *out)
{
    memset(out, 0, sizeof *out);
    int rc = mtl_totals(e, &out->totals);
    if (rc < 0)
        return rc;
    const struct mtl_defs *d = mtl_engine_defs(e);
    out->trace = d->info;
    out->threads_seen = d->nthreads;
    out->modules = d->nmodules;
    out->stack_nodes = d->nnodes ? d->nnodes - 1 : 0;
    out->blocks = mtl_engine_blocks(e);
    out->heap = mtl_engine_heaps(e) == MTL_HEAPS_GC ? MTL_HEAP_GC : MTL_HEAP_MALLOC;
    return 0;
}
