/*
 * rows.c: see rows.h.
 *
 * Folding walks the entries of the per-stack totals once.  Self
 * attribution asks the view for each stack's site (memoized per stack
 * node, so recursion costs nothing extra); inclusive attribution walks the
 * stack's visible frames and counts each key once per stack (a stamp per
 * key says whether this stack already counted it).
 */
#include "analyze/rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "common/intern.h"
#include "memtally/errors.h"
#include "trace/defs.h"

struct acc {
    double calls, bytes, extra;
    uint64_t seen;      /* stamp of the last entry counted (inclusive) */
    const char *name;   /* BY_FILE, BY_MODULE: the key */
    uint32_t best_loc;
    double best_bytes;
};

/* A function passed over on the way to sites, by function id. */
struct skip {
    double bytes, calls;
    uint64_t seen;      /* stamp of the last entry counted */
};

struct fold {
    struct mtl_view *v;
    enum mtl_group by;
    int inclusive;
    struct acc *acc;       /* by key */
    size_t nacc, acc_cap;
    struct mtl_intern names; /* BY_FILE, BY_MODULE: string -> key - 1 */
    double *loc_bytes;     /* by location, for the best line */
    size_t loc_cap;
    uint64_t stamp;
    struct skip *skip;     /* by function id */
    size_t skip_cap;
    int err;
};

#define NO_STACK_KEY 0     /* key 0 is "(no stack)"; real keys start at 1 */

static int grow_zero(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return MTL_ENOMEM;
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *p = q;
    *cap = n;
    return 0;
}

static struct acc *acc_at(struct fold *f, size_t key)
{
    size_t old = f->acc_cap;
    if (grow_zero((void **)&f->acc, &f->acc_cap, key + 1, sizeof *f->acc) < 0) {
        f->err = MTL_ENOMEM;
        return NULL;
    }
    for (size_t i = old; i < f->acc_cap; i++)
        f->acc[i].best_loc = MTL_NO_LOCATION;
    if (key >= f->nacc)
        f->nacc = key + 1;
    return &f->acc[key];
}

static size_t string_key(struct fold *f, const char *s)
{
    uint32_t id;
    int rc = mtl_intern_str(&f->names, s, &id);
    if (rc < 0) {
        f->err = rc;
        return NO_STACK_KEY;
    }
    struct acc *a = acc_at(f, (size_t)id + 1);
    if (a && rc == 1)
        a->name = s;
    return (size_t)id + 1;
}

static size_t key_of(struct fold *f, const struct mtl_stackagg_entry *e, uint32_t loc)
{
    if (f->by == MTL_BY_THREAD)
        return (size_t)e->thread + 1;
    if (f->by == MTL_BY_TYPE)
        return e->stack; /* the tag's string id: 0, no tag, is NO_STACK_KEY */
    if (loc == MTL_NO_LOCATION)
        return NO_STACK_KEY;
    const struct mtl_location *l = mtl_view_location(f->v, loc);
    switch (f->by) {
    case MTL_BY_FILE:
        return string_key(f, l->file ? l->file : "(unknown file)");
    case MTL_BY_MODULE:
        return string_key(f, *l->module ? l->module : "(no module)");
    default:
        return (size_t)l->function_id + 1;
    }
}

static void add(struct fold *f, size_t key, const struct mtl_stackagg_entry *e,
                uint32_t loc)
{
    struct acc *a = acc_at(f, key);
    if (!a || a->seen == f->stamp)
        return; /* inclusive: once per stack */
    a->seen = f->stamp;
    a->calls += e->calls;
    a->bytes += e->bytes;
    a->extra += e->extra;
    if (loc == MTL_NO_LOCATION || f->by != MTL_BY_FUNCTION)
        return;
    if (grow_zero((void **)&f->loc_bytes, &f->loc_cap, (size_t)loc + 1,
                  sizeof *f->loc_bytes) < 0) {
        f->err = MTL_ENOMEM;
        return;
    }
    f->loc_bytes[loc] += e->bytes;
    if (a->best_loc == MTL_NO_LOCATION || f->loc_bytes[loc] > a->best_bytes ||
        (f->loc_bytes[loc] == a->best_bytes && loc < a->best_loc)) {
        a->best_loc = loc;
        a->best_bytes = f->loc_bytes[loc];
    }
}

/* Self by function: the functions passed over between the stack's
 * innermost visible frame and its site. */
static void note_skipped(struct fold *f, const struct mtl_stackagg_entry *e, uint32_t site)
{
    for (uint32_t id = e->stack; id != 0; id = mtl_view_parent(f->v, id)) {
        uint32_t first, n;
        if (mtl_view_node(f->v, id, &first, &n) < 0)
            return;
        for (uint32_t i = first; i < first + n; i++) {
            const struct mtl_location *l = mtl_view_location(f->v, i);
            if (i == site)
                return;
            if (l->hidden)
                continue;
            size_t fid = l->function_id;
            if (grow_zero((void **)&f->skip, &f->skip_cap, fid + 1, sizeof *f->skip) < 0) {
                f->err = MTL_ENOMEM;
                return;
            }
            struct skip *k = &f->skip[fid];
            if (k->seen == f->stamp)
                continue;
            k->seen = f->stamp;
            k->bytes += e->bytes;
            k->calls += e->calls;
        }
    }
}

static void fold_entry(struct fold *f, const struct mtl_stackagg_entry *e)
{
    f->stamp++;
    if (f->by == MTL_BY_THREAD || f->by == MTL_BY_TYPE) {
        add(f, key_of(f, e, MTL_NO_LOCATION), e, MTL_NO_LOCATION);
        return;
    }
    if (!f->inclusive) {
        uint32_t site = mtl_view_site(f->v, e->stack);
        add(f, key_of(f, e, site), e, site);
        if (site != MTL_NO_LOCATION && f->by == MTL_BY_FUNCTION)
            note_skipped(f, e, site);
        return;
    }
    const uint32_t *locs;
    size_t n;
    int rc = mtl_view_frames(f->v, e->stack, &locs, &n);
    if (rc < 0) {
        f->err = rc;
        return;
    }
    if (n == 0)
        add(f, NO_STACK_KEY, e, MTL_NO_LOCATION);
    /* key_of does not call mtl_view_frames, so locs stays valid. */
    for (size_t i = 0; i < n && !f->err; i++)
        add(f, key_of(f, e, locs[i]), e, locs[i]);
}

static int by_skipped_bytes(const void *pa, const void *pb)
{
    const struct mtl_skipped *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return strcmp(a->function, b->function);
}

static int collect_skipped(struct fold *f, struct mtl_rows *out)
{
    size_t n = 0;
    for (size_t i = 0; i < f->skip_cap; i++)
        n += f->skip[i].seen != 0;
    if (!n)
        return 0;
    out->skipped = calloc(n, sizeof *out->skipped);
    if (!out->skipped)
        return MTL_ENOMEM;
    for (size_t i = 0; i < f->skip_cap; i++) {
        if (!f->skip[i].seen)
            continue;
        struct mtl_skipped *s = &out->skipped[out->nskipped++];
        s->function = mtl_view_function_name(f->v, (uint32_t)i);
        s->bytes = f->skip[i].bytes;
        s->calls = f->skip[i].calls;
    }
    qsort(out->skipped, out->nskipped, sizeof *out->skipped, by_skipped_bytes);
    return 0;
}

int mtl_rows_fold(struct mtl_rows *out, const struct mtl_stackagg *a,
                  struct mtl_view *v, const struct mtl_defs *d,
                  enum mtl_group by, int inclusive, uint32_t thread)
{
    struct fold f = { .v = v, .by = by, .inclusive = inclusive, .names = MTL_INTERN_INIT };
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < a->n && !f.err; i++) {
        const struct mtl_stackagg_entry *e = &a->e[i];
        if (thread != MTL_ALL_THREADS && e->thread != thread)
            continue;
        out->calls += e->calls;
        out->bytes += e->bytes;
        out->extra += e->extra;
        fold_entry(&f, e);
    }
    if (!f.err) {
        out->row = calloc(f.nacc ? f.nacc : 1, sizeof *out->row);
        if (!out->row)
            f.err = MTL_ENOMEM;
    }
    for (size_t k = 0; !f.err && k < f.nacc; k++) {
        const struct acc *c = &f.acc[k];
        if (c->calls <= 0 && c->bytes <= 0 && c->extra <= 0)
            continue;
        struct mtl_row *row = &out->row[out->n++];
        row->key = (uint32_t)k;
        row->calls = c->calls;
        row->bytes = c->bytes;
        row->extra = c->extra;
        row->percent = out->bytes > 0 ? 100.0 * c->bytes / out->bytes : 0;
        row->location = MTL_NO_LOCATION;
        if (by == MTL_BY_TYPE) {
            const char *name = k != NO_STACK_KEY ? mtl_defs_string(d, (uint32_t)k) : NULL;
            row->type = name ? name : "(untagged)";
            continue;
        }
        if (k == NO_STACK_KEY && by != MTL_BY_THREAD) {
            row->function = by == MTL_BY_FUNCTION ? "(no stack)" : NULL;
            row->file = by == MTL_BY_FILE ? "(no stack)" : NULL;
            row->module = by == MTL_BY_MODULE ? "(no stack)" : NULL;
            continue;
        }
        switch (by) {
        case MTL_BY_THREAD: {
            const struct mtl_thread *t = mtl_defs_thread(d, (uint32_t)(k - 1));
            row->thread = (uint32_t)(k - 1);
            row->tid = t ? t->tid : 0;
            row->thread_name = t && t->name ? t->name : "";
            break;
        }
        case MTL_BY_FILE:
            row->file = c->name;
            break;
        case MTL_BY_MODULE:
            row->module = c->name;
            break;
        case MTL_BY_TYPE:
            break;
        case MTL_BY_FUNCTION: {
            const struct mtl_location *l = mtl_view_location(v, c->best_loc);
            row->location = c->best_loc;
            row->function = l->function;
            row->file = l->file;
            row->line = l->line;
            row->module = l->module;
            break;
        }
        }
    }
    if (!f.err && by == MTL_BY_FUNCTION && !inclusive)
        f.err = collect_skipped(&f, out);
    free(f.acc);
    free(f.loc_bytes);
    free(f.skip);
    mtl_intern_release(&f.names);
    if (f.err)
        mtl_rows_release(out);
    return f.err;
}

const char *mtl_row_name(const struct mtl_row *row, char *buf, size_t cap)
{
    if (row->type)
        return row->type;
    if (row->function)
        return row->function;
    if (row->file)
        return row->file;
    if (row->module)
        return row->module;
    snprintf(buf, cap, "%u %s", row->tid, row->thread_name ? row->thread_name : "");
    return buf;
}

struct sort_by {
    enum mtl_sort key;
    int desc;
};

static double sort_value(const struct mtl_row *r, enum mtl_sort key)
{
    switch (key) {
    case MTL_SORT_CALLS: return r->calls;
    case MTL_SORT_PER_CALL: return r->calls > 0 ? r->bytes / r->calls : 0;
    case MTL_SORT_EXTRA: return r->extra;
    case MTL_SORT_FUNCTION: return 0;
    case MTL_SORT_BYTES:
    case MTL_SORT_PERCENT: break;
    }
    return r->bytes;
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
    const struct mtl_row *a = pa, *b = pb;
    const struct sort_by *by = arg;
    char ba[64], bb[64];
    int names = strcmp(mtl_row_name(a, ba, sizeof ba), mtl_row_name(b, bb, sizeof bb));
    if (by->key == MTL_SORT_FUNCTION)
        return by->desc ? -names : names;
    double x = sort_value(a, by->key), y = sort_value(b, by->key);
    int c = x < y ? -1 : x > y;
    if (c)
        return by->desc ? -c : c;
    if (names)
        return names; /* ties: by name, ascending, either way */
    return a->key < b->key ? -1 : a->key > b->key;
}

void mtl_rows_sort(struct mtl_rows *rows, enum mtl_sort key, int descending)
{
    struct sort_by by = { key, descending };
    if (rows->n > 1)
        qsort_r(rows->row, rows->n, sizeof *rows->row, cmp_rows, &by);
}

void mtl_rows_truncate(struct mtl_rows *rows, size_t n)
{
    if (!n || n >= rows->n)
        return;
    for (size_t i = n; i < rows->n; i++) {
        for (size_t p = 0; p < rows->row[i].npaths; p++)
            free(rows->row[i].paths[p].frames);
        free(rows->row[i].paths);
    }
    rows->cut += rows->n - n;
    rows->n = n;
}

/* --- call paths ------------------------------------------------------------ */

struct path_acc {
    uint32_t row;
    double calls, bytes, top_bytes;
    uint32_t stack;         /* the heaviest stack of the path */
    uint32_t key;           /* interned frames */
};

static int by_row_then_bytes(const void *pa, const void *pb)
{
    const struct path_acc *a = pa, *b = pb;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

int mtl_rows_paths(struct mtl_rows *rows, const struct mtl_stackagg *a,
                   struct mtl_view *v, int inclusive, uint32_t thread, size_t n,
                   size_t depth)
{
    if (!n || !rows->n)
        return 0;
    /* Which row a function id is shown in. */
    struct mtl_hmap row_of = MTL_HMAP_INIT;
    struct mtl_intern keys = MTL_INTERN_INIT;   /* (row, frames...) -> path */
    struct path_acc *acc = NULL;
    size_t nacc = 0, acc_cap = 0;
    uint32_t *tmp = NULL;
    size_t tmp_cap = 0;
    int rc = 0;
    for (size_t r = 0; r < rows->n && rc >= 0; r++)
        if (rows->row[r].function && rows->row[r].location != MTL_NO_LOCATION)
            rc = mtl_hmap_put(&row_of,
                              mtl_view_location(v, rows->row[r].location)->function_id,
                              r, NULL);
    for (size_t i = 0; i < a->n && rc >= 0; i++) {
        const struct mtl_stackagg_entry *e = &a->e[i];
        if (thread != MTL_ALL_THREADS && e->thread != thread)
            continue;
        const uint32_t *locs;
        size_t nl;
        if ((rc = mtl_view_frames(v, e->stack, &locs, &nl)) < 0)
            break;
        size_t keep = depth && depth < nl ? depth : nl;
        if (grow_zero((void **)&tmp, &tmp_cap, keep + 1, sizeof *tmp) < 0) {
            rc = MTL_ENOMEM;
            break;
        }
        memcpy(tmp + 1, locs, keep * sizeof *tmp);
        /* The rows this stack counts in: its site's, or (inclusive) every
         * function's on it, once. */
        uint32_t site = inclusive ? MTL_NO_LOCATION : mtl_view_site(v, e->stack);
        for (size_t k = 0; k < (inclusive ? nl : 1) && rc >= 0; k++) {
            uint32_t loc = inclusive ? locs[k] : site;
            uint64_t r;
            if (loc == MTL_NO_LOCATION ||
                !mtl_hmap_get(&row_of, mtl_view_location(v, loc)->function_id, &r))
                continue;
            if (inclusive) {
                /* once per row: skip a row met earlier on this stack */
                int dup = 0;
                for (size_t q = 0; q < k && !dup; q++)
                    dup = mtl_view_location(v, locs[q])->function_id ==
                          mtl_view_location(v, loc)->function_id;
                if (dup)
                    continue;
            }
            tmp[0] = (uint32_t)r;
            uint32_t id;
            int added = mtl_intern_add(&keys, tmp, (keep + 1) * sizeof *tmp, &id);
            if (added < 0) {
                rc = added;
                break;
            }
            if (added) {
                if (grow_zero((void **)&acc, &acc_cap, (size_t)id + 1, sizeof *acc) < 0) {
                    rc = MTL_ENOMEM;
                    break;
                }
                nacc = (size_t)id + 1;
                acc[id].row = (uint32_t)r;
                acc[id].key = id;
                acc[id].top_bytes = -1;
            }
            acc[id].calls += e->calls;
            acc[id].bytes += e->bytes;
            if (e->bytes > acc[id].top_bytes ||
                (e->bytes == acc[id].top_bytes && e->stack < acc[id].stack)) {
                acc[id].top_bytes = e->bytes;
                acc[id].stack = e->stack;
            }
        }
    }
    if (rc >= 0 && nacc)
        qsort(acc, nacc, sizeof *acc, by_row_then_bytes);
    for (size_t i = 0; rc >= 0 && i < nacc;) {
        size_t j = i;
        while (j < nacc && acc[j].row == acc[i].row)
            j++;
        struct mtl_row *row = &rows->row[acc[i].row];
        size_t take = j - i < n ? j - i : n;
        row->paths = calloc(take, sizeof *row->paths);
        if (!row->paths) {
            rc = MTL_ENOMEM;
            break;
        }
        for (size_t k = 0; k < take && rc >= 0; k++) {
            const struct path_acc *p = &acc[i + k];
            size_t len;
            const uint32_t *fr = mtl_intern_at(&keys, p->key, &len);
            size_t nf = len / sizeof *fr - 1;
            struct mtl_path *out = &row->paths[row->npaths++];
            out->calls = p->calls;
            out->bytes = p->bytes;
            out->stack = p->stack;
            out->n = nf;
            out->frames = calloc(nf ? nf : 1, sizeof *out->frames);
            if (!out->frames) {
                rc = MTL_ENOMEM;
                break;
            }
            for (size_t q = 0; q < nf; q++)
                out->frames[q] = *mtl_view_location(v, fr[q + 1]);
        }
        i = j;
    }
    free(acc);
    free(tmp);
    mtl_intern_release(&keys);
    mtl_hmap_release(&row_of);
    return rc < 0 ? rc : 0;
}

void mtl_rows_release(struct mtl_rows *rows)
{
    for (size_t i = 0; rows->row && i < rows->n; i++) {
        for (size_t p = 0; p < rows->row[i].npaths; p++)
            free(rows->row[i].paths[p].frames);
        free(rows->row[i].paths);
    }
    free(rows->row);
    free(rows->skipped);
    rows->row = NULL;
    rows->skipped = NULL;
    rows->n = rows->nskipped = rows->cut = 0;
}
