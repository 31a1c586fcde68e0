/* analysis.c: see analysis.h. */
#include "cli/analysis.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "memtally/errors.h"
#include "trace/defs.h"

static const char filter_usage[] =
    "filters (a block is analysed only if it passes all):\n"
    "  --allocated-between A,B   allocated in [A, B]\n"
    "  --live-at T               allocated by T and not freed by T\n"
    "  --live-between A,B        live at some time in [A, B]\n"
    "  --freed-between A,B       freed in [A, B]\n"
    "  --never-freed             still live at the end of the trace\n"
    "  --size MIN..MAX           size in the range (4K, 1.5M...)\n"
    "  --lifetime MIN..MAX       lifetime in the range (to the end if never freed)\n"
    "  --inside NAME             a frame of its stack matches NAME (a pattern)\n"
    "  --not-inside NAME         no frame of its stack matches NAME\n"
    "  --thread TID              allocated by thread TID (or tN: thread index N)\n"
    "  --type NAME               of type tag NAME (mtl_type; \"(untagged)\": none)\n"
    "times are from the start of the trace: 2.5s, 300ms, 150us (bare: seconds)\n"
    "\n"
    "frames:\n"
    "  --hide NAME               hide frames matching NAME (repeatable)\n"
    "  --wrapper NAME            an allocation wrapper: its blocks go to its caller\n"
    "  --keep-alloc-frames       show the allocator's frames and wrappers as sites\n"
    "  --sysroot DIR             binaries and libraries are under DIR\n"
    "  --debug-dir DIR           look for separate debug files in DIR too\n"
    "\n";

static const char symbols_usage[] =
    "symbols:\n"
    "  --sysroot DIR             binaries and libraries are under DIR\n"
    "  --debug-dir DIR           look for separate debug files in DIR too\n"
    "\n";

static const char output_usage[] =
    "output:\n"
    "  --json                    JSON (docs/ANALYSIS.md)\n";

static const char table_usage[] =
    "  --wide                    never cut long names (default: to fit COLUMNS, the\n"
    "                            terminal, or 128 columns)\n";

static const char index_usage[] =
    "  --heap HEAP               malloc (the default: with the program's own\n"
    "                            allocators) or gc (a garbage collector's)\n"
    "  --no-index                read the trace itself, not its index\n";

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

int parse_count(const char *cmd, const char *opt, const char *val, long min, size_t *out)
{
    char *end;
    errno = 0;
    long n = strtol(val, &end, 10);
    if (!*val || *end || errno || n < min) {
        if (min == 1)
            cli_error("%s: %s takes a positive number", cmd, opt);
        else
            cli_error("%s: %s takes a number of at least %ld", cmd, opt, min);
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

/* --sysroot DIR or --debug-dir DIR: 1, or -1 after saying why not. */
static int symbol_dir(struct analysis *a, const char *name, const char *val)
{
    struct stat st;
    const char *why = NULL;
    if (stat(val, &st) < 0 || !S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (!strcmp(name, "--sysroot"))
        a->eopt.symbols.sysroot = val;
    else if (a->eopt.symbols.ndebug_dirs == CLI_MAX_DEBUG_DIRS)
        why = "at most 16 of them";
    else
        a->debug_dirs[a->eopt.symbols.ndebug_dirs++] = val;
    if (!why)
        return 1;
    cli_error("%s: %s %s: %s", a->name, name, val, why);
    return -1;
}

/* The symbol options alone, for commands about the whole trace that name
 * frames all the same (view).  1: consumed; 0: not one; -1: malformed. */
static int symbol_option(struct analysis *a, int argc, char **argv, int *i)
{
    static const char *const names[] = { "--sysroot", "--debug-dir" };
    size_t k;
    const char *val;
    int rc = option_value(a->name, argc, argv, i, names, 2, &k, &val);
    return rc <= 0 ? rc : symbol_dir(a, names[k], val);
}

/* The filter and frame options.  1: consumed; 0: not one; -1: malformed
 * (said why). */
static int filter_option(struct analysis *a, int argc, char **argv, int *i)
{
    static const char *const names[] = {
        "--allocated-between", "--live-at", "--live-between", "--freed-between",
        "--size", "--lifetime", "--inside", "--not-inside", "--thread", "--hide",
        "--wrapper", "--sysroot", "--debug-dir", "--type",
    };
    struct mtl_filter *f = &a->filter;
    const char *opt = argv[*i];
    if (!strcmp(opt, "--never-freed")) {
        f->never_freed = 1;
        (*i)++;
        return 1;
    }
    if (!strcmp(opt, "--keep-alloc-frames")) {
        f->keep_alloc_frames = 1;
        (*i)++;
        return 1;
    }
    size_t k;
    const char *val;
    int rc = option_value(a->name, argc, argv, i, names, sizeof names / sizeof *names, &k, &val);
    if (rc <= 0)
        return rc;
    const char *name = names[k];
    if (k == 11 || k == 12)
        return symbol_dir(a, name, val);
    if (k == 13)
        name = "--type"; /* the filter's option "type" */
    const char *why;
    if (mtl_filter_option(f, name + 2, val, &why) > 0)
        return 1;
    char msg[512];
    snprintf(msg, sizeof msg, why, val);
    cli_error("%s: %s: %s", a->name, name, msg);
    return -1;
}

int analysis_parse(struct analysis *a, int argc, char **argv, const char *usage,
                   unsigned flags, analysis_opt_fn opt, void *ctx, int *exit_code)
{
    a->name = argv[0];
    a->eopt.symbols.debug_dirs = a->debug_dirs;
    const char *env = getenv("MEMTALLY_INDEX");
    if (env && !strcmp(env, "off"))
        a->eopt.index = MTL_INDEX_OFF;
    *exit_code = 2;
    for (int i = 1; i < argc;) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(usage, stdout);
            if (flags & CLI_TOP)
                fputs("  --top N                    the first N rows of each table\n", stdout);
            if (flags & CLI_STACKS)
                fputs("  --stacks N                 under each row, its N heaviest call paths\n",
                      stdout);
            putchar('\n');
            if (!(flags & CLI_WHOLE_TRACE))
                fputs(filter_usage, stdout);
            else if (flags & CLI_SYMBOLS)
                fputs(symbols_usage, stdout);
            fputs(output_usage, stdout);
            if (!(flags & CLI_WHOLE_TRACE))
                fputs(table_usage, stdout);
            fputs(index_usage, stdout);
            *exit_code = 0;
            return 1;
        }
        if (!strcmp(s, "--json") || !strcmp(s, "--no-index") ||
            (!(flags & CLI_WHOLE_TRACE) && !strcmp(s, "--wide"))) {
            if (s[2] == 'j')
                a->json = 1;
            else if (s[2] == 'w')
                a->wide = 1;
            else
                a->eopt.index = MTL_INDEX_OFF;
            i++;
            continue;
        }
        int rc = !(flags & CLI_WHOLE_TRACE) ? filter_option(a, argc, argv, &i)
                 : flags & CLI_SYMBOLS       ? symbol_option(a, argc, argv, &i)
                                             : 0;
        if (rc < 0)
            return 1;
        if (rc > 0)
            continue;
        static const char *const counts[] = { "--top", "--stacks" };
        static const char *const heap[] = { "--heap" };
        size_t which;
        const char *val;
        if ((rc = option_value(a->name, argc, argv, &i, heap, 1, &which, &val)) != 0) {
            if (rc < 0)
                return 1;
            if (strcmp(val, "malloc") && strcmp(val, "gc")) {
                cli_error("%s: --heap: '%s' is not a heap (malloc or gc)", a->name, val);
                return 1;
            }
            a->eopt.heaps = val[0] == 'g' ? MTL_HEAPS_GC : MTL_HEAPS_MALLOC;
            continue;
        }
        for (size_t c = 0; c < 2; c++) {
            if (!(flags & (c == 0 ? CLI_TOP : CLI_STACKS)))
                continue;
            rc = option_value(a->name, argc, argv, &i, counts + c, 1, &which, &val);
            if (rc < 0 ||
                (rc > 0 && parse_count(a->name, counts[c], val, 1, c ? &a->stacks : &a->top) < 0))
                return 1;
            if (rc > 0)
                break;
        }
        if (rc > 0)
            continue;
        if (opt) {
            rc = opt(ctx, argc, argv, &i);
            if (rc < 0)
                return 1;
            if (rc > 0)
                continue;
        }
        if (s[0] == '-' && s[1]) {
            cli_error("%s: unknown option '%s' (see memtally %s --help)", a->name, s,
                      a->name);
            return 1;
        }
        if (!a->path)
            a->path = s;
        else if ((flags & CLI_TWO_TRACES) && !a->path2)
            a->path2 = s;
        else {
            cli_error("%s: unexpected argument '%s'", a->name, s);
            return 1;
        }
        i++;
    }
    if (!a->path || ((flags & CLI_TWO_TRACES) && !a->path2)) {
        cli_error("%s: %s (see memtally %s --help)", a->name,
                  (flags & CLI_TWO_TRACES) ? "two traces needed" : "no trace given", a->name);
        return 1;
    }
    *exit_code = 0;
    return 0;
}

static void show_progress(void *arg, const char *what, double done)
{
    struct analysis *a = arg;
    if (done >= 1) {
        if (a->progress_shown)
            fputs("\r\033[K", stderr);
        a->progress_shown = 0;
        return;
    }
    fprintf(stderr, "\rmemtally: %s... %3.0f%%", what, done * 100);
    a->progress_shown = 1;
}

static void warn(void *arg, const char *message)
{
    (void)arg;
    cli_error("%s", message);
}

struct mtl_engine *analysis_open(struct analysis *a, const char *path)
{
    struct mtl_source src = { .kind = MTL_SOURCE_PATH, .path = path };
    a->eopt.progress = isatty(2) ? show_progress : NULL;
    a->eopt.warn = warn;
    a->eopt.arg = a;
    struct mtl_engine *e;
    int rc = mtl_engine_open(&e, &src, &a->eopt);
    if (rc < 0) {
        cli_error("%s: %s", path, mtl_strerror(rc));
        return NULL;
    }
    return e;
}

int analysis_done(struct analysis *a, struct mtl_engine *e, int rc)
{
    if (a->progress_shown)
        show_progress(a, "", 1);
    const char *name = mtl_engine_name(e);
    if (rc == MTL_ECORRUPT) {
        cli_error("%s: %s after block %llu", name, mtl_strerror(rc),
                  (unsigned long long)mtl_engine_blocks(e));
        return 1;
    }
    if (rc < 0) {
        cli_error("%s: %s: %s", a->name, name, mtl_strerror(rc));
        return 1;
    }
    /* A thread the trace never had is a mistake, not an empty answer. */
    const struct mtl_defs *d = mtl_engine_defs(e);
    if (a->filter.thread_set && d) {
        struct mtl_buf known = MTL_BUF_INIT;
        int found = 0;
        for (uint32_t i = 0; i < d->nthreads && !found; i++) {
            found = a->filter.thread == (a->filter.thread_is_index ? i : d->threads[i].tid);
            if (i < 8)
                mtl_buf_addf(&known, "%s%s%u", i ? ", " : "",
                             a->filter.thread_is_index ? "t" : "", a->filter.thread_is_index
                                                                       ? i : d->threads[i].tid);
        }
        if (!found)
            cli_error("%s: --thread %s%u: no such thread in %s (its threads: %s%s)", a->name,
                      a->filter.thread_is_index ? "t" : "", a->filter.thread, name,
                      known.data ? known.data : "none", d->nthreads > 8 ? ", ..." : "");
        mtl_buf_release(&known);
        if (!found)
            return 1;
    }
    if (mtl_engine_truncated(e) && !a->noted) {
        cli_error("%s: trace truncated after block %llu; what it holds up to there was read",
                  name, (unsigned long long)mtl_engine_blocks(e));
        a->noted = 1;
    }
    return 0;
}

/* Names are cut to what fits beside the figures in COLUMNS, or on the
 * terminal, or else in 128 columns; --wide (and COLUMNS=0) keeps them
 * whole. */
static size_t name_width(const struct analysis *a)
{
    if (a->wide || a->json)
        return 0;
    size_t cols = 128;
    const char *env = getenv("COLUMNS");
    struct winsize ws;
    if (env && *env)
        cols = (size_t)strtoul(env, NULL, 10);
    else if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        cols = ws.ws_col;
    if (!cols)
        return 0;
    /* The figures take 12 + 14 + 10 + 7 columns and their spaces. */
    return cols > 60 ? cols - 48 : 12;
}

struct mtl_render_options analysis_render_options(const struct analysis *a)
{
    struct mtl_render_options ro = { .json = a->json, .width = name_width(a),
                                     .stacks = a->stacks, .trace = a->path };
    return ro;
}

int analysis_output(struct analysis *a, struct mtl_buf *b)
{
    int bad = 0;
    if (b->failed) {
        cli_error("%s: out of memory", a->name);
        bad = 1;
    } else if (b->len && fwrite(b->data, 1, b->len, stdout) != b->len) {
        cli_error("%s: writing the output: %s", a->name, strerror(errno));
        bad = 1;
    }
    if (fflush(stdout) != 0 && !bad) {
        cli_error("%s: writing the output: %s", a->name, strerror(errno));
        bad = 1;
    }
    mtl_buf_release(b);
    return bad;
}
