/*
 * stacks.c: the most frequent distinct call stacks that lead to
 * allocations in functions matching a target, cut to N frames from the
 * innermost matching frame outwards (Crystal's TRACE_TARGET report,
 * docs/ANALYSIS.md); or, for a target type, the stacks that create blocks
 * of that type tag, cut from their site outwards.  Frames are compared by function and line, so two
 * calls from different lines are different stacks.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "analyze/view.h"
#include "common/intern.h"
#include "memtally/errors.h"

#define MAX_CUT 256

struct group_acc {
    double count, bytes;
    uint32_t key;            /* interned cut: (function id, line) pairs */
    uint32_t locs[MAX_CUT];
    uint32_t n;
};

static int by_count(const void *pa, const void *pb)
{
    const struct group_acc *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

int mtl_stacks(struct mtl_engine *e, const struct mtl_filter *f,
               const struct mtl_stacks_options *o, struct mtl_stacks *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    int by_type = o->target_type && *o->target_type;
    if ((!by_type && (!o->target || !*o->target)) || o->depth == 0)
        return MTL_EINVAL;
    struct mtl_filter typed = *f;
    if (by_type)
        typed.type = o->target_type;
    struct mtl_stackagg a = MTL_STACKAGG_INIT(0);
    int rc = mtl_engine_sums(e, &typed, &a);
    struct mtl_view *v = rc == 0 ? mtl_engine_view(e, f) : NULL;
    if (rc == 0 && !v)
        rc = MTL_ENOMEM;
    struct mtl_intern keys = MTL_INTERN_INIT;
    struct group_acc *groups = NULL;
    size_t ngroups = 0, cap = 0;
    for (size_t i = 0; rc == 0 && i < a.n; i++) {
        const struct mtl_stackagg_entry *en = &a.e[i];
        const uint32_t *locs;
        size_t n;
        if ((rc = mtl_view_frames_all(v, en->stack, &locs, &n)) < 0)
            break;
        size_t at = n;
        uint32_t site = by_type ? mtl_view_site(v, en->stack) : MTL_NO_LOCATION;
        for (size_t k = 0; k < n && at == n; k++)
            if (by_type ? locs[k] == site : mtl_view_location_matches(v, locs[k], o->target))
                at = k;
        if (at == n)
            continue;
        uint32_t cut[MAX_CUT], key[2 * MAX_CUT], m = 0;
        for (size_t k = at; k < n && m < o->depth && m < MAX_CUT; k++) {
            if (k != at && mtl_view_location(v, locs[k])->hidden)
                continue;
            const struct mtl_location *l = mtl_view_location(v, locs[k]);
            key[2 * m] = l->function_id;
            key[2 * m + 1] = l->line;
            cut[m++] = locs[k];
        }
        uint32_t id;
        int added = mtl_intern_add(&keys, key, 2 * m * sizeof *key, &id);
        if (added < 0) {
            rc = added;
            break;
        }
        if (added) {
            if (ngroups == cap) {
                size_t c = cap ? cap * 2 : 64;
                struct group_acc *g = realloc(groups, c * sizeof *g);
                if (!g) {
                    rc = MTL_ENOMEM;
                    break;
                }
                groups = g;
                cap = c;
            }
            struct group_acc *g = &groups[ngroups++];
            memset(g, 0, sizeof *g);
            g->key = id;
            g->n = m;
            memcpy(g->locs, cut, m * sizeof *cut);
        }
        groups[id].count += en->calls;
        groups[id].bytes += en->bytes;
        out->blocks += en->calls;
        out->bytes += en->bytes;
    }
    if (rc == 0 && ngroups) {
        qsort(groups, ngroups, sizeof *groups, by_count);
        out->nreaching = ngroups;
        out->groups = calloc(ngroups, sizeof *out->groups);
        if (!out->groups)
            rc = MTL_ENOMEM;
    }
    for (size_t g = 0; rc == 0 && g < ngroups; g++) {
        const struct group_acc *ga = &groups[g];
        if (ga->count < o->min_count || (o->top && out->ngroups >= o->top))
            continue;
        struct mtl_stack_group *sg = &out->groups[out->ngroups++];
        sg->count = ga->count;
        sg->bytes = ga->bytes;
        sg->percent = out->blocks > 0 ? 100.0 * ga->count / out->blocks : 0;
        sg->n = ga->n;
        sg->frames = calloc(ga->n ? ga->n : 1, sizeof *sg->frames);
        if (!sg->frames) {
            rc = MTL_ENOMEM;
            break;
        }
        for (uint32_t k = 0; k < ga->n; k++)
            sg->frames[k] = *mtl_view_location(v, ga->locs[k]);
    }
    free(groups);
    mtl_intern_release(&keys);
    mtl_stackagg_release(&a);
    if (rc < 0)
        mtl_stacks_release(out);
    return rc;
}

void mtl_stacks_release(struct mtl_stacks *s)
{
    for (size_t g = 0; g < s->ngroups; g++)
        free(s->groups[g].frames);
    free(s->groups);
    s->groups = NULL;
    s->ngroups = 0;
}
