/*
 * profile.c: mtl_profile_call, hprof's profile(fun) for C: run one call
 * with every allocation recorded and hand back its table.
 *
 * The call is recorded like any other trace, into an anonymous memory
 * file (memfd), which is then read back with the trace reader and folded
 * per thread and per function.  Functions are named from the running
 * process itself: the symbol table of each module's file (static
 * functions too, unless the file is stripped), else the dynamic symbols
 * (dladdr), else module+0xOFFSET; C++ names are demangled when libstdc++
 * is loaded.  Allocator and C++ runtime frames (malloc, operator new,
 * std::allocator...) are skipped, as in `memtally report`.
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

#include "analyze/stackagg.h"
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

/* The name of the function containing a return address, into buf. */
static const char *name_of(struct names *nm, uint64_t addr, char *buf, size_t cap)
{
    Dl_info info;
    struct link_map *lm = NULL;
    uint64_t pc = addr - 1;
    if (!dladdr1((void *)(uintptr_t)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
        snprintf(buf, cap, "0x%llx", (unsigned long long)addr);
        return buf;
    }
    const char *path = info.dli_fname && *info.dli_fname ? info.dli_fname : "/proc/self/exe";
    if (lm->l_name && !*lm->l_name)
        path = "/proc/self/exe"; /* the main program */
    uint64_t off = pc - lm->l_addr;
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
    if (!name) {
        const char *b = strrchr(path, '/');
        snprintf(buf, cap, "%s+0x%llx", b ? b + 1 : path, (unsigned long long)off);
        return buf;
    }
    if (nm->demangle && name[0] == '_' && name[1] == 'Z') {
        int status;
        char *d = nm->demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            snprintf(buf, cap, "%s", d);
            free(d);
            return buf;
        }
        free(d);
    }
    snprintf(buf, cap, "%s", name);
    return buf;
}

static const char *const plumbing[] = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "operator new*",
    "operator delete*", "std::allocator<*", "__gnu_cxx::new_allocator<*",
    "std::__new_allocator<*", "std::allocator_traits<*", "*::_M_allocate(*",
    "*::_M_create(*", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t",
};

static int hidden(const char *name)
{
    for (size_t i = 0; i < sizeof plumbing / sizeof *plumbing; i++)
        if (!fnmatch(plumbing[i], name, 0))
            return 1;
    return 0;
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

struct row_acc {
    char *function;
    uint64_t calls, bytes;
};

struct table_acc {
    uint32_t thread;
    struct row_acc *rows;
    size_t n;
    uint64_t calls, bytes;
};

static struct row_acc *row_for(struct table_acc *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].function, name))
            return &t->rows[i];
    struct row_acc *r = realloc(t->rows, (t->n + 1) * sizeof *r);
    if (!r)
        return NULL;
    t->rows = r;
    r = &t->rows[t->n];
    r->function = strdup(name);
    r->calls = r->bytes = 0;
    if (!r->function)
        return NULL;
    t->n++;
    return r;
}

static int by_bytes(const void *a, const void *b)
{
    const struct mtl_result_row *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->function, y->function);
}

struct fold {
    struct mtl_reader *r;
    struct names *nm;
    struct table_acc total;
    struct table_acc *threads;
    size_t nthreads;
    int err;
};

static struct table_acc *thread_table(struct fold *f, uint32_t thread)
{
    for (size_t i = 0; i < f->nthreads; i++)
        if (f->threads[i].thread == thread)
            return &f->threads[i];
    struct table_acc *t = realloc(f->threads, (f->nthreads + 1) * sizeof *t);
    if (!t)
        return NULL;
    f->threads = t;
    t = &f->threads[f->nthreads++];
    memset(t, 0, sizeof *t);
    t->thread = thread;
    return t;
}

static void fold_entry(const struct mtl_stackagg_entry *e, void *arg)
{
    struct fold *f = arg;
    struct mtl_frame frames[MTL_MAX_DEPTH];
    char buf[1024];
    const char *site = "(no stack)";
    int n = mtl_reader_stack(f->r, e->stack, frames, MTL_MAX_DEPTH);
    for (int i = 0; i < n && i < MTL_MAX_DEPTH; i++) {
        if (frames[i].kind != MTL_FRAME_NATIVE)
            continue;
        const char *name = name_of(f->nm, frames[i].addr, buf, sizeof buf);
        if (!hidden(name)) {
            site = name;
            break;
        }
    }
    struct table_acc *tables[2] = { &f->total, thread_table(f, e->thread) };
    for (int k = 0; k < 2; k++) {
        struct row_acc *row = tables[k] ? row_for(tables[k], site) : NULL;
        if (!row) {
            f->err = 1;
            return;
        }
        row->calls += (uint64_t)e->calls;
        row->bytes += (uint64_t)e->bytes;
        tables[k]->calls += (uint64_t)e->calls;
        tables[k]->bytes += (uint64_t)e->bytes;
    }
}

/* Turns an accumulated table into the public one; its rows and names go
 * in one malloc'd block each. */
static int finish_table(struct mtl_result_table *out, struct table_acc *in,
                        uint64_t all_bytes, const struct mtl_reader *r)
{
    struct mtl_result_row *rows = calloc(in->n ? in->n : 1, sizeof *rows);
    if (!rows)
        return -ENOMEM;
    for (size_t i = 0; i < in->n; i++) {
        rows[i].function = in->rows[i].function; /* ownership moves */
        rows[i].calls = in->rows[i].calls;
        rows[i].bytes = in->rows[i].bytes;
        rows[i].percent = in->bytes ? 100.0 * (double)in->rows[i].bytes / (double)in->bytes : 0;
    }
    qsort(rows, in->n, sizeof *rows, by_bytes);
    free(in->rows);
    in->rows = NULL;
    out->rows = rows;
    out->nrows = in->n;
    in->n = 0;
    out->calls = in->calls;
    out->bytes = in->bytes;
    out->percent = all_bytes ? 100.0 * (double)in->bytes / (double)all_bytes : 0;
    const struct mtl_thread *t = r ? mtl_reader_thread(r, in->thread) : NULL;
    out->tid = t ? t->tid : 0;
    out->thread_name = strdup(t && *t->name ? t->name : r ? "" : "all threads");
    return out->thread_name ? 0 : -ENOMEM;
}

static int read_result(const char *path, uint32_t main_thread, int follow,
                       uint32_t first_new_thread, struct mtl_result *res)
{
    struct mtl_reader *r;
    int rc = mtl_reader_open(&r, path);
    if (rc < 0)
        return -EIO;
    struct mtl_stackagg agg = { .per_thread = 1 };
    struct mtl_event ev;
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
    struct names nm = { 0 };
    nm.demangle = (char *(*)(const char *, char *, size_t *, int *))
        dlsym(RTLD_DEFAULT, "__cxa_demangle");
    struct fold f = { .r = r, .nm = &nm };
    if (rc == 0) {
        mtl_stackagg_each(&agg, fold_entry, &f);
        rc = f.err ? -ENOMEM : 0;
    }
    if (rc == 0) {
        struct mtl_result_table *threads = calloc(f.nthreads ? f.nthreads : 1, sizeof *threads);
        rc = threads ? finish_table(&res->total, &f.total, f.total.bytes, NULL) : -ENOMEM;
        res->total.tid = 0;
        for (size_t i = 0; rc == 0 && i < f.nthreads; i++)
            rc = finish_table(&threads[i], &f.threads[i], f.total.bytes, r);
        res->threads = threads;
        res->nthreads = f.nthreads;
    }
    for (size_t i = 0; i < f.nthreads; i++) {
        for (size_t k = 0; k < f.threads[i].n; k++)
            free(f.threads[i].rows[k].function);
        free(f.threads[i].rows);
    }
    for (size_t k = 0; k < f.total.n; k++)
        free(f.total.rows[k].function);
    free(f.total.rows);
    free(f.threads);
    for (size_t i = 0; i < nm.nfiles; i++) {
        free(nm.files[i].path);
        free(nm.files[i].syms);
        if (nm.files[i].map)
            munmap(nm.files[i].map, nm.files[i].map_size);
    }
    free(nm.files);
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
    rc = read_result(path, main_thread, opt && opt->follow_threads, first_new, res);
    mtl__tls.in_hook--;
    close(fd);
    if (rc < 0) {
        mtl_result_free(res);
        return rc;
    }
    *result = res;
    return 0;
}

static void print_table(const struct mtl_result_table *t, FILE *f, const char *title)
{
    fprintf(f, "****** %s -- %.2f %% of all bytes, %llu calls, %llu bytes ******\n", title,
            t->percent, (unsigned long long)t->calls, (unsigned long long)t->bytes);
    fprintf(f, "%-48s %10s %12s %10s %8s\n", "FUNCTION", "CALLS", "BYTES", "PER CALL", "[%]");
    for (size_t i = 0; i < t->nrows; i++) {
        const struct mtl_result_row *r = &t->rows[i];
        fprintf(f, "%-48.48s %10llu %12llu %10llu %8.2f\n", r->function,
                (unsigned long long)r->calls, (unsigned long long)r->bytes,
                (unsigned long long)(r->calls ? r->bytes / r->calls : 0), r->percent);
    }
    fprintf(f, "%-48s %10llu %12llu %10s %8.2f\n\n", "", (unsigned long long)t->calls,
            (unsigned long long)t->bytes, "", t->bytes ? 100.0 : 0.0);
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
                     res->threads[i].thread_name);
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
