/*
 * test_analyses.c: the result structs of every analysis (src/analyze/
 * analyses.h) on traces written here event by event (trace_mem.h), whose
 * every block, time, stack and thread is known: report (per thread and in
 * total, self and inclusive, by function, file, module and thread, every
 * sort, --top, call paths), peak, leaks (and suppressions), temporary (and
 * --within-us), stacks, tree (top down, callers, callees, thresholds),
 * timeline, histogram, diff and info.
 *
 * Each trace is analysed five ways, which must all give the same answers:
 * from memory (never indexed), from its file with the index off (the
 * stream), from its file with the index built when a query first needs it,
 * built ahead (mtl_engine_index), and loaded by a new engine from where
 * the last one saved it.
 *
 * Two kinds of truth: figures written out below from the trace's table
 * (the whole trace, no filter), and a model, a few lines per analysis
 * written from docs/ANALYSIS.md over the same table, for many filters
 * (size, live-at, thread by id and by index, lifetime, never-freed,
 * freed-between, allocated-between, live-between, inside, and some of them
 * together).  The model agrees with the written figures on the whole
 * trace, so neither is taken on trust alone.
 *
 * Stacks are custom frames named by strings (docs/FORMAT.md, "Stacks"):
 * "malloc" is the allocator's plumbing (hidden) and "xmalloc" a wrapper
 * (passed over), by the view's built-in lists, so sites are known names.
 */
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyses.h"
#include "analyze/engine.h"
#include "check.h"
#include "memtally/errors.h"
#include "trace_mem.h"

#define N MTL_NEVER

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

#define CHECK_NEAR(a, b)                                                     \
    do {                                                                     \
        double x_ = (a), y_ = (b);                                           \
        if (!near(x_, y_))                                                   \
            fprintf(stderr, "%s:%d: %s == %s: %.17g != %.17g\n", __FILE__,   \
                    __LINE__, #a, #b, x_, y_);                               \
        CHECK(near(x_, y_));                                                 \
    } while (0)

/* ---- the traces ------------------------------------------------------------ */

enum { S0, S1, S2, S3, S4, S5, S6, NSTACKS };

/* Frames innermost first, the site (docs/ANALYSIS.md, "Words"), and what
 * `stacks --target parse --depth 2` cuts the stack to (NULL: no parse). */
static const struct {
    const char *frames[4];
    const char *site;
    const char *parse_cut[2];
} stk[NSTACKS] = {
    [S0] = { { NULL }, "(no stack)", { NULL } },                    /* the empty stack */
    [S1] = { { "malloc", "parse", "main" }, "parse", { "parse", "main" } },
    [S2] = { { "xmalloc", "load", "main" }, "load", { NULL } },
    [S3] = { { "render", "main" }, "render", { NULL } },
    [S4] = { { "parse", "worker_main" }, "parse", { "parse", "worker_main" } },
    [S5] = { { "cache_put", "worker_main" }, "cache_put", { NULL } },
    [S6] = { { "fresh", "main" }, "fresh", { NULL } },
};

static int on_stack(int s, const char *fn)
{
    for (int i = 0; i < 4 && stk[s].frames[i]; i++)
        if (!strcmp(stk[s].frames[i], fn))
            return 1;
    return 0;
}

static const uint32_t tids[] = { 100, 200, 300 };
static const char *const tnames[] = { "main", "worker", "idle" };

/* A block: who allocated it where; its times, position in the events and
 * whether it is temporary follow from the events. */
struct blk {
    int thread, stack;
    uint64_t size;
    uint64_t alloc, free;      /* free: N when never freed */
    size_t alloc_ev, free_ev;  /* index in the events; free_ev N */
    int temp;                  /* freed by the very next allocation or free */
};

/* An event: 'a' allocates block, 'f' frees it, 'u' frees an address no
 * block has, 'r' samples the RSS (block: MiB). */
struct ev {
    uint64_t t;
    char kind;
    int block;
};

struct trace {
    const char *name;
    struct blk *b;
    size_t nb;
    const struct ev *e;
    size_t ne;
    int nthreads;
    uint64_t end;
    uint64_t file_blocks;      /* blocks of the file (a flush after every 8 events) */
    struct tm_trace t;
    char path[512];
};

/* Trace 1, the one every analysis is written out for.
 *
 *   block thread stack  size  alloc  free
 *    0      0    S1      100    100   150   temporary
 *    1      0    S1      200    200  1200
 *    2      0    S2     1000    300     -
 *    3      1    S4       50    400   450   temporary
 *    4      1    S5     4000    500  2500
 *    5      0    S3      300   1100  3100
 *    6      1    S5     4000   1500  5500
 *    7      0    S2     1000   2000     -   the peak: 10300 live bytes
 *    8      1    S4       50   2600  2601   temporary
 *    9      0    S0        7   3000     -
 *   10      0    S3      300   3200  3300   b11 between: not temporary
 *   11      1    S1        0   3250  4000
 *   12      1    S5        8   4500     -
 * RSS 1 MiB at 1000, 2 MiB at 3500; a free of an unknown address at 4200;
 * the trace ends at 6000.  Thread 2 ("idle") allocates nothing. */
#define BLK(t, s, z) { .thread = (t), .stack = (s), .size = (z) }
static struct blk blocks1[] = {
    BLK(0, S1, 100),  BLK(0, S1, 200),  BLK(0, S2, 1000), BLK(1, S4, 50),  BLK(1, S5, 4000),
    BLK(0, S3, 300),  BLK(1, S5, 4000), BLK(0, S2, 1000), BLK(1, S4, 50),  BLK(0, S0, 7),
    BLK(0, S3, 300),  BLK(1, S1, 0),    BLK(1, S5, 8),
};

static const struct ev events1[] = {
    { 100, 'a', 0 },   { 150, 'f', 0 },   { 200, 'a', 1 },   { 300, 'a', 2 },
    { 400, 'a', 3 },   { 450, 'f', 3 },   { 500, 'a', 4 },   { 1000, 'r', 1 },
    { 1100, 'a', 5 },  { 1200, 'f', 1 },  { 1500, 'a', 6 },  { 2000, 'a', 7 },
    { 2500, 'f', 4 },  { 2600, 'a', 8 },  { 2601, 'f', 8 },  { 3000, 'a', 9 },
    { 3100, 'f', 5 },  { 3200, 'a', 10 }, { 3250, 'a', 11 }, { 3300, 'f', 10 },
    { 3500, 'r', 2 },  { 4000, 'f', 11 }, { 4200, 'u', 0 },  { 4500, 'a', 12 },
    { 5500, 'f', 6 },
};

/* Trace 2, the other side of diff: one thread; cache_put shrinks, load
 * leaks more, parse is gone, fresh is new, render the same. */
static struct blk blocks2[] = {
    BLK(0, S5, 100), BLK(0, S2, 1000), BLK(0, S2, 1000), BLK(0, S2, 1000), BLK(0, S6, 500),
    BLK(0, S3, 300),
};

static const struct ev events2[] = {
    { 100, 'a', 0 }, { 200, 'f', 0 }, { 300, 'a', 1 }, { 400, 'a', 2 }, { 500, 'a', 3 },
    { 600, 'a', 4 }, { 700, 'a', 5 }, { 800, 'f', 5 },
};

static struct trace T1 = { "one", blocks1, sizeof blocks1 / sizeof *blocks1, events1,
                           sizeof events1 / sizeof *events1, 3, 6000, 0, { 0 }, "" };
static struct trace T2 = { "two", blocks2, sizeof blocks2 / sizeof *blocks2, events2,
                           sizeof events2 / sizeof *events2, 1, 6000, 0, { 0 }, "" };

static char dir[256]; /* the traces' files and their indexes */

static uint64_t ptr_of(int block)
{
    return 0x10000 + (uint64_t)block * 0x100;
}

/* Writes the trace (in memory and to its file) and works out each
 * block's times, events and temporariness from the events. */
static void build(struct trace *T)
{
    struct tm_trace *t = &T->t;
    tm_open(t, MTL_MODE_FULL, 0);
    uint32_t ids[NSTACKS];
    for (int s = 0; s < NSTACKS; s++)
        ids[s] = s == S0 ? 0 : tm_stack(t, stk[s].frames[0], stk[s].frames[1],
                                         stk[s].frames[2], stk[s].frames[3], NULL);
    for (int i = 0; i < T->nthreads; i++)
        tm_thread(t, 0, (uint32_t)i, tids[i], tnames[i]);
    T->file_blocks = 1;
    uint64_t seq = 0;
    uint64_t *seq_of = calloc(T->nb, sizeof *seq_of);
    CHECK(seq_of != NULL);
    for (size_t i = 0; i < T->ne; i++) {
        const struct ev *e = &T->e[i];
        struct blk *b = e->kind == 'a' || e->kind == 'f' ? &T->b[e->block] : NULL;
        if (i && i % 8 == 0) {
            tm_flush(t);
            T->file_blocks++;
        }
        switch (e->kind) {
        case 'a':
            tm_alloc(t, e->t, (uint32_t)b->thread, ptr_of(e->block), b->size, ids[b->stack]);
            b->alloc = e->t;
            b->alloc_ev = i;
            b->free = N;
            b->free_ev = N;
            seq_of[e->block] = seq++;
            break;
        case 'f':
            tm_free(t, e->t, (uint32_t)b->thread, ptr_of(e->block));
            b->free = e->t;
            b->free_ev = i;
            b->temp = seq == seq_of[e->block] + 1;
            seq++;
            break;
        case 'u':
            tm_free(t, e->t, 0, 0xdead0);
            seq++;
            break;
        case 'r':
            tm_rss(t, e->t, (uint64_t)e->block << 20);
            break;
        }
    }
    tm_end(t, T->end);
    tm_close(t);
    free(seq_of);
    snprintf(T->path, sizeof T->path, "%s/%s.mtly", dir, T->name);
    tm_save(t, T->path);
}

/* ---- the engines ------------------------------------------------------------ */

enum mode { M_MEMORY, M_STREAM, M_INDEX_LAZY, M_INDEX_AHEAD, M_INDEX_LOADED, NMODES };
static const char *const mode_names[NMODES] = {
    "memory", "stream", "index built when needed", "index built ahead", "index loaded",
};

static char dir_lazy[300], dir_ahead[300];

static struct mtl_engine *open_engine(struct trace *T, enum mode m)
{
    struct mtl_source src = { .kind = MTL_SOURCE_PATH, .path = T->path };
    struct mtl_engine_options o;
    memset(&o, 0, sizeof o);
    if (m == M_MEMORY) {
        src.kind = MTL_SOURCE_MEMORY;
        src.data = T->t.data;
        src.size = T->t.size;
    }
    o.index = m == M_STREAM ? MTL_INDEX_OFF : MTL_INDEX_AUTO;
    o.index_dir = m == M_INDEX_LAZY ? dir_lazy : dir_ahead;
    /* One core or two: the decoding of the stream and the queries of the
     * index each run on their own and in parallel (and a thread costs
     * much under the sanitizers). */
    o.threads = m == M_STREAM || m == M_INDEX_AHEAD ? 2 : 1;
    struct mtl_engine *e;
    CHECK(mtl_engine_open(&e, &src, &o) == 0);
    struct mtl_totals tot;
    const char *path;
    uint64_t size;
    switch (m) {
    case M_MEMORY:
    case M_STREAM:
        CHECK(mtl_engine_index(e, &path, &size) == MTL_EINVAL); /* never indexed */
        CHECK(mtl_engine_totals(e, &tot) == MTL_ENOENT);
        break;
    case M_INDEX_LAZY:
        CHECK(mtl_engine_totals(e, &tot) == MTL_ENOENT); /* not yet */
        break;
    case M_INDEX_AHEAD:
        CHECK(mtl_engine_index(e, &path, &size) == 0);
        CHECK(size > 0);
        CHECK(strncmp(path, dir_ahead, strlen(dir_ahead)) == 0);
        CHECK(access(path, R_OK) == 0);
        break;
    case M_INDEX_LOADED:
        CHECK(mtl_engine_totals(e, &tot) == 0); /* found at open */
        break;
    default:
        break;
    }
    return e;
}

/* The indexes (DEV-INODE.mtlx, docs/ANALYSIS.md) in directory d. */
static size_t indexes_in(const char *d)
{
    DIR *dd = opendir(d);
    if (!dd)
        return 0;
    size_t n = 0;
    for (struct dirent *de; (de = readdir(dd));) {
        size_t len = strlen(de->d_name);
        n += len > 5 && !strcmp(de->d_name + len - 5, ".mtlx");
    }
    closedir(dd);
    return n;
}

/* ---- the model -------------------------------------------------------------- */

static int in_range(const struct mtl_range *r, uint64_t v)
{
    return !r->set || (r->min <= v && v <= r->max);
}

static int live_at(const struct blk *b, uint64_t t)
{
    return b->alloc <= t && (b->free == N || b->free > t);
}

/* docs/ANALYSIS.md, "Filters", for the filters the tests use. */
static int passes(const struct trace *T, const struct mtl_filter *f, const struct blk *b)
{
    if (!in_range(&f->size, b->size) || !in_range(&f->allocated, b->alloc))
        return 0;
    if (f->thread_set && f->thread != (f->thread_is_index ? (uint32_t)b->thread : tids[b->thread]))
        return 0;
    if (f->live_at_set && !live_at(b, f->live_at))
        return 0;
    if (f->live_between.set) {
        int some = 0;
        /* Each t in [A, B] (to past the end of every trace here: a block
         * never freed is live after the end too, as for --live-at). */
        for (uint64_t t = f->live_between.min; t <= f->live_between.max && t <= 100000 && !some;
             t++)
            some = live_at(b, t);
        if (!some)
            return 0;
    }
    if (f->freed.set && (b->free == N || !in_range(&f->freed, b->free)))
        return 0;
    if (f->never_freed && b->free != N)
        return 0;
    if (f->lifetime.set && !in_range(&f->lifetime, (b->free == N ? T->end : b->free) - b->alloc))
        return 0;
    for (size_t i = 0; i < f->ninside; i++)
        if (!on_stack(b->stack, f->inside[i]))
            return 0;
    for (size_t i = 0; i < f->nnot_inside; i++)
        if (on_stack(b->stack, f->not_inside[i]))
            return 0;
    return 1;
}

struct mrow {
    const char *name;
    double calls, bytes, extra;
};

struct mrows {
    struct mrow r[32];
    size_t n;
    double calls, bytes, extra;
};

static void madd(struct mrows *m, const char *name, double calls, double bytes, double extra)
{
    m->calls += calls;
    m->bytes += bytes;
    m->extra += extra;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->r[i].name, name)) {
            m->r[i].calls += calls;
            m->r[i].bytes += bytes;
            m->r[i].extra += extra;
            return;
        }
    CHECK(m->n < 32);
    m->r[m->n++] = (struct mrow){ name, calls, bytes, extra };
}

static enum mtl_sort sort_key;
static int sort_desc;

static double key_of(const struct mrow *r)
{
    switch (sort_key) {
    case MTL_SORT_CALLS: return r->calls;
    case MTL_SORT_PER_CALL: return r->calls > 0 ? r->bytes / r->calls : 0;
    case MTL_SORT_EXTRA: return r->extra;
    default: return r->bytes;
    }
}

/* docs/ANALYSIS.md, report: by KEY, descending unless asc; function
 * ascending unless desc; ties by name, ascending. */
static int by_key(const void *pa, const void *pb)
{
    const struct mrow *a = pa, *b = pb;
    int names = strcmp(a->name, b->name);
    if (sort_key == MTL_SORT_FUNCTION)
        return sort_desc ? -names : names;
    double x = key_of(a), y = key_of(b);
    if (x != y)
        return (x < y) == sort_desc ? 1 : -1;
    return names;
}

static void msort(struct mrows *m, enum mtl_sort key, int desc)
{
    sort_key = key;
    sort_desc = desc;
    qsort(m->r, m->n, sizeof *m->r, by_key);
}

/* got against want: the same rows in the same order (the first top of
 * them), each row's calls, bytes and percent of the table's bytes; the
 * table's totals. */
static void check_rows(const struct mtl_rows *got, const struct mrows *want, size_t top)
{
    size_t n = top && top < want->n ? top : want->n;
    char buf[64];
    if (got->n != n) {
        fprintf(stderr, "rows: %zu, want %zu:", got->n, n);
        for (size_t i = 0; i < got->n; i++)
            fprintf(stderr, " %s", mtl_row_name(&got->row[i], buf, sizeof buf));
        fprintf(stderr, "\n");
    }
    CHECK_EQ(got->n, n);
    CHECK_EQ(got->cut, want->n - n);
    CHECK(got->calls == want->calls);
    CHECK(got->bytes == want->bytes);
    for (size_t i = 0; i < n; i++) {
        const struct mtl_row *r = &got->row[i];
        const char *name = mtl_row_name(r, buf, sizeof buf);
        if (strcmp(name, want->r[i].name))
            fprintf(stderr, "row %zu: %s, want %s\n", i, name, want->r[i].name);
        CHECK(!strcmp(name, want->r[i].name));
        CHECK(r->calls == want->r[i].calls);
        CHECK(r->bytes == want->r[i].bytes);
        CHECK_NEAR(r->percent, want->bytes > 0 ? 100 * want->r[i].bytes / want->bytes : 0);
    }
}

/* report --total, self, by function: every block that passes, by site. */
static void model_report(const struct trace *T, const struct mtl_filter *f, int thread,
                         struct mrows *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < T->nb; i++) {
        const struct blk *b = &T->b[i];
        if (passes(T, f, b) && (thread < 0 || b->thread == thread))
            madd(m, stk[b->stack].site, 1, (double)b->size, 0);
    }
    msort(m, MTL_SORT_BYTES, 1);
}

/* peak: live bytes after each event, the first highest, what was live then. */
static void model_peak(const struct trace *T, const struct mtl_filter *f, double *peak,
                       uint64_t *peak_us, int *found, struct mrows *m)
{
    double live = 0;
    size_t at = 0;
    *peak = 0;
    *peak_us = 0;
    *found = 0;
    for (size_t i = 0; i < T->ne; i++) {
        const struct ev *e = &T->e[i];
        if (e->kind != 'a' && e->kind != 'f')
            continue;
        const struct blk *b = &T->b[e->block];
        if (!passes(T, f, b))
            continue;
        live += e->kind == 'a' ? (double)b->size : -(double)b->size;
        if (live > *peak) {
            *peak = live;
            *peak_us = e->t;
            *found = 1;
            at = i;
        }
    }
    memset(m, 0, sizeof *m);
    for (size_t i = 0; *found && i < T->nb; i++) {
        const struct blk *b = &T->b[i];
        if (passes(T, f, b) && b->alloc_ev <= at && (b->free_ev == N || b->free_ev > at))
            madd(m, stk[b->stack].site, 1, (double)b->size, 0);
    }
    msort(m, MTL_SORT_BYTES, 1);
}

/* leaks: what passes and was never freed, by site (supp: a frame to
 * suppress, or NULL). */
static void model_leaks(const struct trace *T, const struct mtl_filter *f, const char *supp,
                        struct mrows *m, double *supp_blocks, double *supp_bytes)
{
    memset(m, 0, sizeof *m);
    *supp_blocks = *supp_bytes = 0;
    for (size_t i = 0; i < T->nb; i++) {
        const struct blk *b = &T->b[i];
        if (!passes(T, f, b) || b->free != N)
            continue;
        if (supp && on_stack(b->stack, supp)) {
            *supp_blocks += 1;
            *supp_bytes += (double)b->size;
            continue;
        }
        madd(m, stk[b->stack].site, 1, (double)b->size, 0);
    }
    msort(m, MTL_SORT_BYTES, 1);
}

/* temporary: sites with temporary blocks (extra: how many), calls: all
 * their blocks that pass; within: instead, freed at most that long after
 * (-1: the default definition). */
static void model_temporary(const struct trace *T, const struct mtl_filter *f, int64_t within,
                            struct mrows *m, double *all_calls)
{
    struct mrows all;
    memset(&all, 0, sizeof all);
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < T->nb; i++) {
        const struct blk *b = &T->b[i];
        if (!passes(T, f, b))
            continue;
        int temp = within < 0 ? b->temp : b->free != N && b->free - b->alloc <= (uint64_t)within;
        madd(&all, stk[b->stack].site, 1, (double)b->size, temp);
        if (temp)
            m->extra += 1, m->bytes += (double)b->size;
    }
    for (size_t i = 0; i < all.n; i++)
        if (all.r[i].extra > 0)
            m->r[m->n++] = all.r[i];
    *all_calls = all.calls;
    m->calls = all.calls;
    msort(m, MTL_SORT_EXTRA, 1);
}

/* ---- the checks of each analysis against the model -------------------------- */

static void check_report(struct mtl_engine *e, const struct trace *T, const struct mtl_filter *f)
{
    struct mtl_report_options o = { .by = MTL_BY_FUNCTION, .sort = MTL_SORT_BYTES,
                                    .descending = 1 };
    struct mtl_report rep;
    CHECK(mtl_report(e, f, &o, &rep) == 0);
    CHECK(!rep.head.estimated && rep.head.sample_rate == 0);
    struct mrows m;
    model_report(T, f, -1, &m);
    check_rows(&rep.total, &m, 0);
    size_t k = 0;
    for (int t = 0; t < T->nthreads; t++) {
        model_report(T, f, t, &m);
        if (m.calls == 0)
            continue; /* threads that allocated nothing that passes: no table */
        CHECK(k < rep.nthreads);
        const struct mtl_thread_rows *tr = &rep.threads[k++];
        CHECK_EQ(tr->index, t);
        CHECK_EQ(tr->tid, tids[t]);
        CHECK(!strcmp(tr->name, tnames[t]));
        CHECK_NEAR(tr->percent, rep.total.bytes > 0 ? 100 * m.bytes / rep.total.bytes : 0);
        check_rows(&tr->rows, &m, 0);
    }
    CHECK_EQ(rep.nthreads, k);
    mtl_report_release(&rep);
}

static void check_peak(struct mtl_engine *e, const struct trace *T, const struct mtl_filter *f)
{
    struct mtl_peak p;
    CHECK(mtl_peak(e, f, NULL, &p) == 0);
    struct mrows m;
    double peak;
    uint64_t peak_us;
    int found;
    model_peak(T, f, &peak, &peak_us, &found, &m);
    CHECK_EQ(p.found, found);
    CHECK(p.peak_bytes == peak);
    if (found) {
        CHECK_EQ(p.peak_time_us, peak_us);
        CHECK(m.bytes == peak);
        check_rows(&p.rows, &m, 0);
    } else {
        CHECK_EQ(p.rows.n, 0);
    }
    mtl_peak_release(&p);
}

static void check_leaks(struct mtl_engine *e, const struct trace *T, const struct mtl_filter *f,
                        const char *supp)
{
    struct mtl_leaks_options o = { .suppressions = &supp, .nsuppressions = supp != NULL };
    struct mtl_leaks l;
    CHECK(mtl_leaks(e, f, &o, &l) == 0);
    struct mrows m;
    double sb, sk;
    model_leaks(T, f, supp, &m, &sk, &sb);
    check_rows(&l.rows, &m, 0);
    CHECK(l.suppressed_blocks == sk);
    CHECK(l.suppressed_bytes == sb);
    for (size_t i = 0; i < l.rows.n; i++) /* the largest leak's stack, if any */
        CHECK_EQ(l.rows.row[i].npaths, strcmp(l.rows.row[i].function, "(no stack)") != 0);
    mtl_leaks_release(&l);
}

static void check_temporary(struct mtl_engine *e, const struct trace *T,
                            const struct mtl_filter *f, int64_t within)
{
    struct mtl_temporary_options o = { .within_set = within >= 0,
                                       .within_us = within >= 0 ? (uint64_t)within : 0 };
    struct mtl_temporary t;
    CHECK(mtl_temporary(e, f, &o, &t) == 0);
    struct mrows m;
    double all;
    model_temporary(T, f, within, &m, &all);
    CHECK(t.temporary_calls == m.extra);
    CHECK(t.temporary_bytes == m.bytes);
    CHECK(t.calls == all);
    CHECK_EQ(t.rows.n, m.n);
    char buf[64];
    for (size_t i = 0; i < m.n; i++) {
        const struct mtl_row *r = &t.rows.row[i];
        CHECK(!strcmp(mtl_row_name(r, buf, sizeof buf), m.r[i].name));
        CHECK(r->extra == m.r[i].extra);     /* temporary calls */
        CHECK(r->calls == m.r[i].calls);     /* all calls of the site */
        CHECK(r->bytes == m.r[i].bytes);
        CHECK_NEAR(r->percent, 100 * m.r[i].extra / m.extra);
    }
    mtl_temporary_release(&t);
}

static void check_histogram(struct mtl_engine *e, const struct trace *T,
                            const struct mtl_filter *f)
{
    double calls[65] = { 0 }, bytes[65] = { 0 }, all = 0, all_bytes = 0;
    for (size_t i = 0; i < T->nb; i++) {
        const struct blk *b = &T->b[i];
        if (!passes(T, f, b))
            continue;
        /* [0], [1], [2,3], [4,7]...: bucket k holds 2^(k-1) .. 2^k - 1 */
        int k = 0;
        while (k < 64 && b->size >= 1ull << k)
            k++;
        calls[k]++;
        bytes[k] += (double)b->size;
        all++;
        all_bytes += (double)b->size;
    }
    struct mtl_histogram h;
    CHECK(mtl_histogram(e, f, &h) == 0);
    CHECK(h.calls == all && h.bytes == all_bytes);
    size_t n = 0;
    for (int k = 0; k < 65; k++) {
        if (!calls[k])
            continue;
        CHECK(n < h.n);
        const struct mtl_histogram_bucket *hb = &h.buckets[n++];
        CHECK_EQ(hb->min, k ? 1ull << (k - 1) : 0);
        CHECK_EQ(hb->max, k ? (1ull << k) - 1 : 0);
        CHECK(hb->calls == calls[k] && hb->bytes == bytes[k]);
        CHECK_NEAR(hb->percent, 100 * calls[k] / all);
    }
    CHECK_EQ(h.n, n);
}

/* timeline with n points, the trace's end a multiple of n ms (so that
 * the intervals fall on the curve's 1 ms buckets): point k ends at
 * end * (k + 1) / n and holds what happened from the one before, the
 * live bytes and the RSS when it ends. */
static void check_timeline(struct mtl_engine *e, const struct trace *T,
                           const struct mtl_filter *f, size_t n)
{
    CHECK((T->end / n) % 1000 == 0 && T->end % n == 0);
    struct mtl_timeline tl;
    CHECK(mtl_timeline(e, f, n, &tl) == 0);
    CHECK_EQ(tl.n, n);
    for (size_t k = 0; k < n; k++) {
        uint64_t from = k ? T->end * k / n : 0, to = T->end * (k + 1) / n;
        double live = 0, ab = 0, ac = 0;
        uint64_t rss = 0;
        for (size_t i = 0; i < T->ne; i++) {
            const struct ev *ev = &T->e[i];
            if (ev->t >= to && k + 1 < n)
                break;
            if (ev->kind == 'r') {
                rss = (uint64_t)ev->block << 20;
                continue;
            }
            if (ev->kind == 'u' || !passes(T, f, &T->b[ev->block]))
                continue;
            double size = (double)T->b[ev->block].size;
            live += ev->kind == 'a' ? size : -size;
            if (ev->kind == 'a' && ev->t >= from)
                ab += size, ac++;
        }
        CHECK_EQ(tl.points[k].time_us, to);
        CHECK(tl.points[k].live == live);
        CHECK(tl.points[k].alloc_bytes == ab);
        CHECK(tl.points[k].alloc_calls == ac);
        CHECK_EQ(tl.points[k].rss, rss);
    }
    mtl_timeline_release(&tl);
}

static void check_stacks(struct mtl_engine *e, const struct trace *T, const struct mtl_filter *f)
{
    /* --target parse --depth 2: cut to parse and its caller. */
    struct mrows m;
    memset(&m, 0, sizeof m);
    for (size_t i = 0; i < T->nb; i++) {
        const struct blk *b = &T->b[i];
        if (passes(T, f, b) && stk[b->stack].parse_cut[0])
            madd(&m, stk[b->stack].parse_cut[1], 1, (double)b->size, 0);
    }
    struct mtl_stacks_options o = { .target = "parse", .depth = 2 };
    struct mtl_stacks s;
    CHECK(mtl_stacks(e, f, &o, &s) == 0);
    CHECK(s.blocks == m.calls && s.bytes == m.bytes);
    CHECK_EQ(s.nreaching, m.n);
    CHECK_EQ(s.ngroups, m.n);
    for (size_t g = 0; g < s.ngroups; g++) {
        const struct mtl_stack_group *sg = &s.groups[g];
        CHECK_EQ(sg->n, 2);
        CHECK(!strcmp(sg->frames[0].function, "parse"));
        const struct mrow *w = NULL;
        for (size_t i = 0; i < m.n; i++)
            if (!strcmp(m.r[i].name, sg->frames[1].function))
                w = &m.r[i];
        CHECK(w != NULL);
        CHECK(sg->count == w->calls && sg->bytes == w->bytes);
        CHECK_NEAR(sg->percent, 100 * w->calls / m.calls);
        /* most frequent first, then most bytes */
        if (g)
            CHECK(sg[-1].count > sg->count ||
                  (sg[-1].count == sg->count && sg[-1].bytes >= sg->bytes));
    }
    mtl_stacks_release(&s);
}

/* The frames of a block's stack a tree shows (all but the hidden
 * "malloc"), innermost first; how many. */
static int visible(int stack, const char **out)
{
    int n = 0;
    for (int i = 0; i < 4 && stk[stack].frames[i]; i++)
        if (strcmp(stk[stack].frames[i], "malloc"))
            out[n++] = stk[stack].frames[i];
    return n;
}

/* The path of a block from the tree's root: top down (outermost first),
 * callers of fn (from fn outwards) or callees of fn (from the outermost
 * fn inwards).  -1 when the block is not in the tree. */
static int tree_path(int stack, const struct mtl_tree_options *o, const char **path)
{
    const char *v[4];
    int n = visible(stack, v), k = 0;
    if (o->callers) {
        int at = 0;
        while (at < n && strcmp(v[at], o->callers))
            at++;
        if (at == n)
            return -1;
        for (int i = at + 1; i < n; i++)
            path[k++] = v[i];
    } else if (o->callees) {
        int at = n - 1;
        while (at >= 0 && strcmp(v[at], o->callees))
            at--;
        if (at < 0)
            return -1;
        for (int i = at - 1; i >= 0; i--)
            path[k++] = v[i];
    } else {
        for (int i = n - 1; i >= 0; i--)
            path[k++] = v[i];
    }
    return k;
}

/* Node (at prefix, depth deep) against the blocks under it: its calls,
 * bytes and percent of the root; its children, those with at least
 * min_bytes (and more than none), the largest first, each in turn. */
static void check_node(const struct trace *T, const struct mtl_filter *f,
                       const struct mtl_tree_options *o, const struct mtl_tree_node *node,
                       const char **prefix, int depth, double root, double min_bytes)
{
    struct mrows here, kids;
    memset(&here, 0, sizeof here);
    memset(&kids, 0, sizeof kids);
    for (size_t i = 0; i < T->nb; i++) {
        const struct blk *b = &T->b[i];
        const char *path[4];
        int n = passes(T, f, b) ? tree_path(b->stack, o, path) : -1;
        if (n < depth)
            continue;
        int same = 1;
        for (int d = 0; d < depth && same; d++)
            same = !strcmp(path[d], prefix[d]);
        if (!same)
            continue;
        here.calls++, here.bytes += (double)b->size;
        if (n > depth && (!o->max_depth || (size_t)depth < o->max_depth))
            madd(&kids, path[depth], 1, (double)b->size, 0);
    }
    CHECK(node->calls == here.calls);
    CHECK(node->bytes == here.bytes);
    CHECK_NEAR(node->percent, root > 0 ? 100 * here.bytes / root : 0);
    if (depth)
        CHECK(!strcmp(node->where.function, prefix[depth - 1]));
    size_t shown = 0;
    for (size_t i = 0; i < kids.n; i++)
        shown += kids.r[i].bytes >= min_bytes && kids.r[i].bytes > 0;
    CHECK_EQ(node->nchildren, shown);
    for (size_t c = 0; c < node->nchildren; c++) {
        const struct mtl_tree_node *ch = &node->children[c];
        if (c)
            CHECK(ch[-1].bytes >= ch->bytes); /* largest first */
        prefix[depth] = ch->where.function;
        check_node(T, f, o, ch, prefix, depth + 1, root, min_bytes);
    }
}

static void check_tree_with(struct mtl_engine *e, const struct trace *T,
                            const struct mtl_filter *f, const struct mtl_tree_options *o)
{
    struct mtl_tree t;
    CHECK(mtl_tree(e, f, o, &t) == 0);
    const char *prefix[8];
    double root = t.root.bytes;
    check_node(T, f, o, &t.root, prefix, 0, root, root * o->min_percent / 100);
    mtl_tree_release(&t);
}

static void check_tree(struct mtl_engine *e, const struct trace *T, const struct mtl_filter *f)
{
    struct mtl_tree_options o = { 0 };
    check_tree_with(e, T, f, &o);
    o.min_percent = 5;
    check_tree_with(e, T, f, &o);
    o.min_percent = 0;
    o.max_depth = 1;
    check_tree_with(e, T, f, &o);
    o.max_depth = 0;
    o.callers = "parse";
    check_tree_with(e, T, f, &o);
    o.callers = NULL;
    o.callees = "main";
    check_tree_with(e, T, f, &o);
}

static void check_all(struct mtl_engine *e, const struct trace *T, const struct mtl_filter *f)
{
    check_report(e, T, f);
    check_peak(e, T, f);
    check_leaks(e, T, f, NULL);
    check_leaks(e, T, f, "load");
    check_temporary(e, T, f, -1);
    check_temporary(e, T, f, 100);
    check_histogram(e, T, f);
    check_timeline(e, T, f, 6);
    check_timeline(e, T, f, 3);
    check_timeline(e, T, f, 1);
    check_stacks(e, T, f);
    check_tree(e, T, f);
}

/* ---- diff against the model ---------------------------------------------------- */

struct mdiff {
    const char *name;
    double v[2][MTL_DIFF_FIELDS];
};

static struct mdiff md[32];
static size_t nmd;

static struct mdiff *md_row(const char *name)
{
    for (size_t i = 0; i < nmd; i++)
        if (!strcmp(md[i].name, name))
            return &md[i];
    CHECK(nmd < 32);
    memset(&md[nmd], 0, sizeof md[nmd]);
    md[nmd].name = name;
    return &md[nmd++];
}

static double md_change(const struct mdiff *r, int f)
{
    return fabs(r->v[1][f] - r->v[0][f]);
}

/* docs/ANALYSIS.md, diff: by the largest change in bytes (then in peak,
 * leaked and calls, then by name). */
static int by_change(const void *pa, const void *pb)
{
    const struct mdiff *a = pa, *b = pb;
    static const int order[] = { MTL_DIFF_BYTES, MTL_DIFF_PEAK, MTL_DIFF_LEAKED, MTL_DIFF_CALLS };
    for (int i = 0; i < 4; i++)
        if (md_change(a, order[i]) != md_change(b, order[i]))
            return md_change(a, order[i]) < md_change(b, order[i]) ? 1 : -1;
    return strcmp(a->name, b->name);
}

static void check_diff(struct mtl_engine *base, struct mtl_engine *next,
                       const struct mtl_filter *f, size_t top)
{
    struct trace *side[2] = { &T1, &T2 };
    double total[2][MTL_DIFF_FIELDS];
    nmd = 0;
    memset(total, 0, sizeof total);
    for (int s = 0; s < 2; s++) {
        struct mrows all, peak, leaked;
        double pb, sb, sk;
        uint64_t pu;
        int found;
        model_report(side[s], f, -1, &all);
        model_peak(side[s], f, &pb, &pu, &found, &peak);
        model_leaks(side[s], f, NULL, &leaked, &sk, &sb);
        for (size_t i = 0; i < all.n; i++) {
            md_row(all.r[i].name)->v[s][MTL_DIFF_CALLS] += all.r[i].calls;
            md_row(all.r[i].name)->v[s][MTL_DIFF_BYTES] += all.r[i].bytes;
        }
        for (size_t i = 0; i < peak.n; i++)
            md_row(peak.r[i].name)->v[s][MTL_DIFF_PEAK] += peak.r[i].bytes;
        for (size_t i = 0; i < leaked.n; i++)
            md_row(leaked.r[i].name)->v[s][MTL_DIFF_LEAKED] += leaked.r[i].bytes;
        total[s][MTL_DIFF_CALLS] = all.calls;
        total[s][MTL_DIFF_BYTES] = all.bytes;
        total[s][MTL_DIFF_PEAK] = peak.bytes;
        total[s][MTL_DIFF_LEAKED] = leaked.bytes;
    }
    qsort(md, nmd, sizeof *md, by_change);
    struct mtl_diff d;
    CHECK(mtl_diff(base, next, f, top, &d) == 0);
    CHECK(!d.estimated);
    size_t n = top && top < nmd ? top : nmd;
    CHECK_EQ(d.n, n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(d.rows[i].function, md[i].name))
            fprintf(stderr, "diff row %zu: %s, want %s\n", i, d.rows[i].function, md[i].name);
        CHECK(!strcmp(d.rows[i].function, md[i].name));
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < MTL_DIFF_FIELDS; k++)
                CHECK(d.rows[i].v[s][k] == md[i].v[s][k]);
    }
    CHECK(d.total.function == NULL);
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < MTL_DIFF_FIELDS; k++)
            CHECK(d.total.v[s][k] == total[s][k]);
    mtl_diff_release(&d);
}

/* ---- the figures of trace 1, written out ------------------------------------------ */

struct wrow {
    const char *name;
    double calls, bytes;
};

/* Rows exactly as listed, with their share of the table's bytes. */
static void expect_rows(const struct mtl_rows *r, const struct wrow *w, size_t n, size_t cut,
                        double calls, double bytes)
{
    char buf[64];
    CHECK_EQ(r->n, n);
    CHECK_EQ(r->cut, cut);
    CHECK(r->calls == calls && r->bytes == bytes);
    for (size_t i = 0; i < n; i++) {
        const char *name = mtl_row_name(&r->row[i], buf, sizeof buf);
        if (strcmp(name, w[i].name))
            fprintf(stderr, "row %zu: %s, want %s\n", i, name, w[i].name);
        CHECK(!strcmp(name, w[i].name));
        CHECK(r->row[i].calls == w[i].calls);
        CHECK(r->row[i].bytes == w[i].bytes);
        CHECK_NEAR(r->row[i].percent, 100 * w[i].bytes / bytes);
    }
}

#define ROWS(r, cut, calls, bytes, ...)                                           \
    do {                                                                          \
        static const struct wrow w_[] = { __VA_ARGS__ };                          \
        expect_rows((r), w_, sizeof w_ / sizeof *w_, (cut), (calls), (bytes));   \
    } while (0)

static struct mtl_report report(struct mtl_engine *e, enum mtl_group by, int inclusive,
                                enum mtl_sort sort, int desc, size_t top, size_t stacks)
{
    struct mtl_filter f;
    memset(&f, 0, sizeof f);
    struct mtl_report_options o = { .by = by, .inclusive = inclusive, .sort = sort,
                                    .descending = desc, .top = top, .stacks = stacks };
    struct mtl_report r;
    CHECK(mtl_report(e, &f, &o, &r) == 0);
    return r;
}

static void path_is(const struct mtl_path *p, double calls, double bytes, const char *f0,
                    const char *f1, const char *f2)
{
    const char *want[3] = { f0, f1, f2 };
    size_t n = f2 ? 3 : 2;
    CHECK(p->calls == calls && p->bytes == bytes);
    CHECK_EQ(p->n, n);
    for (size_t i = 0; i < n; i++)
        CHECK(!strcmp(p->frames[i].function, want[i]));
}

static void written_report(struct mtl_engine *e)
{
    struct mtl_report r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_BYTES, 1, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "cache_put", 3, 8008 }, { "load", 2, 2000 },
         { "render", 2, 600 }, { "parse", 5, 400 }, { "(no stack)", 1, 7 });
    /* Custom frames: no file, no line, no module. */
    CHECK(r.total.row[0].file == NULL && r.total.row[0].line == 0);
    CHECK(!strcmp(r.total.row[0].module, ""));
    /* xmalloc passed its blocks on to load. */
    CHECK_EQ(r.total.nskipped, 1);
    CHECK(!strcmp(r.total.skipped[0].function, "xmalloc"));
    CHECK(r.total.skipped[0].calls == 2 && r.total.skipped[0].bytes == 2000);
    /* Per thread: "idle" allocated nothing and has no table. */
    CHECK_EQ(r.nthreads, 2);
    CHECK(r.threads[0].index == 0 && r.threads[0].tid == 100);
    CHECK(!strcmp(r.threads[0].name, "main"));
    CHECK_NEAR(r.threads[0].percent, 100.0 * 2907 / 11015);
    ROWS(&r.threads[0].rows, 0, 7, 2907, { "load", 2, 2000 }, { "render", 2, 600 },
         { "parse", 2, 300 }, { "(no stack)", 1, 7 });
    CHECK(r.threads[1].index == 1 && r.threads[1].tid == 200);
    CHECK(!strcmp(r.threads[1].name, "worker"));
    CHECK_NEAR(r.threads[1].percent, 100.0 * 8108 / 11015);
    ROWS(&r.threads[1].rows, 0, 6, 8108, { "cache_put", 3, 8008 }, { "parse", 3, 100 });
    mtl_report_release(&r);

    /* Each sort; ties (load and render: 2 calls each) by name, ascending
     * either way. */
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_CALLS, 1, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "parse", 5, 400 }, { "cache_put", 3, 8008 },
         { "load", 2, 2000 }, { "render", 2, 600 }, { "(no stack)", 1, 7 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_CALLS, 0, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "(no stack)", 1, 7 }, { "load", 2, 2000 },
         { "render", 2, 600 }, { "cache_put", 3, 8008 }, { "parse", 5, 400 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_PER_CALL, 1, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "cache_put", 3, 8008 }, { "load", 2, 2000 },
         { "render", 2, 600 }, { "parse", 5, 400 }, { "(no stack)", 1, 7 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_PER_CALL, 0, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "(no stack)", 1, 7 }, { "parse", 5, 400 },
         { "render", 2, 600 }, { "load", 2, 2000 }, { "cache_put", 3, 8008 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_BYTES, 0, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "(no stack)", 1, 7 }, { "parse", 5, 400 },
         { "render", 2, 600 }, { "load", 2, 2000 }, { "cache_put", 3, 8008 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_PERCENT, 1, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "cache_put", 3, 8008 }, { "load", 2, 2000 },
         { "render", 2, 600 }, { "parse", 5, 400 }, { "(no stack)", 1, 7 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_FUNCTION, 0, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "(no stack)", 1, 7 }, { "cache_put", 3, 8008 },
         { "load", 2, 2000 }, { "parse", 5, 400 }, { "render", 2, 600 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_FUNCTION, 1, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "render", 2, 600 }, { "parse", 5, 400 },
         { "load", 2, 2000 }, { "cache_put", 3, 8008 }, { "(no stack)", 1, 7 });
    mtl_report_release(&r);

    /* --top 2: each table cut to its first two rows; the totals stay. */
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_BYTES, 1, 2, 0);
    ROWS(&r.total, 3, 13, 11015, { "cache_put", 3, 8008 }, { "load", 2, 2000 });
    ROWS(&r.threads[0].rows, 2, 7, 2907, { "load", 2, 2000 }, { "render", 2, 600 });
    ROWS(&r.threads[1].rows, 0, 6, 8108, { "cache_put", 3, 8008 }, { "parse", 3, 100 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_CALLS, 1, 3, 0);
    ROWS(&r.total, 2, 13, 11015, { "parse", 5, 400 }, { "cache_put", 3, 8008 },
         { "load", 2, 2000 });
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_BYTES, 1, 5, 0);
    CHECK(r.total.n == 5 && r.total.cut == 0);
    mtl_report_release(&r);

    /* --inclusive: each function once per block on its stack, passed-over
     * frames too, hidden ones not; load and xmalloc tie. */
    r = report(e, MTL_BY_FUNCTION, 1, MTL_SORT_BYTES, 1, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "worker_main", 5, 8108 }, { "cache_put", 3, 8008 },
         { "main", 7, 2900 }, { "load", 2, 2000 }, { "xmalloc", 2, 2000 },
         { "render", 2, 600 }, { "parse", 5, 400 }, { "(no stack)", 1, 7 });
    CHECK_EQ(r.total.nskipped, 0);
    ROWS(&r.threads[1].rows, 0, 6, 8108, { "worker_main", 5, 8108 }, { "cache_put", 3, 8008 },
         { "parse", 3, 100 }, { "main", 1, 0 });
    mtl_report_release(&r);

    /* --by thread, --by module, --by file. */
    r = report(e, MTL_BY_THREAD, 0, MTL_SORT_BYTES, 1, 0, 0);
    CHECK_EQ(r.nthreads, 0);
    ROWS(&r.total, 0, 13, 11015, { "200 worker", 6, 8108 }, { "100 main", 7, 2907 });
    CHECK(r.total.row[0].thread == 1 && r.total.row[0].tid == 200);
    CHECK(!strcmp(r.total.row[0].thread_name, "worker") && r.total.row[0].function == NULL);
    CHECK(r.total.row[1].thread == 0 && r.total.row[1].tid == 100);
    mtl_report_release(&r);
    r = report(e, MTL_BY_MODULE, 0, MTL_SORT_BYTES, 1, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "(no module)", 12, 11008 }, { "(no stack)", 1, 7 });
    CHECK(r.total.row[0].function == NULL && r.total.row[0].file == NULL);
    mtl_report_release(&r);
    r = report(e, MTL_BY_FILE, 0, MTL_SORT_CALLS, 0, 0, 0);
    ROWS(&r.total, 0, 13, 11015, { "(no stack)", 1, 7 }, { "(unknown file)", 12, 11008 });
    CHECK_EQ(r.nthreads, 2);
    ROWS(&r.threads[1].rows, 0, 6, 8108, { "(unknown file)", 6, 8108 });
    mtl_report_release(&r);

    /* --stacks: each row's heaviest call paths, frames innermost first. */
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_BYTES, 1, 0, 2);
    CHECK_EQ(r.total.row[0].npaths, 1);
    path_is(&r.total.row[0].paths[0], 3, 8008, "cache_put", "worker_main", NULL);
    CHECK_EQ(r.total.row[1].npaths, 1);
    path_is(&r.total.row[1].paths[0], 2, 2000, "xmalloc", "load", "main");
    CHECK_EQ(r.total.row[3].npaths, 2); /* parse */
    path_is(&r.total.row[3].paths[0], 3, 300, "parse", "main", NULL);
    path_is(&r.total.row[3].paths[1], 2, 100, "parse", "worker_main", NULL);
    CHECK_EQ(r.total.row[4].npaths, 0); /* (no stack) */
    /* parse on the worker: b3 and b8 under worker_main, b11 (0 bytes) under main */
    CHECK_EQ(r.threads[1].rows.row[1].npaths, 2);
    path_is(&r.threads[1].rows.row[1].paths[0], 2, 100, "parse", "worker_main", NULL);
    path_is(&r.threads[1].rows.row[1].paths[1], 1, 0, "parse", "main", NULL);
    mtl_report_release(&r);
    r = report(e, MTL_BY_FUNCTION, 0, MTL_SORT_BYTES, 1, 0, 1);
    CHECK_EQ(r.total.row[3].npaths, 1);
    path_is(&r.total.row[3].paths[0], 3, 300, "parse", "main", NULL);
    mtl_report_release(&r);
}

static void written_others(struct mtl_engine *e)
{
    struct mtl_filter f;
    memset(&f, 0, sizeof f);

    /* peak: after b7's allocation at 2000, 10300 bytes. */
    struct mtl_peak_options po = { .top = 2, .stacks = 1 };
    struct mtl_peak p;
    CHECK(mtl_peak(e, &f, NULL, &p) == 0);
    CHECK(p.found && p.peak_bytes == 10300 && p.peak_time_us == 2000);
    ROWS(&p.rows, 0, 5, 10300, { "cache_put", 2, 8000 }, { "load", 2, 2000 },
         { "render", 1, 300 });
    mtl_peak_release(&p);
    CHECK(mtl_peak(e, &f, &po, &p) == 0);
    ROWS(&p.rows, 1, 5, 10300, { "cache_put", 2, 8000 }, { "load", 2, 2000 });
    path_is(&p.rows.row[1].paths[0], 2, 2000, "xmalloc", "load", "main");
    mtl_peak_release(&p);

    /* leaks: b2, b7, b9, b12. */
    struct mtl_leaks_options lo = { 0 };
    struct mtl_leaks l;
    CHECK(mtl_leaks(e, &f, &lo, &l) == 0);
    ROWS(&l.rows, 0, 4, 2015, { "load", 2, 2000 }, { "cache_put", 1, 8 },
         { "(no stack)", 1, 7 });
    CHECK(l.suppressed_blocks == 0 && l.suppressed_bytes == 0);
    CHECK_EQ(l.rows.row[0].npaths, 1);
    path_is(&l.rows.row[0].paths[0], 2, 2000, "xmalloc", "load", "main");
    mtl_leaks_release(&l);
    const char *supp[] = { "nothing", "worker_*" };
    lo.suppressions = supp;
    lo.nsuppressions = 2;
    lo.top = 1;
    CHECK(mtl_leaks(e, &f, &lo, &l) == 0);
    ROWS(&l.rows, 1, 3, 2007, { "load", 2, 2000 });
    CHECK(l.suppressed_blocks == 1 && l.suppressed_bytes == 8);
    mtl_leaks_release(&l);
    const char *hidden[] = { "malloc" }; /* a hidden frame matches too; none leaked */
    lo.suppressions = hidden;
    lo.nsuppressions = 1;
    lo.top = 0;
    CHECK(mtl_leaks(e, &f, &lo, &l) == 0);
    CHECK(l.rows.n == 3 && l.suppressed_blocks == 0);
    mtl_leaks_release(&l);

    /* temporary: b0, b3, b8, all parse; with --within-us 100, b10 too. */
    struct mtl_temporary_options to = { 0 };
    struct mtl_temporary t;
    CHECK(mtl_temporary(e, &f, &to, &t) == 0);
    CHECK(t.temporary_calls == 3 && t.temporary_bytes == 200 && t.calls == 13);
    CHECK_EQ(t.rows.n, 1);
    CHECK(!strcmp(t.rows.row[0].function, "parse"));
    CHECK(t.rows.row[0].extra == 3 && t.rows.row[0].calls == 5 && t.rows.row[0].bytes == 400);
    CHECK_NEAR(t.rows.row[0].percent, 100);
    mtl_temporary_release(&t);
    to.within_set = 1;
    to.within_us = 100;
    CHECK(mtl_temporary(e, &f, &to, &t) == 0);
    CHECK(t.temporary_calls == 4 && t.temporary_bytes == 500);
    CHECK_EQ(t.rows.n, 2);
    CHECK(!strcmp(t.rows.row[0].function, "parse") && t.rows.row[0].extra == 3);
    CHECK(!strcmp(t.rows.row[1].function, "render") && t.rows.row[1].extra == 1);
    CHECK(t.rows.row[1].calls == 2);
    CHECK_NEAR(t.rows.row[0].percent, 75);
    CHECK_NEAR(t.rows.row[1].percent, 25);
    mtl_temporary_release(&t);
    to.within_us = 0;
    CHECK(mtl_temporary(e, &f, &to, &t) == 0);
    CHECK(t.temporary_calls == 0 && t.rows.n == 0 && t.calls == 13);
    mtl_temporary_release(&t);
    to.within_us = 1;
    to.top = 1;
    CHECK(mtl_temporary(e, &f, &to, &t) == 0);
    CHECK(t.temporary_calls == 1 && t.temporary_bytes == 50 && t.rows.n == 1);
    mtl_temporary_release(&t);

    /* histogram */
    static const struct { uint64_t min, max; double calls, bytes; } hb[] = {
        { 0, 0, 1, 0 },        { 4, 7, 1, 7 },          { 8, 15, 1, 8 },
        { 32, 63, 2, 100 },    { 64, 127, 1, 100 },     { 128, 255, 1, 200 },
        { 256, 511, 2, 600 },  { 512, 1023, 2, 2000 },  { 2048, 4095, 2, 8000 },
    };
    struct mtl_histogram h;
    CHECK(mtl_histogram(e, &f, &h) == 0);
    CHECK(h.calls == 13 && h.bytes == 11015);
    CHECK_EQ(h.n, sizeof hb / sizeof *hb);
    for (size_t i = 0; i < h.n; i++) {
        CHECK(h.buckets[i].min == hb[i].min && h.buckets[i].max == hb[i].max);
        CHECK(h.buckets[i].calls == hb[i].calls && h.buckets[i].bytes == hb[i].bytes);
        CHECK_NEAR(h.buckets[i].percent, 100 * hb[i].calls / 13);
    }

    /* timeline: 6 points of 1 ms */
    static const struct { uint64_t t; double live, ab, ac; uint64_t rss; } tp[] = {
        { 1000, 5200, 5350, 5, 0 },        { 2000, 9300, 4300, 2, 1 << 20 },
        { 3000, 6300, 1050, 2, 1 << 20 },  { 4000, 6007, 307, 3, 2 << 20 },
        { 5000, 6015, 8, 1, 2 << 20 },     { 6000, 2015, 0, 0, 2 << 20 },
    };
    struct mtl_timeline tl;
    CHECK(mtl_timeline(e, &f, 6, &tl) == 0);
    CHECK_EQ(tl.n, 6);
    for (size_t i = 0; i < 6; i++) {
        CHECK_EQ(tl.points[i].time_us, tp[i].t);
        CHECK(tl.points[i].live == tp[i].live);
        CHECK(tl.points[i].alloc_bytes == tp[i].ab && tl.points[i].alloc_calls == tp[i].ac);
        CHECK_EQ(tl.points[i].rss, tp[i].rss);
    }
    mtl_timeline_release(&tl);
    /* More points than microseconds in the trace (6000): one a
     * microsecond, each time once (export --format sqlite keys by it),
     * every allocation in one of them. */
    CHECK(mtl_timeline(e, &f, 10000, &tl) == 0);
    CHECK_EQ(tl.n, 6000);
    double calls = 0;
    for (size_t i = 0; i < tl.n; i++) {
        CHECK_EQ(tl.points[i].time_us, i + 1);
        calls += tl.points[i].alloc_calls;
    }
    CHECK(calls == 13 && tl.points[tl.n - 1].live == 2015);
    mtl_timeline_release(&tl);
    CHECK(mtl_timeline(e, &f, 0, &tl) == MTL_EINVAL);

    /* stacks --target parse */
    struct mtl_stacks_options so = { .target = "parse", .depth = 2 };
    struct mtl_stacks s;
    CHECK(mtl_stacks(e, &f, &so, &s) == 0);
    CHECK(s.blocks == 5 && s.bytes == 400 && s.nreaching == 2 && s.ngroups == 2);
    CHECK(s.groups[0].count == 3 && s.groups[0].bytes == 300 && s.groups[0].n == 2);
    CHECK(!strcmp(s.groups[0].frames[0].function, "parse"));
    CHECK(!strcmp(s.groups[0].frames[1].function, "main"));
    CHECK_NEAR(s.groups[0].percent, 60);
    CHECK(s.groups[1].count == 2 && s.groups[1].bytes == 100);
    CHECK(!strcmp(s.groups[1].frames[1].function, "worker_main"));
    CHECK_NEAR(s.groups[1].percent, 40);
    mtl_stacks_release(&s);
    so.min_count = 3;
    CHECK(mtl_stacks(e, &f, &so, &s) == 0);
    CHECK(s.nreaching == 2 && s.ngroups == 1 && s.groups[0].count == 3);
    mtl_stacks_release(&s);
    so.min_count = 0;
    so.top = 1;
    CHECK(mtl_stacks(e, &f, &so, &s) == 0);
    CHECK(s.nreaching == 2 && s.ngroups == 1 && s.groups[0].count == 3);
    mtl_stacks_release(&s);
    so.top = 0;
    so.depth = 1;  /* both cut to parse alone: one group */
    CHECK(mtl_stacks(e, &f, &so, &s) == 0);
    CHECK(s.ngroups == 1 && s.groups[0].count == 5 && s.groups[0].n == 1);
    mtl_stacks_release(&s);
    so.target = "mal*";  /* a hidden frame can be the target */
    so.depth = 3;
    CHECK(mtl_stacks(e, &f, &so, &s) == 0);
    CHECK(s.ngroups == 1 && s.groups[0].count == 3 && s.groups[0].n == 3);
    CHECK(!strcmp(s.groups[0].frames[0].function, "malloc") && s.groups[0].frames[0].hidden);
    CHECK(!strcmp(s.groups[0].frames[2].function, "main"));
    mtl_stacks_release(&s);
    so.target = "nowhere";
    CHECK(mtl_stacks(e, &f, &so, &s) == 0);
    CHECK(s.ngroups == 0 && s.blocks == 0 && s.nreaching == 0);
    mtl_stacks_release(&s);
    so.depth = 0;
    CHECK(mtl_stacks(e, &f, &so, &s) == MTL_EINVAL);

    /* tree, top down */
    struct mtl_tree_options tro = { 0 };
    struct mtl_tree tr;
    CHECK(mtl_tree(e, &f, &tro, &tr) == 0);
    const struct mtl_tree_node *root = &tr.root, *w, *m;
    CHECK(root->calls == 13 && root->bytes == 11015 && root->nchildren == 2);
    w = &root->children[0];
    m = &root->children[1];
    CHECK(!strcmp(w->where.function, "worker_main") && w->calls == 5 && w->bytes == 8108);
    CHECK(!strcmp(m->where.function, "main") && m->calls == 7 && m->bytes == 2900);
    CHECK_NEAR(w->percent, 100.0 * 8108 / 11015);
    CHECK(w->nchildren == 2 && m->nchildren == 3);
    CHECK(!strcmp(w->children[0].where.function, "cache_put") && w->children[0].bytes == 8008);
    CHECK(!strcmp(w->children[1].where.function, "parse") && w->children[1].calls == 2);
    CHECK(!strcmp(m->children[0].where.function, "load") && m->children[0].bytes == 2000);
    CHECK(m->children[0].nchildren == 1);
    CHECK(!strcmp(m->children[0].children[0].where.function, "xmalloc"));
    CHECK(!strcmp(m->children[1].where.function, "render") && m->children[1].bytes == 600);
    CHECK(!strcmp(m->children[2].where.function, "parse") && m->children[2].calls == 3 &&
          m->children[2].bytes == 300);
    CHECK(m->children[2].nchildren == 0);  /* malloc is hidden */
    mtl_tree_release(&tr);
    tro.callers = "parse";
    tro.callees = "main";
    CHECK(mtl_tree(e, &f, &tro, &tr) == MTL_EINVAL);

    /* info */
    struct mtl_info in;
    CHECK(mtl_info(e, &in) == 0);
    const struct mtl_totals *to2 = &in.totals;
    CHECK(to2->allocations == 13 && to2->frees == 9 && to2->unmatched_frees == 1);
    CHECK(to2->bytes_allocated == 11015);
    CHECK(to2->live_bytes == 2015 && to2->live_blocks == 4);
    CHECK(to2->peak_live_bytes == 10300 && to2->peak_time_us == 2000);
    CHECK_EQ(to2->events, 3 + 3 + 13 + 10 + 2); /* threads, names, allocs, frees, RSS */
    CHECK_EQ(to2->peak_rss, 2 << 20);
    CHECK(to2->threads_allocating == 2 && to2->unique_stacks == 6);
    CHECK_EQ(to2->duration_us, 6000);
    CHECK(to2->est_allocations == 13 && to2->est_bytes == 11015 && to2->est_frees == 9);
    CHECK(to2->est_live_bytes == 2015 && to2->est_peak_live_bytes == 10300);
    CHECK_EQ(to2->est_peak_time_us, 2000);
    CHECK(!strcmp(in.trace.program, "/bin/unit") && in.trace.pid == 4242);
    CHECK(in.trace.mode == MTL_MODE_FULL && in.trace.max_depth == 64);
    CHECK(in.trace.complete && !in.trace.truncated);
    CHECK_EQ(in.threads_seen, 3);
    CHECK_EQ(in.modules, 0);
    CHECK_EQ(in.stack_nodes, 10); /* main parse malloc load xmalloc render
                                     worker_main parse cache_put fresh */
    CHECK_EQ(in.blocks, T1.file_blocks);
}

/* Trace 2 against trace 1, written out: the rows in order of the change
 * in bytes. */
static void written_diff(struct mtl_engine *base, struct mtl_engine *next)
{
    struct mtl_filter f;
    memset(&f, 0, sizeof f);
    static const struct {
        const char *name;
        double v[2][MTL_DIFF_FIELDS]; /* calls, bytes, peak, leaked */
    } want[] = {
        { "cache_put", { { 3, 8008, 8000, 8 }, { 1, 100, 0, 0 } } },
        { "load", { { 2, 2000, 2000, 2000 }, { 3, 3000, 3000, 3000 } } },
        { "fresh", { { 0, 0, 0, 0 }, { 1, 500, 500, 500 } } },
        { "parse", { { 5, 400, 0, 0 }, { 0, 0, 0, 0 } } },
        { "render", { { 2, 600, 300, 0 }, { 1, 300, 300, 0 } } },
        { "(no stack)", { { 1, 7, 0, 7 }, { 0, 0, 0, 0 } } },
    };
    struct mtl_diff d;
    CHECK(mtl_diff(base, next, &f, 0, &d) == 0);
    CHECK_EQ(d.n, 6);
    for (size_t i = 0; i < 6; i++) {
        CHECK(!strcmp(d.rows[i].function, want[i].name));
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < MTL_DIFF_FIELDS; k++)
                CHECK(d.rows[i].v[s][k] == want[i].v[s][k]);
    }
    static const double total[2][MTL_DIFF_FIELDS] = { { 13, 11015, 10300, 2015 },
                                                      { 6, 3900, 3800, 3500 } };
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < MTL_DIFF_FIELDS; k++)
            CHECK(d.total.v[s][k] == total[s][k]);
    mtl_diff_release(&d);
    CHECK(mtl_diff(base, next, &f, 2, &d) == 0);
    CHECK(d.n == 2 && !strcmp(d.rows[1].function, "load"));
    CHECK(d.total.v[1][MTL_DIFF_BYTES] == 3900); /* the total of every row */
    mtl_diff_release(&d);
}

/* ---- the filters ---------------------------------------------------------------- */

static struct mtl_range range(uint64_t lo, uint64_t hi)
{
    return (struct mtl_range){ 1, lo, hi };
}

#define NFILTERS 20
static struct mtl_filter filters[NFILTERS];

static void make_filters(void)
{
    memset(filters, 0, sizeof filters);
    struct mtl_filter *f = filters;
    f++;                                           /* 0: none */
    f++->size = range(50, 1000);
    f++->size = range(0, 0);
    f++->size = range(50, 50);                     /* b3 and b8: the peak is reached twice */
    f->live_at_set = 1, f++->live_at = 2000;       /* the peak */
    f->live_at_set = 1, f++->live_at = 2601;       /* b8 freed then: not live */
    f->thread_set = 1, f++->thread = 200;
    f->thread_set = 1, f->thread_is_index = 1, f++->thread = 0;
    f->thread_set = 1, f++->thread = 300;          /* allocated nothing */
    f++->lifetime = range(0, 100);
    f++->lifetime = range(3000, UINT64_MAX);       /* never freed: to the end */
    f++->lifetime = range(1500, 3000);             /* b9 and b12, to the end: at the bounds */
    f++->never_freed = 1;
    f++->freed = range(2500, 3300);
    f++->allocated = range(1000, 3000);
    f++->live_between = range(2550, 2650);
    mtl_filter_add_pattern(f->inside, &f->ninside, "worker_main"), f++;
    mtl_filter_add_pattern(f->not_inside, &f->nnot_inside, "main");
    f++->size = range(1, UINT64_MAX);
    f->thread_set = 1, f->thread_is_index = 1, f->thread = 1;
    f->lifetime = range(0, 100);
    f++->size = range(1, UINT64_MAX);
    f->live_at_set = 1, f->live_at = 3250;
    f++->size = range(8, 300);
    CHECK(f == filters + NFILTERS);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Sampled blocks' weights summed in floating point: once every block is
 * freed the estimate of live bytes is 0, not what rounding left (1e16 + 1
 * is 1e16, so adding then taking both away left -1). */
static void totals_estimate_rounding(void)
{
    struct mtl_totals_acc acc = MTL_TOTALS_ACC_INIT;
    struct mtl_block big = { .ptr = 0x1000, .size = 1 << 20, .weight_count = 1,
                             .weight_bytes = 1e16 };
    struct mtl_block small = { .ptr = 0x2000, .size = 16, .weight_count = 1, .weight_bytes = 1 };
    struct mtl_event alloc = { .type = MTL_EV_ALLOC }, freed = { .type = MTL_EV_FREE };
    CHECK(mtl_totals_event(&acc, &alloc, &big) == 0);
    CHECK(mtl_totals_event(&acc, &alloc, &small) == 0);
    CHECK(mtl_totals_event(&acc, &freed, &big) == 0);
    CHECK(acc.t.est_live_bytes >= 0);
    CHECK(mtl_totals_event(&acc, &freed, &small) == 0);
    CHECK(acc.t.live_blocks == 0 && acc.t.est_live_bytes == 0);
    mtl_totals_acc_release(&acc);
}

int main(void)
{
    /* In the test's own directory under tests/run.sh, so that a failed
     * run leaves nothing behind. */
    const char *tmp = getenv("TEST_TMP");
    snprintf(dir, sizeof dir, "%s/memtally-analyses-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(dir_lazy, sizeof dir_lazy, "%s/lazy", dir);
    snprintf(dir_ahead, sizeof dir_ahead, "%s/ahead", dir);
    totals_estimate_rounding();
    build(&T1);
    build(&T2);
    make_filters();
    for (int m = 0; m < NMODES; m++) {
        fprintf(stderr, "%s\n", mode_names[m]);
        struct mtl_engine *e1 = open_engine(&T1, (enum mode)m);
        struct mtl_engine *e2 = open_engine(&T2, (enum mode)m);
        written_report(e1);
        written_others(e1);
        written_diff(e1, e2);
        for (int i = 0; i < NFILTERS; i++) {
            fprintf(stderr, "  filter %d\n", i);
            check_all(e1, &T1, &filters[i]);
            check_diff(e1, e2, &filters[i], 0);
        }
        check_all(e2, &T2, &filters[0]);
        check_diff(e1, e2, &filters[1], 3);
        mtl_engine_close(e1);
        mtl_engine_close(e2);
        /* Where the indexes went: nowhere with the index off or in memory. */
        if (m <= M_STREAM)
            CHECK(indexes_in(dir_lazy) == 0 && indexes_in(dir_ahead) == 0);
        if (m == M_INDEX_LAZY)
            CHECK(indexes_in(dir_lazy) == 2 && indexes_in(dir_ahead) == 0);
        if (m == M_INDEX_AHEAD)
            CHECK(indexes_in(dir_ahead) == 2);
    }
    tm_release(&T1.t);
    tm_release(&T2.t);
    CHECK(nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS) == 0);
    CHECKS_DONE();
}
