/* histogram.c: allocation sizes in power-of-two buckets: [0], [1], [2,3],
 * [4,7], ... */
#include <string.h>

#include "analyze/internal.h"

struct hist_scan {
    double calls[65], bytes[65];
};

static int on_block(void *arg, const struct mtl_block *b)
{
    struct hist_scan *h = arg;
    int k = b->size ? 64 - __builtin_clzll(b->size) : 0;
    h->calls[k] += b->weight_count;
    h->bytes[k] += b->weight_bytes;
    return 0;
}

int mtl_histogram(struct mtl_engine *e, const struct mtl_filter *f,
                  struct mtl_histogram *out)
{
    memset(out, 0, sizeof *out);
    mtl__result_head(e, &out->head);
    struct hist_scan h;
    memset(&h, 0, sizeof h);
    struct mtl_scan_ops ops = { .block = on_block, .alloc_only = 1, .needs = MTL_NEED_SIZE };
    int rc = mtl_engine_scan(e, f, &ops, &h, NULL);
    if (rc < 0)
        return rc;
    for (int k = 0; k < 65; k++) {
        out->calls += h.calls[k];
        out->bytes += h.bytes[k];
    }
    for (int k = 0; k < 65; k++) {
        if (h.calls[k] <= 0)
            continue;
        struct mtl_histogram_bucket *b = &out->buckets[out->n++];
        b->min = k == 0 ? 0 : 1ull << (k - 1);
        b->max = k == 0 ? 0 : k == 64 ? ~0ull : (1ull << k) - 1;
        b->calls = h.calls[k];
        b->bytes = h.bytes[k];
        b->percent = out->calls > 0 ? 100.0 * h.calls[k] / out->calls : 0;
    }
    return 0;
}
