/*
 * sites.c: an example analysis on the public reader and symbolizer
 * (include/memtally/trace.h and memtally/symbols.h): the places in the
 * code that allocated the most bytes, each with its function, file and
 * line, and the functions it was inlined into.
 *
 *   sites [-n N] [--sysroot DIR] [--debug-dir DIR]... TRACE
 *
 * Build: cc -Iinclude sites.c build/libmemtally-trace.a -lzstd -ldw -lelf
 * -lstdc++ -lm (`make` builds it as build/examples/sites).
 *
 * A site is the innermost frame of a stack, the call to malloc (or to
 * operator new: its own frame is skipped, as C++ programs allocate through
 * it), so one pass sums the allocations per stack, and the stacks are then
 * summed per site.  The symbolizer finds a module's files when a frame in
 * it is first resolved and caches every address it resolved.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtally/symbols.h"
#include "memtally/trace.h"

struct site {
    uint32_t module;
    uint64_t addr;
    double bytes, calls;
};

static int by_address(const void *a, const void *b)
{
    const struct site *x = a, *y = b;
    if (x->module != y->module)
        return x->module < y->module ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_bytes(const void *a, const void *b)
{
    const struct site *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

static void warn(const char *message, void *arg)
{
    fprintf(arg, "sites: %s\n", message);
}

/* The site of a stack: its innermost native frame that is not in operator
 * new.  Returns 1, or 0 when it has none. */
static int site_of(const struct mtl_reader *r, struct mtl_symbolizer *s,
                   uint32_t stack, struct site *out)
{
    struct mtl_frame fr[8];
    int n = mtl_reader_stack(r, stack, fr, 8);
    for (int i = 0; i < n && i < 8; i++) {
        const struct mtl_symbol *e;
        if (fr[i].kind != MTL_FRAME_NATIVE)
            return 0;
        int k = mtl_symbolizer_resolve(s, fr[i].module, fr[i].addr, &e);
        const char *fn = k > 0 ? e[k - 1].function : NULL;
        if (fn && !strncmp(fn, "operator new", 12))
            continue;
        out->module = fr[i].module;
        out->addr = fr[i].addr;
        return 1;
    }
    return 0;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "sites: %s: %s\n", what, mtl_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *dirs[16];
    struct mtl_symbolizer_options opt = { .debug_dirs = dirs };
    long top = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            top = atol(argv[++i]);
        else if (!strcmp(argv[i], "--sysroot") && i + 1 < argc)
            opt.sysroot = argv[++i];
        else if (!strcmp(argv[i], "--debug-dir") && i + 1 < argc && opt.ndebug_dirs < 16)
            dirs[opt.ndebug_dirs++] = argv[++i];
        else if (!path && argv[i][0] != '-')
            path = argv[i];
        else
            path = NULL, argc = 0; /* usage */
    }
    if (!path || top < 1) {
        fprintf(stderr, "usage: sites [-n N] [--sysroot DIR] [--debug-dir DIR]... TRACE\n");
        return 2;
    }

    /* Bytes and calls per stack (weighted: sampled traces give estimates). */
    struct mtl_reader *r;
    int rc = mtl_reader_open(&r, path);
    if (rc < 0)
        return fail(path, rc);
    mtl_reader_skip_pointers(r, 1);
    double *bytes = NULL, *calls = NULL;
    uint32_t cap = 0;
    struct mtl_event ev;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        if (ev.type != MTL_EV_ALLOC)
            continue;
        if (ev.stack >= cap) {
            uint32_t n = cap ? cap : 1024;
            while (n <= ev.stack)
                n *= 2;
            bytes = realloc(bytes, n * sizeof *bytes);
            calls = realloc(calls, n * sizeof *calls);
            if (!bytes || !calls)
                return fail(path, MTL_ENOMEM);
            memset(bytes + cap, 0, (n - cap) * sizeof *bytes);
            memset(calls + cap, 0, (n - cap) * sizeof *calls);
            cap = n;
        }
        bytes[ev.stack] += ev.weight_bytes;
        calls[ev.stack] += ev.weight_count;
    }
    if (rc < 0)
        return fail(path, rc);

    /* Per site, sorted by address to add up the stacks that share one,
     * then by bytes. */
    struct mtl_symbolizer *s;
    if ((rc = mtl_symbolizer_open(&s, r, &opt)) < 0)
        return fail("symbols", rc);
    struct site *sites = calloc(cap ? cap : 1, sizeof *sites);
    size_t n = 0;
    if (!sites)
        return fail(path, MTL_ENOMEM);
    for (uint32_t id = 1; id < cap; id++) {
        if (calls[id] > 0 && site_of(r, s, id, &sites[n])) {
            sites[n].bytes = bytes[id];
            sites[n++].calls = calls[id];
        }
    }
    qsort(sites, n, sizeof *sites, by_address);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && by_address(&sites[m - 1], &sites[i]) == 0) {
            sites[m - 1].bytes += sites[i].bytes;
            sites[m - 1].calls += sites[i].calls;
        } else {
            sites[m++] = sites[i];
        }
    }
    qsort(sites, m, sizeof *sites, by_bytes);

    /* The top sites: the functions inlined at the address come first,
     * innermost first, then the function that holds them. */
    for (size_t i = 0; i < m && i < (size_t)top; i++) {
        const struct mtl_symbol *e;
        int k = mtl_symbolizer_resolve(s, sites[i].module, sites[i].addr, &e);
        if (k < 0)
            return fail("symbols", k);
        printf("%2zu. %.0f bytes in %.0f calls\n", i + 1, sites[i].bytes, sites[i].calls);
        for (int j = 0; j < k; j++) {
            char name[256];
            printf("      %s%s", j ? "inlined into " : "at ",
                   mtl_symbol_name(&e[j], name, sizeof name));
            if (e[j].file)
                printf(" (%s:%u)", e[j].file, e[j].line);
            printf("\n");
        }
    }
    mtl_symbolizer_warnings(s, warn, stderr);
    if (mtl_reader_info(r)->truncated)
        fprintf(stderr, "sites: %s was cut short; this is what it holds\n", path);
    mtl_symbolizer_close(s);
    mtl_reader_close(r);
    free(sites);
    free(bytes);
    free(calls);
    return 0;
}
