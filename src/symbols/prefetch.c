/*
 * prefetch.c: a symbolizer's files opened, and their symbol tables and
 * DWARF address ranges read, on a thread of their own (prefetch.h).
 *
 * Why: most of the symbolizing of a report is done once per file, not
 * per frame: finding and opening the file and its debug file, reading and
 * sorting its symbol table, reading its CU ranges.  On a cold report of
 * gcc's cc1 that took as long as reading the trace, after it; it needs
 * only the modules, which are known before the trace is read, so it can
 * run beside the reading on the second core.
 *
 * While the thread runs it owns the symbolizer: every public entry point
 * waits for it first (mtl__sym_prefetch_wait), and the symbolizer reads
 * the modules from the copies made here rather than from the caller's
 * get function, whose data the caller may be changing meanwhile.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/internal.h"
#include "symbols/prefetch.h"

struct mtl_sym_prefetch {
    pthread_t thread;
    const struct mtl_module *(*get)(void *arg, uint32_t index); /* the caller's */
    void *arg;
    struct mtl_module *copies;  /* by module index; path NULL: not copied */
    uint32_t ncopies;
    const uint32_t *modules;    /* the ones to open */
    size_t n;
};

static const struct mtl_module *copy_of(void *arg, uint32_t index)
{
    const struct mtl_sym_prefetch *p = arg;
    return index < p->ncopies && p->copies[index].path ? &p->copies[index] : NULL;
}

/* A deep copy of m into the arena: 0, or -1 when out of memory. */
static int copy_module(struct mtl_arena *a, struct mtl_module *to, const struct mtl_module *m)
{
    *to = *m;
    to->path = mtl_arena_strdup(a, m->path);
    to->build_id = m->build_id_size ? mtl_arena_memdup(a, m->build_id, m->build_id_size)
                                    : NULL;
    to->segments = m->nsegments ? mtl_arena_memdup(a, m->segments,
                                                   m->nsegments * sizeof *m->segments)
                                : NULL;
    if (!to->path || (m->build_id_size && !to->build_id) ||
        (m->nsegments && !to->segments)) {
        to->path = NULL;
        return -1;
    }
    return 0;
}

static void *prefetch_thread(void *arg)
{
    struct mtl_symbolizer *s = arg;
    const struct mtl_sym_prefetch *p = s->prefetch;
    for (size_t i = 0; i < p->n; i++) {
        struct mtl_symfile *f = mtl__sym_module_file(s, p->modules[i]);
        if (f) {
            mtl__symtab_load(f);
            mtl__dwarf_prepare(f);
        }
    }
    return NULL;
}

int mtl_symbolizer_prefetch(struct mtl_symbolizer *s, const uint32_t *modules, size_t n)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!s || s->prefetched || n == 0 || (s->use_debuginfod && urls && *urls))
        return 0;
    s->prefetched = 1;
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++)
        if (modules[i] != UINT32_MAX && modules[i] >= top)
            top = modules[i] + 1;
    struct mtl_sym_prefetch *p = mtl_arena_alloc(&s->arena, sizeof *p);
    struct mtl_module *copies = top ? mtl_arena_alloc(&s->arena, top * sizeof *copies) : NULL;
    uint32_t *list = mtl_arena_memdup(&s->arena, modules, n * sizeof *modules);
    if (!p || !copies || !list)
        return 0;
    memset(copies, 0, top * sizeof *copies);
    for (size_t i = 0; i < n; i++) {
        const struct mtl_module *m = modules[i] < top ? s->get(s->arg, modules[i]) : NULL;
        if (m && !copies[modules[i]].path && copy_module(&s->arena, &copies[modules[i]], m) < 0)
            return 0;
    }
    *p = (struct mtl_sym_prefetch){ .get = s->get, .arg = s->arg, .copies = copies,
                                    .ncopies = top, .modules = list, .n = n };
    s->prefetch = p;
    s->get = copy_of;
    s->arg = p;
    if (pthread_create(&p->thread, NULL, prefetch_thread, s) != 0) {
        s->get = p->get;
        s->arg = p->arg;
        s->prefetch = NULL;
        return 0;
    }
    return 1;
}

void mtl__sym_prefetch_wait(struct mtl_symbolizer *s)
{
    struct mtl_sym_prefetch *p = s->prefetch;
    if (!p)
        return;
    pthread_join(p->thread, NULL);
    s->get = p->get;
    s->arg = p->arg;
    s->prefetch = NULL;
}
