/*
 * cmd_info.c: `memtally info [--json] TRACE`: what a trace holds, with the
 * totals of valgrind's "total heap usage" line and the live heap's peak
 * (analyze/totals.c counts them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/totals.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char *mode_name(enum mtl_mode m)
{
    return m == MTL_MODE_SAMPLED ? "sampled" : "full";
}

static void print_json(struct mtl_reader *r, const struct mtl_totals *t)
{
    const struct mtl_trace_info *in = mtl_reader_info(r);
    FILE *f = stdout;
    fputs("{\"program\": ", f);
    json_string(f, in->program);
    fputs(", \"command_line\": ", f);
    json_string(f, in->command_line);
    fprintf(f, ", \"pid\": %u, \"ppid\": %u, \"mode\": \"%s\"", in->pid, in->ppid,
            mode_name(in->mode));
    /* Sampled: the totals are estimates, each sample weighted by the
     * inverse of its chance (docs/FORMAT.md); "samples" are the records. */
    int est = in->mode == MTL_MODE_SAMPLED;
    if (est)
        fprintf(f, ", \"sample_rate\": %llu, \"samples\": %llu, \"estimated\": true",
                (unsigned long long)in->sample_rate, (unsigned long long)t->allocations);
    fprintf(f,
            ", \"start_unix_us\": %llu, \"duration_us\": %llu, \"threads\": %u"
            ", \"threads_seen\": %u, \"allocations\": %llu, \"frees\": %llu"
            ", \"unmatched_frees\": %llu, \"bytes_allocated\": %llu"
            ", \"peak_live_bytes\": %llu, \"peak_time_us\": %llu"
            ", \"live_bytes_at_end\": %llu, \"live_blocks_at_end\": %llu"
            ", \"peak_rss_bytes\": %llu, \"unique_stacks\": %u, \"modules\": %u"
            ", \"max_depth\": %u, \"events\": %llu, \"blocks\": %llu"
            ", \"complete\": %s, \"truncated\": %s}\n",
            (unsigned long long)in->start_unix_us,
            (unsigned long long)in->duration_us, t->threads_allocating,
            mtl_reader_thread_count(r),
            est ? (unsigned long long)llround(t->est_allocations) : (unsigned long long)t->allocations,
            est ? (unsigned long long)llround(t->est_frees) : (unsigned long long)t->frees,
            (unsigned long long)t->unmatched_frees,
            est ? (unsigned long long)llround(t->est_bytes) : (unsigned long long)t->bytes_allocated,
            est ? (unsigned long long)llround(t->est_peak_live_bytes)
                : (unsigned long long)t->peak_live_bytes,
            est ? (unsigned long long)t->est_peak_time_us : (unsigned long long)t->peak_time_us,
            est ? (unsigned long long)llround(t->est_live_bytes) : (unsigned long long)t->live_bytes,
            (unsigned long long)t->live_blocks, (unsigned long long)t->peak_rss,
            t->unique_stacks, mtl_reader_module_count(r), in->max_depth,
            (unsigned long long)t->events,
            (unsigned long long)mtl_reader_blocks(r),
            in->complete ? "true" : "false", in->truncated ? "true" : "false");
}

static void print_text(struct mtl_reader *r, const struct mtl_totals *t)
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
    if (in->mode == MTL_MODE_SAMPLED) {
        printf("sampling:      one sample per %s allocated on average; %llu samples;\n"
               "               the figures below are estimates\n",
               human_bytes(a, sizeof a, (double)in->sample_rate),
               (unsigned long long)t->allocations);
        printf("allocations:   ~%.0f (~%s)\n", t->est_allocations,
               human_bytes(a, sizeof a, t->est_bytes));
        printf("frees:         ~%.0f\n", t->est_frees);
        printf("peak live:     ~%s at %.3f s\n",
               human_bytes(a, sizeof a, t->est_peak_live_bytes),
               (double)t->est_peak_time_us / 1e6);
        printf("live at end:   ~%s\n", human_bytes(b, sizeof b, t->est_live_bytes));
        goto rest;
    }
    printf("allocations:   %llu (%s)\n", (unsigned long long)t->allocations,
           human_bytes(a, sizeof a, (double)t->bytes_allocated));
    printf("frees:         %llu", (unsigned long long)t->frees);
    if (t->unmatched_frees)
        printf(" (+%llu of blocks from before the trace)",
               (unsigned long long)t->unmatched_frees);
    printf("\npeak live:     %s at %.3f s\n",
           human_bytes(a, sizeof a, (double)t->peak_live_bytes),
           (double)t->peak_time_us / 1e6);
    printf("live at end:   %s in %llu blocks\n",
           human_bytes(b, sizeof b, (double)t->live_bytes),
           (unsigned long long)t->live_blocks);
rest:
    if (t->peak_rss)
        printf("peak RSS:      %s\n", human_bytes(a, sizeof a, (double)t->peak_rss));
    printf("unique stacks: %u (%u frames in their tree), modules: %u\n",
           t->unique_stacks,
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
    struct mtl_totals t;
    int rc = mtl_totals_compute(r, &t);
    int bad = cli_finish_trace(r, path, rc);
    if (!bad) {
        if (json)
            print_json(r, &t);
        else
            print_text(r, &t);
    }
    mtl_reader_close(r);
    return bad;
}
