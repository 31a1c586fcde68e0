/* timeline.c: the timeline's text chart, CSV and JSON (docs/ANALYSIS.md,
 * timeline). */
#include "render/render.h"

/* Decimals of a second that tell the points apart: three at a step of
 * more than a millisecond, up to six (the trace's microsecond) for a
 * program that lasted a few milliseconds.  The step must exceed the last
 * decimal's unit: two times a unit apart could both sit on a half and
 * round alike. */
static int time_decimals(const struct mtl_timeline_point *p, size_t n)
{
    uint64_t step = UINT64_MAX;
    for (size_t i = 1; i < n; i++)
        if (p[i].time_us > p[i - 1].time_us && p[i].time_us - p[i - 1].time_us < step)
            step = p[i].time_us - p[i - 1].time_us;
    int decimals = 3;
    for (uint64_t unit = 1000; decimals < 6 && step <= unit; unit /= 10)
        decimals++;
    return decimals;
}

void mtl_render_timeline(struct mtl_buf *b, const struct mtl_timeline *t, int csv,
                         const struct mtl_render_options *ro)
{
    const struct mtl_timeline_point *p = t->points;
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &t->head);
        mtl_json_key(&j, "points");
        mtl_json_begin_array(&j);
        for (size_t i = 0; i < t->n; i++) {
            mtl_json_begin_object(&j);
            mtl_json_kv_uint(&j, "time_us", p[i].time_us);
            mtl_json_kv_number(&j, "live_bytes", p[i].live);
            mtl_json_kv_number(&j, "alloc_bytes", p[i].alloc_bytes);
            mtl_json_kv_number(&j, "alloc_calls", p[i].alloc_calls);
            mtl_json_kv_uint(&j, "rss_bytes", p[i].rss);
            if (t->gc)
                mtl_json_kv_uint(&j, "gc_heap_bytes", p[i].gc_heap);
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    if (csv) {
        mtl_buf_addf(b, "time_us,live_bytes,alloc_bytes,alloc_calls,rss_bytes%s\n",
                     t->gc ? ",gc_heap_bytes" : "");
        for (size_t i = 0; i < t->n; i++) {
            mtl_buf_addf(b, "%llu,%.0f,%.0f,%.0f,%llu", (unsigned long long)p[i].time_us,
                         p[i].live, p[i].alloc_bytes, p[i].alloc_calls,
                         (unsigned long long)p[i].rss);
            if (t->gc)
                mtl_buf_addf(b, ",%llu", (unsigned long long)p[i].gc_heap);
            mtl_buf_addc(b, '\n');
        }
        return;
    }
    mtl_render_text_head(b, &t->head);
    double most = 1;
    for (size_t i = 0; i < t->n; i++)
        if (p[i].live > most)
            most = p[i].live;
    const int cols = 40;
    int decimals = time_decimals(p, t->n);
    /* The collector's heap: its size after collections where RSS goes. */
    mtl_buf_addf(b, "%10s %11s %11s %11s  LIVE (# = %s)\n", "TIME", "LIVE", "ALLOCATED",
                 t->gc ? "GC HEAP" : "RSS", "full scale");
    for (size_t i = 0; i < t->n; i++) {
        char l[32], al[32], r[32];
        int bar = (int)(cols * p[i].live / most + 0.5);
        uint64_t last = t->gc ? p[i].gc_heap : p[i].rss;
        mtl_buf_addf(b, "%9.*fs %11s %11s %11s  ", decimals, (double)p[i].time_us / 1e6,
                     mtl_human_bytes(l, sizeof l, p[i].live),
                     mtl_human_bytes(al, sizeof al, p[i].alloc_bytes),
                     last ? mtl_human_bytes(r, sizeof r, (double)last) : "-");
        mtl_buf_pad(b, '#', bar > 0 ? (size_t)bar : 0);
        mtl_buf_addc(b, '\n');
    }
}
