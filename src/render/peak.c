/* peak.c: peak's text and JSON (docs/ANALYSIS.md, peak). */
#include "render/render.h"

#include <stdio.h>

/* Rows of sites with blocks (peak, leaks): their JSON array. */
void mtl__render_json_sites(struct mtl_json *j, const struct mtl_rows *rows, int with_stack)
{
    mtl_json_key(j, "rows");
    mtl_json_begin_array(j);
    for (size_t i = 0; i < rows->n; i++) {
        const struct mtl_row *row = &rows->row[i];
        mtl_json_begin_object(j);
        mtl_render_json_location(j, row);
        mtl_json_kv_number(j, "blocks", row->calls);
        mtl_json_kv_number(j, "bytes", row->bytes);
        mtl_json_kv_fixed(j, "percent", row->percent, 4);
        if (with_stack) {
            mtl_json_key(j, "stack");
            mtl_json_begin_array(j);
            for (size_t k = 0; row->npaths && k < row->paths[0].n; k++)
                mtl_render_json_frame(j, &row->paths[0].frames[k]);
            mtl_json_end(j);
        }
        mtl_json_end(j);
    }
    mtl_json_end(j);
}

void mtl_render_peak(struct mtl_buf *b, const struct mtl_peak *p,
                     const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &p->head);
        mtl_json_kv_number(&j, "peak_bytes", p->peak_bytes);
        mtl_json_kv_uint(&j, "peak_time_us", p->peak_time_us);
        mtl_json_kv_number(&j, "blocks", p->rows.calls);
        mtl__render_json_sites(&j, &p->rows, 0);
        mtl_render_json_skipped(&j, &p->rows);
        if (p->threads) {
            mtl_json_key(&j, "threads");
            mtl_json_begin_array(&j);
            for (size_t i = 0; i < p->nthreads; i++) {
                mtl_json_begin_object(&j);
                mtl_json_kv_uint(&j, "thread", p->threads[i].index);
                mtl_json_kv_uint(&j, "tid", p->threads[i].tid);
                mtl_json_kv_string(&j, "name", p->threads[i].name);
                mtl_json_kv_number(&j, "blocks", p->threads[i].blocks);
                mtl_json_kv_number(&j, "bytes", p->threads[i].bytes);
                mtl_json_end(&j);
            }
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    mtl_render_text_head(b, &p->head);
    if (!p->found) {
        mtl_buf_adds(b, "no allocation passes the filters: there is no peak\n");
        return;
    }
    char size[32];
    mtl_buf_addf(b, "peak: %s live in %.0f blocks at %.3f s\n\n",
                 mtl_human_bytes(size, sizeof size, p->peak_bytes), p->rows.calls,
                 (double)p->peak_time_us / 1e6);
    struct mtl_table_spec spec = { "SITE", "BLOCKS", NULL, 0, 0 };
    mtl_render_table(b, &p->rows, &spec, ro->width, ro->stacks);
    mtl_render_skipped(b, &p->rows);
    if (!p->threads)
        return;
    /* Who held it: after a merge --tree, a thread's name says its process. */
    mtl_buf_addf(b, "\n%-40s %12s %14s %7s\n", "THREAD", "BLOCKS", "BYTES", "%");
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct mtl_peak_thread *t = &p->threads[i];
        char who[64];
        snprintf(who, sizeof who, "%u%s%s", t->tid, *t->name ? " " : "", t->name);
        mtl_buf_addf(b, "%-40s %12.0f %14.0f %7.2f\n", who, t->blocks, t->bytes,
                     p->peak_bytes > 0 ? 100.0 * t->bytes / p->peak_bytes : 0.0);
    }
}
