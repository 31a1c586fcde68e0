/*
 * api.c: see api.h.  Paths (all GET; docs/VIEWER.md has the answers):
 *
 *   /api/info                       what info --json says
 *   /api/timeline?points=N          timeline --json (N up to 2000)
 *   /api/report?by=&sort=&top=      report --total --json (top up to 2000)
 *   /api/tree?dir=sites|down&callers=&callees=&min-percent=&max-depth=&others=
 *                                   tree --json --others (min-percent at
 *                                   least 0.01; others=0: without --others)
 *   /api/lifetimes?columns=N        the lifetimes grid (N up to 400)
 *
 * Every path but info takes the analysis filters by their option names
 * (size=16..4K, live-at=2s, inside=parse*, never-freed=1, hide=...).
 */
#include "view/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyses.h"
#include "memtally/errors.h"
#include "render/render.h"

/* An answer in the making: the request's arguments, those used so far. */
struct request {
    const struct mtl_view_arg *args;
    size_t nargs;
    unsigned char used[MTL_VIEW_MAX_ARGS];
    struct mtl_buf *body;
    int status;
};

static int fail(struct request *q, int status, const char *fmt, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, what);
    q->body->len = 0;
    struct mtl_json j;
    mtl_json_init(&j, q->body);
    mtl_json_begin_object(&j);
    mtl_json_kv_string(&j, "error", msg);
    mtl_json_end(&j);
    mtl_buf_addc(q->body, '\n');
    q->status = status;
    return -1;
}

/* The value of argument key (marked used), or NULL. */
static const char *arg(struct request *q, const char *key)
{
    for (size_t i = 0; i < q->nargs; i++)
        if (!strcmp(q->args[i].key, key)) {
            q->used[i] = 1;
            return q->args[i].value ? q->args[i].value : "";
        }
    return NULL;
}

/* A whole number in [min, max] from argument key, else def; -1 after
 * failing the request. */
static int number_arg(struct request *q, const char *key, long min, long max, long def,
                      long *out)
{
    const char *v = arg(q, key);
    *out = def;
    if (!v)
        return 0;
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < min || n > max) {
        char what[96];
        snprintf(what, sizeof what, "%s takes a number from %ld to %ld", key, min, max);
        return fail(q, 400, "%s", what);
    }
    *out = n;
    return 0;
}

/* The filters of the request's arguments; -1 after failing it. */
static int filters(struct request *q, struct mtl_filter *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < q->nargs; i++) {
        const char *k = q->args[i].key, *v = q->args[i].value ? q->args[i].value : "";
        if (!strcmp(k, "never-freed")) {
            f->never_freed = strcmp(v, "0") != 0;
            q->used[i] = 1;
            continue;
        }
        const char *why;
        int rc = mtl_filter_option(f, k, v, &why);
        if (rc < 0) {
            char msg[400];
            snprintf(msg, sizeof msg, why, v);
            char full[480];
            snprintf(full, sizeof full, "%s: %s", k, msg);
            return fail(q, 400, "%s", full);
        }
        if (rc > 0)
            q->used[i] = 1;
    }
    return 0;
}

/* After an analysis returned rc: an error answer for a failure. */
static int analysed(struct request *q, int rc)
{
    if (rc >= 0)
        return 0;
    return fail(q, rc == MTL_ENOMEM ? 500 : 422, "%s", mtl_strerror(rc));
}

static int api_info(struct mtl_engine *e, struct request *q)
{
    struct mtl_info in;
    if (analysed(q, mtl_info(e, &in)) < 0)
        return -1;
    struct mtl_render_options ro = { .json = 1 };
    mtl_render_info(q->body, &in, &ro);
    return 0;
}

static int api_timeline(struct mtl_engine *e, struct request *q, const struct mtl_filter *f)
{
    long points;
    if (number_arg(q, "points", 2, 2000, 300, &points) < 0)
        return -1;
    struct mtl_timeline t;
    if (analysed(q, mtl_timeline(e, f, (size_t)points, &t)) < 0)
        return -1;
    struct mtl_render_options ro = { .json = 1 };
    mtl_render_timeline(q->body, &t, 0, &ro);
    mtl_timeline_release(&t);
    return 0;
}

static int api_report(struct mtl_engine *e, struct request *q, const struct mtl_filter *f)
{
    struct mtl_report_options o = { .total_only = 1, .by = MTL_BY_FUNCTION,
                                    .sort = MTL_SORT_BYTES, .descending = 1 };
    long top;
    if (number_arg(q, "top", 1, 2000, 500, &top) < 0)
        return -1;
    o.top = (size_t)top;
    const char *by = arg(q, "by"), *sort = arg(q, "sort");
    static const char *const bys[] = { "function", "file", "module", "thread", "type" };
    static const char *const sorts[] = { "bytes", "calls", "per-call", "percent", "function" };
    if (by) {
        size_t k = 0;
        while (k < 5 && strcmp(by, bys[k]))
            k++;
        if (k == 5)
            return fail(q, 400, "by: '%s' is not function, file, module, thread or type", by);
        o.by = (enum mtl_group)k;
    }
    if (sort) {
        size_t k = 0;
        while (k < 5 && strcmp(sort, sorts[k]))
            k++;
        if (k == 5)
            return fail(q, 400, "sort: '%s' is not bytes, calls, per-call, percent or function",
                        sort);
        o.sort = (enum mtl_sort)k;
        o.descending = k != 4;
    }
    struct mtl_report r;
    if (analysed(q, mtl_report(e, f, &o, &r)) < 0)
        return -1;
    struct mtl_render_options ro = { .json = 1 };
    mtl_render_report(q->body, &r, &o, &ro);
    mtl_report_release(&r);
    return 0;
}

static int api_tree(struct mtl_engine *e, struct request *q, const struct mtl_filter *f)
{
    struct mtl_tree_options o = { .min_percent = 0.1 };
    const char *dir = arg(q, "dir"), *mp = arg(q, "min-percent");
    o.callers = arg(q, "callers");
    o.callees = arg(q, "callees");
    if (dir && strcmp(dir, "sites") && strcmp(dir, "down"))
        return fail(q, 400, "dir: '%s' is not sites or down", dir);
    o.inverted = !o.callers && !o.callees && (!dir || !strcmp(dir, "sites"));
    if ((o.callers && !*o.callers) || (o.callees && !*o.callees) || (o.callers && o.callees))
        return fail(q, 400, "%s", "callers and callees: one of them, not empty");
    if (mp) {
        char *end;
        o.min_percent = strtod(mp, &end);
        /* A floor: every node is at least a share of the root, so the
         * answer stays bounded whatever the trace holds. */
        if (!*mp || *end || !(o.min_percent >= 0.01 && o.min_percent <= 100))
            return fail(q, 400, "%s", "min-percent takes a number from 0.01 to 100");
    }
    long depth, others;
    if (number_arg(q, "max-depth", 1, MTL_TREE_MAX_DEPTH, 0, &depth) < 0 ||
        number_arg(q, "others", 0, 1, 1, &others) < 0)
        return -1;
    o.max_depth = (size_t)depth;
    o.others = (int)others; /* a flame graph accounts for every byte */
    struct mtl_tree t;
    if (analysed(q, mtl_tree(e, f, &o, &t)) < 0)
        return -1;
    struct mtl_render_options ro = { .json = 1 };
    mtl_render_tree(q->body, &t, &o, &ro);
    mtl_tree_release(&t);
    return 0;
}

static int api_lifetimes(struct mtl_engine *e, struct request *q, const struct mtl_filter *f)
{
    long cols;
    if (number_arg(q, "columns", 2, 400, 100, &cols) < 0)
        return -1;
    struct mtl_lifetimes l;
    if (analysed(q, mtl_lifetimes(e, f, (size_t)cols, &l)) < 0)
        return -1;
    mtl_render_lifetimes(q->body, &l);
    mtl_lifetimes_release(&l);
    return 0;
}

int mtl_view_api(struct mtl_engine *e, const char *path, const struct mtl_view_arg *args,
                 size_t nargs, struct mtl_buf *body)
{
    struct request q = { .args = args, .nargs = nargs, .body = body, .status = 200 };
    body->len = 0;
    if (nargs > MTL_VIEW_MAX_ARGS) {
        fail(&q, 400, "%s", "too many arguments");
        return q.status;
    }
    struct mtl_filter f;
    int rc;
    if (!strcmp(path, "/api/info"))
        rc = api_info(e, &q);
    else if (!strcmp(path, "/api/timeline"))
        rc = filters(&q, &f) < 0 ? -1 : api_timeline(e, &q, &f);
    else if (!strcmp(path, "/api/report"))
        rc = filters(&q, &f) < 0 ? -1 : api_report(e, &q, &f);
    else if (!strcmp(path, "/api/tree"))
        rc = filters(&q, &f) < 0 ? -1 : api_tree(e, &q, &f);
    else if (!strcmp(path, "/api/lifetimes"))
        rc = filters(&q, &f) < 0 ? -1 : api_lifetimes(e, &q, &f);
    else
        rc = fail(&q, 404, "no such path: %s", path);
    /* An argument nothing took is a mistake worth saying. */
    for (size_t i = 0; rc == 0 && i < nargs; i++)
        if (!q.used[i])
            rc = fail(&q, 400, "unknown argument '%s'", args[i].key);
    return q.status;
}

/* One answer of the snapshot, under key. */
static int snap(struct mtl_engine *e, struct mtl_buf *out, const char *key, const char *path,
                const struct mtl_view_arg *args, size_t nargs, int first)
{
    struct mtl_buf body = MTL_BUF_INIT;
    int status = mtl_view_api(e, path, args, nargs, &body);
    if (status == 200) {
        mtl_buf_addf(out, "%s\"%s\": ", first ? "" : ", ", key);
        while (body.len && body.data[body.len - 1] == '\n')
            body.len--;
        mtl_buf_add(out, body.data, body.len);
    }
    mtl_buf_release(&body);
    return status == 200 ? 0 : status == 500 ? MTL_ENOMEM : MTL_ECORRUPT;
}

int mtl_view_snapshot(struct mtl_engine *e, struct mtl_buf *out)
{
    static const struct mtl_view_arg sites[] = { { "dir", "sites" } };
    static const struct mtl_view_arg down[] = { { "dir", "down" } };
    static const struct mtl_view_arg threads[] = { { "by", "thread" } };
    static const struct mtl_view_arg types[] = { { "by", "type" } };
    mtl_buf_addc(out, '{');
    int rc = snap(e, out, "info", "/api/info", NULL, 0, 1);
    if (rc == 0)
        rc = snap(e, out, "timeline", "/api/timeline", NULL, 0, 0);
    if (rc == 0)
        rc = snap(e, out, "report", "/api/report", NULL, 0, 0);
    if (rc == 0)
        rc = snap(e, out, "threads", "/api/report", threads, 1, 0);
    if (rc == 0)
        rc = snap(e, out, "types", "/api/report", types, 1, 0);
    if (rc == 0)
        rc = snap(e, out, "sites", "/api/tree", sites, 1, 0);
    if (rc == 0)
        rc = snap(e, out, "down", "/api/tree", down, 1, 0);
    if (rc == 0)
        rc = snap(e, out, "lifetimes", "/api/lifetimes", NULL, 0, 0);
    mtl_buf_addc(out, '}');
    return rc;
}
