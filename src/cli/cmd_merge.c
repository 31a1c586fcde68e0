/*
 * cmd_merge.c: `memtally merge A B ... -o OUT [--force]` and `memtally
 * merge --tree TRACE... -o OUT`: several traces as one (trace/merge.h),
 * which every command, the viewer and every export read.  The output is
 * written aside and renamed into place once whole.  After --tree, the
 * combined peak and what each process held then.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/analyses.h"
#include "cli/analysis.h"
#include "cli/cli.h"
#include "common/tracefile.h"
#include "memtally/errors.h"
#include "render/render.h"
#include "trace/merge.h"

static const char usage[] =
    "usage: memtally merge [--force] TRACE TRACE... -o OUT\n"
    "       memtally merge --tree TRACE... -o OUT\n"
    "\n"
    "Several traces as one, which every command, the viewer and every export\n"
    "read.  Stacks are unified by module and offset (runs load code at\n"
    "different addresses); each input's threads stay its own, named after it.\n"
    "\n"
    "  (runs)        traces of one program, one after the other on the merged\n"
    "                clock, threads named \"NAME (run K)\"; traces of different\n"
    "                programs are refused\n"
    "  --force       merge runs of different programs all the same\n"
    "  --tree        a process tree (record --follow-fork, --follow-exec: one\n"
    "                trace named brings its numbered siblings): every process on one\n"
    "                clock by when it started, threads named \"NAME (pid P)\",\n"
    "                and the combined peak with what each process held then\n"
    "  -o, --output OUT\n"
    "                the merged trace (replaced if it exists)\n";

struct merge_args {
    const char **paths;
    char *sibling_names;    /* the paths add_siblings made */
    size_t n;
    const char *out;
    int force, tree;
};

/* A tree named by its first trace: the numbered traces beside it that
 * record --follow-fork and --follow-exec wrote (PATH.1, PATH.2, ...). */
static int add_siblings(struct merge_args *m)
{
    const char *first = m->paths[0];
    size_t len = strlen(first) + 16, count = 0;
    char *p = malloc(len);
    if (!p) {
        cli_error("merge: out of memory");
        return -1;
    }
    for (;; count++) {
        snprintf(p, len, "%s.%zu", first, count + 1);
        if (access(p, F_OK) != 0)
            break;
    }
    free(p);
    const char **all = calloc(1 + count, sizeof *all);
    char *names = malloc((1 + count) * len);
    if (!all || !names) {
        free(all);
        free(names);
        cli_error("merge: out of memory");
        return -1;
    }
    all[0] = first;
    for (size_t k = 1; k <= count; k++) {
        snprintf(names + k * len, len, "%s.%zu", first, k);
        all[k] = names + k * len;
    }
    free(m->paths);
    m->paths = all;
    m->sibling_names = names;
    m->n = 1 + count;
    return 0;
}

static int parse(struct merge_args *m, int argc, char **argv)
{
    if (!(m->paths = calloc((size_t)argc, sizeof *m->paths))) {
        cli_error("merge: out of memory");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(usage, stdout);
            return -1;
        } else if (!strcmp(s, "--force")) {
            m->force = 1;
        } else if (!strcmp(s, "--tree")) {
            m->tree = 1;
        } else if (!strcmp(s, "-o") || !strcmp(s, "--output")) {
            if (++i >= argc || !*argv[i]) {
                cli_error("merge: %s needs a file", s);
                return 1;
            }
            m->out = argv[i];
        } else if (!strncmp(s, "--output=", 9) && s[9]) {
            m->out = s + 9;
        } else if (s[0] == '-' && s[1]) {
            cli_error("merge: unknown option %s (see memtally merge --help)", s);
            return 1;
        } else {
            m->paths[m->n++] = s;
        }
    }
    if (!m->out) {
        cli_error("merge: -o OUT is needed (where the merged trace goes)");
        return 1;
    }
    if (m->tree && m->n == 1 && add_siblings(m) < 0)
        return 1;
    if (m->n < (m->tree ? 1u : 2u)) {
        cli_error(m->tree ? "merge: --tree needs a trace" : "merge: needs two traces or more");
        return 1;
    }
    /* OUT must not be an input: it is replaced. */
    struct stat so, si;
    if (stat(m->out, &so) == 0)
        for (size_t k = 0; k < m->n; k++)
            if (stat(m->paths[k], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
                cli_error("merge: the output %s is one of the traces to merge", m->out);
                return 1;
            }
    return 0;
}

/* Why the merge failed, in one line (after "memtally: merge: "). */
static void say_failure(const struct mtl_merge_failure *w, const char *const *paths,
                        const char *out)
{
    const char *a = paths[0], *b = paths[w->input];
    switch (w->why) {
    case MTL_MERGE_NO_INPUT:
        cli_error("merge: no traces to merge");
        break;
    case MTL_MERGE_TOO_MANY:
        cli_error("merge: at most %u traces at once", MTL_MERGE_MAX_INPUTS);
        break;
    case MTL_MERGE_UNREADABLE:
        cli_error("merge: cannot read %s: %s", b, mtl_strerror(w->code));
        break;
    case MTL_MERGE_MODES:
        cli_error("merge: %s is a %s trace and %s a %s one: they cannot be merged", a,
                  w->sampled[0] ? "sampled" : "full", b, w->sampled[1] ? "sampled" : "full");
        break;
    case MTL_MERGE_RATES:
        cli_error("merge: %s is sampled every %llu bytes and %s every %llu: they cannot be "
                  "merged", a, (unsigned long long)w->rate[0], b,
                  (unsigned long long)w->rate[1]);
        break;
    case MTL_MERGE_PROGRAMS:
        cli_error("merge: %s is a trace of %s%s%s and %s of %s%s%s: not one program "
                  "(--force merges them anyway)", a, w->program[0], *w->build_id[0] ? " " : "",
                  w->build_id[0], b, w->program[1], *w->build_id[1] ? " " : "", w->build_id[1]);
        break;
    case MTL_MERGE_DAMAGED:
        cli_error("merge: %s is damaged: a record refers to a stack it never defined", b);
        break;
    case MTL_MERGE_WRITE:
        cli_error("merge: cannot write %s: %s", out, strerror(w->code));
        break;
    case MTL_MERGE_NOMEM:
        cli_error("merge: out of memory");
        break;
    }
}

static int fd_sink(void *ctx, const void *p, size_t n)
{
    return mtl_write_all(*(int *)ctx, p, n);
}

/* The combined peak of a merged process tree, and each process's part
 * (its threads' blocks live then). */
static int show_tree_peak(const char *path, const struct mtl_merge_stats *st, size_t n)
{
    struct analysis a = { .name = "merge", .path = path };
    struct mtl_engine *e = analysis_open(&a, path);
    if (!e)
        return 1;
    struct mtl_peak_options po = { .top = 5, .by_thread = 1 };
    struct mtl_peak p;
    int bad = analysis_done(&a, e, mtl_peak(e, &a.filter, &po, &p));
    if (!bad) {
        char size[32];
        if (!p.found)
            printf("no allocation: no combined peak\n");
        else
            printf("combined peak: %s at %.3f s, held by:\n",
                   mtl_human_bytes(size, sizeof size, p.peak_bytes), (double)p.peak_time_us / 1e6);
        double *held = calloc(n, sizeof *held);
        for (size_t i = 0; held && i < p.nthreads; i++)
            if (p.threads[i].index < st->threads)
                held[st->thread_input[p.threads[i].index]] += p.threads[i].bytes;
        for (size_t k = 0; held && p.found && k < n; k++)
            printf("  pid %-8u %-30s %12s (%.1f%%)\n", st->inputs[k].pid, st->inputs[k].program,
                   mtl_human_bytes(size, sizeof size, held[k]),
                   p.peak_bytes > 0 ? 100.0 * held[k] / p.peak_bytes : 0.0);
        free(held);
        mtl_peak_release(&p);
    }
    mtl_engine_close(e);
    return bad;
}

int cmd_merge(int argc, char **argv)
{
    struct merge_args m = { 0 };
    int rc = parse(&m, argc, argv);
    if (rc) {
        free(m.paths);
        free(m.sibling_names);
        return rc < 0 ? 0 : 2;
    }
    /* What made it, as its command line. */
    size_t len = 64 + strlen(m.out);
    for (size_t k = 0; k < m.n; k++)
        len += strlen(m.paths[k]) + 1;
    char *cmd = malloc(len), *tmp = malloc(strlen(m.out) + 32);
    struct mtl_merge_input_stats *in = calloc(m.n, sizeof *in);
    struct mtl_merge_stats st = { .inputs = in };
    static struct mtl_encoder enc; /* large: not on the stack */
    int bad = 1;
    if (!cmd || !tmp || !in || mtl_encoder_setup(&enc) < 0) {
        cli_error("merge: out of memory");
        goto out;
    }
    size_t used = (size_t)snprintf(cmd, len, "memtally merge%s%s", m.tree ? " --tree" : "",
                                   m.force ? " --force" : "");
    for (size_t k = 0; k < m.n; k++)
        used += (size_t)snprintf(cmd + used, len - used, " %s", m.paths[k]);
    snprintf(tmp, strlen(m.out) + 32, "%s.%d.tmp", m.out, (int)getpid());
    int fd = mtl_trace_create_new(tmp);
    if (fd < 0) {
        cli_error("merge: cannot write %s: %s", m.out, mtl_trace_create_error(fd));
        goto out;
    }
    struct mtl_merge_options o = { .tree = m.tree, .force = m.force, .command_line = cmd };
    struct mtl_merge_failure why;
    rc = mtl_merge(&enc, m.paths, m.n, &o, fd_sink, &fd, &st, &why);
    int closed = close(fd) == 0;
    if (rc == 0 && (!closed || rename(tmp, m.out) != 0)) {
        why.why = MTL_MERGE_WRITE;
        why.code = errno;
        rc = -1;
    }
    if (rc != 0) {
        unlink(tmp);
        say_failure(&why, m.paths, m.out);
        goto out;
    }
    printf("merged %zu traces into %s: %llu allocations, %u threads, %u modules, %.3f s\n", m.n,
           m.out, (unsigned long long)st.allocations, st.threads, st.modules,
           (double)st.duration_us / 1e6);
    for (size_t k = 0; k < m.n; k++) {
        if (m.tree)
            printf("  pid %-8u %s (%s), from %.3f s", in[k].pid, in[k].path, in[k].program,
                   (double)in[k].offset_us / 1e6);
        else
            printf("  run %-3zu %s (%s), from %.3f s", k + 1, in[k].path, in[k].program,
                   (double)in[k].offset_us / 1e6);
        printf(": %llu allocations%s\n", (unsigned long long)in[k].allocations,
               in[k].damaged     ? "; damaged: merged as far as it reads"
               : in[k].truncated ? "; cut short: merged as far as it goes"
                                 : "");
    }
    bad = m.tree ? show_tree_peak(m.out, &st, m.n) : 0;
out:
    free(st.thread_input);
    free(cmd);
    free(tmp);
    free(in);
    free(m.paths);
    free(m.sibling_names);
    return bad;
}
