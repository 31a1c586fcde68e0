/*
 * types.c: the blocks that pass a filter summed per (thread, type tag),
 * for report --by type.  The sums are kept in a stackagg whose "stack"
 * field holds the tag's string id (0: untagged), so that the rows of
 * report fold, sort and render them as they do stacks.
 *
 * An index hands blocks out on every core: each part sums into its own
 * table, and the tables are added up at the end (in part order, so the
 * totals do not depend on which core took which chunk).
 */
#include <stdlib.h>

#include "analyze/internal.h"
#include "analyze/scan.h"
#include "analyze/stackagg.h"
#include "common/parallel.h"
#include "memtally/errors.h"

struct type_parts {
    struct mtl_stackagg part[MTL_MAX_THREADS];
    _Atomic int err;   /* set by any part's thread */
};

static int on_block(void *arg, unsigned part, const struct mtl_block *b)
{
    struct type_parts *t = arg;
    int rc = mtl_stackagg_add(&t->part[part], b->thread, b->tag, b->weight_count,
                              b->weight_bytes, 0);
    if (rc < 0) {
        t->err = rc; /* read after the scan, which every part has left */
        return 1;
    }
    return 0;
}

int mtl__type_sums(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_stackagg *out)
{
    struct type_parts *t = calloc(1, sizeof *t);
    if (!t)
        return MTL_ENOMEM;
    for (unsigned p = 0; p < MTL_MAX_THREADS; p++)
        t->part[p].per_thread = out->per_thread;
    struct mtl_scan_ops ops = {
        .part_block = on_block,
        .parts = MTL_MAX_THREADS,
        .alloc_only = 1,
        .needs = MTL_NEED_SIZE | MTL_NEED_THREAD | MTL_NEED_TAG,
    };
    struct mtl_scan_result res = { 0 };
    int rc = mtl_engine_scan(e, f, &ops, t, &res);
    if (t->err)
        rc = t->err;
    for (unsigned p = 0; p < MTL_MAX_THREADS; p++) {
        if (rc == 0)
            rc = mtl_stackagg_merge(out, &t->part[p]);
        mtl_stackagg_release(&t->part[p]);
    }
    free(t);
    return rc;
}
