/* histogram.c: the size histogram's text and JSON (docs/ANALYSIS.md,
 * histogram). */
#include <stdio.h>

#include "render/render.h"

void mtl_render_histogram(struct mtl_buf *b, const struct mtl_histogram *h,
                          const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &h->head);
        mtl_json_kv_number(&j, "calls", h->calls);
        mtl_json_kv_number(&j, "bytes", h->bytes);
        mtl_json_key(&j, "buckets");
        mtl_json_begin_array(&j);
        for (size_t i = 0; i < h->n; i++) {
            const struct mtl_histogram_bucket *k = &h->buckets[i];
            mtl_json_begin_object(&j);
            mtl_json_kv_uint(&j, "min", k->min);
            mtl_json_kv_uint(&j, "max", k->max);
            mtl_json_kv_number(&j, "calls", k->calls);
            mtl_json_kv_number(&j, "bytes", k->bytes);
            mtl_json_kv_fixed(&j, "percent", k->percent, 4);
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    mtl_render_text_head(b, &h->head);
    double most = 0;
    for (size_t i = 0; i < h->n; i++)
        if (h->buckets[i].calls > most)
            most = h->buckets[i].calls;
    mtl_buf_addf(b, "%-23s %12s %14s %7s\n", "SIZE", "CALLS", "BYTES", "%");
    for (size_t i = 0; i < h->n; i++) {
        const struct mtl_histogram_bucket *k = &h->buckets[i];
        char range[48];
        if (k->min == k->max)
            snprintf(range, sizeof range, "%llu", (unsigned long long)k->min);
        else
            snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)k->min,
                     (unsigned long long)k->max);
        int bar = most > 0 ? (int)(30 * k->calls / most + 0.5) : 0;
        mtl_buf_addf(b, "%-23s %12.0f %14.0f %7.2f ", range, k->calls, k->bytes, k->percent);
        mtl_buf_pad(b, '#', bar > 0 ? (size_t)bar : 0);
        mtl_buf_addc(b, '\n');
    }
}
