/*
 * cmd_info.c: `memtally info [--json] TRACE`: what a trace holds, with the
 * totals of valgrind's "total heap usage" line and the live heap's peak.
 *
 * Frees count only when they match a block allocated in the same trace
 * (a forked child freeing its parent's blocks, say); the others are
 * reported as unmatched_frees.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ptrmap.h"
#include "cli/cli.h"
#include "memtally/trace.h"

struct totals {
    uint64_t allocations, frees, unmatched_frees, bytes_allocated;
    uint64_t live_bytes, peak_live_bytes, peak_time_us;
    uint64_t events, rss_peak;
    double est_allocations, est_bytes;
    uint32_t threads_allocating;
};

static int tally(struct mtl_reader *r, struct totals *t, struct mtl_ptrmap *live)
{
    struct mtl_event ev;
    int rc;
    uint8_t *allocated = NULL;
    size_t nallocated = 0;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        t->events++;
        if (ev.type == MTL_EV_ALLOC) {
            struct mtl_ptrmap_val v = { .size = ev.size, .time_us = ev.time_us, .stack = ev.stack, .thread = ev.thread }, old;
            int put = mtl_ptrmap_put(live, ev.ptr, &v, &old);
            if (put < 0)
                return -1;
            if (put == 1)
                t->live_bytes -= old.size; /* its free was lost: drop it */
            t->allocations++;
            t->bytes_allocated += ev.size;
            t->est_allocations += ev.weight_count;
            t->est_bytes += ev.weight_bytes;
            t->live_bytes += ev.size;
            if (t->live_bytes > t->peak_live_bytes) {
                t->peak_live_bytes = t->live_bytes;
                t->peak_time_us = ev.time_us;
            }
            if (ev.thread >= nallocated) {
                size_t n = (ev.thread + 1) * 2;
                uint8_t *a = realloc(allocated, n);
                if (!a)
                    return -1;
                memset(a + nallocated, 0, n - nallocated);
                allocated = a;
                nallocated = n;
            }
            if (!allocated[ev.thread]) {
                allocated[ev.thread] = 1;
                t->threads_allocating++;
            }
        } else if (ev.type == MTL_EV_FREE) {
            struct mtl_ptrmap_val v;
            if (mtl_ptrmap_take(live, ev.ptr, &v)) {
                t->frees++;
                t->live_bytes -= v.size;
            } else {
                t->unmatched_frees++;
            }
        } else if (ev.type == MTL_EV_RSS && ev.size > t->rss_peak) {
            t->rss_peak = ev.size;
        }
    }
    free(allocated);
    return rc;
}

static const char *mode_name(enum mtl_mode m)
{
    return m == MTL_MODE_SAMPLED ? "sampled" : "full";
}

static void print_json(struct mtl_reader *r, const struct totals *t,
                       const struct mtl_ptrmap *live)
{
    const struct mtl_trace_info *in = mtl_reader_info(r);
    FILE *f = stdout;
    fputs("{\"program\": ", f);
    json_string(f, in->program);
    fputs(", \"command_line\": ", f);
    json_string(f, in->command_line);
    fprintf(f, ", \"pid\": %u, \"ppid\": %u, \"mode\": \"%s\"", in->pid, in->ppid,
            mode_name(in->mode));
    if (in->mode == MTL_MODE_SAMPLED)
        fprintf(f, ", \"sample_rate\": %llu", (unsigned long long)in->sample_rate);
    fprintf(f,
            ", \"start_unix_us\": %llu, \"duration_us\": %llu, \"threads\": %u"
            ", \"threads_seen\": %u, \"allocations\": %llu, \"frees\": %llu"
            ", \"unmatched_frees\": %llu, \"bytes_allocated\": %llu"
            ", \"peak_live_bytes\": %llu, \"peak_time_us\": %llu"
            ", \"live_bytes_at_end\": %llu, \"live_blocks_at_end\": %zu"
            ", \"peak_rss_bytes\": %llu, \"unique_stacks\": %u, \"modules\": %u"
            ", \"max_depth\": %u, \"events\": %llu, \"blocks\": %llu"
            ", \"complete\": %s, \"truncated\": %s}\n",
            (unsigned long long)in->start_unix_us,
            (unsigned long long)in->duration_us, t->threads_allocating,
            mtl_reader_thread_count(r), (unsigned long long)t->allocations,
            (unsigned long long)t->frees, (unsigned long long)t->unmatched_frees,
            (unsigned long long)t->bytes_allocated,
            (unsigned long long)t->peak_live_bytes,
            (unsigned long long)t->peak_time_us,
            (unsigned long long)t->live_bytes, live->count,
            (unsigned long long)t->rss_peak,
            mtl_reader_stack_count(r) ? mtl_reader_stack_count(r) - 1 : 0,
            mtl_reader_module_count(r), in->max_depth,
            (unsigned long long)t->events,
            (unsigned long long)mtl_reader_blocks(r),
            in->complete ? "true" : "false", in->truncated ? "true" : "false");
}

static void print_text(struct mtl_reader *r, const struct totals *t,
                       const struct mtl_ptrmap *live)
{
    const struct mtl_trace_info *in = mtl_reader_info(r);
    char a[32], b[32];
    printf("program:       %s\n", in->program);
    printf("command line:  %s\n", in->command_line);
    printf("pid:           %u (parent %u)\n", in->pid, in->ppid);
    printf("mode:          %s, stacks up to %u frames\n", mode_name(in->mode),
           in->max_depth);
    printf("duration:      %.3f s\n", (double)in->duration_us / 1e6);
    printf("threads:       %u allocated (%u seen)\n", t->threads_allocating,
           mtl_reader_thread_count(r));
    printf("allocations:   %llu (%s)\n", (unsigned long long)t->allocations,
           human_bytes(a, sizeof a, (double)t->bytes_allocated));
    printf("frees:         %llu", (unsigned long long)t->frees);
    if (t->unmatched_frees)
        printf(" (+%llu of blocks from before the trace)",
               (unsigned long long)t->unmatched_frees);
    printf("\npeak live:     %s at %.3f s\n",
           human_bytes(a, sizeof a, (double)t->peak_live_bytes),
           (double)t->peak_time_us / 1e6);
    printf("live at end:   %s in %zu blocks\n",
           human_bytes(b, sizeof b, (double)t->live_bytes), live->count);
    if (t->rss_peak)
        printf("peak RSS:      %s\n", human_bytes(a, sizeof a, (double)t->rss_peak));
    printf("unique stacks: %u, modules: %u\n",
           mtl_reader_stack_count(r) ? mtl_reader_stack_count(r) - 1 : 0,
           mtl_reader_module_count(r));
    printf("trace:         %llu events in %llu blocks, %s\n",
           (unsigned long long)t->events, (unsigned long long)mtl_reader_blocks(r),
           in->truncated ? "truncated" : "complete");
}

int cmd_info(int argc, char **argv)
{
    int json = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: memtally info [--json] TRACE");
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("info: unknown option '%s'", argv[i]);
            return 2;
        } else if (path) {
            cli_error("info: one trace at a time");
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        cli_error("info: no trace given (memtally info [--json] TRACE)");
        return 2;
    }
    struct mtl_reader *r = cli_open_trace(path);
    if (!r)
        return 1;
    struct totals t = {0};
    struct mtl_ptrmap live = MTL_PTRMAP_INIT;
    int rc = tally(r, &t, &live);
    if (rc == -1) {
        cli_error("info: out of memory");
        return 1;
    }
    int bad = cli_finish_trace(r, path, rc);
    if (!bad) {
        if (json)
            print_json(r, &t, &live);
        else
            print_text(r, &t, &live);
    }
    mtl_ptrmap_release(&live);
    mtl_reader_close(r);
    return bad;
}
