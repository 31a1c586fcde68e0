/* types.c: `memtally types`' text and JSON (docs/ANALYSIS.md, types). */
#include "render/render.h"

#include <stdio.h>
#include <string.h>

static void json_row(struct mtl_json *j, const struct mtl_type_row *r)
{
    mtl_json_kv_string(j, "type", r->type);
    mtl_json_kv_number(j, "calls", r->calls);
    mtl_json_kv_number(j, "bytes", r->bytes);
    mtl_json_kv_number(j, "live_blocks", r->live_blocks);
    mtl_json_kv_number(j, "live_bytes", r->live_bytes);
    mtl_json_kv_number(j, "peak_blocks", r->peak_blocks);
    mtl_json_kv_number(j, "peak_bytes", r->peak_bytes);
}

static void text_row(struct mtl_buf *b, const struct mtl_type_row *r, int width)
{
    mtl_buf_addf(b, "%-*.*s %10.0f %14.0f %10.0f %14.0f %10.0f %14.0f\n", width, width, r->type,
                 r->calls, r->bytes, r->live_blocks, r->live_bytes, r->peak_blocks,
                 r->peak_bytes);
}

void mtl_render_types(struct mtl_buf *b, const struct mtl_types *t,
                      const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &t->head);
        mtl_json_kv_number(&j, "peak_bytes", t->peak_bytes);
        mtl_json_kv_uint(&j, "peak_time_us", t->peak_time_us);
        mtl_json_key(&j, "rows");
        mtl_json_begin_array(&j);
        for (size_t i = 0; i < t->n; i++) {
            mtl_json_begin_object(&j);
            json_row(&j, &t->rows[i]);
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_json_key(&j, "total");
        mtl_json_begin_object(&j);
        json_row(&j, &t->total);
        mtl_json_end(&j);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    mtl_render_text_head(b, &t->head);
    if (!t->n) {
        mtl_buf_adds(b, "no allocation passes the filters\n");
        return;
    }
    int width = 20;
    for (size_t i = 0; i < t->n; i++) {
        int len = (int)strlen(t->rows[i].type);
        if (len > width)
            width = len < 60 ? len : 60;
    }
    char size[32];
    mtl_buf_addf(b, "by type tag (mtl_type); the peak: %s at %.3f s\n\n",
                 mtl_human_bytes(size, sizeof size, t->peak_bytes),
                 (double)t->peak_time_us / 1e6);
    mtl_buf_addf(b, "%-*s %10s %14s %10s %14s %10s %14s\n", width, "TYPE", "CALLS", "BYTES",
                 "LIVE", "LIVE BYTES", "AT PEAK", "PEAK BYTES");
    for (size_t i = 0; i < t->n; i++)
        text_row(b, &t->rows[i], width);
    text_row(b, &t->total, width);
}
