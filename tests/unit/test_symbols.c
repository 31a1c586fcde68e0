/* The symbolizer on this very process: its modules are taken from
 * dl_iterate_phdr (path, load bias, build id, PT_LOAD segments), as the
 * recorder takes them, and return addresses captured here must resolve to
 * the functions, file and lines that made the calls, inlining included.
 * Then the fallbacks: no module, garbage addresses, a module whose file
 * changed (build id differs), is gone, is not ELF; the demangler; the
 * cache; speed on 100k distinct addresses; no file descriptor left open.
 * Then the options: bad directories, a module found under a sysroot (or
 * at its recorded path when the sysroot lacks it and the build id
 * matches), a binary that is gone replaced by its debug file in a debug directory
 * (this executable, whose DWARF makes it a fine debug file), and
 * no_debuginfod.  (tests/integration/test_symbols_files.sh covers the
 * separate debug files proper, MiniDebugInfo, dwz and a debuginfod
 * server.) */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memtally/symbols.h"
#include "check.h"
#include "symbols/prefetch.h"
#include "memtally/trace.h"

#define MAX_MODS 128
#define MAX_SEGS 16

static struct {
    struct mtl_module mod[MAX_MODS];
    struct mtl_segment seg[MAX_MODS][MAX_SEGS];
    uint8_t build_id[MAX_MODS][64];
    char path[MAX_MODS][4096];
    uint32_t n;
} self;

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (self.n >= MAX_MODS)
        return 0;
    uint32_t i = self.n++;
    struct mtl_module *m = &self.mod[i];
    m->index = i;
    if (info->dlpi_name && info->dlpi_name[0]) {
        snprintf(self.path[i], sizeof self.path[i], "%s", info->dlpi_name);
    } else {
        ssize_t n = readlink("/proc/self/exe", self.path[i], sizeof self.path[i] - 1);
        self.path[i][n > 0 ? n : 0] = '\0';
    }
    m->path = self.path[i];
    m->base = info->dlpi_addr;
    m->segments = self.seg[i];
    for (int k = 0; k < info->dlpi_phnum; k++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
        if (ph->p_type == PT_LOAD && m->nsegments < MAX_SEGS) {
            self.seg[i][m->nsegments].vaddr = ph->p_vaddr;
            self.seg[i][m->nsegments].memsz = ph->p_memsz;
            self.seg[i][m->nsegments].flags = ph->p_flags;
            m->nsegments++;
        }
        if (ph->p_type != PT_NOTE || m->build_id)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const char *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= 64) {
                memcpy(self.build_id[i], desc, nh->n_descsz);
                m->build_id = self.build_id[i];
                m->build_id_size = nh->n_descsz;
                break;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

/* The module whose segments hold address a, or UINT32_MAX. */
static uint32_t module_of(uintptr_t a)
{
    for (uint32_t i = 0; i < self.n; i++)
        for (size_t k = 0; k < self.mod[i].nsegments; k++)
            if (a - self.mod[i].base - self.seg[i][k].vaddr < self.seg[i][k].memsz)
                return i;
    return UINT32_MAX;
}

/* Hand-made modules past the real ones, each a way a module goes wrong. */
enum {
    FAKE_CHANGED = 100,   /* the executable, its build id altered */
    FAKE_GONE,            /* a file that does not exist */
    FAKE_VDSO,            /* no file at all: no warning */
    FAKE_NOTELF,          /* a regular file that is not ELF */
    FAKE_DIR,             /* a directory */
    FAKE_ODDSEGS,         /* the executable, no build id, nonsense segments */
    FAKE_CHANGED_AGAIN,   /* the same change: the same warning, not twice */
    FAKE_NOINFO,          /* the executable, no build id, no segments */
    FAKE_END
};
#define FAKE_HUGE 3000000000u /* a huge module index that exists */

static struct mtl_module fake[FAKE_END - FAKE_CHANGED];
static struct mtl_module huge;
static uint8_t changed_id[64];
static struct mtl_segment odd_segs[3];
static char notelf_path[4200];

static const struct mtl_module *get_module(void *arg, uint32_t index)
{
    (void)arg;
    if (index < self.n)
        return &self.mod[index];
    if (index >= FAKE_CHANGED && index < FAKE_END)
        return &fake[index - FAKE_CHANGED];
    if (index == FAKE_HUGE)
        return &huge;
    return NULL;
}

static void make_fakes(uint32_t exe)
{
    const struct mtl_module *m = &self.mod[exe];
    memcpy(changed_id, m->build_id, m->build_id_size);
    changed_id[0] ^= 0xff;
    fake[FAKE_CHANGED - FAKE_CHANGED] = *m;
    fake[FAKE_CHANGED - FAKE_CHANGED].build_id = changed_id;
    fake[FAKE_CHANGED_AGAIN - FAKE_CHANGED] = fake[0];
    fake[FAKE_GONE - FAKE_CHANGED] = (struct mtl_module){
        .path = "/nonexistent/memtally-test/libgone.so.1", .base = 0x7f0000000000ull };
    fake[FAKE_VDSO - FAKE_CHANGED] = (struct mtl_module){
        .path = "linux-vdso.so.1", .base = 0x7fff00000000ull };
    FILE *fp = fopen("notelf.so", "w");
    CHECK(fp != NULL);
    fputs("this is not an ELF file\n", fp);
    fclose(fp);
    CHECK(getcwd(notelf_path, 4096) != NULL);
    strcat(notelf_path, "/notelf.so");
    fake[FAKE_NOTELF - FAKE_CHANGED] = (struct mtl_module){ .path = notelf_path };
    fake[FAKE_DIR - FAKE_CHANGED] = (struct mtl_module){ .path = "/" };
    odd_segs[0] = (struct mtl_segment){ .vaddr = 0, .memsz = 0 };
    odd_segs[1] = (struct mtl_segment){ .vaddr = UINT64_MAX - 10, .memsz = 100 };
    odd_segs[2] = (struct mtl_segment){ .vaddr = 0x1000, .memsz = UINT64_MAX };
    fake[FAKE_ODDSEGS - FAKE_CHANGED] = *m;
    fake[FAKE_ODDSEGS - FAKE_CHANGED].build_id = NULL;
    fake[FAKE_ODDSEGS - FAKE_CHANGED].build_id_size = 0;
    fake[FAKE_ODDSEGS - FAKE_CHANGED].segments = odd_segs;
    fake[FAKE_ODDSEGS - FAKE_CHANGED].nsegments = 3;
    fake[FAKE_NOINFO - FAKE_CHANGED] = *m;
    fake[FAKE_NOINFO - FAKE_CHANGED].build_id = NULL;
    fake[FAKE_NOINFO - FAKE_CHANGED].build_id_size = 0;
    fake[FAKE_NOINFO - FAKE_CHANGED].segments = NULL;
    fake[FAKE_NOINFO - FAKE_CHANGED].nsegments = 0;
    huge = (struct mtl_module){ .path = "linux-vdso.so.1", .base = 0x1000 };
}

/* ---- code whose return addresses we know ---- */

#define AT(var) (var = __LINE__)
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
static unsigned line_direct, line_inlined, line_site;

static NOINLINE uintptr_t return_address(void)
{
    uintptr_t a = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" : "+r"(a));
    return a;
}

static NOINLINE uintptr_t direct_caller(void)
{
    uintptr_t a;
    AT(line_direct), a = return_address();
    __asm__ volatile("" : "+r"(a)); /* no tail call */
    return a;
}

static inline __attribute__((always_inline)) uintptr_t inlined_helper(void)
{
    uintptr_t a;
    AT(line_inlined), a = return_address();
    __asm__ volatile("" : "+r"(a));
    return a;
}

static NOINLINE uintptr_t inline_host(void)
{
    uintptr_t a;
    AT(line_site), a = inlined_helper();
    __asm__ volatile("" : "+r"(a));
    return a;
}

/* ---- helpers ---- */

static int ends_with(const char *s, const char *tail)
{
    size_t n = s ? strlen(s) : 0, k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

struct seen {
    char msg[16][4400];
    int n;
};

static void collect(const char *message, void *arg)
{
    struct seen *w = arg;
    CHECK(w->n < 16);
    snprintf(w->msg[w->n++], sizeof w->msg[0], "%s", message);
}

static int has_warning(const struct seen *w, const char *path, const char *why)
{
    char want[4400];
    snprintf(want, sizeof want, "%s: %s; showing addresses", path, why);
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->msg[i], want) == 0)
            return 1;
    return 0;
}

static void check_demangler(void)
{
    struct { const char *in, *out; } cases[] = {
        { "_ZNSt6vectorIiSaIiEE9push_backERKi",
          "std::vector<int, std::allocator<int> >::push_back(int const&)" },
        { "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
        { "_ZN4core3fmt5write17h0123456789abcdefE.llvm.1234567", "core::fmt::write" },
        { "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$"
          "..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0123456789abcdefE",
          "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>" },
        { "_ZN3foo3barEv", "foo::bar()" },
        { "_Z3foov.cold", "foo() [clone .cold]" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *d = mtl_demangle(cases[i].in);
        CHECK(d != NULL);
        if (strcmp(d, cases[i].out) != 0)
            fprintf(stderr, "demangle %s: got '%s', want '%s'\n", cases[i].in,
                    d, cases[i].out);
        CHECK(strcmp(d, cases[i].out) == 0);
        free(d);
    }
    CHECK(mtl_demangle("main") == NULL);
    CHECK(mtl_demangle("_Z") == NULL);
    CHECK(mtl_demangle("_Zgarbage!") == NULL);
    CHECK(mtl_demangle("") == NULL);
    CHECK(mtl_demangle(NULL) == NULL);
}

/* mkdir -p for the directories of path. */
static void make_dirs_of(const char *path)
{
    char buf[4200];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        CHECK(mkdir(buf, 0755) == 0 || errno == EEXIST);
        *p = '/';
    }
}

static void copy_file(const char *from, const char *to)
{
    make_dirs_of(to);
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    CHECK(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        CHECK(write(out, buf, (size_t)n) == n);
    CHECK(n == 0);
    close(in);
    close(out);
}

/* The options, on the executable recorded under paths where it is not. */
static void check_options(uint32_t exe, uintptr_t a_direct)
{
    struct mtl_symbolizer *s;
    const struct mtl_symbol *e;
    char cwd[4096], sysroot[4200], dbgdir[4200], path[8600], cache[4200];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);

    /* Directories that are not. */
    struct mtl_symbolizer_options opt = { .sysroot = "/nonexistent/memtally-test" };
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), MTL_ENOENT);
    opt.sysroot = notelf_path;
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), MTL_EINVAL);
    const char *bad[] = { "/", "/nonexistent/memtally-test" };
    opt = (struct mtl_symbolizer_options){ .debug_dirs = bad, .ndebug_dirs = 2 };
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), MTL_ENOENT);
    opt = (struct mtl_symbolizer_options){ .ndebug_dirs = 1 };
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), MTL_EINVAL);

    /* FAKE_GONE becomes the executable recorded at a path that does not
     * exist here, with its build id and segments. */
    const char *recorded = "/nonexistent/memtally-test/bin/prog";
    struct mtl_module *m = &fake[FAKE_GONE - FAKE_CHANGED];
    *m = self.mod[exe];
    m->path = recorded;
    uint64_t addr = a_direct; /* the same base */

    /* Under a sysroot; without it, not found. */
    snprintf(sysroot, sizeof sysroot, "%s/sysroot", cwd);
    snprintf(path, sizeof path, "%s%s", sysroot, recorded);
    copy_file("/proc/self/exe", path);
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, NULL), 0);
    CHECK_EQ(mtl_symbolizer_resolve(s, FAKE_GONE, addr, &e), 1);
    CHECK(e[0].function == NULL);
    mtl_symbolizer_close(s);
    opt = (struct mtl_symbolizer_options){ .sysroot = sysroot };
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), 0);
    CHECK_EQ(mtl_symbolizer_resolve(s, FAKE_GONE, addr, &e), 1);
    CHECK(e[0].function && strcmp(e[0].function, "direct_caller") == 0);
    CHECK_EQ(e[0].line, line_direct);
    CHECK(strcmp(e[0].module, recorded) == 0); /* the path as recorded */
    mtl_symbolizer_close(s);
    /* A sysroot with a trailing slash is the same sysroot. */
    strcat(sysroot, "/");
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), 0);
    CHECK_EQ(mtl_symbolizer_resolve(s, FAKE_GONE, addr, &e), 1);
    CHECK(e[0].function && strcmp(e[0].function, "direct_caller") == 0);
    mtl_symbolizer_close(s);

    /* With a sysroot that lacks a file, the recorded path itself, but only
     * when its build id says it is the same file. */
    snprintf(path, sizeof path, "%s/empty-sysroot", cwd);
    CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
    opt = (struct mtl_symbolizer_options){ .sysroot = path };
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), 0);
    CHECK_EQ(mtl_symbolizer_resolve(s, exe, a_direct, &e), 1);
    CHECK(e[0].function && strcmp(e[0].function, "direct_caller") == 0);
    CHECK_EQ(mtl_symbolizer_resolve(s, FAKE_NOINFO, a_direct, &e), 1);
    CHECK(e[0].function == NULL);
    mtl_symbolizer_close(s);

    /* The binary gone, its "debug file" in a debug directory, by build id. */
    snprintf(dbgdir, sizeof dbgdir, "%s/debug", cwd);
    int k = snprintf(path, sizeof path, "%s/.build-id/%02x/", dbgdir, m->build_id[0]);
    for (size_t i = 1; i < m->build_id_size; i++)
        k += snprintf(path + k, sizeof path - k, "%02x", m->build_id[i]);
    snprintf(path + k, sizeof path - k, ".debug");
    copy_file("/proc/self/exe", path);
    const char *dirs[] = { dbgdir };
    opt = (struct mtl_symbolizer_options){ .debug_dirs = dirs, .ndebug_dirs = 1 };
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), 0);
    CHECK_EQ(mtl_symbolizer_resolve(s, FAKE_GONE, addr, &e), 1);
    CHECK(e[0].function && strcmp(e[0].function, "direct_caller") == 0);
    CHECK_EQ(e[0].line, line_direct);
    struct seen w = { .n = 0 };
    mtl_symbolizer_warnings(s, collect, &w);
    CHECK_EQ(w.n, 0);
    mtl_symbolizer_close(s);

    /* debuginfod: asked when DEBUGINFOD_URLS is set (here a port where
     * nothing listens), unless no_debuginfod.  Its client makes its cache
     * directory when it is first asked. */
    snprintf(cache, sizeof cache, "%s/debuginfod-cache.%d", cwd, (int)getpid());
    setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9", 1);
    setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
    struct stat st;
    for (int no = 1; no >= 0; no--) {
        opt = (struct mtl_symbolizer_options){ .no_debuginfod = no };
        CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, &opt), 0);
        CHECK_EQ(mtl_symbolizer_resolve(s, FAKE_GONE, addr, &e), 1);
        CHECK(e[0].function == NULL);
        mtl_symbolizer_close(s);
        CHECK_EQ(stat(cache, &st) == 0, !no);
    }
    unsetenv("DEBUGINFOD_URLS");
    unsetenv("DEBUGINFOD_CACHE_PATH");
}

/* A prefetch changes nothing but the time: the answers are those of a
 * symbolizer without one; a module's warning comes when a frame of it is
 * resolved, not when the prefetch opened it; the prefetch reads its own
 * copies of the modules, so the caller may change its own meanwhile. */
static void check_prefetch(uint32_t exe, uint32_t libc_mod, uintptr_t a_direct,
                           uintptr_t a_inline)
{
    struct mtl_symbolizer *s;
    const struct mtl_symbol *e;
    uint32_t list[] = { exe, libc_mod, FAKE_GONE, FAKE_CHANGED, 5000 /* undefined */ };

    /* Not when debuginfod may be asked. */
    setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9/", 1);
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, NULL), 0);
    CHECK_EQ(mtl_symbolizer_prefetch(s, list, 5), 0);
    mtl_symbolizer_close(s);
    unsetenv("DEBUGINFOD_URLS");

    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, NULL), 0);
    CHECK_EQ(mtl_symbolizer_prefetch(s, list, 5), 1);
    CHECK_EQ(mtl_symbolizer_prefetch(s, list, 5), 0); /* once */
    char saved[4096];
    memcpy(saved, self.path[exe], sizeof saved);
    strcpy(self.path[exe], "/nonexistent/changed-meanwhile");
    int n = mtl_symbolizer_resolve(s, exe, a_direct, &e);
    memcpy(self.path[exe], saved, sizeof saved);
    CHECK_EQ(n, 1);
    CHECK(e[0].function && strcmp(e[0].function, "direct_caller") == 0);
    CHECK_EQ(e[0].line, line_direct);
    CHECK(strcmp(e[0].module, self.mod[exe].path) == 0);
    n = mtl_symbolizer_resolve(s, exe, a_inline, &e);
    CHECK_EQ(n, 2);
    CHECK(e[0].function && strcmp(e[0].function, "inlined_helper") == 0);

    struct seen w = { .n = 0 };
    mtl_symbolizer_warnings(s, collect, &w);
    CHECK_EQ(w.n, 0); /* FAKE_GONE and FAKE_CHANGED opened, not used */
    const struct mtl_module *gone = get_module(NULL, FAKE_GONE);
    CHECK_EQ(mtl_symbolizer_resolve(s, FAKE_GONE, gone->base + 0x1234, &e), 1);
    CHECK(e[0].function == NULL);
    mtl_symbolizer_warnings(s, collect, &w);
    for (int i = 0; i < w.n; i++)
        printf("warning: %s\n", w.msg[i]);
    CHECK_EQ(w.n, 1);
    CHECK(has_warning(&w, "/nonexistent/memtally-test/libgone.so.1", "not found"));

    /* The symbol table, sorted by address with the best of aliases first:
     * malloc, not __libc_malloc. */
    static const char *const names[] = { "malloc", "realloc", "free" };
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    CHECK(libc != NULL);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *name = NULL;
        uintptr_t a = (uintptr_t)dlsym(libc, names[i]);
        CHECK_EQ(mtl_symbolizer_function(s, libc_mod, a + 1, &name), 1);
        if (!name || strcmp(name, names[i]) != 0)
            fprintf(stderr, "%s: named %s\n", names[i], name ? name : "(null)");
        CHECK(name && strcmp(name, names[i]) == 0);
    }
    dlclose(libc);
    mtl_symbolizer_close(s);
}

int main(void)
{
    check_demangler();

    dl_iterate_phdr(add_module, NULL);
    CHECK(self.n > 2);
    uintptr_t a_direct = direct_caller();
    uintptr_t a_inline = inline_host();
    uint32_t exe = module_of(a_direct);
    CHECK(exe != UINT32_MAX);
    CHECK(module_of(a_inline) == exe);
    CHECK(self.mod[exe].build_id != NULL);
    make_fakes(exe);

    int fds_before = open_fds();
    struct mtl_symbolizer *s;
    CHECK_EQ(mtl_symbolizer_open_modules(&s, get_module, NULL, NULL), 0);
    const struct mtl_symbol *e;
    char buf[256];

    /* A plain call: this function, this file, the line of the call. */
    int n = mtl_symbolizer_resolve(s, exe, a_direct, &e);
    CHECK_EQ(n, 1);
    CHECK(e[0].function && strcmp(e[0].function, "direct_caller") == 0);
    if (!ends_with(e[0].file, "/test_symbols.c"))
        fprintf(stderr, "file: %s\n", e[0].file ? e[0].file : "(null)");
    CHECK(ends_with(e[0].file, "/test_symbols.c"));
    CHECK_EQ(e[0].line, line_direct);
    CHECK_EQ(e[0].inlined, 0);
    CHECK(strcmp(e[0].module, self.mod[exe].path) == 0);
    CHECK_EQ(e[0].offset, a_direct - self.mod[exe].base);
    CHECK(mtl_symbol_name(&e[0], buf, sizeof buf) == e[0].function);

    /* Cached: the same entries again. */
    const struct mtl_symbol *again;
    CHECK_EQ(mtl_symbolizer_resolve(s, exe, a_direct, &again), 1);
    CHECK(again == e);

    /* Inlining: the inlined function first, at its line, then its host at
     * the line of the inlined call. */
    n = mtl_symbolizer_resolve(s, exe, a_inline, &e);
    CHECK_EQ(n, 2);
    CHECK(e[0].function && strcmp(e[0].function, "inlined_helper") == 0);
    CHECK_EQ(e[0].inlined, 1);
    CHECK(ends_with(e[0].file, "/test_symbols.c"));
    CHECK_EQ(e[0].line, line_inlined);
    CHECK(e[1].function && strcmp(e[1].function, "inline_host") == 0);
    CHECK_EQ(e[1].inlined, 0);
    CHECK(ends_with(e[1].file, "/test_symbols.c"));
    CHECK_EQ(e[1].line, line_site);
    CHECK_EQ(e[1].offset, a_inline - self.mod[exe].base);

    /* libc, symbol table only (the malloc of libc itself, not the
     * sanitizer's). */
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    CHECK(libc != NULL);
    uintptr_t a_malloc = (uintptr_t)dlsym(libc, "malloc");
    CHECK(a_malloc != 0);
    uint32_t libc_mod = module_of(a_malloc);
    CHECK(libc_mod != UINT32_MAX && libc_mod != exe);
    n = mtl_symbolizer_resolve(s, libc_mod, a_malloc + 1, &e);
    CHECK(n >= 1);
    CHECK(e[n - 1].function && strstr(e[n - 1].function, "malloc"));
    CHECK(ends_with(e[n - 1].module, "libc.so.6"));
    dlclose(libc);

    /* No module, or a module index never defined: one unknown entry. */
    n = mtl_symbolizer_resolve(s, UINT32_MAX, 0x1234, &e);
    CHECK_EQ(n, 1);
    CHECK(e[0].function == NULL && e[0].file == NULL && e[0].line == 0);
    CHECK(strcmp(e[0].module, "") == 0);
    CHECK_EQ(e[0].offset, 0x1234);
    CHECK(strcmp(mtl_symbol_name(&e[0], buf, sizeof buf), "0x1234") == 0);
    n = mtl_symbolizer_resolve(s, 5000, 0x1234, &e);
    CHECK_EQ(n, 1);
    CHECK(e[0].function == NULL && strcmp(e[0].module, "") == 0);
    n = mtl_symbolizer_resolve(s, FAKE_HUGE, 0x5678, &e);
    CHECK_EQ(n, 1);
    CHECK(e[0].function == NULL);
    CHECK(strcmp(mtl_symbol_name(&e[0], buf, sizeof buf), "linux-vdso.so.1+0x4678") == 0);

    /* Garbage addresses in a real module: unknown, shown as an offset. */
    const char *exe_base = strrchr(self.mod[exe].path, '/') + 1;
    uint64_t far = 0x7ffffff0ull;
    n = mtl_symbolizer_resolve(s, exe, self.mod[exe].base + far, &e);
    CHECK_EQ(n, 1);
    CHECK(e[0].function == NULL);
    char want[4200];
    snprintf(want, sizeof want, "%s+0x7ffffff0", exe_base);
    CHECK(strcmp(mtl_symbol_name(&e[0], buf, sizeof buf), want) == 0);
    char tiny[8];
    CHECK(strlen(mtl_symbol_name(&e[0], tiny, sizeof tiny)) == 7);
    CHECK_EQ(mtl_symbolizer_resolve(s, exe, self.mod[exe].base, &e), 1);
    CHECK(e[0].function == NULL);
    CHECK_EQ(mtl_symbolizer_resolve(s, exe, 0, &e), 1);
    CHECK(e[0].function == NULL);
    CHECK_EQ(mtl_symbolizer_resolve(s, exe, UINT64_MAX, &e), 1);
    CHECK(e[0].function == NULL);

    /* Modules that cannot be used: addresses, and one warning each. */
    static const uint32_t unusable[] = { FAKE_CHANGED, FAKE_GONE, FAKE_VDSO,
                                         FAKE_NOTELF, FAKE_DIR, FAKE_ODDSEGS,
                                         FAKE_CHANGED_AGAIN };
    for (size_t i = 0; i < sizeof unusable / sizeof unusable[0]; i++) {
        const struct mtl_module *m = get_module(NULL, unusable[i]);
        n = mtl_symbolizer_resolve(s, unusable[i], m->base + (a_direct - self.mod[exe].base), &e);
        CHECK_EQ(n, 1);
        CHECK(e[0].function == NULL);
        CHECK(e[0].file == NULL);
        CHECK(strcmp(e[0].module, m->path) == 0);
        CHECK_EQ(e[0].offset, a_direct - self.mod[exe].base);
    }
    snprintf(want, sizeof want, "%s+0x%llx", exe_base,
             (unsigned long long)(a_direct - self.mod[exe].base));
    CHECK(strcmp(mtl_symbol_name(&e[0], buf, sizeof buf), want) == 0);
    struct seen w = { .n = 0 };
    mtl_symbolizer_warnings(s, collect, &w);
    for (int i = 0; i < w.n; i++)
        printf("warning: %s\n", w.msg[i]);
    CHECK_EQ(w.n, 5);
    CHECK(has_warning(&w, self.mod[exe].path, "changed since recording (build id differs)"));
    CHECK(has_warning(&w, "/nonexistent/memtally-test/libgone.so.1", "not found"));
    CHECK(has_warning(&w, "/", "not a regular file"));
    CHECK(has_warning(&w, self.mod[exe].path, "changed since recording (load segments differ)"));
    int notelf = 0;
    for (int i = 0; i < w.n; i++)
        notelf += strncmp(w.msg[i], notelf_path, strlen(notelf_path)) == 0 &&
                  strstr(w.msg[i], ": not a usable ELF file") != NULL;
    CHECK_EQ(notelf, 1);
    w.n = 0;
    mtl_symbolizer_warnings(s, collect, &w); /* nothing new */
    CHECK_EQ(w.n, 0);

    /* Without a build id or segments to check, the recorded path is
     * trusted. */
    n = mtl_symbolizer_resolve(s, FAKE_NOINFO, a_direct, &e);
    CHECK_EQ(n, 1);
    CHECK(e[0].function && strcmp(e[0].function, "direct_caller") == 0);
    CHECK_EQ(e[0].line, line_direct);

    /* Every address of this program's and libc's code (100k of them, most
     * in the middle of instructions): well-formed answers, quickly. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t resolved = 0, named = 0;
    uint32_t scan[2] = { exe, libc_mod };
    for (int m = 0; m < 2 && resolved < 100000; m++) {
        const struct mtl_module *mod = &self.mod[scan[m]];
        for (size_t k = 0; k < mod->nsegments && resolved < 100000; k++) {
            if (!(mod->segments[k].flags & PF_X))
                continue;
            for (uint64_t off = 0; off < mod->segments[k].memsz && resolved < 100000; off++) {
                uint64_t a = mod->base + mod->segments[k].vaddr + off + 1;
                n = mtl_symbolizer_resolve(s, scan[m], a, &e);
                CHECK(n >= 1);
                for (int i = 0; i < n; i++)
                    CHECK_EQ(e[i].inlined, i < n - 1);
                named += e[n - 1].function != NULL;
                resolved++;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("resolved %zu distinct addresses (%zu named) in %.2fs\n", resolved, named, secs);
    CHECK_EQ(resolved, 100000);
    CHECK(named > resolved / 2);
    CHECK(secs < 20); /* under the sanitizers; a few hundred ms without */

    mtl_symbolizer_close(s);
    CHECK_EQ(open_fds(), fds_before);
    mtl_symbolizer_close(NULL);

    check_prefetch(exe, libc_mod, a_direct, a_inline);
    check_options(exe, a_direct); /* last: it changes the modules */
    CHECKS_DONE();
}
