/*
 * cmd_diff.c: `memtally diff BASE NEW`: per function (site), what changed
 * from one trace to the other: calls, bytes, bytes live at each trace's
 * peak, bytes leaked.  Functions are matched by name, so the two traces
 * may come from different builds or machines.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally diff [options] BASE NEW\n"
    "\n"
    "What changed from trace BASE to trace NEW, by function: allocation calls,\n"
    "bytes, bytes live at the peak, bytes leaked.  Largest change first.\n"
    "\n"
    "  --top N     the first N functions\n"
    "  --json      JSON (docs/ANALYSIS.md)\n";

enum { CALLS, BYTES, PEAK, LEAKED, NFIELDS };
static const char *const field_name[NFIELDS] = { "calls", "bytes", "peak", "leaked" };

struct diff_row {
    char *function;
    double v[2][NFIELDS]; /* [0] base, [1] new */
};

struct diff {
    size_t top;
    struct diff_row *rows;
    size_t n, cap;
    size_t *index;        /* name hash -> row + 1 */
    size_t index_cap;
    double total[2][NFIELDS];
    int estimated;        /* either trace is sampled */
};

struct side {
    double live, peak;
    uint64_t peak_seq;
    int found;
    struct mtl_stackagg all, leaked, at_peak;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct diff *d = ctx;
    return parse_top("diff", argc, argv, i, &d->top);
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct diff_row *row_for(struct diff *d, const char *name)
{
    if ((d->n + 1) * 2 > d->index_cap) {
        size_t cap = d->index_cap ? d->index_cap * 2 : 1024;
        size_t *idx = calloc(cap, sizeof *idx);
        if (!idx)
            return NULL;
        for (size_t r = 0; r < d->n; r++) {
            size_t j = hash_name(d->rows[r].function) & (cap - 1);
            while (idx[j])
                j = (j + 1) & (cap - 1);
            idx[j] = r + 1;
        }
        free(d->index);
        d->index = idx;
        d->index_cap = cap;
    }
    size_t mask = d->index_cap - 1, j = hash_name(name) & mask;
    for (; d->index[j]; j = (j + 1) & mask)
        if (!strcmp(d->rows[d->index[j] - 1].function, name))
            return &d->rows[d->index[j] - 1];
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        struct diff_row *r = realloc(d->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        d->rows = r;
        d->cap = cap;
    }
    struct diff_row *r = &d->rows[d->n];
    memset(r, 0, sizeof *r);
    if (!(r->function = strdup(name)))
        return NULL;
    d->index[j] = ++d->n;
    return r;
}

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct side *s = arg;
    if (!b || !passes)
        return 0;
    if (ev->type == MTL_EV_ALLOC) {
        s->live += b->weight_bytes;
        if (s->live > s->peak) {
            s->peak = s->live;
            s->peak_seq = b->alloc_seq;
            s->found = 1;
        }
    } else if (ev->type == MTL_EV_FREE) {
        s->live -= b->weight_bytes;
    }
    return 0;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct side *s = arg;
    if (mtl_stackagg_add(&s->all, 0, b->stack, b->weight_count, b->weight_bytes, 0) < 0)
        return -1;
    if (b->free_us == MTL_NEVER &&
        mtl_stackagg_add(&s->leaked, 0, b->stack, b->weight_count, b->weight_bytes, 0) < 0)
        return -1;
    return 0;
}

static int on_peak_block(void *arg, const struct mtl_block *b)
{
    struct side *s = arg;
    if (b->alloc_seq > s->peak_seq || b->free_seq <= s->peak_seq)
        return 0;
    return mtl_stackagg_add(&s->at_peak, 0, b->stack, b->weight_count, b->weight_bytes,
                            0) < 0 ? -1 : 0;
}

/* Adds one aggregate of one trace into the rows, under field f. */
static int gather(struct diff *d, struct analysis *a, const struct mtl_stackagg *agg,
                  int which, int f)
{
    struct mtl_rows rows;
    int rc = mtl_rows_fold(&rows, agg, a->v, a->r, MTL_BY_FUNCTION, 0, MTL_ALL_THREADS);
    if (rc < 0) {
        cli_error("diff: %s", mtl_strerror(rc));
        return 1;
    }
    for (size_t i = 0; i < rows.n; i++) {
        struct diff_row *r = row_for(d, rows.row[i].function);
        if (!r) {
            mtl_rows_release(&rows);
            cli_error("diff: out of memory");
            return 1;
        }
        r->v[which][f] += f == CALLS ? rows.row[i].calls : rows.row[i].bytes;
    }
    d->total[which][f] += f == CALLS ? rows.calls : rows.bytes;
    mtl_rows_release(&rows);
    return 0;
}

static int read_side(struct diff *d, struct analysis *a, const char *path, int which)
{
    struct side s;
    memset(&s, 0, sizeof s);
    a->path = path;
    a->noted = 0;
    if (analysis_open(a, path))
        return 1;
    d->estimated |= analysis_estimated(a);
    struct mtl_scan_ops first = { .block = on_block, .event = on_event };
    struct mtl_scan_ops second = { .block = on_peak_block };
    int bad = analysis_scan(a, &first, &s, NULL);
    if (!bad && s.found)
        bad = analysis_rescan(a, &second, &s, NULL);
    if (!bad)
        bad = gather(d, a, &s.all, which, CALLS) || gather(d, a, &s.all, which, BYTES) ||
              gather(d, a, &s.at_peak, which, PEAK) || gather(d, a, &s.leaked, which, LEAKED);
    mtl_stackagg_release(&s.all);
    mtl_stackagg_release(&s.leaked);
    mtl_stackagg_release(&s.at_peak);
    analysis_close(a);
    return bad;
}

static double change(const struct diff_row *r, int f)
{
    return r->v[1][f] - r->v[0][f];
}

static int by_change(const void *pa, const void *pb)
{
    const struct diff_row *a = pa, *b = pb;
    for (int f = BYTES; f < NFIELDS + BYTES; f++) {
        double x = fabs(change(a, f % NFIELDS)), y = fabs(change(b, f % NFIELDS));
        if (x != y)
            return x < y ? 1 : -1;
    }
    return strcmp(a->function, b->function);
}

static void json_fields(const double v[2][NFIELDS])
{
    for (int f = 0; f < NFIELDS; f++) {
        printf(", \"%s_base\": ", field_name[f]);
        json_number(stdout, v[0][f]);
        printf(", \"%s_new\": ", field_name[f]);
        json_number(stdout, v[1][f]);
        printf(", \"%s_delta\": ", field_name[f]);
        json_number(stdout, v[1][f] - v[0][f]);
    }
}

int cmd_diff(int argc, char **argv)
{
    struct analysis a = {0};
    struct diff d = {0};
    int code;
    if (analysis_parse(&a, argc, argv, usage, 2, parse_opt, &d, &code))
        return code;
    const char *base = a.path, *next = a.path2;
    int bad = read_side(&d, &a, base, 0) || read_side(&d, &a, next, 1);
    if (!bad) {
        qsort(d.rows, d.n, sizeof *d.rows, by_change);
        size_t n = d.top && d.top < d.n ? d.top : d.n;
        if (a.json) {
            printf("{%s\"rows\": [", d.estimated ? "\"estimated\": true, " : "");
            for (size_t i = 0; i < n; i++) {
                printf("%s{\"function\": ", i ? ", " : "");
                json_string(stdout, d.rows[i].function);
                json_fields((const double(*)[NFIELDS])d.rows[i].v);
                printf("}");
            }
            printf("], \"total\": {\"function\": null");
            json_fields((const double(*)[NFIELDS])d.total);
            printf("}}\n");
        } else {
            printf("%-48s %12s %14s %14s %14s\n", "FUNCTION", "CALLS", "BYTES", "PEAK",
                   "LEAKED");
            for (size_t i = 0; i <= n; i++) {
                const double(*v)[NFIELDS] = i < n ? (const double(*)[NFIELDS])d.rows[i].v
                                                  : (const double(*)[NFIELDS])d.total;
                char name[64];
                snprintf(name, sizeof name, "%s", i < n ? d.rows[i].function : "total");
                if (strlen(name) == sizeof name - 1)
                    memcpy(name + sizeof name - 4, "...", 4);
                printf("%-48.48s %+12.0f %+14.0f %+14.0f %+14.0f\n", name,
                       v[1][CALLS] - v[0][CALLS], v[1][BYTES] - v[0][BYTES],
                       v[1][PEAK] - v[0][PEAK], v[1][LEAKED] - v[0][LEAKED]);
            }
        }
    }
    for (size_t i = 0; i < d.n; i++)
        free(d.rows[i].function);
    free(d.rows);
    free(d.index);
    return bad;
}
