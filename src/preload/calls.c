/*
 * calls.c: true call counts (memtally record --calls), from the hooks that
 * gcc and clang call at the entry and exit of every function of a program
 * built with -finstrument-functions.
 *
 * Each function is looked up once, at its first entry: whether it is
 * traced (the --pattern and --exclude globs against its symbol, read from
 * the ELF symbol table of its file, mapped once per module; without
 * patterns every function is traced and no name is needed), and its
 * address interned as a one-frame stack, which is how the trace names it
 * (the analysis resolves it as any frame, as a return address: the entry
 * plus one).  Then each entry of a traced
 * function adds one to the calling thread's counter for it: an atomic add
 * in a table of the thread's own.  The exit hook does nothing: bytes are
 * given to the innermost traced function of each allocation's stack by
 * the analysis (src/analyze/calls.c), as hprof gives them to the nearest
 * traced caller.
 *
 * The counts go into the trace as CALLS events (thread, function, calls),
 * taken out of the counters: when a thread exits, and for every thread
 * when the trace ends (exit, exec, stop) or is dumped.  A process killed
 * by a signal loses the counts since the last of those (the handler cannot
 * append safely for the other threads).
 *
 * Nothing here allocates or takes a lock the program could hold: memory
 * comes from mmap, the table of functions from a spinlock of ours taken
 * only at a function's first entry.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/recenv.h"

#define EXPORT __attribute__((visibility("default"), no_instrument_function))
#define MAX_FUNCS (1u << 16)       /* functions counted at most */
#define FUNC_SLOTS (2 * MAX_FUNCS)
#define MAX_COUNTERS MTL_MAX_STATES
#define MAX_FILES 64

struct func {
    _Atomic uint64_t addr;      /* 0: empty slot; published last */
    uint32_t stack;             /* the one-frame stack naming it */
    uint8_t traced;
};

/* A thread's counters, by function slot; index: its trace thread index. */
struct counters {
    _Atomic uint64_t calls[FUNC_SLOTS];
};

static struct {
    int on;                      /* record --calls */
    char patterns[4096];         /* +GLOB and -GLOB, split by MTL_CALLS_SEP */
    atomic_int lock;
    struct func *funcs;          /* FUNC_SLOTS, open addressing by address */
    uint32_t nfuncs;
    struct counters *table[MAX_COUNTERS];
    uint32_t owner[MAX_COUNTERS];    /* thread index of table[i] */
    _Atomic uint32_t ntables;
    struct { char path[512]; const uint8_t *map; size_t size; } file[MAX_FILES];
    uint32_t nfiles;
} calls;

static __thread struct counters *mine;

void mtl__calls_init(const char *patterns)
{
    if (!patterns)
        return;
    size_t n = strlen(patterns);
    if (n >= sizeof calls.patterns)
        n = sizeof calls.patterns - 1;
    memcpy(calls.patterns, patterns, n);
    calls.patterns[n] = '\0';
    calls.funcs = mtl__pages_alloc((size_t)FUNC_SLOTS * sizeof *calls.funcs);
    calls.on = calls.funcs != NULL;
}

/* ---- names: globs against the ELF symbol table ------------------------------------- */

/* '*' any run, '?' any one character; the rest as it is. */
static int glob_match(const char *p, const char *pe, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (p < pe && (*p == '?' || *p == *s)) {
            p++, s++;
        } else if (p < pe && *p == '*') {
            star = p++;
            resume = s;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return 0;
        }
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

/* The file mapped whole, once (kept for the process's life), or NULL. */
static const uint8_t *mapped(const char *path, size_t *size)
{
    for (uint32_t i = 0; i < calls.nfiles; i++)
        if (!strcmp(calls.file[i].path, path)) {
            *size = calls.file[i].size;
            return calls.file[i].map;
        }
    if (calls.nfiles == MAX_FILES || strlen(path) >= sizeof calls.file[0].path)
        return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    void *m = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr)))
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (fd >= 0)
        close(fd);
    if (m == MAP_FAILED)
        return NULL;
    strcpy(calls.file[calls.nfiles].path, path);
    calls.file[calls.nfiles].map = m;
    calls.file[calls.nfiles].size = *size = (size_t)st.st_size;
    return calls.file[calls.nfiles++].map;
}

/* The name of the function whose entry is at vaddr in the ELF image f
 * (its symbol table, else its dynamic one), or NULL. */
static const char *symbol_at(const uint8_t *f, size_t size, uint64_t vaddr)
{
    const ElfW(Ehdr) *eh = (const void *)f;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_shoff == 0 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size)
        return NULL;
    const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || sh[i].sh_link >= eh->e_shnum)
                continue;
            const ElfW(Shdr) *str = &sh[sh[i].sh_link];
            if (sh[i].sh_offset + sh[i].sh_size > size || str->sh_offset + str->sh_size > size)
                continue;
            const ElfW(Sym) *sym = (const void *)(f + sh[i].sh_offset);
            size_t n = sh[i].sh_size / sizeof *sym;
            for (size_t k = 0; k < n; k++)
                if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_value == vaddr &&
                    sym[k].st_name < str->sh_size)
                    return (const char *)f + str->sh_offset + sym[k].st_name;
        }
    }
    return NULL;
}

/* The load bias of the image: the run-time base less its first segment's
 * address. */
static uint64_t bias_of(const uint8_t *f, size_t size, uintptr_t base)
{
    const ElfW(Ehdr) *eh = (const void *)f;
    if (eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)) > size)
        return base;
    const ElfW(Phdr) *ph = (const void *)(f + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD)
            return base - (ph[i].p_vaddr & ~(uint64_t)(getpagesize() - 1));
    return base;
}

/* Whether the function at addr is traced: with no pattern, all are; else
 * the last pattern its name matches decides (+ traced, - not), and a name
 * no +pattern matches is not. */
static int wanted_function(uint64_t addr)
{
    if (!calls.patterns[0])
        return 1;
    Dl_info di;
    if (!dladdr((void *)(uintptr_t)addr, &di))
        return 0;
    const char *name = NULL;
    const char *path = di.dli_fname && di.dli_fname[0] == '/' ? di.dli_fname : "/proc/self/exe";
    size_t size;
    const uint8_t *f = mapped(path, &size);
    if (f)
        name = symbol_at(f, size, addr - bias_of(f, size, (uintptr_t)di.dli_fbase));
    if (!name)
        name = di.dli_saddr == (void *)(uintptr_t)addr ? di.dli_sname : NULL;
    if (!name)
        return 0;
    int traced = 0;
    for (const char *p = calls.patterns; *p;) {
        const char *end = strchr(p, MTL_CALLS_SEP);
        if (!end)
            end = p + strlen(p);
        if (end > p + 1 && glob_match(p + 1, end, name))
            traced = *p == '+';
        p = *end ? end + 1 : end;
    }
    return traced;
}

/* ---- counting ------------------------------------------------------------------------ */

/* The slot of the function at addr, looked up (and set up at its first
 * entry); FUNC_SLOTS when the table is full. */
static uint32_t func_slot(uint64_t addr)
{
    uint32_t k = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & (FUNC_SLOTS - 1);
    for (uint32_t i = 0; i < FUNC_SLOTS; i++, k = (k + 1) & (FUNC_SLOTS - 1)) {
        uint64_t a = atomic_load_explicit(&calls.funcs[k].addr, memory_order_acquire);
        if (a == addr)
            return k;
        if (a)
            continue;
        mtl_spin_lock(&calls.lock);
        a = atomic_load_explicit(&calls.funcs[k].addr, memory_order_relaxed);
        if (!a && calls.nfuncs < MAX_FUNCS) {
            calls.funcs[k].traced = (uint8_t)wanted_function(addr);
            /* Frames are read as return addresses (one less is looked up):
             * the entry plus one names the function itself. */
            calls.funcs[k].stack = calls.funcs[k].traced ? mtl__stack_of_address(addr + 1) : 0;
            calls.nfuncs++;
            atomic_store_explicit(&calls.funcs[k].addr, addr, memory_order_release);
            a = addr;
        }
        mtl_spin_unlock(&calls.lock);
        if (a == addr)
            return k;
        if (!a)
            return FUNC_SLOTS; /* full */
    }
    return FUNC_SLOTS;
}

/* This thread's counters, made at its first traced call. */
static struct counters *my_counters(struct mtl__tls *tls)
{
    if (mine)
        return mine;
    if (!mtl__thread_state())
        return NULL;
    struct counters *c = mtl__pages_alloc(sizeof *c);
    if (!c)
        return NULL;
    mtl_spin_lock(&calls.lock);
    uint32_t n = atomic_load(&calls.ntables);
    if (n < MAX_COUNTERS) {
        calls.table[n] = c;
        calls.owner[n] = tls->index;
        atomic_store(&calls.ntables, n + 1);
        mine = c;
    }
    mtl_spin_unlock(&calls.lock);
    if (!mine)
        mtl__pages_free(c, sizeof *c);
    return mine;
}

EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    struct mtl__tls *tls = &mtl__tls;
    if (!calls.on || tls->in_hook || !mtl__pl.ready ||
        atomic_load_explicit(mtl__pl.state, memory_order_relaxed) != MTL_RECORDING)
        return;
    tls->in_hook = 1;
    uint32_t k = func_slot((uint64_t)(uintptr_t)fn);
    struct counters *c = k < FUNC_SLOTS && calls.funcs[k].traced ? my_counters(tls) : NULL;
    if (c)
        atomic_fetch_add_explicit(&c->calls[k], 1, memory_order_relaxed);
    tls->in_hook = 0;
}

EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn, (void)site;
}

/* The counts of table i so far into the trace, taken out of it. */
static void flush_table(uint32_t i)
{
    struct counters *c = calls.table[i];
    for (uint32_t k = 0; k < FUNC_SLOTS; k++) {
        if (!atomic_load_explicit(&c->calls[k], memory_order_relaxed))
            continue;
        uint64_t n = atomic_exchange_explicit(&c->calls[k], 0, memory_order_relaxed);
        if (n && calls.funcs[k].stack)
            mtl__record_calls(calls.owner[i], calls.funcs[k].stack, n);
    }
}

const char *mtl__calls_patterns(void)
{
    return calls.on ? calls.patterns : NULL;
}

/* A new trace: the counts so far belong to none. */
void mtl__calls_drop(void)
{
    uint32_t n = calls.on ? atomic_load(&calls.ntables) : 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < FUNC_SLOTS; k++)
            if (atomic_load_explicit(&calls.table[i]->calls[k], memory_order_relaxed))
                atomic_store_explicit(&calls.table[i]->calls[k], 0, memory_order_relaxed);
}

void mtl__calls_flush_all(void)
{
    if (!calls.on)
        return;
    struct mtl__tls *tls = &mtl__tls;
    int saved = tls->in_hook;
    tls->in_hook = 1;
    uint32_t n = atomic_load(&calls.ntables);
    for (uint32_t i = 0; i < n; i++)
        flush_table(i);
    tls->in_hook = saved;
}

void mtl__calls_flush_mine(void)
{
    if (!calls.on || !mine)
        return;
    uint32_t n = atomic_load(&calls.ntables);
    for (uint32_t i = 0; i < n; i++)
        if (calls.table[i] == mine)
            flush_table(i);
}
