/*
 * cmd_histogram.c: `memtally histogram`: allocation sizes in power-of-two
 * buckets: [0], [1], [2,3], [4,7], ...
 */
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally histogram [options] TRACE\n"
    "\n"
    "How many allocations of each size, in power-of-two buckets.\n"
    "\n"
    "  --json      JSON (docs/ANALYSIS.md)\n";

struct histogram {
    double calls[65], bytes[65];
    double total_calls, total_bytes;
};

static int bucket_of(uint64_t size)
{
    return size ? 64 - __builtin_clzll(size) : 0;
}

static int on_block(void *arg, const struct mtl_block *b)
{
    struct histogram *h = arg;
    int k = bucket_of(b->size);
    h->calls[k] += b->weight_count;
    h->bytes[k] += b->weight_bytes;
    h->total_calls += b->weight_count;
    h->total_bytes += b->weight_bytes;
    return 0;
}

int cmd_histogram(int argc, char **argv)
{
    struct analysis a = {0};
    struct histogram h;
    int code;
    memset(&h, 0, sizeof h);
    if (analysis_parse(&a, argc, argv, usage, 1, NULL, NULL, &code))
        return code;
    if (analysis_open(&a, NULL))
        return 1;
    struct mtl_scan_ops ops = { .block = on_block, .alloc_only = 1 };
    int bad = analysis_scan(&a, &ops, &h, NULL);
    if (!bad) {
        double most = 0;
        for (int k = 0; k < 65; k++)
            if (h.calls[k] > most)
                most = h.calls[k];
        if (a.json) {
            printf("{");
            json_estimated(&a);
            printf("\"calls\": ");
            json_number(stdout, h.total_calls);
            printf(", \"bytes\": ");
            json_number(stdout, h.total_bytes);
            printf(", \"buckets\": [");
        } else {
            printf("%-23s %12s %14s %7s\n", "SIZE", "CALLS", "BYTES", "%");
        }
        int first = 1;
        for (int k = 0; k < 65; k++) {
            if (h.calls[k] <= 0)
                continue;
            unsigned long long lo = k == 0 ? 0 : 1ull << (k - 1);
            unsigned long long hi = k == 0 ? 0 : k == 64 ? ~0ull : (1ull << k) - 1;
            double pct = h.total_calls > 0 ? 100.0 * h.calls[k] / h.total_calls : 0;
            if (a.json) {
                printf("%s{\"min\": %llu, \"max\": %llu, \"calls\": ", first ? "" : ", ", lo, hi);
                json_number(stdout, h.calls[k]);
                printf(", \"bytes\": ");
                json_number(stdout, h.bytes[k]);
                printf(", \"percent\": %.4f}", pct);
            } else {
                char range[48];
                snprintf(range, sizeof range, lo == hi ? "%llu" : "%llu..%llu", lo, hi);
                int bar = most > 0 ? (int)(30 * h.calls[k] / most + 0.5) : 0;
                printf("%-23s %12.0f %14.0f %7.2f %.*s\n", range, h.calls[k], h.bytes[k],
                       pct, bar, "##############################");
            }
            first = 0;
        }
        if (a.json)
            printf("]}\n");
    }
    analysis_close(&a);
    return bad;
}
