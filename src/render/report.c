/* report.c: the report's text tables and JSON (docs/ANALYSIS.md, report). */
#include <stdio.h>

#include "render/render.h"

static const char *key_header(enum mtl_group by)
{
    switch (by) {
    case MTL_BY_FILE: return "FILE";
    case MTL_BY_MODULE: return "MODULE";
    case MTL_BY_THREAD: return "THREAD";
    case MTL_BY_TYPE: return "TYPE";
    default: return "FUNCTION";
    }
}

static void json_paths(struct mtl_json *j, const struct mtl_row *row)
{
    if (!row->paths)
        return;
    mtl_json_key(j, "paths");
    mtl_json_begin_array(j);
    for (size_t p = 0; p < row->npaths; p++) {
        mtl_json_begin_object(j);
        mtl_json_kv_number(j, "calls", row->paths[p].calls);
        mtl_json_kv_number(j, "bytes", row->paths[p].bytes);
        mtl_json_key(j, "frames");
        mtl_json_begin_array(j);
        for (size_t k = 0; k < row->paths[p].n; k++)
            mtl_render_json_frame(j, &row->paths[p].frames[k]);
        mtl_json_end(j);
        mtl_json_end(j);
    }
    mtl_json_end(j);
}

static void json_rows(struct mtl_json *j, const struct mtl_rows *rows, enum mtl_group by,
                      int calls_counted)
{
    mtl_json_key(j, "rows");
    mtl_json_begin_array(j);
    for (size_t i = 0; i < rows->n; i++) {
        const struct mtl_row *row = &rows->row[i];
        mtl_json_begin_object(j);
        if (by == MTL_BY_THREAD) {
            mtl_json_kv_uint(j, "tid", row->tid);
            mtl_json_kv_uint(j, "index", row->thread);
            mtl_json_kv_string(j, "name", row->thread_name ? row->thread_name : "");
            mtl_json_kv_string(j, "function", NULL);
            mtl_json_kv_string(j, "file", NULL);
            mtl_json_kv_string(j, "line", NULL);
        } else if (by == MTL_BY_TYPE) {
            mtl_json_kv_string(j, "type", row->type);
            mtl_json_kv_string(j, "function", NULL);
            mtl_json_kv_string(j, "file", NULL);
            mtl_json_kv_string(j, "line", NULL);
        } else {
            mtl_render_json_location(j, row);
            if (by == MTL_BY_MODULE || row->module)
                mtl_json_kv_string(j, "module", row->module ? row->module : "");
        }
        mtl_json_kv_number(j, "calls", row->calls);
        mtl_json_kv_number(j, "bytes", row->bytes);
        mtl_json_kv_number(j, "per_call", row->calls > 0 ? row->bytes / row->calls : 0);
        if (calls_counted)
            mtl_json_kv_number(j, "allocations", row->extra);
        mtl_json_kv_fixed(j, "percent", row->percent, 4);
        json_paths(j, row);
        mtl_json_end(j);
    }
    mtl_json_end(j);
}

void mtl_render_report(struct mtl_buf *b, const struct mtl_report *r,
                       const struct mtl_report_options *o,
                       const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &r->head);
        if (r->calls_counted)
            mtl_json_kv_bool(&j, "calls_counted", 1);
        mtl_json_key(&j, "total");
        mtl_json_begin_object(&j);
        mtl_json_kv_number(&j, "bytes", r->total.bytes);
        mtl_json_kv_number(&j, "calls", r->total.calls);
        json_rows(&j, &r->total, o->by, r->calls_counted);
        if (o->by == MTL_BY_FUNCTION && !o->inclusive)
            mtl_render_json_skipped(&j, &r->total);
        mtl_json_end(&j);
        mtl_json_key(&j, "threads");
        mtl_json_begin_array(&j);
        for (size_t i = 0; i < r->nthreads; i++) {
            const struct mtl_thread_rows *t = &r->threads[i];
            mtl_json_begin_object(&j);
            mtl_json_kv_uint(&j, "tid", t->tid);
            mtl_json_kv_uint(&j, "index", t->index);
            mtl_json_kv_string(&j, "name", t->name);
            mtl_json_kv_fixed(&j, "percent", t->percent, 4);
            mtl_json_kv_number(&j, "bytes", t->rows.bytes);
            mtl_json_kv_number(&j, "calls", t->rows.calls);
            json_rows(&j, &t->rows, o->by, r->calls_counted);
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    struct mtl_table_spec spec = { key_header(o->by), "CALLS", NULL, 1, 1 };
    mtl_render_text_head(b, &r->head);
    if (r->calls_counted)
        mtl_buf_adds(b, "CALLS are true calls (record --calls); BYTES were allocated while the "
                        "function was\nthe innermost counted one (untraced callees count for "
                        "it)\n\n");
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct mtl_thread_rows *t = &r->threads[i];
        char title[128];
        snprintf(title, sizeof title, "thread %u (%s), index %u", t->tid,
                 *t->name ? t->name : "unnamed", t->index);
        mtl_render_banner(b, title, t->percent, t->rows.bytes, t->rows.calls);
        mtl_render_table(b, &t->rows, &spec, ro->width, ro->stacks);
        mtl_buf_addc(b, '\n');
    }
    if (r->nthreads)
        mtl_render_banner(b, "all threads", r->total.bytes > 0 ? 100.0 : 0.0,
                          r->total.bytes, r->total.calls);
    mtl_render_table(b, &r->total, &spec, ro->width, ro->stacks);
    mtl_render_skipped(b, &r->total);
}
