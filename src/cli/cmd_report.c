/*
 * cmd_report.c: `memtally report`: the hprof table (docs/ANALYSIS.md):
 * FUNCTION, CALLS, BYTES, PER CALL, % per thread and in total.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/trace.h"

static const char usage[] =
    "usage: memtally report [options] TRACE\n"
    "\n"
    "Who allocates, how often, how much, and how much per call: a table per\n"
    "thread and one for all threads.\n"
    "\n"
    "  --total                    only the table of all threads\n"
    "  --sort KEY[:asc|:desc]     calls, bytes (default), per-call, percent, function\n"
    "  --top N                    the first N rows of each table\n"
    "  --inclusive                a function counts all that is allocated below it\n"
    "                             (default: only what it allocates itself)\n"
    "  --by function|file|module|thread\n"
    "  --json                     JSON (docs/ANALYSIS.md)\n";

struct report {
    int total_only, inclusive, descending;
    size_t top;
    enum mtl_sort sort;
    enum mtl_group by;
    struct mtl_stackagg agg;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct report *o = ctx;
    const char *s = argv[*i];
    const char *val = NULL;
    if (!strcmp(s, "--total")) {
        o->total_only = 1;
    } else if (!strcmp(s, "--inclusive")) {
        o->inclusive = 1;
    } else if (!strcmp(s, "--sort") || !strcmp(s, "--top") || !strcmp(s, "--by")) {
        if (*i + 1 >= argc) {
            cli_error("report: %s needs a value", s);
            return -1;
        }
        val = argv[++*i];
    } else if (!strncmp(s, "--sort=", 7) || !strncmp(s, "--top=", 6) ||
               !strncmp(s, "--by=", 5)) {
        val = strchr(s, '=') + 1;
    } else {
        return 0;
    }
    if (val && !strncmp(s, "--sort", 6)) {
        static const struct { const char *name; enum mtl_sort key; } keys[] = {
            { "calls", MTL_SORT_CALLS }, { "bytes", MTL_SORT_BYTES },
            { "per-call", MTL_SORT_PER_CALL }, { "percent", MTL_SORT_PERCENT },
            { "function", MTL_SORT_FUNCTION },
        };
        const char *colon = strchr(val, ':');
        size_t n = colon ? (size_t)(colon - val) : strlen(val);
        size_t k;
        for (k = 0; k < sizeof keys / sizeof *keys; k++)
            if (strlen(keys[k].name) == n && !strncmp(val, keys[k].name, n))
                break;
        if (k == sizeof keys / sizeof *keys ||
            (colon && strcmp(colon, ":asc") && strcmp(colon, ":desc"))) {
            cli_error("report: --sort takes calls, bytes, per-call, percent or "
                      "function, optionally with :asc or :desc");
            return -1;
        }
        o->sort = keys[k].key;
        o->descending = colon ? !strcmp(colon, ":desc") : o->sort != MTL_SORT_FUNCTION;
    } else if (val && !strncmp(s, "--top", 5)) {
        char *end;
        long n = strtol(val, &end, 10);
        if (!*val || *end || n < 1) {
            cli_error("report: --top takes a positive number");
            return -1;
        }
        o->top = (size_t)n;
    } else if (val) {
        if (!strcmp(val, "function"))
            o->by = MTL_BY_FUNCTION;
        else if (!strcmp(val, "file"))
            o->by = MTL_BY_FILE;
        else if (!strcmp(val, "module"))
            o->by = MTL_BY_MODULE;
        else if (!strcmp(val, "thread"))
            o->by = MTL_BY_THREAD;
        else {
            cli_error("report: --by takes function, file, module or thread");
            return -1;
        }
    }
    (*i)++;
    return 1;
}

static int add_block(void *arg, const struct mtl_block *b)
{
    struct report *o = arg;
    return mtl_stackagg_add(&o->agg, b->thread, b->stack, b->weight_count,
                            b->weight_bytes, 0) < 0 ? -1 : 0;
}

static const char *header_for(enum mtl_group by)
{
    switch (by) {
    case MTL_BY_FILE: return "FILE";
    case MTL_BY_MODULE: return "MODULE";
    case MTL_BY_THREAD: return "THREAD";
    default: return "FUNCTION";
    }
}

static void print_table(const struct analysis *a, const struct report *o,
                        const struct mtl_rows *rows)
{
    char buf[128];
    size_t n = o->top && o->top < rows->n ? o->top : rows->n;
    int width = 8;
    for (size_t i = 0; i < n; i++) {
        int len = (int)strlen(row_label(a->r, &rows->row[i], buf, sizeof buf));
        if (len > width)
            width = len;
    }
    if (width > 72)
        width = 72;
    printf("%-*s %10s %14s %10s %7s\n", width, header_for(o->by), "CALLS", "BYTES",
           "PER CALL", "%");
    for (size_t i = 0; i < n; i++) {
        const struct mtl_row *row = &rows->row[i];
        char name[1024];
        row_label(a->r, row, name, sizeof name);
        if ((int)strlen(name) > width)
            memcpy(name + width - 3, "...", 4);
        printf("%-*s %10.0f %14.0f %10.0f %7.2f\n", width, name, row->calls,
               row->bytes, row->calls > 0 ? row->bytes / row->calls : 0, row->percent);
    }
    if (n < rows->n)
        printf("%-*s\n", width, "...");
    printf("%-*s %10.0f %14.0f %10.0f %7.2f\n", width, "total", rows->calls,
           rows->bytes, rows->calls > 0 ? rows->bytes / rows->calls : 0,
           rows->bytes > 0 ? 100.0 : 0.0);
}

static void json_rows(const struct analysis *a, const struct report *o,
                      const struct mtl_rows *rows)
{
    size_t n = o->top && o->top < rows->n ? o->top : rows->n;
    fputs("[", stdout);
    for (size_t i = 0; i < n; i++) {
        const struct mtl_row *row = &rows->row[i];
        fputs(i ? ", {" : "{", stdout);
        if (o->by == MTL_BY_THREAD) {
            const struct mtl_thread *t = mtl_reader_thread(a->r, row->thread);
            printf("\"tid\": %u, \"index\": %u, \"name\": ", t ? t->tid : 0, row->thread);
            json_string(stdout, t ? t->name : "");
            fputs(", \"function\": null, \"file\": null, \"line\": null", stdout);
        } else {
            json_row_location(stdout, row);
            if (o->by == MTL_BY_MODULE || row->module) {
                fputs(", \"module\": ", stdout);
                json_string(stdout, row->module ? row->module : "");
            }
        }
        fputs(", \"calls\": ", stdout);
        json_number(stdout, row->calls);
        fputs(", \"bytes\": ", stdout);
        json_number(stdout, row->bytes);
        fputs(", \"per_call\": ", stdout);
        json_number(stdout, row->calls > 0 ? row->bytes / row->calls : 0);
        printf(", \"percent\": %.4f}", row->percent);
    }
    fputs("]", stdout);
}

/* One thread's table: a banner and the table, or its JSON object. */
static void show_thread(const struct analysis *a, const struct report *o,
                        uint32_t t, const struct mtl_rows *rows, double all_bytes,
                        int first)
{
    const struct mtl_thread *th = mtl_reader_thread(a->r, t);
    double percent = all_bytes > 0 ? 100.0 * rows->bytes / all_bytes : 0;
    if (!a->json) {
        char size[32];
        printf("== thread %u (%s), index %u: %.2f%% of all bytes, %s in %.0f calls ==\n",
               th ? th->tid : 0, th && *th->name ? th->name : "unnamed", t, percent,
               human_bytes(size, sizeof size, rows->bytes), rows->calls);
        print_table(a, o, rows);
        putchar('\n');
        return;
    }
    printf("%s{\"tid\": %u, \"index\": %u, \"name\": ", first ? "" : ", ",
           th ? th->tid : 0, t);
    json_string(stdout, th ? th->name : "");
    printf(", \"percent\": %.4f, \"bytes\": ", percent);
    json_number(stdout, rows->bytes);
    fputs(", \"calls\": ", stdout);
    json_number(stdout, rows->calls);
    fputs(", \"rows\": ", stdout);
    json_rows(a, o, rows);
    fputs("}", stdout);
}

static int fold(struct analysis *a, struct report *o, uint32_t thread,
                struct mtl_rows *rows)
{
    int rc = mtl_rows_fold(rows, &o->agg, a->v, a->r, o->by, o->inclusive, thread);
    if (rc < 0) {
        cli_error("report: %s", mtl_strerror(rc));
        return 1;
    }
    mtl_rows_sort(rows, a->r, o->sort, o->descending);
    return 0;
}

int cmd_report(int argc, char **argv)
{
    struct analysis a = {0};
    struct report o = { .descending = 1, .sort = MTL_SORT_BYTES };
    int code;
    if (analysis_parse(&a, argc, argv, usage, 1, parse_opt, &o, &code))
        return code;
    if (analysis_open(&a, NULL))
        return 1;
    o.agg.per_thread = !o.total_only; /* --total needs no thread split */
    struct mtl_scan_ops ops = { .block = add_block, .alloc_only = 1 };
    struct mtl_scan_result res;
    if (analysis_scan(&a, &ops, &o, &res)) {
        analysis_close(&a);
        return 1;
    }
    int bad = 0;
    struct mtl_rows total;
    if (fold(&a, &o, MTL_ALL_THREADS, &total)) {
        analysis_close(&a);
        return 1;
    }
    int per_thread = !o.total_only && o.by != MTL_BY_THREAD;
    uint32_t nthreads = mtl_reader_thread_count(a.r);
    /* JSON: the total, then the threads; text: the threads, then the total. */
    if (a.json) {
        fputs("{", stdout);
        json_estimated(&a);
        fputs("\"total\": {\"bytes\": ", stdout);
        json_number(stdout, total.bytes);
        fputs(", \"calls\": ", stdout);
        json_number(stdout, total.calls);
        fputs(", \"rows\": ", stdout);
        json_rows(&a, &o, &total);
        fputs("}, \"threads\": [", stdout);
    }
    int first = 1;
    for (uint32_t t = 0; per_thread && t < nthreads && !bad; t++) {
        struct mtl_rows rows;
        if ((bad = fold(&a, &o, t, &rows)))
            break;
        if (rows.calls > 0) {
            show_thread(&a, &o, t, &rows, total.bytes, first);
            first = 0;
        }
        mtl_rows_release(&rows);
    }
    if (!bad && a.json) {
        fputs("]}\n", stdout);
    } else if (!bad) {
        if (per_thread)
            printf("== all threads ==\n");
        print_table(&a, &o, &total);
    }
    mtl_rows_release(&total);
    mtl_stackagg_release(&o.agg);
    analysis_close(&a);
    return bad;
}
