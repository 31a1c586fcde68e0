/*
 * engine.c: see engine.h.
 *
 * The engine keeps one reader whose definitions (stack nodes, modules,
 * threads, strings) the view uses: the first reader that read the trace
 * to its end.  Every scan after that opens a reader of its own on the
 * same source (pread on one descriptor, or the same memory), reads the
 * events, and closes it; stack ids are the same in every reader of one
 * trace, so the view's memos stay valid.
 */
#include "analyze/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/curve.h"
#include "analyze/digest.h"
#include "analyze/index.h"
#include "analyze/index_scan.h"
#include "analyze/ptrmap.h"
#include "analyze/view.h"
#include "common/arena.h"
#include "common/bitset.h"
#include "common/parallel.h"
#include "memtally/errors.h"
#include "symbols/prefetch.h"
#include "trace/defs.h"

struct mtl_engine {
    struct mtl_source src;
    struct mtl_engine_options opt;
    struct mtl_arena arena;        /* copies of names and patterns */
    int fd;                        /* PATH: our descriptor; FD: the caller's */

    struct mtl_reader *r;          /* the definitions' reader */
    int r_fresh;                   /* r has not read any event yet */
    int r_complete;                /* r read the trace to its end */
    struct mtl_defs defs;

    struct mtl_index *ix;          /* the trace's index, once there is one */
    int ix_failed;                 /* building it failed: stream instead */

    struct mtl_symbolizer *syms;
    int prefetch_wanted, prefetch_started; /* mtl_engine_prefetch_symbols */
    struct mtl_view *view;
    struct mtl_filter view_filter; /* the frame options view was made for */

    /* opt.digest: the digest of the last filter */
    struct mtl_digest *digest;
    struct mtl_filter digest_filter;

    uint64_t blocks;               /* of the last scan */
    int truncated;

    /* follow mode: the live blocks so far */
    struct mtl_ptrmap follow_live;
    uint64_t follow_allocs, follow_seq;
};

static unsigned threads_of(const struct mtl_engine *e);

/* A whole trace is decoded ahead on the other cores (the reader's thread
 * walks the records); a growing one as it comes. */
static int open_reader(struct mtl_engine *e, struct mtl_reader **out)
{
    int rc = e->src.kind == MTL_SOURCE_MEMORY
                 ? mtl_reader_open_memory(out, e->src.data, e->src.size)
                 : mtl_reader_open_fd(out, e->fd);
    if (rc == 0 && e->opt.heaps)
        mtl_reader_heaps(*out, e->opt.heaps);
    if (rc == 0 && !e->src.growing && threads_of(e) > 1)
        mtl_reader_threads(*out, threads_of(e) - 1);
    return rc;
}

unsigned mtl_engine_heaps(const struct mtl_engine *e)
{
    return e->opt.heaps ? e->opt.heaps : MTL_HEAPS_MALLOC;
}

static int reopen(void *arg, struct mtl_reader **out)
{
    return open_reader(arg, out);
}

static const struct mtl_module *module_of(void *arg, uint32_t index)
{
    struct mtl_engine *e = arg;
    return mtl_defs_module(&e->defs, index);
}

static int resolve(void *arg, uint32_t module, uint64_t addr, const struct mtl_symbol **out)
{
    return mtl_symbolizer_resolve(arg, module, addr, out);
}

static int name_of(void *arg, uint32_t module, uint64_t addr, const char **name)
{
    return mtl_symbolizer_function(arg, module, addr, name);
}

/* An index is kept for a whole trace on a descriptor: not for one in
 * memory (it is read fast enough as it is) nor one still growing. */
static int can_index(const struct mtl_engine *e)
{
    return e->opt.index == MTL_INDEX_AUTO && !e->src.growing &&
           (!e->opt.heaps || e->opt.heaps == MTL_HEAPS_MALLOC) &&
           e->src.kind != MTL_SOURCE_MEMORY && e->fd >= 0 && !e->ix_failed;
}

/* From now on the definitions are the index's: the same ids, so the
 * view's memos stay good. */
static void use_index(struct mtl_engine *e)
{
    mtl_index_defs(e->ix, &e->defs);
    e->r_complete = 1;
    const struct mtl_ix_summary *sum = mtl_index_summary(e->ix);
    e->blocks = sum->trace_blocks;
    e->truncated = sum->truncated;
}

static void build_progress(void *arg, double done)
{
    struct mtl_engine *e = arg;
    e->opt.progress(e->opt.arg, "indexing the trace", done);
}

/* Starts the prefetch that was asked for, once the definitions have
 * stacks (a stream has none before its first events are read). */
static void start_prefetch(struct mtl_engine *e)
{
    const struct mtl_defs *d = &e->defs;
    if (!e->prefetch_wanted || e->prefetch_started || d->nnodes < 2)
        return;
    e->prefetch_started = 1;
    struct mtl_bitset used = MTL_BITSET_INIT;
    uint32_t *list = malloc((d->nmodules ? d->nmodules : 1) * sizeof *list);
    size_t n = 0;
    if (list && mtl_bitset_reserve(&used, d->nmodules) == 0)
        for (uint32_t i = 1; i < d->nnodes; i++)
            if (d->module[i] < d->nmodules && mtl_bitset_set(&used, d->module[i]) == 1)
                list[n++] = d->module[i];
    mtl_symbolizer_prefetch(e->syms, list, n);
    mtl_bitset_release(&used);
    free(list);
}

static void defs_read(void *arg)
{
    start_prefetch(arg);
}

void mtl_engine_prefetch_symbols(struct mtl_engine *e)
{
    e->prefetch_wanted = e->syms && threads_of(e) >= 2;
    start_prefetch(e);
}

/* Builds the trace's index.  0, or a negative code (MTL_ECORRUPT: the
 * trace is damaged, as a scan would have found). */
static int build_index(struct mtl_engine *e)
{
    struct mtl_reader *r;
    int rc = open_reader(e, &r);
    if (rc < 0)
        return rc;
    rc = mtl_index_build(&e->ix, r, e->fd, e->opt.index_dir,
                         e->opt.progress ? build_progress : NULL, e);
    if (e->opt.progress)
        e->opt.progress(e->opt.arg, "indexing the trace", 1);
    e->blocks = mtl_reader_blocks(r);
    e->truncated = mtl_reader_info(r)->truncated;
    mtl_reader_close(r);
    if (rc == 0) {
        use_index(e);
        start_prefetch(e);
    } else if (rc != MTL_ECORRUPT)
        e->ix_failed = 1; /* out of memory, say: the stream still works */
    return rc;
}

int mtl_engine_index(struct mtl_engine *e, const char **path, uint64_t *size)
{
    if (!e->ix) {
        if (!can_index(e))
            return MTL_EINVAL;
        int rc = build_index(e);
        if (rc < 0)
            return rc;
    }
    *path = mtl_index_path(e->ix);
    *size = mtl_index_size(e->ix);
    return 0;
}

int mtl_engine_open(struct mtl_engine **out, const struct mtl_source *src,
                    const struct mtl_engine_options *opt)
{
    struct mtl_engine *e = calloc(1, sizeof *e);
    if (!e)
        return MTL_ENOMEM;
    e->src = *src;
    if (opt)
        e->opt = *opt;
    e->fd = -1;
    const char *name = src->path ? src->path : "(trace)";
    if (!(e->src.path = mtl_arena_strdup(&e->arena, name))) {
        free(e);
        return MTL_ENOMEM;
    }
    int rc = 0;
    if (src->kind == MTL_SOURCE_PATH) {
        e->fd = open(src->path, O_RDONLY | O_CLOEXEC);
        if (e->fd < 0)
            rc = errno == ENOENT || errno == ENOTDIR ? MTL_ENOENT
                 : errno == EACCES || errno == EPERM ? MTL_EACCES : MTL_EIO;
    } else if (src->kind == MTL_SOURCE_FD) {
        e->fd = src->fd;
    }
    if (rc == 0)
        rc = open_reader(e, &e->r);
    /* Decompressed debug files are cached beside the indexes, unless the
     * caller chose a cache of its own or none (no indexes: nothing kept). */
    char cache[4096];
    if (!e->opt.symbols.cache_dir && e->opt.index == MTL_INDEX_AUTO)
        e->opt.symbols.cache_dir = mtl_index_dir(e->opt.index_dir, cache, sizeof cache);
    if (rc == 0)
        rc = mtl_symbolizer_open_modules(&e->syms, module_of, e, &e->opt.symbols);
    e->opt.symbols.cache_dir = opt ? opt->symbols.cache_dir : NULL; /* cache is ours */
    if (rc < 0) {
        mtl_engine_close(e);
        return rc;
    }
    if (src->growing)
        mtl_reader_follow(e->r, 1);
    e->r_fresh = 1;
    mtl__reader_defs(e->r, &e->defs);
    if (can_index(e) && mtl_index_load(&e->ix, e->fd, e->opt.index_dir) == 0)
        use_index(e);
    *out = e;
    return 0;
}

static void warn_one(const char *message, void *arg)
{
    struct mtl_engine *e = arg;
    e->opt.warn(e->opt.arg, message);
}

void mtl_engine_warnings(struct mtl_engine *e)
{
    if (e->syms && e->opt.warn)
        mtl_symbolizer_warnings(e->syms, warn_one, e);
}

void mtl_engine_close(struct mtl_engine *e)
{
    if (!e)
        return;
    mtl_engine_warnings(e);
    if (e->digest)
        mtl_digest_release(e->digest);
    free(e->digest);
    mtl_view_close(e->view);
    mtl_symbolizer_close(e->syms);
    mtl_reader_close(e->r);
    mtl_index_close(e->ix);
    mtl_ptrmap_release(&e->follow_live);
    if (e->src.kind == MTL_SOURCE_PATH && e->fd >= 0)
        close(e->fd);
    mtl_arena_release(&e->arena);
    free(e);
}

const struct mtl_defs *mtl_engine_defs(struct mtl_engine *e)
{
    return &e->defs;
}

/* Copies the frame options of f into the engine's memory. */
static int keep_patterns(struct mtl_engine *e, const char **to, const char *const *from,
                         size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(to[i] = mtl_arena_strdup(&e->arena, from[i])))
            return MTL_ENOMEM;
    return 0;
}

struct mtl_view *mtl_engine_view(struct mtl_engine *e, const struct mtl_filter *f)
{
    if (e->view && mtl_filter_same_view(&e->view_filter, f))
        return e->view;
    mtl_view_close(e->view);
    e->view = NULL;
    struct mtl_filter *vf = &e->view_filter;
    memset(vf, 0, sizeof *vf);
    vf->keep_alloc_frames = f->keep_alloc_frames;
    vf->nhide = f->nhide;
    vf->nwrappers = f->nwrappers;
    if (keep_patterns(e, vf->hide, f->hide, f->nhide) < 0 ||
        keep_patterns(e, vf->wrappers, f->wrappers, f->nwrappers) < 0)
        return NULL;
    struct mtl_view_namer namer = { resolve, name_of, e->syms };
    struct mtl_view_options vo = {
        .hide = vf->hide, .nhide = vf->nhide,
        .wrappers = vf->wrappers, .nwrappers = vf->nwrappers,
        .keep_alloc_frames = vf->keep_alloc_frames,
    };
    if (mtl_view_open(&e->view, &e->defs, &namer, &vo) < 0)
        return NULL;
    return e->view;
}

struct progress_wrap {
    struct mtl_engine *e;
    const struct mtl_scan_ops *inner;
    void *arg;
};

static void scan_progress(void *arg, double done)
{
    struct progress_wrap *p = arg;
    p->e->opt.progress(p->e->opt.arg, "reading the trace", done);
}

static int pass_block(void *arg, const struct mtl_block *b)
{
    struct progress_wrap *p = arg;
    if (p->inner->part_block)
        return p->inner->part_block(p->arg, 0, b); /* a stream: one part */
    return p->inner->block ? p->inner->block(p->arg, b) : 0;
}

static int pass_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                      int passes)
{
    struct progress_wrap *p = arg;
    return p->inner->event(p->arg, ev, b, passes);
}

/* A query of the index found damage in it (a column's checksum, checked
 * as it is read): the index file goes, so that the next analysis builds
 * it anew, and the query fails saying so (what it had handed out so far
 * cannot be taken back). */
static int index_result(struct mtl_engine *e, int rc)
{
    if (rc != MTL_ECORRUPT)
        return rc;
    mtl_index_discard(e->ix);
    return MTL_EBADINDEX;
}

/* Whether a scan should be answered by the index: when there is one, and
 * when building one costs less than what the scan does without it (a scan
 * that follows frees matches every address, as building does, and twice
 * when its filters need two passes).  A scan of what is known at
 * allocation reads the trace once without addresses: faster than a build. */
static int wants_index(struct mtl_engine *e, const struct mtl_filter *f,
                       const struct mtl_scan_ops *ops)
{
    if (ops->raw)
        return 0;
    if (e->ix)
        return 1;
    int cheap = ops->alloc_only && !ops->event && mtl_filter_decidable_at_alloc(f);
    return !cheap && can_index(e);
}

int mtl_engine_scan(struct mtl_engine *e, const struct mtl_filter *f,
                    const struct mtl_scan_ops *ops, void *arg,
                    struct mtl_scan_result *res)
{
    struct mtl_view *v = mtl_engine_view(e, f);
    if (!v)
        return MTL_ENOMEM;
    struct mtl_reader *r = NULL;
    int rc = 0;
    if (wants_index(e, f, ops)) {
        if (!e->ix && (rc = build_index(e)) < 0 && rc != MTL_ENOMEM)
            return rc;
        if (e->ix)
            return index_result(e, mtl__index_scan(e->ix, &e->defs, v, f, threads_of(e), ops,
                                                   arg, res));
    }
    if (e->r_fresh) {
        r = e->r;
        e->r_fresh = 0;
    } else if ((rc = open_reader(e, &r)) < 0) {
        return rc;
    }
    /* The definitions follow the reader that reads them first in full. */
    int refresh = !e->r_complete;
    if (refresh && r != e->r) {
        mtl__reader_defs(r, &e->defs);
        mtl_reader_close(e->r);
        e->r = r;
    }
    struct progress_wrap pw = { e, ops, arg };
    struct mtl_scan_ops wrapped = {
        .block = ops->block || ops->part_block ? pass_block : NULL,
        .event = ops->event ? pass_event : NULL,
        .progress = e->opt.progress ? scan_progress : NULL,
        .alloc_only = ops->alloc_only,
        .needs = ops->needs,
        .sums = ops->sums,
    };
    struct mtl_scan_input in = { r, reopen, e, refresh ? &e->defs : NULL, v, defs_read };
    rc = mtl_scan(&in, f, &wrapped, &pw, res);
    if (e->opt.progress)
        e->opt.progress(e->opt.arg, "reading the trace", 1);
    e->blocks = mtl_reader_blocks(r);
    e->truncated = mtl_reader_info(r)->truncated;
    if (refresh && rc == 0)
        e->r_complete = 1;
    if (r != e->r)
        mtl_reader_close(r);
    return rc;
}

/* A followed block's weights, from its size as the reader gives them. */
static void follow_weights(const struct mtl_engine *e, struct mtl_block *b)
{
    const struct mtl_trace_info *info = mtl_reader_info(e->r);
    mtl__weights(info->mode, info->sample_rate, b->size, &b->weight_count, &b->weight_bytes);
}

/* Follow mode matches frees to blocks itself: a scan reads a trace whole,
 * this reads it piece by piece and keeps its live blocks in between. */
static int follow_event(struct mtl_engine *e, const struct mtl_filter *f,
                        const struct mtl_scan_ops *ops, void *arg, const struct mtl_event *ev)
{
    struct mtl_ptrmap_val v, old;
    struct mtl_block b;
    int has_block = 0;
    if (ev->type == MTL_EV_ALLOC) {
        v = (struct mtl_ptrmap_val){ .size = ev->size, .time_us = ev->time_us,
                                     .ordinal = e->follow_allocs++, .seq = e->follow_seq++,
                                     .stack = ev->stack, .thread = ev->thread,
                                     .tag = ev->tag };
        if (mtl_ptrmap_take(&e->follow_live, ev->ptr, &old) && ops->event) {
            /* Its free was lost: it ends here (as scan.c does). */
            struct mtl_event fev = { .type = MTL_EV_FREE, .time_us = ev->time_us,
                                     .thread = ev->thread, .ptr = ev->ptr };
            struct mtl_block ob = { .ptr = ev->ptr, .size = old.size, .alloc_us = old.time_us,
                                    .free_us = ev->time_us, .stack = old.stack,
                                    .thread = old.thread, .tag = old.tag, .free_lost = 1 };
            follow_weights(e, &ob);
            if (ops->event(arg, &fev, &ob, 1) != 0)
                return MTL_ESTOPPED;
        }
        if (mtl_ptrmap_put(&e->follow_live, ev->ptr, &v, NULL) < 0)
            return MTL_ENOMEM;
        b = (struct mtl_block){ .ptr = ev->ptr, .size = ev->size, .alloc_us = ev->time_us,
                                .free_us = MTL_NEVER, .ordinal = v.ordinal,
                                .alloc_seq = v.seq, .free_seq = MTL_NEVER,
                                .stack = ev->stack, .thread = ev->thread, .tag = ev->tag,
                                .weight_count = ev->weight_count,
                                .weight_bytes = ev->weight_bytes };
        has_block = 1;
    } else if (ev->type == MTL_EV_FREE) {
        e->follow_seq++;
        if (mtl_ptrmap_take(&e->follow_live, ev->ptr, &old)) {
            b = (struct mtl_block){ .ptr = ev->ptr, .size = old.size, .alloc_us = old.time_us,
                                    .free_us = ev->time_us, .ordinal = old.ordinal,
                                    .alloc_seq = old.seq, .free_seq = e->follow_seq - 1,
                                    .stack = old.stack, .thread = old.thread,
                                    .tag = old.tag };
            follow_weights(e, &b);
            has_block = 1;
        }
    }
    if (ops->event && ops->event(arg, ev, has_block ? &b : NULL, 1) != 0)
        return MTL_ESTOPPED;
    if (ev->type != MTL_EV_ALLOC || !ops->block)
        return 0;
    const struct mtl_thread *t = mtl_reader_thread(e->r, ev->thread);
    if (!mtl_filter_at_alloc(f, ev->size, t ? t->tid : 0, ev->thread, ev->time_us))
        return 0;
    return ops->block(arg, &b) != 0 ? MTL_ESTOPPED : 0;
}

int mtl_engine_follow(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_scan_ops *ops, void *arg)
{
    struct mtl_view *v = mtl_engine_view(e, f);
    if (!v)
        return MTL_ENOMEM;
    e->r_fresh = 0;
    struct mtl_event ev;
    int rc;
    while ((rc = mtl_reader_next(e->r, &ev)) > 0) {
        if (mtl_reader_stack_count(e->r) != e->defs.nnodes ||
            (ev.type != MTL_EV_ALLOC && ev.type != MTL_EV_FREE))
            mtl__reader_defs(e->r, &e->defs);
        if ((rc = follow_event(e, f, ops, arg, &ev)) < 0)
            break;
    }
    mtl__reader_defs(e->r, &e->defs);
    e->blocks = mtl_reader_blocks(e->r);
    return rc;
}

int mtl_engine_estimated(const struct mtl_engine *e, uint64_t *sample_rate)
{
    const struct mtl_trace_info *in = &e->defs.info;
    if (sample_rate)
        *sample_rate = in->sample_rate;
    return in->mode == MTL_MODE_SAMPLED;
}

uint64_t mtl_engine_blocks(const struct mtl_engine *e)
{
    return e->blocks;
}

int mtl_engine_truncated(const struct mtl_engine *e)
{
    return e->truncated;
}

const char *mtl_engine_name(const struct mtl_engine *e)
{
    return e->src.path;
}

struct seq_filter {
    uint64_t seq;
    int (*block)(void *arg, const struct mtl_block *b);
    void *arg;
};

static int live_at_seq(void *arg, const struct mtl_block *b)
{
    struct seq_filter *q = arg;
    if (b->alloc_seq > q->seq || b->free_seq <= q->seq)
        return 0;
    return q->block(q->arg, b);
}

int mtl_engine_live_after(struct mtl_engine *e, const struct mtl_filter *f, uint64_t seq,
                          int (*block)(void *arg, const struct mtl_block *b), void *arg)
{
    struct seq_filter q = { seq, block, arg };
    struct mtl_scan_ops ops = { .block = live_at_seq, .raw = 1 };
    return mtl_engine_scan(e, f, &ops, &q, NULL);
}

int mtl_engine_totals(struct mtl_engine *e, struct mtl_totals *t)
{
    if (!e->ix)
        return MTL_ENOENT;
    *t = mtl_index_summary(e->ix)->totals;
    return 0;
}

/* The cores a query may use. */
static unsigned threads_of(const struct mtl_engine *e)
{
    return e->opt.threads ? e->opt.threads : mtl_cores();
}

static int add_to_sums(void *arg, const struct mtl_block *b)
{
    struct mtl_stackagg *a = arg;
    return mtl_stackagg_add(a, b->thread, b->stack, b->weight_count, b->weight_bytes, 0);
}

int mtl_engine_digest(struct mtl_engine *e, const struct mtl_filter *f,
                      const struct mtl_digest **out)
{
    if (!e->opt.digest || (!e->ix && !can_index(e)))
        return MTL_EINVAL;
    struct mtl_view *v = mtl_engine_view(e, f);
    if (!v)
        return MTL_ENOMEM;
    int rc = e->ix ? 0 : build_index(e);
    if (rc < 0 || !e->ix)
        return rc < 0 ? rc : MTL_EINVAL;
    if (e->digest && mtl_filter_same(&e->digest_filter, f)) {
        *out = e->digest;
        return 0;
    }
    if (e->digest)
        mtl_digest_release(e->digest);
    free(e->digest);
    if (!(e->digest = calloc(1, sizeof *e->digest)))
        return MTL_ENOMEM;
    rc = mtl__index_digest(e->ix, &e->defs, v, f, threads_of(e), e->digest);
    struct mtl_filter *c = &e->digest_filter;
    *c = *f;
    if (rc == 0 && (keep_patterns(e, c->inside, f->inside, f->ninside) < 0 ||
                    keep_patterns(e, c->not_inside, f->not_inside, f->nnot_inside) < 0 ||
                    keep_patterns(e, c->hide, f->hide, f->nhide) < 0 ||
                    keep_patterns(e, c->wrappers, f->wrappers, f->nwrappers) < 0))
        rc = MTL_ENOMEM;
    if (rc < 0) {
        mtl_digest_release(e->digest);
        free(e->digest);
        e->digest = NULL;
        return index_result(e, rc);
    }
    *out = e->digest;
    return 0;
}

int mtl_engine_sums(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_stackagg *out)
{
    struct mtl_scan_ops ops = { .sums = out, .alloc_only = 1,
                                .needs = MTL_NEED_SIZE | MTL_NEED_STACK | MTL_NEED_THREAD };
    struct mtl_view *v = mtl_engine_view(e, f);
    if (!v)
        return MTL_ENOMEM;
    mtl_engine_prefetch_symbols(e);
    if (wants_index(e, f, &ops)) {
        int rc = e->ix ? 0 : build_index(e);
        if (rc < 0 && rc != MTL_ENOMEM)
            return rc;
        const struct mtl_digest *g;
        if (e->ix && e->opt.digest) {
            if ((rc = mtl_engine_digest(e, f, &g)) < 0)
                return rc;
            return mtl_stackagg_merge(out, &g->sums); /* per thread or not, as out */
        }
        if (e->ix)
            return index_result(e, mtl__index_sums(e->ix, &e->defs, v, f, threads_of(e), out));
    }
    return mtl_engine_scan(e, f, &ops, NULL, NULL);
}

int mtl_engine_live_sums(struct mtl_engine *e, const struct mtl_filter *f, uint64_t seq,
                         struct mtl_stackagg *out)
{
    struct mtl_view *v = mtl_engine_view(e, f);
    if (!v)
        return MTL_ENOMEM;
    mtl_engine_prefetch_symbols(e);
    if (e->ix)
        return index_result(e, mtl__index_live_sums(e->ix, &e->defs, v, f, seq,
                                                    threads_of(e), out));
    return mtl_engine_live_after(e, f, seq, add_to_sums, out);
}

int mtl_engine_curve(struct mtl_engine *e, const struct mtl_filter *f, struct mtl_curve *c)
{
    struct mtl_view *v = mtl_engine_view(e, f);
    if (!v)
        return MTL_ENOMEM;
    c->width_us = MTL_CURVE_FIRST_WIDTH;
    if (!e->ix && can_index(e)) {
        int rc = build_index(e);
        if (rc < 0 && rc != MTL_ENOMEM)
            return rc;
    }
    const struct mtl_digest *g;
    if (e->ix && e->opt.digest && c->buckets && c->no_peak) {
        int rc = mtl_engine_digest(e, f, &g);
        if (rc < 0)
            return rc;
        mtl_digest_curve(g, c);
        return index_result(e, mtl__index_rss(e->ix, c));
    }
    if (e->ix)
        return index_result(e, mtl__index_curve(e->ix, &e->defs, v, f, threads_of(e), c));
    return mtl__curve_scan(e, f, c);
}
