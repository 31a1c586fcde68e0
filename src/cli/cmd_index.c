/*
 * cmd_index.c: `memtally index TRACE`: builds the trace's index now (or
 * finds it), and says where it is.  Every analysis builds it when it first
 * needs it; this is for doing that ahead of time, and for seeing it.
 */
#include <stdio.h>
#include <time.h>

#include "analyze/index.h"
#include "cli/analysis.h"
#include "cli/cli.h"
#include "common/json.h"
#include "memtally/errors.h"

static const char usage[] =
    "usage: memtally index [options] TRACE\n"
    "\n"
    "Builds the trace's index, which the analyses use to answer any filter\n"
    "without reading the trace again, and says where it is.  It is kept in\n"
    "MEMTALLY_INDEX_DIR, else $XDG_CACHE_HOME/memtally, else\n"
    "~/.cache/memtally (at most MEMTALLY_INDEX_MAX bytes of them, 8G by\n"
    "default; the least recently used go first).\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int cmd_index(int argc, char **argv)
{
    struct analysis a = { 0 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_WHOLE_TRACE, NULL, NULL, &code))
        return code;
    if (a.eopt.index == MTL_INDEX_OFF) {
        cli_error("index: indexes are off (--no-index or MEMTALLY_INDEX=off)");
        return 2;
    }
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    const char *path;
    uint64_t size;
    double start = now();
    int rc = mtl_engine_index(e, &path, &size);
    double took = now() - start;
    int bad = analysis_done(&a, e, rc);
    if (!bad) {
        struct mtl_totals t;
        mtl_engine_totals(e, &t);
        struct mtl_buf b = MTL_BUF_INIT;
        char human[32];
        if (a.json) {
            struct mtl_json j;
            mtl_json_init(&j, &b);
            mtl_json_begin_object(&j);
            mtl_json_kv_string(&j, "trace", a.path);
            mtl_json_kv_string(&j, "index", *path ? path : NULL);
            mtl_json_kv_uint(&j, "bytes", size);
            mtl_json_kv_uint(&j, "events", t.events);
            mtl_json_kv_uint(&j, "allocations", t.allocations);
            mtl_json_kv_fixed(&j, "seconds", took, 3);
            mtl_json_end(&j);
            mtl_buf_addc(&b, '\n');
        } else if (*path) {
            mtl_buf_addf(&b, "%s: index %s (%s, %llu allocations), ready in %.3f s\n", a.path,
                         path, mtl_human_bytes(human, sizeof human, (double)size),
                         (unsigned long long)t.allocations, took);
        } else {
            mtl_buf_addf(&b, "%s: index built in %.3f s (%s) but not kept: the cache "
                             "directory cannot be written\n",
                         a.path, took, mtl_human_bytes(human, sizeof human, (double)size));
        }
        bad = analysis_output(&a, &b);
    }
    mtl_engine_close(e);
    return bad;
}
