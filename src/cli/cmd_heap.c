/*
 * cmd_heap.c: `memtally heap PID`: a running process's live heap, now.
 *
 * A process being recorded (memtally record, or mtl_start in it) is asked
 * for its trace so far (the control socket's dump, into a directory of our
 * own), and the analysis of what is live at its end is the heap: grouped
 * by site, type, thread or size, with the largest blocks, whose first
 * bytes are then read from the process (process_vm_readv: it is not
 * stopped, so a block freed since shows what is there now).
 *
 * A process that is not recorded gets what /proc tells without touching
 * it (its RSS, its brk heap and its anonymous mappings), and what glibc's
 * allocator holds, asked from inside: mallinfo2() called on one of its
 * threads, held a moment with ptrace as memtally attach holds it
 * (inject.c), then malloc_info() per arena, written into a memory stream
 * of the process and read back; and the chunks it has in use, walked from
 * outside (heapwalk.c): by size, and the largest with a peek at their bytes.
 */
#include <errno.h>
#include <malloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "cli/heapwalk.h"
#include "cli/inject.h"
#include "trace/defs.h"

static const char usage[] =
    "usage: memtally heap [options] PID\n"
    "\n"
    "The live heap of running process PID, now.  Recorded (memtally record, or\n"
    "mtl_start in it): its live blocks by site, type, thread or size, and its\n"
    "largest blocks with their age, stack and first bytes.  Not recorded: what\n"
    "/proc tells (RSS, the brk heap, anonymous mappings).\n"
    "\n"
    "  --by site|type|thread|size  how live blocks are grouped (default: site)\n"
    "  --peek BYTES               bytes shown of each largest block (default 32,\n"
    "                             at most 256; 0: none)\n"
    "  (--top N: rows, and largest blocks shown; default 10)\n";

struct heap_cli {
    struct mtl_heap_options o;
    size_t peek;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct heap_cli *h = ctx;
    static const char *const names[] = { "--by", "--peek" };
    size_t which;
    const char *val;
    int rc = option_value("heap", argc, argv, i, names, 2, &which, &val);
    if (rc <= 0)
        return rc;
    if (which == 1)
        return parse_count("heap", "--peek", val, 0, &h->peek) < 0 ? -1
               : h->peek > MTL_HEAP_PEEK
                   ? (cli_error("heap: --peek takes at most %d bytes", MTL_HEAP_PEEK), -1)
                   : 1;
    static const char *const by[] = { "site", "type", "thread", "size" };
    for (size_t k = 0; k < 4; k++)
        if (!strcmp(val, by[k])) {
            h->o.by = (enum mtl_heap_by)k;
            return 1;
        }
    cli_error("heap: --by takes site, type, thread or size");
    return -1;
}

/* ---- a process not recorded: what /proc tells -------------------------------------- */

struct proc_memory {
    char program[PATH_MAX];
    uint64_t rss, brk_size, brk_rss, anon_rss;
    unsigned anon_maps;
    int have_mallinfo;
    struct mallinfo2 mi;
    /* Per arena, from malloc_info's XML: bytes from the system, free ones
     * and their chunks. */
    struct arena { unsigned nr; uint64_t system, free_bytes, free_chunks; } arena[64];
    unsigned narenas;
    double held_ms;
    char why[512];              /* why mallinfo2 could not be asked */
};

/* The arenas of malloc_info's XML ("<heap nr=...>" elements). */
static void parse_arenas(const char *xml, struct proc_memory *m)
{
    for (const char *h = strstr(xml, "<heap nr=\""); h && m->narenas < 64;
         h = strstr(h + 1, "<heap nr=\"")) {
        struct arena *a = &m->arena[m->narenas++];
        const char *end = strstr(h, "</heap>");
        memset(a, 0, sizeof *a);
        a->nr = (unsigned)strtoul(h + 10, NULL, 10);
        for (const char *t = strstr(h, "<total type=\""); t && (!end || t < end);
             t = strstr(t + 1, "<total type=\"")) {
            unsigned long long count = 0, size = 0;
            if (sscanf(t, "<total type=\"%*[a-z]\" count=\"%llu\" size=\"%llu\"", &count,
                       &size) == 2) {
                a->free_chunks += count;
                a->free_bytes += size;
            }
        }
        const char *sys = strstr(h, "<system type=\"current\" size=\"");
        if (sys && (!end || sys < end))
            a->system = strtoull(sys + 29, NULL, 10);
    }
}

/* malloc_info(0, f) into a memory stream of the process, read back and
 * freed there.  On the thread in's holds, clear of the allocator. */
static void ask_malloc_info(struct inject *in, struct proc_memory *m)
{
    uint64_t open_at = inject_libc_symbol(in, "open_memstream");
    uint64_t info_at = inject_libc_symbol(in, "malloc_info");
    uint64_t close_at = inject_libc_symbol(in, "fclose");
    uint64_t free_at = inject_libc_symbol(in, "free");
    uint64_t zero[2] = { 0, 0 }, out[2], fp = 0, ret;
    uint64_t cell = open_at && info_at && close_at && free_at ? inject_put(in, zero, sizeof zero)
                                                             : 0;
    if (!cell || inject_call(in, open_at, cell, cell + 8, &fp) < 0 || !fp)
        return;
    int ok = inject_call(in, info_at, 0, fp, &ret) == 0;
    if (inject_call(in, close_at, fp, 0, &ret) < 0 || inject_read(in, cell, out, sizeof out) < 0)
        return;
    char *xml = ok && out[0] && out[1] < (64u << 20) ? malloc(out[1] + 1) : NULL;
    if (xml && inject_read(in, out[0], xml, out[1]) == 0) {
        xml[out[1]] = '\0';
        parse_arenas(xml, m);
    }
    free(xml);
    if (out[0])
        inject_call(in, free_at, out[0], 0, &ret);
}

/* glibc's own figures, from mallinfo2() run in the process. */
static void ask_mallinfo(int pid, struct proc_memory *m)
{
    struct inject in;
    uint64_t fn = 0, buf = 0, ret;
    if (inject_stop(&in, (pid_t)pid) == 0 && !(fn = inject_libc_symbol(&in, "mallinfo2")))
        snprintf(in.why, sizeof in.why, "its libc has no mallinfo2");
    struct mallinfo2 zero = { 0 };
    if (fn && (buf = inject_put(&in, &zero, sizeof zero)) != 0 &&
        inject_call(&in, fn, buf, 0, &ret) == 0 && inject_read(&in, buf, &m->mi, sizeof m->mi) == 0)
        m->have_mallinfo = 1; /* returned through the hidden pointer in rdi */
    inject_release(&in);
    m->held_ms = (double)in.stopped_total_ns / 1e6;
    if (!m->have_mallinfo)
        snprintf(m->why, sizeof m->why, "%s", in.why);
}

/* The arenas, after the walk: malloc_info allocates (and frees) in the
 * process, which the walk would count. */
static void ask_arenas(int pid, struct proc_memory *m)
{
    struct inject in;
    if (m->have_mallinfo && inject_stop(&in, (pid_t)pid) == 0)
        ask_malloc_info(&in, m);
    inject_release(&in);
    m->held_ms += (double)in.stopped_total_ns / 1e6;
}

static int read_proc(int pid, struct proc_memory *m)
{
    char path[64], line[1024];
    memset(m, 0, sizeof *m);
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, m->program, sizeof m->program - 1);
    m->program[n > 0 ? n : 0] = '\0';
    snprintf(path, sizeof path, "/proc/%d/smaps", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int kind = 0; /* of the current mapping: 1 brk heap, 2 anonymous */
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        unsigned long lo, hi;
        int off = 0;
        /* A mapping's line: "lo-hi perms offset dev inode [name]". */
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s%n", &lo, &hi, &off) == 2 && off) {
            char *s = line + off;
            s += strspn(s, " \t");
            s[strcspn(s, "\n")] = '\0';
            kind = !strcmp(s, "[heap]") ? 1 : *s == '\0' ? 2 : 0;
            m->anon_maps += kind == 2;
        } else if (sscanf(line, "Size: %llu kB", &v) == 1 && kind == 1) {
            m->brk_size += v * 1024;
        } else if (sscanf(line, "Rss: %llu kB", &v) == 1) {
            m->rss += v * 1024;
            if (kind == 1)
                m->brk_rss += v * 1024;
            else if (kind == 2)
                m->anon_rss += v * 1024;
        }
    }
    fclose(f);
    return 0;
}

static void hex_and_text(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%s%02x", i ? " " : "", p[i]);
    printf("  |");
    for (size_t i = 0; i < n; i++)
        putchar(p[i] >= 32 && p[i] < 127 ? p[i] : '.');
    printf("|");
}

static void json_bytes(const uint8_t *p, size_t n, int text)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        if (!text)
            printf("%s%02x", i ? " " : "", p[i]);
        else
            putchar(p[i] >= 32 && p[i] < 127 && p[i] != '"' && p[i] != '\\' ? p[i] : '.');
    }
    putchar('"');
}

static void print_walk(const struct analysis *a, const struct heap_walk *w)
{
    if (a->json) {
        printf(", \"chunks\": {\"count\": %llu, \"bytes\": %llu, \"brk_walked\": %s, "
               "\"thread_heaps\": %u, \"note\": \"%s\", \"sizes\": [",
               (unsigned long long)w->chunks, (unsigned long long)w->bytes,
               w->brk_walked ? "true" : "false", w->thread_heaps, w->note);
        for (unsigned k = 0, first = 1; k < HEAP_WALK_BUCKETS; k++)
            if (w->bucket[k].count) {
                printf("%s{\"min\": %llu, \"max\": %llu, \"chunks\": %llu, \"bytes\": %llu}",
                       first ? "" : ", ", 1ull << k, (2ull << k) - 1,
                       (unsigned long long)w->bucket[k].count,
                       (unsigned long long)w->bucket[k].bytes);
                first = 0;
            }
        printf("], \"largest\": [");
        for (size_t i = 0; i < w->nlargest; i++) {
            const struct walk_chunk *c = &w->largest[i];
            printf("%s{\"address\": \"0x%llx\", \"size\": %llu, \"mmapped\": %s, "
                   "\"peek_hex\": ", i ? ", " : "", (unsigned long long)c->addr,
                   (unsigned long long)c->size, c->mmapped ? "true" : "false");
            json_bytes(c->peek, c->npeek, 0);
            printf(", \"peek_text\": ");
            json_bytes(c->peek, c->npeek, 1);
            printf("}");
        }
        printf("]}");
        return;
    }
    char b[32];
    printf("chunks in use, walked from outside (the main arena, %u heap%s of other threads'\n"
           "arenas, blocks of their own mapping): %llu, %s%s%s\n",
           w->thread_heaps, w->thread_heaps == 1 ? "" : "s", (unsigned long long)w->chunks,
           mtl_human_bytes(b, sizeof b, (double)w->bytes), *w->note ? "; " : "", w->note);
    printf("  %-22s %10s %14s\n", "SIZE", "CHUNKS", "BYTES");
    for (unsigned k = 0; k < HEAP_WALK_BUCKETS; k++)
        if (w->bucket[k].count) {
            char range[48];
            snprintf(range, sizeof range, "%llu..%llu", 1ull << k, (2ull << k) - 1);
            printf("  %-22s %10llu %14llu\n", range, (unsigned long long)w->bucket[k].count,
                   (unsigned long long)w->bucket[k].bytes);
        }
    if (w->nlargest)
        printf("largest chunks in use:\n");
    for (size_t i = 0; i < w->nlargest; i++) {
        const struct walk_chunk *c = &w->largest[i];
        printf("  %s at 0x%llx%s\n    ", mtl_human_bytes(b, sizeof b, (double)c->size),
               (unsigned long long)c->addr, c->mmapped ? ", a mapping of its own" : "");
        hex_and_text(c->peek, c->npeek);
        putchar('\n');
    }
}

static int unrecorded(const struct analysis *a, int pid, size_t top, size_t peek)
{
    struct proc_memory m;
    if (read_proc(pid, &m) < 0) {
        cli_error("heap: cannot read /proc/%d/smaps: %s (a process of another user needs "
                  "root)", pid, strerror(errno));
        return 1;
    }
    ask_mallinfo(pid, &m);
    const struct mallinfo2 *mi = &m.mi;
    static struct heap_walk w;
    int walked = heap_walk((pid_t)pid, top ? top : 10, &w) == 0;
    if (walked)
        heap_walk_peek((pid_t)pid, &w, peek);
    ask_arenas(pid, &m);
    if (a->json) {
        printf("{\"pid\": %d, \"program\": \"%s\", \"recorded\": false, \"rss_bytes\": %llu, "
               "\"brk_heap_bytes\": %llu, \"brk_heap_rss\": %llu, \"anon_rss_bytes\": %llu, "
               "\"anon_mappings\": %u",
               pid, m.program, (unsigned long long)m.rss, (unsigned long long)m.brk_size,
               (unsigned long long)m.brk_rss, (unsigned long long)m.anon_rss, m.anon_maps);
        if (m.have_mallinfo)
            printf(", \"malloc\": {\"in_use_bytes\": %zu, \"free_bytes\": %zu, "
                   "\"arena_bytes\": %zu, \"mmapped_bytes\": %zu, \"mmapped_blocks\": %zu, "
                   "\"free_chunks\": %zu, \"fastbin_free_bytes\": %zu, \"top_free_bytes\": "
                   "%zu, \"held_ms\": %.2f}",
                   mi->uordblks + mi->hblkhd, mi->fordblks, mi->arena, mi->hblkhd, mi->hblks,
                   mi->ordblks, mi->fsmblks, mi->keepcost, m.held_ms);
        printf(", \"arenas\": [");
        for (unsigned i = 0; i < m.narenas; i++)
            printf("%s{\"nr\": %u, \"system_bytes\": %llu, \"free_bytes\": %llu, "
                   "\"free_chunks\": %llu}", i ? ", " : "", m.arena[i].nr,
                   (unsigned long long)m.arena[i].system,
                   (unsigned long long)m.arena[i].free_bytes,
                   (unsigned long long)m.arena[i].free_chunks);
        printf("]");
        if (walked)
            print_walk(a, &w);
        printf("}\n");
        return 0;
    }
    char r[32], bs[32], br[32], an[32];
    printf("pid %d (%s) is not recorded by memtally; what /proc tells of its memory:\n"
           "  resident:             %s\n"
           "  brk heap ([heap]):    %s mapped, %s resident\n"
           "  anonymous mappings:   %u, %s resident (malloc's large blocks and arenas "
           "among them)\n",
           pid, *m.program ? m.program : "?", mtl_human_bytes(r, sizeof r, (double)m.rss),
           mtl_human_bytes(bs, sizeof bs, (double)m.brk_size),
           mtl_human_bytes(br, sizeof br, (double)m.brk_rss), m.anon_maps,
           mtl_human_bytes(an, sizeof an, (double)m.anon_rss));
    if (m.have_mallinfo) {
        char u[32], f[32], ar[32], mm[32];
        double held = (double)(mi->arena + mi->hblkhd);
        printf("glibc's malloc, asked inside the process (mallinfo2, malloc_info; one thread held "
           "%.1f ms):\n"
               "  in use:               %s (%zu blocks of their own mapping, %s)\n"
               "  held free:            %s in %zu free chunks (%.0f%% of the %s its arenas "
               "hold)\n",
               m.held_ms, mtl_human_bytes(u, sizeof u, (double)(mi->uordblks + mi->hblkhd)),
               mi->hblks, mtl_human_bytes(mm, sizeof mm, (double)mi->hblkhd),
               mtl_human_bytes(f, sizeof f, (double)mi->fordblks), mi->ordblks,
               held > 0 ? 100.0 * (double)mi->fordblks / (double)mi->arena : 0,
               mtl_human_bytes(ar, sizeof ar, (double)mi->arena));
        for (unsigned i = 0; i < m.narenas; i++)
            printf("  arena %u:%*s%s from the system, %s free in %llu chunks\n", m.arena[i].nr,
                   m.arena[i].nr < 10 ? 14 : 13, "",
                   mtl_human_bytes(u, sizeof u, (double)m.arena[i].system),
                   mtl_human_bytes(f, sizeof f, (double)m.arena[i].free_bytes),
                   (unsigned long long)m.arena[i].free_chunks);
    } else {
        printf("glibc's malloc could not be asked: %s\n", m.why);
    }
    if (walked)
        print_walk(a, &w);
    printf("Its live blocks by site, type and thread, their stacks and its largest blocks "
           "need it\nrecorded (memtally record, or memtally attach %d).\n", pid);
    return 0;
}

/* ---- a recorded process ------------------------------------------------------------ */

/* The first bytes of each largest block, read from the process now. */
static void peek_blocks(int pid, struct mtl_heap_snapshot *h, size_t peek)
{
    for (size_t i = 0; i < h->nlargest; i++) {
        struct mtl_live_block *x = &h->largest[i];
        size_t n = peek < x->size ? peek : (size_t)x->size;
        if (!n)
            continue;
        struct iovec local = { x->peek, n }, remote = { (void *)(uintptr_t)x->ptr, n };
        ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (got < 0)
            x->peek_errno = errno;
        else
            x->npeek = (size_t)got;
    }
}

static int recorded(struct analysis *a, struct heap_cli *h, int pid, const char *trace)
{
    struct mtl_engine *e = analysis_open(a, trace);
    if (!e)
        return 1;
    struct mtl_heap_snapshot s;
    int bad = analysis_done(a, e, mtl_heap_snapshot(e, &a->filter, &h->o, &s));
    if (!bad) {
        /* Now on the trace's clock (its end is its latest event): ages are
         * to this moment. */
        struct timeval tv;
        gettimeofday(&tv, NULL);
        uint64_t now = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
        uint64_t start = mtl_engine_defs(e)->info.start_unix_us;
        if (start && now > start && now - start > s.at_us)
            s.at_us = now - start;
        peek_blocks(pid, &s, h->peek);
        /* Beside the live bytes, what the process and its allocator say. */
        struct proc_memory m;
        if (read_proc(pid, &m) == 0) {
            s.have_rss = 1;
            s.rss = m.rss;
            ask_mallinfo(pid, &m);
        }
        if (s.have_rss && m.have_mallinfo) {
            s.have_malloc = 1;
            s.malloc_in_use = m.mi.uordblks + m.mi.hblkhd;
            s.malloc_free = m.mi.fordblks;
            s.malloc_arena = m.mi.arena;
            s.malloc_free_chunks = m.mi.ordblks;
        }
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_render_options ro = analysis_render_options(a);
        mtl_render_heap(&b, &s, pid, mtl_engine_defs(e)->info.program, &ro);
        mtl_heap_snapshot_release(&s);
        bad = analysis_output(a, &b);
    }
    mtl_engine_close(e);
    return bad;
}

int cmd_heap(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct heap_cli h = { .o = { .by = MTL_HEAP_BY_SITE }, .peek = 32 };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_TOP | CLI_STACKS, parse_opt, &h, &code))
        return code;
    h.o.top = a.top;
    h.o.stacks = a.stacks;
    a.eopt.index = MTL_INDEX_OFF; /* a snapshot, read once: no index left behind */
    char *end;
    long pid = strtol(a.path, &end, 10);
    if (*end || pid <= 0 || pid > INT32_MAX) {
        cli_error("heap: '%s' is not a process id", a.path);
        return 2;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%ld", pid);
    struct stat st;
    if (stat(proc, &st) < 0) {
        cli_error("heap: no process %ld", pid);
        return 1;
    }
    /* The trace so far, into a directory of our own. */
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], trace[PATH_MAX + 32], line[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/memtally-heap-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        cli_error("heap: cannot make a directory in %s: %s", tmp && *tmp ? tmp : "/tmp",
                  strerror(errno));
        return 1;
    }
    snprintf(trace, sizeof trace, "%s/heap.mtly", dir);
    snprintf(line, sizeof line, "dump %s", trace);
    char answer[PATH_MAX + 2048], err[PATH_MAX + 512];
    int rc = ctl_request((int)pid, line, answer, sizeof answer, err, sizeof err);
    int bad;
    if (rc == CTL_NO_SOCKET)
        bad = unrecorded(&a, (int)pid, h.o.top, h.peek);
    else if (rc != CTL_OK)
        bad = (cli_error("heap: %s", err), 1);
    else
        bad = recorded(&a, &h, (int)pid, trace);
    unlink(trace);
    rmdir(dir);
    return bad;
}
