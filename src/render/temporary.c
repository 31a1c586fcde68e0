/* temporary.c: temporary's text and JSON (docs/ANALYSIS.md, temporary). */
#include "render/render.h"

void mtl_render_temporary(struct mtl_buf *b, const struct mtl_temporary *t,
                          const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &t->head);
        mtl_json_kv_number(&j, "temporary_calls", t->temporary_calls);
        mtl_json_kv_number(&j, "calls", t->calls);
        mtl_json_kv_number(&j, "temporary_bytes", t->temporary_bytes);
        mtl_json_key(&j, "rows");
        mtl_json_begin_array(&j);
        for (size_t i = 0; i < t->rows.n; i++) {
            const struct mtl_row *row = &t->rows.row[i];
            mtl_json_begin_object(&j);
            mtl_render_json_location(&j, row);
            mtl_json_kv_number(&j, "temporary_calls", row->extra);
            mtl_json_kv_number(&j, "calls", row->calls);
            mtl_json_kv_number(&j, "bytes", row->bytes);
            mtl_json_kv_fixed(&j, "percent", row->percent, 4);
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    mtl_render_text_head(b, &t->head);
    mtl_buf_addf(b, "%.0f temporary allocations of %.0f (%.2f%%)\n\n", t->temporary_calls,
                 t->calls, t->calls > 0 ? 100.0 * t->temporary_calls / t->calls : 0);
    if (!t->rows.n)
        return;
    struct mtl_table_spec spec = { "SITE", "CALLS", "TEMPORARY", 0, 0 };
    mtl_render_table(b, &t->rows, &spec, ro->width, 0);
}
