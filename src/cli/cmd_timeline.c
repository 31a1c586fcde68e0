/*
 * cmd_timeline.c: `memtally timeline`: live bytes, allocation rate and RSS
 * over time.  Events go into at most FINE buckets whose width doubles
 * (merging neighbours) whenever the trace outgrows them, so memory stays
 * fixed however long the trace; the buckets are then gathered into the N
 * points asked for.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally timeline [options] TRACE\n"
    "\n"
    "Live bytes, bytes and calls allocated, and RSS, over N intervals.\n"
    "\n"
    "  --points N   how many intervals (default 60)\n"
    "  --csv        CSV: time_us,live_bytes,alloc_bytes,alloc_calls,rss_bytes\n"
    "  --json       JSON (docs/ANALYSIS.md)\n";

#define FINE 4096

struct bucket {
    double alloc_bytes, alloc_calls, live;
    uint64_t rss;
    uint8_t has_live, has_rss;
};

struct timeline {
    long points;
    int csv;
    uint64_t width;          /* microseconds per fine bucket */
    struct bucket b[FINE];
    double live;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct timeline *t = ctx;
    const char *s = argv[*i], *val;
    if (!strcmp(s, "--csv")) {
        t->csv = 1;
        (*i)++;
        return 1;
    }
    if (!strcmp(s, "--points") && *i + 1 < argc)
        val = argv[++*i];
    else if (!strncmp(s, "--points=", 9))
        val = s + 9;
    else if (!strcmp(s, "--points")) {
        cli_error("timeline: --points needs a number");
        return -1;
    } else
        return 0;
    char *end;
    t->points = strtol(val, &end, 10);
    if (!*val || *end || t->points < 1 || t->points > 100000) {
        cli_error("timeline: --points takes a number from 1 to 100000");
        return -1;
    }
    (*i)++;
    return 1;
}

static void merge_pairs(struct timeline *t)
{
    for (size_t i = 0; i < FINE / 2; i++) {
        struct bucket a = t->b[2 * i], b = t->b[2 * i + 1], m = a;
        m.alloc_bytes += b.alloc_bytes;
        m.alloc_calls += b.alloc_calls;
        if (b.has_live) {
            m.live = b.live;
            m.has_live = 1;
        }
        if (b.has_rss) {
            m.rss = b.rss;
            m.has_rss = 1;
        }
        t->b[i] = m;
    }
    memset(&t->b[FINE / 2], 0, sizeof t->b[0] * (FINE / 2));
    t->width *= 2;
}

static struct bucket *bucket_at(struct timeline *t, uint64_t us)
{
    while (us / t->width >= FINE)
        merge_pairs(t);
    return &t->b[us / t->width];
}

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct timeline *t = arg;
    struct bucket *k = bucket_at(t, ev->time_us);
    if (ev->type == MTL_EV_RSS) {
        k->rss = ev->size;
        k->has_rss = 1;
        return 0;
    }
    if (!b || !passes)
        return 0;
    if (ev->type == MTL_EV_ALLOC) {
        t->live += b->weight_bytes;
        k->alloc_bytes += b->weight_bytes;
        k->alloc_calls += b->weight_count;
    } else if (ev->type == MTL_EV_FREE) {
        t->live -= b->weight_bytes;
    }
    k->live = t->live;
    k->has_live = 1;
    return 0;
}

struct point {
    uint64_t time_us, rss;
    double live, alloc_bytes, alloc_calls;
};

int cmd_timeline(int argc, char **argv)
{
    struct analysis a = {0};
    struct timeline *t = calloc(1, sizeof *t);
    int code;
    if (!t) {
        cli_error("timeline: out of memory");
        return 1;
    }
    t->points = 60;
    t->width = 1000;
    if (analysis_parse(&a, argc, argv, usage, 1, parse_opt, t, &code)) {
        free(t);
        return code;
    }
    if (analysis_open(&a, NULL)) {
        free(t);
        return 1;
    }
    struct mtl_scan_ops ops = { .event = on_event };
    struct mtl_scan_result res;
    int bad = analysis_scan(&a, &ops, t, &res);
    struct point *p = bad ? NULL : calloc((size_t)t->points, sizeof *p);
    if (!bad && !p) {
        cli_error("timeline: out of memory");
        bad = 1;
    }
    if (!bad) {
        uint64_t end = res.end_us ? res.end_us : 1;
        long n = t->points;
        for (long k = 0; k < n; k++)
            p[k].time_us = (uint64_t)((double)end * (double)(k + 1) / (double)n + 0.5);
        double live = 0;
        uint64_t rss = 0;
        long k = 0;
        for (size_t i = 0; i < FINE; i++) {
            uint64_t start = i * t->width;
            if (start > end)
                break;
            while (k < n - 1 && start >= p[k].time_us) {
                p[k].live = live;
                p[k].rss = rss;
                k++;
            }
            p[k].alloc_bytes += t->b[i].alloc_bytes;
            p[k].alloc_calls += t->b[i].alloc_calls;
            if (t->b[i].has_live)
                live = t->b[i].live;
            if (t->b[i].has_rss)
                rss = t->b[i].rss;
        }
        for (; k < n; k++) {
            p[k].live = live;
            p[k].rss = rss;
        }
        if (a.json) {
            printf("{");
            json_estimated(&a);
            printf("\"points\": [");
            for (long i = 0; i < n; i++) {
                printf("%s{\"time_us\": %llu, \"live_bytes\": ", i ? ", " : "",
                       (unsigned long long)p[i].time_us);
                json_number(stdout, p[i].live);
                printf(", \"alloc_bytes\": ");
                json_number(stdout, p[i].alloc_bytes);
                printf(", \"alloc_calls\": ");
                json_number(stdout, p[i].alloc_calls);
                printf(", \"rss_bytes\": %llu}", (unsigned long long)p[i].rss);
            }
            printf("]}\n");
        } else if (t->csv) {
            printf("time_us,live_bytes,alloc_bytes,alloc_calls,rss_bytes\n");
            for (long i = 0; i < n; i++)
                printf("%llu,%.0f,%.0f,%.0f,%llu\n", (unsigned long long)p[i].time_us,
                       p[i].live, p[i].alloc_bytes, p[i].alloc_calls,
                       (unsigned long long)p[i].rss);
        } else {
            double most = 1;
            for (long i = 0; i < n; i++)
                if (p[i].live > most)
                    most = p[i].live;
            int cols = 40;
            printf("%10s %11s %11s %11s  LIVE (# = %s)\n", "TIME", "LIVE", "ALLOCATED",
                   "RSS", "full scale");
            for (long i = 0; i < n; i++) {
                char l[32], al[32], r[32];
                int bar = (int)(cols * p[i].live / most + 0.5);
                printf("%9.3fs %11s %11s %11s  %.*s\n", (double)p[i].time_us / 1e6,
                       human_bytes(l, sizeof l, p[i].live),
                       human_bytes(al, sizeof al, p[i].alloc_bytes),
                       p[i].rss ? human_bytes(r, sizeof r, (double)p[i].rss) : "-", bar,
                       "########################################");
            }
        }
    }
    free(p);
    free(t);
    analysis_close(&a);
    return bad;
}
