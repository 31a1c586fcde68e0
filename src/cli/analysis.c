/* analysis.c: see analysis.h. */
#include "cli/analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "memtally/trace.h"

static const char symbols_usage[] =
    "symbols (docs/ANALYSIS.md):\n"
    "  --sysroot DIR             look for the recorded files under DIR\n"
    "  --debug-dir DIR           look for separate debug files in DIR too (repeatable)\n";

/* --sysroot DIR, --debug-dir DIR: 1 if argv[*i] was one (advancing *i),
 * 0 if not, -1 after saying what is wrong. */
static int symbols_option(struct analysis *a, int argc, char **argv, int *i)
{
    static const char *const names[] = { "--sysroot", "--debug-dir" };
    const char *val;
    size_t which;
    int rc = option_value(a->name, argc, argv, i, names, 2, &which, &val);
    if (rc <= 0)
        return rc;
    struct stat st;
    if (stat(val, &st) < 0 || !S_ISDIR(st.st_mode)) {
        cli_error("%s: %s %s: not a directory", a->name, names[which], val);
        return -1;
    }
    if (which == 0) {
        a->sym.sysroot = val;
        return 1;
    }
    if (a->sym.ndebug_dirs == MTL_MAX_PATTERNS) {
        cli_error("%s: at most %d --debug-dir", a->name, MTL_MAX_PATTERNS);
        return -1;
    }
    a->debug_dirs[a->sym.ndebug_dirs++] = val;
    a->sym.debug_dirs = a->debug_dirs;
    return 1;
}

int analysis_parse(struct analysis *a, int argc, char **argv, const char *usage,
                   int ntraces, analysis_opt_fn opt, void *ctx, int *exit_code)
{
    char err[256];
    a->name = argv[0];
    for (int i = 1; i < argc;) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(usage, stdout);
            fputs(mtl_filter_usage, stdout);
            fputs(symbols_usage, stdout);
            *exit_code = 0;
            return 1;
        }
        if (!strcmp(s, "--json")) {
            a->json = 1;
            i++;
            continue;
        }
        int rc = symbols_option(a, argc, argv, &i);
        if (rc < 0) {
            *exit_code = 2;
            return 1;
        }
        if (rc > 0)
            continue;
        rc = mtl_filter_option(&a->filter, argc, argv, &i, err, sizeof err);
        if (rc < 0) {
            cli_error("%s: %s", a->name, err);
            *exit_code = 2;
            return 1;
        }
        if (rc > 0)
            continue;
        if (opt) {
            rc = opt(ctx, argc, argv, &i);
            if (rc < 0) {
                *exit_code = 2;
                return 1;
            }
            if (rc > 0)
                continue;
        }
        if (s[0] == '-' && s[1]) {
            cli_error("%s: unknown option '%s' (see memtally %s --help)", a->name, s,
                      a->name);
            *exit_code = 2;
            return 1;
        }
        if (!a->path)
            a->path = s;
        else if (ntraces == 2 && !a->path2)
            a->path2 = s;
        else {
            cli_error("%s: unexpected argument '%s'", a->name, s);
            *exit_code = 2;
            return 1;
        }
        i++;
    }
    if (!a->path || (ntraces == 2 && !a->path2)) {
        cli_error("%s: %s (see memtally %s --help)", a->name,
                  ntraces == 2 ? "two traces needed" : "no trace given", a->name);
        *exit_code = 2;
        return 1;
    }
    return 0;
}

static void warn_symbols(const char *message, void *arg)
{
    (void)arg;
    cli_error("%s", message);
}

int analysis_open(struct analysis *a, const char *path)
{
    a->r = cli_open_trace(path ? path : a->path);
    if (!a->r)
        return 1;
    int rc = mtl_view_open(&a->v, a->r, &a->filter, &a->sym, warn_symbols, NULL);
    if (rc < 0) {
        cli_error("%s: %s", a->name, mtl_strerror(rc));
        mtl_reader_close(a->r);
        a->r = NULL;
        return 1;
    }
    return 0;
}

struct progress_state {
    const struct mtl_scan_ops *inner;
    void *arg;
    int shown;
};

static void show_progress(void *arg, double done)
{
    struct progress_state *p = arg;
    fprintf(stderr, "\rmemtally: reading the trace... %3.0f%%", done * 100);
    p->shown = 1;
}

static int pass_block(void *arg, const struct mtl_block *b)
{
    struct progress_state *p = arg;
    return p->inner->block ? p->inner->block(p->arg, b) : 0;
}

static int pass_event(void *arg, const struct mtl_event *ev,
                      const struct mtl_block *b, int passes)
{
    struct progress_state *p = arg;
    return p->inner->event(p->arg, ev, b, passes);
}

int analysis_scan(struct analysis *a, const struct mtl_scan_ops *ops, void *arg,
                  struct mtl_scan_result *res)
{
    struct progress_state p = { ops, arg, 0 };
    struct mtl_scan_ops wrapped = {
        .block = pass_block,
        .event = ops->event ? pass_event : NULL,
        .progress = isatty(2) ? show_progress : NULL,
        .alloc_only = ops->alloc_only,
    };
    const char *path = a->path;
    int rc = mtl_scan(path, a->r, a->v, &a->filter, &wrapped, &p, res);
    if (p.shown)
        fprintf(stderr, "\r\033[K");
    if (rc == -1) {
        cli_error("%s: out of memory", a->name);
        return 1;
    }
    if (rc >= 0 && a->noted)
        return 0; /* a second pass: the notes were given */
    a->noted = 1;
    int bad = cli_finish_trace(a->r, path, rc);
    if (!bad && !a->json && analysis_estimated(a)) {
        char rate[32];
        printf("(a sampled trace, one sample per %s on average: calls and bytes are "
               "estimates)\n\n",
               human_bytes(rate, sizeof rate, (double)mtl_reader_info(a->r)->sample_rate));
    }
    return bad;
}

int analysis_rescan(struct analysis *a, const struct mtl_scan_ops *ops, void *arg,
                    struct mtl_scan_result *res)
{
    struct mtl_reader *r2 = cli_open_trace(a->path);
    if (!r2)
        return 1;
    struct mtl_reader *first = a->r;
    a->r = r2; /* events and threads from the new reader, stacks from the view */
    int rc = analysis_scan(a, ops, arg, res);
    a->r = first;
    mtl_reader_close(r2);
    return rc;
}

void analysis_close(struct analysis *a)
{
    mtl_view_close(a->v); /* prints the symbol warnings */
    mtl_reader_close(a->r);
    a->v = NULL;
    a->r = NULL;
}

void json_number(FILE *f, double v)
{
    if (v == floor(v) && fabs(v) < 9e15)
        fprintf(f, "%.0f", v);
    else if (fabs(v) >= 1e5)
        fprintf(f, "%.0f", v); /* an estimate: a whole number says enough */
    else
        fprintf(f, "%.6g", v);
}

void json_row_location(FILE *f, const struct mtl_row *row)
{
    fputs("\"function\": ", f);
    if (row->function)
        json_string(f, row->function);
    else
        fputs("null", f);
    fputs(", \"file\": ", f);
    if (row->file)
        json_string(f, row->file);
    else
        fputs("null", f);
    if (row->line)
        fprintf(f, ", \"line\": %u", row->line);
    else
        fputs(", \"line\": null", f);
}

void json_frame(FILE *f, const struct mtl_location *l)
{
    fputs("{\"function\": ", f);
    json_string(f, l->function);
    fputs(", \"file\": ", f);
    if (l->file)
        json_string(f, l->file);
    else
        fputs("null", f);
    if (l->line)
        fprintf(f, ", \"line\": %u", l->line);
    else
        fputs(", \"line\": null", f);
    fputs(", \"module\": ", f);
    json_string(f, l->module);
    fprintf(f, ", \"inlined\": %s}", l->inlined ? "true" : "false");
}


const char *row_label(const struct mtl_reader *r, const struct mtl_row *row,
                      char *buf, size_t cap)
{
    char tmp[64];
    const char *name = mtl_row_name(row, r, tmp, sizeof tmp);
    if (row->function && row->file) {
        const char *base = strrchr(row->file, '/');
        base = base ? base + 1 : row->file;
        if (row->line)
            snprintf(buf, cap, "%s (%s:%u)", name, base, row->line);
        else
            snprintf(buf, cap, "%s (%s)", name, base);
    } else {
        snprintf(buf, cap, "%s", name);
    }
    return buf;
}

void print_rows_table(const struct analysis *a, const struct mtl_rows *rows,
                      size_t top, const char *key_header, const char *calls_header,
                      int with_extra, const char *extra_header)
{
    char label[1024];
    size_t n = top && top < rows->n ? top : rows->n;
    int width = (int)strlen(key_header);
    for (size_t i = 0; i < n; i++) {
        int len = (int)strlen(row_label(a->r, &rows->row[i], label, sizeof label));
        if (len > width)
            width = len;
    }
    if (width > 72)
        width = 72;
    if (with_extra)
        printf("%-*s %12s %12s %14s %7s\n", width, key_header, extra_header,
               calls_header, "BYTES", "%");
    else
        printf("%-*s %12s %14s %7s\n", width, key_header, calls_header, "BYTES", "%");
    for (size_t i = 0; i < n; i++) {
        const struct mtl_row *row = &rows->row[i];
        row_label(a->r, row, label, sizeof label);
        if ((int)strlen(label) > width)
            memcpy(label + width - 3, "...", 4);
        if (with_extra)
            printf("%-*s %12.0f %12.0f %14.0f %7.2f\n", width, label, row->extra,
                   row->calls, row->bytes, row->percent);
        else
            printf("%-*s %12.0f %14.0f %7.2f\n", width, label, row->calls, row->bytes,
                   row->percent);
    }
    if (n < rows->n)
        printf("... %zu more\n", rows->n - n);
}

int option_value(const char *cmd, int argc, char **argv, int *i,
                 const char *const *names, size_t n, size_t *which, const char **val)
{
    const char *arg = argv[*i];
    for (size_t k = 0; k < n; k++) {
        size_t len = strlen(names[k]);
        if (strncmp(arg, names[k], len) != 0)
            continue;
        if (arg[len] == '=') {
            *val = arg + len + 1;
        } else if (arg[len] == '\0') {
            if (*i + 1 >= argc) {
                cli_error("%s: %s needs a value", cmd, names[k]);
                return -1;
            }
            *val = argv[++*i];
        } else {
            continue;
        }
        (*i)++;
        *which = k;
        return 1;
    }
    return 0;
}

int parse_top(const char *cmd, int argc, char **argv, int *i, size_t *top)
{
    static const char *const names[] = { "--top" };
    const char *val;
    size_t which;
    int rc = option_value(cmd, argc, argv, i, names, 1, &which, &val);
    if (rc <= 0)
        return rc;
    char *end;
    long n = strtol(val, &end, 10);
    if (!*val || *end || n < 1) {
        cli_error("%s: --top takes a positive number", cmd);
        return -1;
    }
    *top = (size_t)n;
    return 1;
}

int analysis_estimated(const struct analysis *a)
{
    return a->r && mtl_reader_info(a->r)->mode == MTL_MODE_SAMPLED;
}

void json_estimated(const struct analysis *a)
{
    if (analysis_estimated(a))
        printf("\"estimated\": true, \"sample_rate\": %llu, ",
               (unsigned long long)mtl_reader_info(a->r)->sample_rate);
}
