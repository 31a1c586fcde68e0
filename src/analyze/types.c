/*
 * types.c: the blocks that pass a filter summed per (thread, type tag),
 * for report --by type; and the types analysis (`memtally types`): per
 * tag, what was allocated, what is live at the end and at the peak.  The sums are kept in a stackagg whose "stack"
 * field holds the tag's string id (0: untagged), so that the rows of
 * report fold, sort and render them as they do stacks.
 *
 * An index hands blocks out on every core: each part sums into its own
 * table, and the tables are added up at the end (in part order, so the
 * totals do not depend on which core took which chunk).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/curve.h"
#include "analyze/internal.h"
#include "analyze/scan.h"
#include "analyze/stackagg.h"
#include "common/grow.h"
#include "common/parallel.h"
#include "memtally/errors.h"
#include "trace/defs.h"

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
    /* Not at allocation: a TAG record may give a block its tag later, and
     * its fate knows the last. */
    struct mtl_scan_ops ops = {
        .part_block = on_block,
        .parts = MTL_MAX_THREADS,
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

/* ---- memtally types ---------------------------------------------------------- */

/* A row per tag (string id), grown as tags come. */
struct type_table {
    struct mtl_type_row *rows;
    size_t cap;
    int failed;
};

static struct mtl_type_row *type_row(struct type_table *t, uint32_t tag)
{
    if (mtl_grow_zeroed((void **)&t->rows, &t->cap, (size_t)tag + 1, sizeof *t->rows, 64) < 0) {
        t->failed = 1;
        return NULL;
    }
    return &t->rows[tag];
}

static int add_peak_block(void *arg, const struct mtl_block *b)
{
    struct mtl_type_row *r = type_row(arg, b->tag);
    if (!r)
        return MTL_ENOMEM;
    r->peak_blocks += b->weight_count;
    r->peak_bytes += b->weight_bytes;
    return 0;
}

static int more_type_bytes(const void *a, const void *b)
{
    const struct mtl_type_row *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->type, y->type);
}

int mtl_types(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_types *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    struct type_table t = { 0 };
    struct mtl_stackagg all = MTL_STACKAGG_INIT(0), live = MTL_STACKAGG_INIT(0);
    struct mtl_filter never = *f;
    never.never_freed = 1;
    int rc = mtl__type_sums(e, f, &all);
    if (rc == 0)
        rc = mtl__type_sums(e, &never, &live);
    for (size_t i = 0; rc == 0 && i < all.n; i++) {
        struct mtl_type_row *r = type_row(&t, all.e[i].stack);
        if (r) {
            r->calls += all.e[i].calls;
            r->bytes += all.e[i].bytes;
        }
    }
    for (size_t i = 0; rc == 0 && i < live.n; i++) {
        struct mtl_type_row *r = type_row(&t, live.e[i].stack);
        if (r) {
            r->live_blocks += live.e[i].calls;
            r->live_bytes += live.e[i].bytes;
        }
    }
    struct mtl_curve *c = rc == 0 ? calloc(1, sizeof *c) : NULL;
    if (rc == 0 && !c)
        rc = MTL_ENOMEM;
    if (rc == 0)
        rc = mtl_engine_curve(e, f, c);
    if (rc == 0 && c->found) {
        out->peak_bytes = c->peak;
        out->peak_time_us = c->peak_us;
        rc = mtl_engine_live_after(e, f, c->peak_seq, add_peak_block, &t);
    }
    free(c);
    if (rc == 0 && t.failed)
        rc = MTL_ENOMEM;
    const struct mtl_defs *d = mtl_engine_defs(e);
    size_t n = 0;
    for (size_t tag = 0; rc == 0 && tag < t.cap; tag++) {
        struct mtl_type_row *r = &t.rows[tag];
        if (r->calls <= 0 && r->peak_blocks <= 0)
            continue;
        const char *name = tag ? mtl_defs_string(d, (uint32_t)tag) : NULL;
        r->type = name ? name : "(untagged)";
        out->total.calls += r->calls;
        out->total.bytes += r->bytes;
        out->total.live_blocks += r->live_blocks;
        out->total.live_bytes += r->live_bytes;
        out->total.peak_blocks += r->peak_blocks;
        out->total.peak_bytes += r->peak_bytes;
        t.rows[n++] = *r;
    }
    if (rc == 0) {
        qsort(t.rows, n, sizeof *t.rows, more_type_bytes);
        out->rows = t.rows;
        out->n = n;
        out->total.type = "total";
    } else {
        free(t.rows);
    }
    mtl_stackagg_release(&all);
    mtl_stackagg_release(&live);
    return rc;
}

void mtl_types_release(struct mtl_types *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}
