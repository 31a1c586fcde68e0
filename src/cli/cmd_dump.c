/*
 * cmd_dump.c: `memtally dump [--stacks] TRACE`: every event as one line of
 * text (or, with --json, one JSON object holding them all), for debugging
 * and for people writing their own tools.  The first column is
 * microseconds since the start, the second the thread (tN).  With
 * filters, allocations and frees are those of the blocks that pass; the
 * other events are all shown.
 *
 * Events are written as they are read, not gathered first: a trace can
 * hold billions.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "common/json.h"
#include "trace/defs.h"

static const char usage[] =
    "usage: memtally dump [options] TRACE\n"
    "\n"
    "Every event of the trace, one per line.\n"
    "\n"
    "  --stacks                   each allocation's stack (addresses and modules)\n";

struct dump {
    struct analysis *a;
    struct mtl_engine *e;
    int stacks, first;
    struct mtl_buf b;
    struct mtl_json j;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    (void)argc;
    struct dump *d = ctx;
    if (strcmp(argv[*i], "--stacks"))
        return 0;
    d->stacks = 1;
    (*i)++;
    return 1;
}

/* Writes out what was rendered so far. */
static int flush(struct dump *d)
{
    if (d->b.failed || fwrite(d->b.data, 1, d->b.len, stdout) != d->b.len)
        return -1;
    mtl_buf_reset(&d->b);
    return 0;
}

static void stack_text(struct dump *d, uint32_t stack)
{
    const struct mtl_defs *df = mtl_engine_defs(d->e);
    int k = 0;
    for (uint32_t id = stack; id != 0 && id < df->nnodes; id = df->parent[id], k++) {
        struct mtl_frame f = mtl_defs_frame(df, id);
        if (f.kind == MTL_FRAME_CUSTOM) {
            const char *s = mtl_defs_string(df, f.name);
            mtl_buf_addf(&d->b, "    #%d %s\n", k, s ? s : "?");
            continue;
        }
        const struct mtl_module *m = mtl_defs_module(df, f.module);
        if (m) {
            const char *base = strrchr(m->path, '/');
            mtl_buf_addf(&d->b, "    #%d 0x%" PRIx64 " %s+0x%" PRIx64 "\n", k, f.addr,
                         base ? base + 1 : m->path, f.addr - m->base);
        } else {
            mtl_buf_addf(&d->b, "    #%d 0x%" PRIx64 "\n", k, f.addr);
        }
    }
}

static void stack_json(struct dump *d, uint32_t stack)
{
    const struct mtl_defs *df = mtl_engine_defs(d->e);
    char addr[32];
    mtl_json_key(&d->j, "frames");
    mtl_json_begin_array(&d->j);
    for (uint32_t id = stack; id != 0 && id < df->nnodes; id = df->parent[id]) {
        struct mtl_frame f = mtl_defs_frame(df, id);
        mtl_json_begin_object(&d->j);
        if (f.kind == MTL_FRAME_CUSTOM) {
            mtl_json_kv_string(&d->j, "name", mtl_defs_string(df, f.name));
        } else {
            const struct mtl_module *m = mtl_defs_module(df, f.module);
            snprintf(addr, sizeof addr, "0x%" PRIx64, f.addr);
            mtl_json_kv_string(&d->j, "addr", addr);
            mtl_json_kv_string(&d->j, "module", m ? m->path : NULL);
            if (m)
                mtl_json_kv_uint(&d->j, "offset", f.addr - m->base);
        }
        mtl_json_end(&d->j);
    }
    mtl_json_end(&d->j);
}

static void event_json(struct dump *d, const struct mtl_event *ev)
{
    static const char *const names[] = { "", "alloc", "free", "thread-start",
                                         "thread-name", "thread-exit", "module-load",
                                         "module-unload", "rss", "tag", "gc-heap",
                                         "calls" };
    const struct mtl_defs *df = mtl_engine_defs(d->e);
    char ptr[32];
    struct mtl_json *j = &d->j;
    mtl_json_begin_object(j);
    mtl_json_kv_uint(j, "time_us", ev->time_us);
    mtl_json_kv_string(j, "type", names[ev->type]);
    switch (ev->type) {
    case MTL_EV_ALLOC:
    case MTL_EV_FREE:
        mtl_json_kv_uint(j, "thread", ev->thread);
        snprintf(ptr, sizeof ptr, "0x%" PRIx64, ev->ptr);
        mtl_json_kv_string(j, "ptr", ptr);
        if (ev->heap == MTL_HEAP_GC)
            mtl_json_kv_string(j, "heap", "gc");
        if (ev->type == MTL_EV_ALLOC) {
            mtl_json_kv_uint(j, "size", ev->size);
            mtl_json_kv_uint(j, "stack", ev->stack);
            if (d->stacks)
                stack_json(d, ev->stack);
        }
        break;
    case MTL_EV_THREAD_START:
    case MTL_EV_THREAD_NAME:
    case MTL_EV_THREAD_EXIT: {
        const struct mtl_thread *t = mtl_defs_thread(df, ev->thread);
        mtl_json_kv_uint(j, "thread", ev->thread);
        if (ev->type == MTL_EV_THREAD_START)
            mtl_json_kv_uint(j, "tid", t ? t->tid : 0);
        if (ev->type == MTL_EV_THREAD_NAME)
            mtl_json_kv_string(j, "name", t ? t->name : "");
        break;
    }
    case MTL_EV_MODULE_LOAD:
    case MTL_EV_MODULE_UNLOAD: {
        const struct mtl_module *m = mtl_defs_module(df, ev->module);
        mtl_json_kv_uint(j, "module", ev->module);
        if (ev->type == MTL_EV_MODULE_LOAD && m) {
            char hex[2 * 64 + 1] = "";
            for (size_t i = 0; i < m->build_id_size && i < 64; i++)
                snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
            snprintf(ptr, sizeof ptr, "0x%" PRIx64, m->base);
            mtl_json_kv_string(j, "base", ptr);
            mtl_json_kv_string(j, "path", m->path);
            mtl_json_kv_string(j, "build_id", hex);
        }
        break;
    }
    case MTL_EV_RSS:
    case MTL_EV_GC_HEAP:
        mtl_json_kv_uint(j, "bytes", ev->size);
        break;
    case MTL_EV_CALLS:
        mtl_json_kv_uint(j, "thread", ev->thread);
        mtl_json_kv_uint(j, "function_stack", ev->stack);
        mtl_json_kv_uint(j, "calls", ev->size);
        if (d->stacks)
            stack_json(d, ev->stack);
        break;
    case MTL_EV_TAG: {
        const char *name = mtl_defs_string(df, ev->tag);
        snprintf(ptr, sizeof ptr, "0x%" PRIx64, ev->ptr);
        mtl_json_kv_string(j, "ptr", ptr);
        mtl_json_kv_string(j, "tag", name ? name : "");
        break;
    }
    }
    mtl_json_end(j);
}

static void event_text(struct dump *d, const struct mtl_event *ev)
{
    const struct mtl_defs *df = mtl_engine_defs(d->e);
    struct mtl_buf *b = &d->b;
    const struct mtl_thread *t;
    const struct mtl_module *m;
    switch (ev->type) {
    case MTL_EV_ALLOC:
        mtl_buf_addf(b, "%" PRIu64 " t%u alloc ptr=0x%" PRIx64 " size=%" PRIu64 " stack=%u%s\n",
                     ev->time_us, ev->thread, ev->ptr, ev->size, ev->stack,
                     ev->heap == MTL_HEAP_GC ? " heap=gc" : "");
        if (d->stacks)
            stack_text(d, ev->stack);
        break;
    case MTL_EV_FREE:
        mtl_buf_addf(b, "%" PRIu64 " t%u free ptr=0x%" PRIx64 "%s\n", ev->time_us, ev->thread,
                     ev->ptr, ev->heap == MTL_HEAP_GC ? " heap=gc" : "");
        break;
    case MTL_EV_THREAD_START:
        t = mtl_defs_thread(df, ev->thread);
        mtl_buf_addf(b, "%" PRIu64 " t%u thread-start tid=%u\n", ev->time_us, ev->thread,
                     t ? t->tid : 0);
        break;
    case MTL_EV_THREAD_NAME:
        t = mtl_defs_thread(df, ev->thread);
        mtl_buf_addf(b, "%" PRIu64 " t%u thread-name name=%s\n", ev->time_us, ev->thread,
                     t ? t->name : "");
        break;
    case MTL_EV_THREAD_EXIT:
        mtl_buf_addf(b, "%" PRIu64 " t%u thread-exit\n", ev->time_us, ev->thread);
        break;
    case MTL_EV_MODULE_LOAD:
        m = mtl_defs_module(df, ev->module);
        mtl_buf_addf(b, "%" PRIu64 " - module-load m%u base=0x%" PRIx64 " path=%s build-id=",
                     ev->time_us, ev->module, m ? m->base : 0, m ? m->path : "?");
        for (size_t i = 0; m && i < m->build_id_size; i++)
            mtl_buf_addf(b, "%02x", m->build_id[i]);
        mtl_buf_addc(b, '\n');
        break;
    case MTL_EV_MODULE_UNLOAD:
        mtl_buf_addf(b, "%" PRIu64 " - module-unload m%u\n", ev->time_us, ev->module);
        break;
    case MTL_EV_TAG: {
        const char *name = mtl_defs_string(df, ev->tag);
        mtl_buf_addf(b, "%" PRIu64 " t%u tag ptr=0x%" PRIx64 " type=%s\n", ev->time_us,
                     ev->thread, ev->ptr, name ? name : "(none)");
        break;
    }
    case MTL_EV_RSS:
        mtl_buf_addf(b, "%" PRIu64 " - rss bytes=%" PRIu64 "\n", ev->time_us, ev->size);
        break;
    case MTL_EV_GC_HEAP:
        mtl_buf_addf(b, "%" PRIu64 " - gc-heap bytes=%" PRIu64 "\n", ev->time_us, ev->size);
        break;
    case MTL_EV_CALLS:
        mtl_buf_addf(b, "%" PRIu64 " t%u calls function-stack=%u calls=%" PRIu64 "\n",
                     ev->time_us, ev->thread, ev->stack, ev->size);
        if (d->stacks)
            stack_text(d, ev->stack);
        break;
    }
}

static int on_event(void *arg, const struct mtl_event *ev, const struct mtl_block *b,
                    int passes)
{
    struct dump *d = arg;
    /* The end of a block whose free was not recorded is not an event. */
    if (b && b->free_lost)
        return 0;
    if ((ev->type == MTL_EV_ALLOC || ev->type == MTL_EV_FREE) && !passes)
        return 0;
    if (d->a->json)
        event_json(d, ev);
    else
        event_text(d, ev);
    return d->b.len > 65536 ? flush(d) : 0;
}

int cmd_dump(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct dump d = { .a = &a, .b = MTL_BUF_INIT };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 0, parse_opt, &d, &code))
        return code;
    if (!a.eopt.heaps)
        a.eopt.heaps = MTL_HEAPS_ALL; /* every record, unless one heap is asked */
    if (!(d.e = analysis_open(&a, a.path)))
        return 1;
    const struct mtl_trace_info *in = &mtl_engine_defs(d.e)->info;
    mtl_json_init(&d.j, &d.b);
    if (a.json) {
        mtl_json_begin_object(&d.j);
        mtl_json_kv_uint(&d.j, "version", in->version);
        mtl_json_kv_string(&d.j, "command_line", in->command_line);
        mtl_json_kv_uint(&d.j, "pid", in->pid);
        mtl_json_kv_string(&d.j, "mode", in->mode == MTL_MODE_SAMPLED ? "sampled" : "full");
        mtl_json_key(&d.j, "events");
        mtl_json_begin_array(&d.j);
    } else {
        mtl_buf_addf(&d.b, "# memtally trace version %u: %s (pid %u), %s mode\n", in->version,
                     in->command_line, in->pid,
                     in->mode == MTL_MODE_SAMPLED ? "sampled" : "full");
    }
    struct mtl_scan_ops ops = { .event = on_event, .raw = 1 };
    int rc = mtl_engine_scan(d.e, &a.filter, &ops, &d, NULL);
    if (rc == MTL_ESTOPPED) {
        cli_error("dump: writing the output failed");
        rc = 0;
        code = 1;
    }
    int bad = analysis_done(&a, d.e, rc) || code;
    if (a.json && !bad) {
        mtl_json_end(&d.j);
        mtl_json_end(&d.j);
        mtl_buf_addc(&d.b, '\n');
    }
    /* Text: what was read before a corrupt block is shown too. */
    if (!bad || !a.json) {
        int out = analysis_output(&a, &d.b);
        bad = bad || out;
    } else {
        mtl_buf_release(&d.b);
    }
    mtl_engine_close(d.e);
    return bad;
}
