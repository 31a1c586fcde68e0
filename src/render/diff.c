/* diff.c: the diff's text and JSON (docs/ANALYSIS.md, diff). */
#include <stdio.h>
#include <string.h>

#include "render/render.h"

static const char *const field_name[MTL_DIFF_FIELDS] = { "calls", "bytes", "peak", "leaked" };

static void json_fields(struct mtl_json *j, const struct mtl_diff_row *r)
{
    char key[32];
    for (int f = 0; f < MTL_DIFF_FIELDS; f++) {
        snprintf(key, sizeof key, "%s_base", field_name[f]);
        mtl_json_kv_number(j, key, r->v[0][f]);
        snprintf(key, sizeof key, "%s_new", field_name[f]);
        mtl_json_kv_number(j, key, r->v[1][f]);
        snprintf(key, sizeof key, "%s_delta", field_name[f]);
        mtl_json_kv_number(j, key, r->v[1][f] - r->v[0][f]);
    }
}

void mtl_render_diff(struct mtl_buf *b, const struct mtl_diff *d,
                     const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        if (d->estimated)
            mtl_json_kv_bool(&j, "estimated", 1);
        mtl_json_key(&j, "rows");
        mtl_json_begin_array(&j);
        for (size_t i = 0; i < d->n; i++) {
            mtl_json_begin_object(&j);
            mtl_json_kv_string(&j, "function", d->rows[i].function);
            json_fields(&j, &d->rows[i]);
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_json_key(&j, "total");
        mtl_json_begin_object(&j);
        mtl_json_kv_string(&j, "function", NULL);
        json_fields(&j, &d->total);
        mtl_json_end(&j);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    if (d->estimated)
        mtl_buf_adds(b, "(a sampled trace: calls and bytes are estimates)\n\n");
    size_t w = 8;
    for (size_t i = 0; i < d->n; i++) {
        size_t len = strlen(d->rows[i].function);
        if (len > w)
            w = len;
    }
    if (ro->width && w > ro->width)
        w = ro->width;
    mtl_buf_addf(b, "%-*s %12s %14s %14s %14s\n", (int)w, "FUNCTION", "CALLS", "BYTES",
                 "PEAK", "LEAKED");
    for (size_t i = 0; i <= d->n; i++) {
        const struct mtl_diff_row *r = i < d->n ? &d->rows[i] : &d->total;
        const char *name = i < d->n ? r->function : "total";
        size_t len = strlen(name);
        if (len > w) {
            mtl_buf_add(b, name, w - 3);
            mtl_buf_adds(b, "...");
        } else {
            mtl_buf_addf(b, "%-*s", (int)w, name);
        }
        mtl_buf_addf(b, " %+12.0f %+14.0f %+14.0f %+14.0f\n",
                     r->v[1][MTL_DIFF_CALLS] - r->v[0][MTL_DIFF_CALLS],
                     r->v[1][MTL_DIFF_BYTES] - r->v[0][MTL_DIFF_BYTES],
                     r->v[1][MTL_DIFF_PEAK] - r->v[0][MTL_DIFF_PEAK],
                     r->v[1][MTL_DIFF_LEAKED] - r->v[0][MTL_DIFF_LEAKED]);
    }
}
