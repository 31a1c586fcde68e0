/* info.c: `memtally info`'s text and JSON: what a trace holds, with the
 * totals of valgrind's "total heap usage" line and the live heap's peak. */
#include <math.h>
#include <stdio.h>

#include "render/render.h"

static const char *mode_name(enum mtl_mode m)
{
    return m == MTL_MODE_SAMPLED ? "sampled" : "full";
}

/* A step of time as record --time-resolution takes it: "10ms", "250us". */
static const char *human_us(char *out, size_t cap, uint64_t us)
{
    if (us % 1000000 == 0)
        snprintf(out, cap, "%llus", (unsigned long long)(us / 1000000));
    else if (us % 1000 == 0)
        snprintf(out, cap, "%llums", (unsigned long long)(us / 1000));
    else
        snprintf(out, cap, "%lluus", (unsigned long long)us);
    return out;
}

static void info_json(struct mtl_buf *b, const struct mtl_info *in)
{
    const struct mtl_trace_info *tr = &in->trace;
    const struct mtl_totals *t = &in->totals;
    /* Sampled: the totals are estimates, each sample weighted by the
     * inverse of its chance (docs/FORMAT.md); "samples" are the records. */
    int est = tr->mode == MTL_MODE_SAMPLED;
    struct mtl_json j;
    mtl_json_init(&j, b);
    mtl_json_begin_object(&j);
    mtl_json_kv_string(&j, "program", tr->program);
    mtl_json_kv_string(&j, "command_line", tr->command_line);
    mtl_json_kv_uint(&j, "pid", tr->pid);
    mtl_json_kv_uint(&j, "ppid", tr->ppid);
    mtl_json_kv_string(&j, "mode", mode_name(tr->mode));
    if (est) {
        mtl_json_kv_uint(&j, "sample_rate", tr->sample_rate);
        mtl_json_kv_uint(&j, "samples", t->allocations);
        mtl_json_kv_bool(&j, "estimated", 1);
    }
    mtl_json_kv_uint(&j, "start_unix_us", tr->start_unix_us);
    mtl_json_kv_uint(&j, "duration_us", tr->duration_us);
    mtl_json_kv_uint(&j, "time_resolution_us", tr->time_resolution_us ? tr->time_resolution_us : 1);
    mtl_json_kv_uint(&j, "threads", t->threads_allocating);
    mtl_json_kv_uint(&j, "threads_seen", in->threads_seen);
    mtl_json_kv_uint(&j, "allocations", est ? (uint64_t)llround(t->est_allocations) : t->allocations);
    mtl_json_kv_uint(&j, "frees", est ? (uint64_t)llround(t->est_frees) : t->frees);
    mtl_json_kv_uint(&j, "unmatched_frees", t->unmatched_frees);
    mtl_json_kv_uint(&j, "bytes_allocated", est ? (uint64_t)llround(t->est_bytes) : t->bytes_allocated);
    mtl_json_kv_uint(&j, "peak_live_bytes",
                     est ? (uint64_t)llround(t->est_peak_live_bytes) : t->peak_live_bytes);
    mtl_json_kv_uint(&j, "peak_time_us", est ? t->est_peak_time_us : t->peak_time_us);
    mtl_json_kv_uint(&j, "live_bytes_at_end",
                     est ? (uint64_t)llround(t->est_live_bytes) : t->live_bytes);
    mtl_json_kv_uint(&j, "live_blocks_at_end", t->live_blocks);
    mtl_json_kv_uint(&j, "peak_rss_bytes", t->peak_rss);
    mtl_json_kv_uint(&j, "unique_stacks", t->unique_stacks);
    mtl_json_kv_uint(&j, "tagged_allocations", t->tagged_allocations);
    mtl_json_kv_string(&j, "heap", in->heap == MTL_HEAP_GC ? "gc" : "malloc");
    mtl_json_kv_bool(&j, "attached", tr->attached);
    mtl_json_kv_uint(&j, "other_heap_allocations", t->other_heap_allocations);
    if (in->heap == MTL_HEAP_GC) {
        mtl_json_kv_uint(&j, "collections", t->collections);
        mtl_json_kv_uint(&j, "gc_heap_bytes", t->gc_heap_bytes);
        mtl_json_kv_uint(&j, "gc_heap_peak_bytes", t->gc_heap_peak);
    }
    mtl_json_kv_uint(&j, "modules", in->modules);
    mtl_json_kv_uint(&j, "max_depth", tr->max_depth);
    mtl_json_kv_uint(&j, "events", t->events);
    mtl_json_kv_uint(&j, "blocks", in->blocks);
    mtl_json_kv_bool(&j, "complete", tr->complete);
    mtl_json_kv_bool(&j, "truncated", tr->truncated);
    mtl_json_end(&j);
    mtl_buf_addc(b, '\n');
}

void mtl_render_info(struct mtl_buf *b, const struct mtl_info *in,
                     const struct mtl_render_options *ro)
{
    if (ro->json) {
        info_json(b, in);
        return;
    }
    const struct mtl_trace_info *tr = &in->trace;
    const struct mtl_totals *t = &in->totals;
    char x[32], y[32];
    mtl_buf_addf(b, "program:       %s\n", tr->program);
    mtl_buf_addf(b, "command line:  %s\n", tr->command_line);
    mtl_buf_addf(b, "pid:           %u (parent %u)\n", tr->pid, tr->ppid);
    mtl_buf_addf(b, "mode:          %s, stacks up to %u frames\n", mode_name(tr->mode),
                 tr->max_depth);
    if (in->heap == MTL_HEAP_GC)
        mtl_buf_addf(b, "heap:          the garbage collector's (the figures below are its\n"
                        "               blocks alone, without malloc's)\n");
    if (tr->attached)
        mtl_buf_addf(b, "attached:      to the running program (memtally attach): what it held\n"
                        "               before is unknown, its frees are not counted\n");
    mtl_buf_addf(b, "duration:      %.3f s\n", (double)tr->duration_us / 1e6);
    if (tr->time_resolution_us > 1)
        mtl_buf_addf(b, "times:         in steps of %s (record --time-resolution)\n",
                     human_us(x, sizeof x, tr->time_resolution_us));
    mtl_buf_addf(b, "threads:       %u allocated (%u seen)\n", t->threads_allocating,
                 in->threads_seen);
    if (tr->mode == MTL_MODE_SAMPLED) {
        mtl_buf_addf(b, "sampling:      one sample per %s allocated on average; %llu samples;\n"
                        "               the figures below are estimates\n",
                     mtl_human_bytes(x, sizeof x, (double)tr->sample_rate),
                     (unsigned long long)t->allocations);
        mtl_buf_addf(b, "allocations:   ~%.0f (~%s)\n", t->est_allocations,
                     mtl_human_bytes(x, sizeof x, t->est_bytes));
        mtl_buf_addf(b, "frees:         ~%.0f\n", t->est_frees);
        mtl_buf_addf(b, "peak live:     ~%s at %.3f s\n",
                     mtl_human_bytes(x, sizeof x, t->est_peak_live_bytes),
                     (double)t->est_peak_time_us / 1e6);
        mtl_buf_addf(b, "live at end:   ~%s\n", mtl_human_bytes(y, sizeof y, t->est_live_bytes));
    } else {
        mtl_buf_addf(b, "allocations:   %llu (%s)\n", (unsigned long long)t->allocations,
                     mtl_human_bytes(x, sizeof x, (double)t->bytes_allocated));
        mtl_buf_addf(b, "frees:         %llu", (unsigned long long)t->frees);
        if (t->unmatched_frees)
            mtl_buf_addf(b, " (+%llu of blocks from before the trace)",
                         (unsigned long long)t->unmatched_frees);
        mtl_buf_addf(b, "\npeak live:     %s at %.3f s\n",
                     mtl_human_bytes(x, sizeof x, (double)t->peak_live_bytes),
                     (double)t->peak_time_us / 1e6);
        mtl_buf_addf(b, "live at end:   %s in %llu blocks\n",
                     mtl_human_bytes(y, sizeof y, (double)t->live_bytes),
                     (unsigned long long)t->live_blocks);
    }
    if (t->peak_rss)
        mtl_buf_addf(b, "peak RSS:      %s\n", mtl_human_bytes(x, sizeof x, (double)t->peak_rss));
    if (in->heap == MTL_HEAP_GC)
        mtl_buf_addf(b, "collections:   %llu; the collector's heap %s after the last, %s at most\n",
                     (unsigned long long)t->collections,
                     mtl_human_bytes(x, sizeof x, (double)t->gc_heap_bytes),
                     mtl_human_bytes(y, sizeof y, (double)t->gc_heap_peak));
    mtl_buf_addf(b, "unique stacks: %u (%u frames in their tree), modules: %u\n",
                 t->unique_stacks, in->stack_nodes, in->modules);
    if (t->tagged_allocations)
        mtl_buf_addf(b, "type tags:     on %llu allocations (report --by type)\n",
                     (unsigned long long)t->tagged_allocations);
    if (t->other_heap_allocations)
        mtl_buf_addf(b, "%s %llu allocations, not counted above (see --heap %s)\n",
                     in->heap == MTL_HEAP_GC ? "malloc's heap:" : "GC heap:      ",
                     (unsigned long long)t->other_heap_allocations,
                     in->heap == MTL_HEAP_GC ? "malloc" : "gc");
    mtl_buf_addf(b, "trace:         %llu events in %llu blocks, %s\n",
                 (unsigned long long)t->events, (unsigned long long)in->blocks,
                 tr->truncated ? "truncated" : "complete");
}
