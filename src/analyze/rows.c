/* rows.c: see rows.h. */
#include "analyze/rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/view.h"
#include "memtally/trace.h"

struct acc {
    double calls, bytes, extra;
    uint64_t seen;      /* stamp of the last entry counted (inclusive) */
    const char *name;   /* BY_FILE, BY_MODULE: the key */
    uint32_t best_loc;
    double best_bytes;
};

struct fold {
    struct mtl_view *v;
    const struct mtl_reader *r;
    enum mtl_group by;
    int inclusive;
    uint32_t thread;
    struct acc *acc;       /* by key */
    size_t nacc, acc_cap;
    double *loc_bytes;     /* by location, for the best line */
    size_t loc_cap;
    double calls, bytes, extra;
    uint64_t stamp;
    int err;
};

#define NO_STACK_KEY 0     /* key 0 is "(no stack)"; real keys start at 1 */

static struct acc *acc_at(struct fold *f, size_t key)
{
    if (key >= f->acc_cap) {
        size_t cap = f->acc_cap ? f->acc_cap : 256;
        while (cap <= key)
            cap *= 2;
        struct acc *a = realloc(f->acc, cap * sizeof *a);
        if (!a) {
            f->err = MTL_ENOMEM;
            return NULL;
        }
        memset(a + f->acc_cap, 0, (cap - f->acc_cap) * sizeof *a);
        for (size_t i = f->acc_cap; i < cap; i++)
            a[i].best_loc = MTL_NO_LOCATION;
        f->acc = a;
        f->acc_cap = cap;
    }
    if (key >= f->nacc)
        f->nacc = key + 1;
    return &f->acc[key];
}

/* Keys of strings (files, modules): a linear probe over what we have is
 * enough, as there are few of them; they are cached per location. */
static size_t string_key(struct fold *f, const char *s)
{
    for (size_t k = 1; k < f->nacc; k++)
        if (f->acc[k].name && !strcmp(f->acc[k].name, s))
            return k;
    size_t k = f->nacc < 1 ? 1 : f->nacc;
    struct acc *a = acc_at(f, k);
    if (a)
        a->name = s;
    return k;
}

static size_t key_of(struct fold *f, const struct mtl_stackagg_entry *e, uint32_t loc)
{
    if (f->by == MTL_BY_THREAD)
        return (size_t)e->thread + 1;
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
    if (!a)
        return;
    if (a->seen == f->stamp)
        return; /* inclusive: once per stack */
    a->seen = f->stamp;
    a->calls += e->calls;
    a->bytes += e->bytes;
    a->extra += e->extra;
    if (loc != MTL_NO_LOCATION && f->by == MTL_BY_FUNCTION) {
        if (loc >= f->loc_cap) {
            size_t cap = f->loc_cap ? f->loc_cap : 1024;
            while (cap <= loc)
                cap *= 2;
            double *b = realloc(f->loc_bytes, cap * sizeof *b);
            if (!b) {
                f->err = MTL_ENOMEM;
                return;
            }
            memset(b + f->loc_cap, 0, (cap - f->loc_cap) * sizeof *b);
            f->loc_bytes = b;
            f->loc_cap = cap;
        }
        f->loc_bytes[loc] += e->bytes;
        if (a->best_loc == MTL_NO_LOCATION || f->loc_bytes[loc] > a->best_bytes ||
            (f->loc_bytes[loc] == a->best_bytes && loc < a->best_loc)) {
            a->best_loc = loc;
            a->best_bytes = f->loc_bytes[loc];
        }
    }
}

static void fold_entry(const struct mtl_stackagg_entry *e, void *arg)
{
    struct fold *f = arg;
    if (f->err || (f->thread != MTL_ALL_THREADS && e->thread != f->thread))
        return;
    f->calls += e->calls;
    f->bytes += e->bytes;
    f->extra += e->extra;
    f->stamp++;
    const uint32_t *locs;
    size_t n;
    int rc = mtl_view_frames(f->v, e->stack, &locs, &n);
    if (rc < 0) {
        f->err = rc;
        return;
    }
    if (n == 0 || f->by == MTL_BY_THREAD) {
        add(f, key_of(f, e, n ? locs[0] : MTL_NO_LOCATION), e,
            n ? locs[0] : MTL_NO_LOCATION);
        return;
    }
    size_t limit = f->inclusive ? n : 1;
    for (size_t i = 0; i < limit; i++)
        add(f, key_of(f, e, locs[i]), e, locs[i]);
}

int mtl_rows_fold(struct mtl_rows *out, const struct mtl_stackagg *a,
                  struct mtl_view *v, const struct mtl_reader *r,
                  enum mtl_group by, int inclusive, uint32_t thread)
{
    struct fold f = { .v = v, .r = r, .by = by, .inclusive = inclusive,
                      .thread = thread };
    memset(out, 0, sizeof *out);
    mtl_stackagg_each(a, fold_entry, &f);
    if (!f.err) {
        out->row = calloc(f.nacc ? f.nacc : 1, sizeof *out->row);
        if (!out->row)
            f.err = MTL_ENOMEM;
    }
    for (size_t k = 0; !f.err && k < f.nacc; k++) {
        const struct acc *c = &f.acc[k];
        if (c->calls <= 0 && c->bytes <= 0)
            continue;
        struct mtl_row *row = &out->row[out->n++];
        row->calls = c->calls;
        row->bytes = c->bytes;
        row->extra = c->extra;
        row->percent = f.bytes > 0 ? 100.0 * c->bytes / f.bytes : 0;
        row->location = MTL_NO_LOCATION;
        if (k == NO_STACK_KEY && by != MTL_BY_THREAD) {
            row->function = by == MTL_BY_FUNCTION ? "(no stack)" : NULL;
            row->file = by == MTL_BY_FILE ? "(no stack)" : NULL;
            row->module = by == MTL_BY_MODULE ? "(no stack)" : NULL;
            continue;
        }
        switch (by) {
        case MTL_BY_THREAD:
            row->thread = (uint32_t)(k - 1);
            break;
        case MTL_BY_FILE:
            row->file = c->name;
            break;
        case MTL_BY_MODULE:
            row->module = c->name;
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
    out->calls = f.calls;
    out->bytes = f.bytes;
    out->extra = f.extra;
    free(f.acc);
    free(f.loc_bytes);
    if (f.err)
        mtl_rows_release(out);
    return f.err;
}

const char *mtl_row_name(const struct mtl_row *row, const struct mtl_reader *r,
                         char *buf, size_t cap)
{
    if (row->function)
        return row->function;
    if (row->file)
        return row->file;
    if (row->module)
        return row->module;
    const struct mtl_thread *t = mtl_reader_thread(r, row->thread);
    snprintf(buf, cap, "%u %s", t ? t->tid : 0, t && *t->name ? t->name : "");
    return buf;
}

struct sort_by {
    enum mtl_sort key;
    int desc;
    const struct mtl_reader *r;
};

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
    const struct mtl_row *a = pa, *b = pb;
    const struct sort_by *by = arg;
    enum mtl_sort sort_key = by->key;
    int sort_desc = by->desc;
    const struct mtl_reader *sort_reader = by->r;
    double x = 0, y = 0;
    switch (sort_key) {
    case MTL_SORT_CALLS: x = a->calls; y = b->calls; break;
    case MTL_SORT_PER_CALL:
        x = a->calls > 0 ? a->bytes / a->calls : 0;
        y = b->calls > 0 ? b->bytes / b->calls : 0;
        break;
    case MTL_SORT_BYTES:
    case MTL_SORT_PERCENT: x = a->bytes; y = b->bytes; break;
    case MTL_SORT_FUNCTION: break;
    }
    int c = x < y ? -1 : x > y;
    char ba[64], bb[64];
    int names = strcmp(mtl_row_name(a, sort_reader, ba, sizeof ba),
                       mtl_row_name(b, sort_reader, bb, sizeof bb));
    if (sort_key == MTL_SORT_FUNCTION)
        return sort_desc ? -names : names;
    if (c)
        return sort_desc ? -c : c;
    return names; /* ties: by name, ascending, either way */
}

void mtl_rows_sort(struct mtl_rows *rows, const struct mtl_reader *r,
                   enum mtl_sort key, int descending)
{
    struct sort_by by = { key, descending, r };
    qsort_r(rows->row, rows->n, sizeof *rows->row, cmp_rows, &by);
}

void mtl_rows_release(struct mtl_rows *rows)
{
    free(rows->row);
    rows->row = NULL;
    rows->n = 0;
}
