/*
 * profile.c: mtl_profile_call, hprof's profile(fun) for C: run one call
 * with every allocation recorded and hand back its table.
 *
 * The call is recorded like any other trace, into an anonymous memory
 * file (memfd), which is then read back with the trace reader and folded
 * per thread and per function by the analysis engine's own view and rows
 * (the same sites, the same frames passed over, as `memtally report`),
 * and printed by its table renderer.  Only the names differ: they come
 * from the running process itself (the symbol table of each module's
 * file, static functions too unless the file is stripped, else the
 * dynamic symbols, else module+0xOFFSET; C++ names demangled when
 * libstdc++ is loaded), because a profiled process should not have to
 * load libdw: so there is no file, line or inlined frame.
 *
 * What counts: allocations made by the calling thread (or the thread that
 * runs fn, when there is a timeout) and, with follow_threads, by threads
 * started while fn runs.
 */
#include "preload/control.h"
#include "preload/preload.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "analyze/rows.h"
#include "analyze/stackagg.h"
#include "analyze/view.h"
#include "common/arena.h"
#include "common/bitset.h"
#include "render/render.h"
#include "trace/defs.h"
#include "memtally.h"
#include "memtally/trace.h"

#define EXPORT __attribute__((visibility("default")))

/* --- names from the process itself ------------------------------------- */

struct fsym {
    uint64_t start, size;
    const char *name;
};

struct symfile {
    char *path;
    void *map;
    size_t map_size;
    struct fsym *syms;
    size_t n;
};

struct names {
    struct symfile *files;
    size_t nfiles;
    char *(*demangle)(const char *, char *, size_t *, int *);
    struct mtl_arena arena;     /* the names handed to the view */
    struct mtl_symbol out;         /* the last answer */
};

static int by_start(const void *a, const void *b)
{
    const struct fsym *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The function symbols of an ELF file: .symtab if it has one, else
 * .dynsym. */
static void load_symbols(struct symfile *f)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return;
    f->map = map;
    f->map_size = (size_t)st.st_size;
    const unsigned char *base = map;
    const Elf64_Ehdr *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > f->map_size)
        return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (int pass = 0; pass < 2 && !f->n; pass++) {
        uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
        for (int i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum)
                continue;
            const Elf64_Shdr *strs = &sh[sh[i].sh_link];
            if (sh[i].sh_offset + sh[i].sh_size > f->map_size ||
                strs->sh_offset + strs->sh_size > f->map_size)
                continue;
            const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
            size_t count = sh[i].sh_size / sizeof *sym;
            f->syms = calloc(count ? count : 1, sizeof *f->syms);
            if (!f->syms)
                return;
            for (size_t k = 0; k < count; k++) {
                if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_value ||
                    sym[k].st_name >= strs->sh_size)
                    continue;
                f->syms[f->n].start = sym[k].st_value;
                f->syms[f->n].size = sym[k].st_size;
                f->syms[f->n].name = (const char *)base + strs->sh_offset + sym[k].st_name;
                f->n++;
            }
            qsort(f->syms, f->n, sizeof *f->syms, by_start);
            break;
        }
    }
}

static struct symfile *file_of(struct names *nm, const char *path)
{
    for (size_t i = 0; i < nm->nfiles; i++)
        if (!strcmp(nm->files[i].path, path))
            return &nm->files[i];
    struct symfile *f = realloc(nm->files, (nm->nfiles + 1) * sizeof *f);
    if (!f)
        return NULL;
    nm->files = f;
    f = &nm->files[nm->nfiles++];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (f->path)
        load_symbols(f);
    return f;
}

/* The view's namer (analyze/view.h): the function holding a return
 * address, from this process's own modules.  One entry: no inlining is
 * known without DWARF, nor a file or line. */
static int resolve(void *arg, uint32_t module, uint64_t addr, const struct mtl_symbol **out)
{
    (void)module;
    struct names *nm = arg;
    struct mtl_symbol *e = &nm->out;
    Dl_info info;
    struct link_map *lm = NULL;
    uint64_t pc = addr - 1;
    memset(e, 0, sizeof *e);
    e->module = "";
    e->offset = addr;
    *out = e;
    if (!dladdr1((void *)(uintptr_t)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return 1;
    const char *path = info.dli_fname && *info.dli_fname ? info.dli_fname : "/proc/self/exe";
    if (lm->l_name && !*lm->l_name)
        path = "/proc/self/exe"; /* the main program */
    uint64_t off = pc - lm->l_addr;
    e->offset = off + 1;
    if (!(e->module = mtl_arena_strdup(&nm->arena, path)))
        return MTL_ENOMEM;
    const char *name = NULL;
    struct symfile *f = file_of(nm, path);
    if (f && f->n) {
        size_t lo = 0, hi = f->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (f->syms[mid].start <= off)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && off < f->syms[lo - 1].start + (f->syms[lo - 1].size ? f->syms[lo - 1].size : 1))
            name = f->syms[lo - 1].name;
    }
    if (!name)
        name = info.dli_sname;
    if (!name)
        return 1; /* unnamed: the view shows module+0xOFFSET */
    char *d = NULL;
    int status = -1;
    if (nm->demangle && name[0] == '_' && name[1] == 'Z')
        d = nm->demangle(name, NULL, NULL, &status);
    e->function = mtl_arena_strdup(&nm->arena, d && status == 0 ? d : name);
    free(d);
    return e->function ? 1 : MTL_ENOMEM;
}

static void release_names(struct names *nm)
{
    for (size_t i = 0; i < nm->nfiles; i++) {
        free(nm->files[i].path);
        free(nm->files[i].syms);
        if (nm->files[i].map)
            munmap(nm->files[i].map, nm->files[i].map_size);
    }
    free(nm->files);
    mtl_arena_release(&nm->arena);
}

/* --- running the call --------------------------------------------------- */

/* With a timeout, fn runs on a thread of its own, which may outlive the
 * call: its runner is on the heap, and left there if it does. */
struct runner {
    void (*fn)(void *);
    void *arg;
    atomic_int started;
    uint32_t thread;        /* the index of the thread that runs fn */
};

static void *run_fn(void *p)
{
    struct runner *r = p;
    mtl__thread_state(); /* take an index before fn allocates */
    r->thread = mtl__tls.index;
    atomic_store(&r->started, 1);
    r->fn(r->arg);
    return NULL;
}

/* --- folding the trace into tables -------------------------------------- */

/* One public table from the engine's rows: the rows and their names are
 * the result's own (one malloc'd block each). */
static int public_table(struct mtl_result_table *out, const struct mtl_rows *rows,
                        double all_bytes, uint32_t tid, const char *thread_name)
{
    struct mtl_result_row *pub = calloc(rows->n ? rows->n : 1, sizeof *pub);
    if (!pub)
        return -ENOMEM;
    out->rows = pub;
    for (size_t i = 0; i < rows->n; i++) {
        pub[i].function = strdup(rows->row[i].function);
        if (!pub[i].function)
            return -ENOMEM;
        pub[i].calls = (uint64_t)rows->row[i].calls;
        pub[i].bytes = (uint64_t)rows->row[i].bytes;
        pub[i].percent = rows->row[i].percent;
        out->nrows = i + 1;
    }
    out->calls = (uint64_t)rows->calls;
    out->bytes = (uint64_t)rows->bytes;
    out->percent = all_bytes > 0 ? 100.0 * rows->bytes / all_bytes : 0;
    out->tid = tid;
    out->thread_name = strdup(thread_name);
    return out->thread_name ? 0 : -ENOMEM;
}

static int fold_table(struct mtl_view *v, const struct mtl_defs *d,
                      const struct mtl_stackagg *agg, uint32_t thread, double all_bytes,
                      struct mtl_result_table *out)
{
    struct mtl_rows rows;
    int rc = mtl_rows_fold(&rows, agg, v, d, MTL_BY_FUNCTION, 0, thread);
    if (rc < 0)
        return -ENOMEM;
    mtl_rows_sort(&rows, MTL_SORT_BYTES, 1);
    const struct mtl_thread *t = thread == MTL_ALL_THREADS ? NULL : mtl_defs_thread(d, thread);
    rc = public_table(out, &rows, all_bytes, t ? t->tid : 0,
                      t ? t->name : thread == MTL_ALL_THREADS ? "all threads" : "");
    mtl_rows_release(&rows);
    return rc;
}

static int read_result(int fd, uint32_t main_thread, int follow,
                       uint32_t first_new_thread, struct mtl_result *res)
{
    struct mtl_reader *r;
    if (mtl_reader_open_fd(&r, fd) < 0)
        return -EIO;
    struct mtl_stackagg agg = MTL_STACKAGG_INIT(1);
    struct mtl_event ev;
    int rc;
    mtl_reader_skip_pointers(r, 1);
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        if (ev.type != MTL_EV_ALLOC)
            continue;
        if (ev.thread != main_thread && !(follow && ev.thread >= first_new_thread))
            continue;
        if (mtl_stackagg_add(&agg, ev.thread, ev.stack, 1, (double)ev.size, 0) < 0) {
            rc = -ENOMEM;
            break;
        }
    }
    if (rc < 0 && rc != -ENOMEM)
        rc = -EIO;
    struct mtl_defs defs;
    mtl__reader_defs(r, &defs);
    struct names nm = { .arena = MTL_ARENA_INIT };
    nm.demangle = (char *(*)(const char *, char *, size_t *, int *))
        dlsym(RTLD_DEFAULT, "__cxa_demangle");
    struct mtl_view_namer namer = { resolve, NULL, &nm };
    struct mtl_view *v = NULL;
    if (rc == 0 && mtl_view_open(&v, &defs, &namer, NULL) < 0)
        rc = -ENOMEM;
    double all_bytes = 0;
    mtl_stackagg_totals(&agg, NULL, &all_bytes, NULL);
    if (rc == 0)
        rc = fold_table(v, &defs, &agg, MTL_ALL_THREADS, all_bytes, &res->total);
    res->total.tid = 0;
    /* One table per thread that allocated, in the order of their indices. */
    struct mtl_bitset seen = MTL_BITSET_INIT;
    size_t nthreads = 0;
    for (size_t i = 0; rc == 0 && i < agg.n; i++)
        if (mtl_bitset_set(&seen, agg.e[i].thread) == 1)
            nthreads++;
    struct mtl_result_table *threads = NULL;
    if (rc == 0 && !(threads = calloc(nthreads ? nthreads : 1, sizeof *threads)))
        rc = -ENOMEM;
    res->threads = threads;
    for (uint32_t t = 0; rc == 0 && res->nthreads < nthreads; t++) {
        if (!mtl_bitset_test(&seen, t))
            continue;
        rc = fold_table(v, &defs, &agg, t, all_bytes, &threads[res->nthreads]);
        res->nthreads++;
    }
    mtl_bitset_release(&seen);
    mtl_view_close(v);
    release_names(&nm);
    mtl_stackagg_release(&agg);
    mtl_reader_close(r);
    return rc;
}

EXPORT int mtl_profile_call(void (*fn)(void *), void *arg,
                            const struct mtl_profile_options *opt,
                            struct mtl_result **result)
{
    if (!fn || !result)
        return -EINVAL;
    *result = NULL;
    mtl__hooks_first_use();
    struct mtl_result *res = calloc(1, sizeof *res);
    if (!res)
        return -ENOMEM;
    int fd = memfd_create("memtally-profile", MFD_CLOEXEC);
    if (fd < 0) {
        free(res);
        return -errno;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int rc = mtl__ctl_start(path, 0, opt ? opt->depth : 0);
    if (rc < 0) {
        close(fd);
        free(res);
        return rc;
    }
    uint32_t first_new = atomic_load(&mtl__pl.next_thread);
    uint32_t main_thread;
    if (opt && opt->timeout_ms) {
        mtl__tls.in_hook++;
        struct runner *run = calloc(1, sizeof *run);
        mtl__tls.in_hook--;
        pthread_t th;
        if (run) {
            run->fn = fn;
            run->arg = arg;
        }
        if (!run || pthread_create(&th, NULL, run_fn, run) != 0) {
            free(run);
            mtl__ctl_stop();
            close(fd);
            free(res);
            return -EAGAIN;
        }
        while (!atomic_load(&run->started))
            sched_yield();
        main_thread = run->thread;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += opt->timeout_ms / 1000;
        until.tv_nsec += (long)(opt->timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (pthread_timedjoin_np(th, NULL, &until) != 0) {
            res->timed_out = 1;
            pthread_detach(th); /* fn runs on, with its runner */
        } else {
            free(run);
        }
        if (first_new < main_thread + 1)
            first_new = main_thread + 1;
    } else {
        mtl__thread_state();
        main_thread = mtl__tls.index;
        fn(arg);
    }
    mtl__ctl_stop();
    mtl__tls.in_hook++; /* the tables are memtally's own allocations */
    rc = read_result(fd, main_thread, opt && opt->follow_threads, first_new, res);
    mtl__tls.in_hook--;
    close(fd);
    if (rc < 0) {
        mtl_result_free(res);
        return rc;
    }
    *result = res;
    return 0;
}

/* Prints one table in the layout of `memtally report`: the table goes
 * back into the engine's rows for the one renderer. */
static void print_table(const struct mtl_result_table *t, FILE *f, const char *title)
{
    struct mtl_row *rows = calloc(t->nrows ? t->nrows : 1, sizeof *rows);
    struct mtl_buf b = MTL_BUF_INIT;
    if (!rows)
        return;
    for (size_t i = 0; i < t->nrows; i++) {
        rows[i].function = t->rows[i].function;
        rows[i].calls = (double)t->rows[i].calls;
        rows[i].bytes = (double)t->rows[i].bytes;
        rows[i].percent = t->rows[i].percent;
        rows[i].location = MTL_NO_LOCATION;
    }
    struct mtl_rows table = { .row = rows, .n = t->nrows, .calls = (double)t->calls,
                              .bytes = (double)t->bytes };
    struct mtl_table_spec spec = { "FUNCTION", "CALLS", NULL, 1, 1 };
    mtl_render_banner(&b, title, t->percent, (double)t->bytes, (double)t->calls);
    mtl_render_table(&b, &table, &spec, 0, 0);
    mtl_buf_addc(&b, '\n');
    if (!b.failed)
        fwrite(b.data, 1, b.len, f);
    mtl_buf_release(&b);
    free(rows);
}

EXPORT void mtl_result_print(const struct mtl_result *res, FILE *f, int how)
{
    if (!res || !f)
        return;
    mtl__tls.in_hook++;
    char title[96];
    if (how & MTL_PRINT_THREADS)
        for (size_t i = 0; i < res->nthreads; i++) {
            snprintf(title, sizeof title, "thread %u (%s)", res->threads[i].tid,
                     *res->threads[i].thread_name ? res->threads[i].thread_name : "unnamed");
            print_table(&res->threads[i], f, title);
        }
    if (how & MTL_PRINT_TOTAL)
        print_table(&res->total, f, "all threads");
    if (res->timed_out)
        fprintf(f, "(the call had not returned when the timeout passed: this is what it "
                   "allocated until then)\n");
    mtl__tls.in_hook--;
}

static void free_table(const struct mtl_result_table *t)
{
    for (size_t i = 0; i < t->nrows; i++)
        free((char *)t->rows[i].function);
    free((void *)t->rows);
    free((char *)t->thread_name);
}

EXPORT void mtl_result_free(struct mtl_result *res)
{
    if (!res)
        return;
    mtl__tls.in_hook++;
    free_table(&res->total);
    for (size_t i = 0; i < res->nthreads; i++)
        free_table(&res->threads[i]);
    free((void *)res->threads);
    free(res);
    mtl__tls.in_hook--;
}
