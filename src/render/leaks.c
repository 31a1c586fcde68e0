/* leaks.c: leaks' text and JSON (docs/ANALYSIS.md, leaks). */
#include "render/render.h"

void mtl__render_json_sites(struct mtl_json *j, const struct mtl_rows *rows, int with_stack);

void mtl_render_leaks(struct mtl_buf *b, const struct mtl_leaks *l,
                      const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &l->head);
        mtl_json_kv_number(&j, "leaked_bytes", l->rows.bytes);
        mtl_json_kv_number(&j, "leaked_blocks", l->rows.calls);
        mtl_json_kv_number(&j, "suppressed_bytes", l->suppressed_bytes);
        mtl_json_kv_number(&j, "suppressed_blocks", l->suppressed_blocks);
        mtl__render_json_sites(&j, &l->rows, 1);
        mtl_render_json_skipped(&j, &l->rows);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    char size[32], supp[32];
    mtl_render_text_head(b, &l->head);
    mtl_buf_addf(b, "live at the end: %s in %.0f blocks",
                 mtl_human_bytes(size, sizeof size, l->rows.bytes), l->rows.calls);
    if (l->suppressed_blocks > 0)
        mtl_buf_addf(b, " (and %s in %.0f blocks suppressed)",
                     mtl_human_bytes(supp, sizeof supp, l->suppressed_bytes),
                     l->suppressed_blocks);
    mtl_buf_adds(b, "\n\n");
    if (!l->rows.n)
        return;
    struct mtl_table_spec spec = { "SITE", "BLOCKS", NULL, 0, 0 };
    mtl_render_table(b, &l->rows, &spec, ro->width, ro->stacks);
    mtl_render_skipped(b, &l->rows);
}
