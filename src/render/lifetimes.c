/* lifetimes.c: the grid of allocation time against lifetime as JSON (the
 * viewer's lifetimes view; docs/VIEWER.md). */
#include "render/render.h"

static void numbers(struct mtl_json *j, const char *key, const double *v, size_t n)
{
    mtl_json_key(j, key);
    mtl_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        mtl_json_number(j, v[i]);
    mtl_json_end(j);
}

static int any(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] > 0)
            return 1;
    return 0;
}

void mtl_render_lifetimes(struct mtl_buf *b, const struct mtl_lifetimes *l)
{
    struct mtl_json j;
    mtl_json_init(&j, b);
    mtl_json_begin_object(&j);
    mtl_render_json_head(&j, &l->head);
    mtl_json_kv_uint(&j, "width_us", l->width_us);
    mtl_json_kv_uint(&j, "columns", l->ncols);
    mtl_json_kv_number(&j, "calls", l->calls);
    mtl_json_kv_number(&j, "bytes", l->bytes);
    mtl_json_key(&j, "rows");
    mtl_json_begin_array(&j);
    for (int r = 0; r < MTL_LIFETIME_ROWS; r++) {
        const double *calls = l->cell_calls + (size_t)r * l->ncols;
        const double *bytes = l->cell_bytes + (size_t)r * l->ncols;
        if (!any(calls, l->ncols))
            continue;
        mtl_json_begin_object(&j);
        mtl_json_kv_uint(&j, "min_us", r == 0 ? 0 : 1ull << (r - 1));
        mtl_json_key(&j, "max_us");
        if (r == MTL_LIFETIME_ROWS - 1)
            mtl_json_null(&j);
        else
            mtl_json_uint(&j, r == 0 ? 0 : (1ull << r) - 1);
        numbers(&j, "calls", calls, l->ncols);
        numbers(&j, "bytes", bytes, l->ncols);
        mtl_json_end(&j);
    }
    mtl_json_end(&j);
    mtl_json_key(&j, "live");
    mtl_json_begin_object(&j);
    numbers(&j, "calls", l->live_calls, l->ncols);
    numbers(&j, "bytes", l->live_bytes, l->ncols);
    mtl_json_end(&j);
    mtl_json_end(&j);
    mtl_buf_addc(b, '\n');
}
