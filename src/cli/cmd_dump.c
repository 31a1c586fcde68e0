/*
 * cmd_dump.c: `memtally dump [--stacks] TRACE`: every event as one line of
 * text, for debugging and for people writing their own tools.  The first
 * column is microseconds since the start, the second the thread (tN).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "memtally/trace.h"

static void print_stack(struct mtl_reader *r, uint32_t stack)
{
    struct mtl_frame frames[256];
    int n = mtl_reader_stack(r, stack, frames, 256);
    for (int i = 0; i < n && i < 256; i++) {
        const struct mtl_frame *f = &frames[i];
        if (f->kind == MTL_FRAME_CUSTOM) {
            const char *s = mtl_reader_string(r, f->name);
            printf("    #%d %s\n", i, s ? s : "?");
            continue;
        }
        const struct mtl_module *m = mtl_reader_module(r, f->module);
        if (m) {
            const char *base = strrchr(m->path, '/');
            printf("    #%d 0x%" PRIx64 " %s+0x%" PRIx64 "\n", i, f->addr,
                   base ? base + 1 : m->path, f->addr - m->base);
        } else {
            printf("    #%d 0x%" PRIx64 "\n", i, f->addr);
        }
    }
}

int cmd_dump(int argc, char **argv)
{
    const char *path = NULL;
    int stacks = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stacks")) {
            stacks = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: memtally dump [--stacks] TRACE");
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("dump: unknown option '%s'", argv[i]);
            return 2;
        } else if (path) {
            cli_error("dump: one trace at a time");
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        cli_error("dump: no trace given (memtally dump [--stacks] TRACE)");
        return 2;
    }
    struct mtl_reader *r = cli_open_trace(path);
    if (!r)
        return 1;
    const struct mtl_trace_info *in = mtl_reader_info(r);
    printf("# memtally trace version %u: %s (pid %u), %s mode\n", in->version,
           in->command_line, in->pid,
           in->mode == MTL_MODE_SAMPLED ? "sampled" : "full");
    struct mtl_event ev;
    int rc;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        const struct mtl_thread *t;
        const struct mtl_module *m;
        switch (ev.type) {
        case MTL_EV_ALLOC:
            printf("%" PRIu64 " t%u alloc ptr=0x%" PRIx64 " size=%" PRIu64 " stack=%u\n",
                   ev.time_us, ev.thread, ev.ptr, ev.size, ev.stack);
            if (stacks)
                print_stack(r, ev.stack);
            break;
        case MTL_EV_FREE:
            printf("%" PRIu64 " t%u free ptr=0x%" PRIx64 "\n", ev.time_us,
                   ev.thread, ev.ptr);
            break;
        case MTL_EV_THREAD_START:
            t = mtl_reader_thread(r, ev.thread);
            printf("%" PRIu64 " t%u thread-start tid=%u\n", ev.time_us, ev.thread,
                   t ? t->tid : 0);
            break;
        case MTL_EV_THREAD_NAME:
            t = mtl_reader_thread(r, ev.thread);
            printf("%" PRIu64 " t%u thread-name name=%s\n", ev.time_us, ev.thread,
                   t ? t->name : "");
            break;
        case MTL_EV_THREAD_EXIT:
            printf("%" PRIu64 " t%u thread-exit\n", ev.time_us, ev.thread);
            break;
        case MTL_EV_MODULE_LOAD:
            m = mtl_reader_module(r, ev.module);
            printf("%" PRIu64 " - module-load m%u base=0x%" PRIx64 " path=%s build-id=",
                   ev.time_us, ev.module, m ? m->base : 0, m ? m->path : "?");
            for (size_t i = 0; m && i < m->build_id_size; i++)
                printf("%02x", m->build_id[i]);
            putchar('\n');
            break;
        case MTL_EV_MODULE_UNLOAD:
            printf("%" PRIu64 " - module-unload m%u\n", ev.time_us, ev.module);
            break;
        case MTL_EV_RSS:
            printf("%" PRIu64 " - rss bytes=%" PRIu64 "\n", ev.time_us, ev.size);
            break;
        }
    }
    fflush(stdout);
    int bad = cli_finish_trace(r, path, rc);
    mtl_reader_close(r);
    return bad;
}
