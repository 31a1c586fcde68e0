/*
 * symbols.c: see symbols.h.
 *
 * Finding the file.  A module is recorded with its path, load bias, build
 * id and PT_LOAD segments.  Its file is the recorded path when that file
 * exists and has the recorded build id (or, when none was recorded, the
 * recorded segments); failing that, the separate debug file named by the
 * build id (/usr/lib/debug/.build-id/xx/rest.debug), which has the same
 * symbols and program headers.  When neither will do, the module's frames
 * show as addresses and one warning says why.  Modules whose path has no
 * '/' are not files (the vDSO is "linux-vdso.so.1"): addresses, quietly.
 *
 * One Dwfl per file, reported at base 0.  Each file gets its own Dwfl,
 * with the file reported with a load bias of 0, so libdw's addresses are
 * the file's own virtual addresses and a frame is looked up at
 * addr - base - 1 (base being the recorded load bias).  This way one Dwfl
 * serves every module that maps the same file (a library dlopened and
 * dlclosed again and again lands at a different base each time), modules
 * that overlapped in time at different moments of the trace never collide
 * in one address space, and the offset we show ("libfoo.so+0x1234") is
 * the one objdump and addr2line take.  libdw's dwfl_standard_find_debuginfo
 * then finds DWARF through the build id, .gnu_debuglink, /usr/lib/debug
 * (and debuginfod when DEBUGINFOD_URLS asks for it, as gdb does).
 *
 * Looking up an address.  The innermost DWARF subprogram containing it
 * comes from a per-CU index (the ranges of every subprogram, nested GNU C
 * functions included, sorted; built the first time an address falls in
 * that CU, one walk over the CU's DIEs).  libdw's dwarf_getscopes would
 * walk the CU's DIE tree on every call, several milliseconds for a large
 * C++ CU, and we resolve tens of thousands of addresses; with the index,
 * every byte of a -O2 -g C++ program's code (84k addresses, up to 23
 * functions deep in inlining) resolves in about 0.3s.  From the
 * subprogram we descend through the lexical blocks and inlined subroutines
 * that contain the address: each DW_TAG_inlined_subroutine is a function
 * inlined into the one above it, at that DIE's DW_AT_call_file and
 * DW_AT_call_line; the innermost function's line comes from the line
 * table.  Names come from DW_AT_linkage_name (demangled), else DW_AT_name,
 * qualified for C++, Rust and D with the namespaces, classes and functions
 * around its declaration (an inlined lambda's operator() has no linkage
 * name), else the ELF symbol table.  Without DWARF the symbol table alone
 * names the function: our own sorted index of its function symbols, since
 * libdw's dwfl_module_addrinfo scans the whole table on every call.  A
 * function's name is computed once per DIE.
 *
 * Everything returned lives until mtl_symbols_close(): results, demangled
 * names and copies of the modules in one arena, file and function names in
 * libdw's own data (each Dwfl stays open until then).
 */
#include "analyze/symbols.h"

#include <assert.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memtally/trace.h"

/* In libstdc++; declared here so that this file stays C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
                            int *status);

#define MAX_ENTRIES 64        /* inlining depth kept for one address */
#define MAX_DIE_DEPTH 32      /* namespace nesting followed by the CU index */
#define MAX_BUILD_ID 64
#define DEBUG_ROOT "/usr/lib/debug/.build-id/"

/* ---- arena: memory released all at once by mtl_symbols_close() ---- */

struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    max_align_t data[];
};

struct arena {
    struct arena_block *head;
};

static void *arena_alloc(struct arena *a, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    struct arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 60000 ? size : 60000;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

static char *arena_strdup(struct arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static void arena_release(struct arena *a)
{
    while (a->head) {
        struct arena_block *b = a->head;
        a->head = b->next;
        free(b);
    }
}

/* ---- map: (a, b) -> non-NULL pointer, open addressing, never shrinks ---- */

struct map_slot {
    uint64_t a, b;
    void *v;                  /* NULL: empty slot */
};

struct map {
    struct map_slot *slots;
    size_t cap, count;        /* cap is 0 or a power of two */
};

static size_t map_hash(uint64_t a, uint64_t b, size_t mask)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & mask;
}

static void *map_get(const struct map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = map_hash(a, b, mask); m->slots[i].v; i = (i + 1) & mask)
        if (m->slots[i].a == a && m->slots[i].b == b)
            return m->slots[i].v;
    return NULL;
}

/* Adds (a, b) -> v; the key must not be in the map.  Returns 0 or -1 (out
 * of memory, the map unchanged). */
static int map_put(struct map *m, uint64_t a, uint64_t b, void *v)
{
    assert(v);
    if ((m->count + 1) * 4 > m->cap * 3) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        struct map_slot *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].v)
                continue;
            size_t j = map_hash(m->slots[i].a, m->slots[i].b, cap - 1);
            while (slots[j].v)
                j = (j + 1) & (cap - 1);
            slots[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    size_t mask = m->cap - 1;
    size_t i = map_hash(a, b, mask);
    while (m->slots[i].v)
        i = (i + 1) & mask;
    m->slots[i].a = a;
    m->slots[i].b = b;
    m->slots[i].v = v;
    m->count++;
    return 0;
}

static void map_release(struct map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

/* ---- state ---- */

struct func_sym {             /* a function symbol of the ELF symbol table */
    uint64_t lo, size;
    const char *name;         /* in libdw's data */
    int rank;                 /* higher: the better name among aliases */
};

struct cu_func {              /* one address range of a DWARF subprogram */
    uint64_t lo, hi;
    Dwarf_Die die;
};

struct cu_index {
    struct cu_func *funcs;    /* sorted by lo */
    size_t n;
};

struct elf_file {             /* an ELF file opened with libdw, shared */
    struct elf_file *next;    /* all files, for close */
    char *path;
    Dwfl *dwfl;               /* NULL when the file is unusable */
    Dwfl_Module *mod;
    const unsigned char *build_id; /* in libdw's data; NULL when none */
    int build_id_size;
    uint64_t lo, hi;          /* the file's address range */
    struct func_sym *syms;    /* sorted by lo, loaded when first needed */
    size_t nsyms;
    int syms_loaded;
    struct cu_func *cus;      /* CU ranges, sorted by lo, for files whose */
    size_t ncus;              /* .debug_aranges libdw cannot use (clang */
    int cus_loaded;           /* emits none): loaded when first needed */
    Dwarf_Addr dwbias;
    char error[200];          /* why unusable, "" when usable */
};

struct module_state {
    const char *path;         /* in the arena */
    uint64_t base;
    struct mtl_segment *segs;
    size_t nsegs;
    struct elf_file *file;    /* NULL: addresses only */
};

struct result {
    int n;
    struct mtl_sym e[];
};

struct mtl_symbols {
    const struct mtl_module *(*get)(void *arg, uint32_t index);
    void *arg;
    struct arena arena;
    struct map results;       /* (module, addr) -> struct result */
    struct map modules;       /* (index, 0) -> struct module_state */
    struct map files;         /* (hash of path, 0) -> struct elf_file */
    struct map names;         /* (mangled string's address, 0) -> name */
    struct map cus;           /* (file, CU offset) -> struct cu_index */
    struct map quals;         /* (file, DIE offset) -> qualified name */
    struct map dnames;        /* (file, DIE offset) -> a function's name */
    struct elf_file *file_list;
    char **warnings;
    size_t nwarnings, capwarnings, reported;
};

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* ---- opening ---- */

static const struct mtl_module *reader_get(void *arg, uint32_t index)
{
    return mtl_reader_module(arg, index);
}

int mtl_symbols_open(struct mtl_symbols **out, const struct mtl_reader *r)
{
    assert(out && r);
    return mtl_symbols_open_modules(out, reader_get, (void *)r);
}

int mtl_symbols_open_modules(struct mtl_symbols **out,
                             const struct mtl_module *(*get)(void *arg,
                                                             uint32_t index),
                             void *arg)
{
    assert(out && get);
    struct mtl_symbols *s = calloc(1, sizeof *s);
    if (!s)
        return MTL_ENOMEM;
    s->get = get;
    s->arg = arg;
    *out = s;
    return 0;
}

static void free_file(struct elf_file *f)
{
    if (f->dwfl)
        dwfl_end(f->dwfl);
    free(f->syms);
    free(f->cus);
    free(f->path);
    free(f);
}

void mtl_symbols_close(struct mtl_symbols *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cus.cap; i++) {
        struct cu_index *ci = s->cus.slots[i].v;
        if (ci) {
            free(ci->funcs);
            free(ci);
        }
    }
    while (s->file_list) {
        struct elf_file *f = s->file_list;
        s->file_list = f->next;
        free_file(f);
    }
    for (size_t i = 0; i < s->nwarnings; i++)
        free(s->warnings[i]);
    free(s->warnings);
    map_release(&s->results);
    map_release(&s->modules);
    map_release(&s->files);
    map_release(&s->names);
    map_release(&s->cus);
    map_release(&s->quals);
    map_release(&s->dnames);
    arena_release(&s->arena);
    free(s);
}

/* ---- warnings ---- */

static void warn(struct mtl_symbols *s, const char *path, const char *why)
{
    char msg[4400];
    snprintf(msg, sizeof msg, "%s: %s; showing addresses", path, why);
    for (size_t i = 0; i < s->nwarnings; i++)
        if (strcmp(s->warnings[i], msg) == 0)
            return;
    if (s->nwarnings == s->capwarnings) {
        size_t cap = s->capwarnings ? s->capwarnings * 2 : 8;
        char **w = realloc(s->warnings, cap * sizeof *w);
        if (!w)
            return; /* a warning lost to out of memory: the frames still show */
        s->warnings = w;
        s->capwarnings = cap;
    }
    char *copy = strdup(msg);
    if (copy)
        s->warnings[s->nwarnings++] = copy;
}

void mtl_symbols_warnings(struct mtl_symbols *s,
                          void (*fn)(const char *message, void *arg),
                          void *arg)
{
    assert(s && fn);
    for (; s->reported < s->nwarnings; s->reported++)
        fn(s->warnings[s->reported], arg);
}

/* ---- files ---- */

static uint64_t hash_string(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h;
}

static const char *open_error(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return "not found";
    case EACCES:
    case EPERM:
        return "permission denied";
    default:
        return "cannot be opened";
    }
}

/* Opens f->path with libdw, or says in f->error why not. */
static void load_file(struct elf_file *f)
{
    struct stat st;
    if (stat(f->path, &st) < 0) {
        snprintf(f->error, sizeof f->error, "%s", open_error(errno));
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(f->error, sizeof f->error, "not a regular file");
        return;
    }
    /* Ask once ourselves, for a clear reason; O_NONBLOCK so that a file
     * replaced by a FIFO since the stat cannot hang us. */
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(f->error, sizeof f->error, "%s", open_error(errno));
        return;
    }
    close(fd);
    f->dwfl = dwfl_begin(&dwfl_callbacks);
    if (!f->dwfl) {
        snprintf(f->error, sizeof f->error, "cannot be read (%s)",
                 dwfl_errmsg(-1));
        return;
    }
    dwfl_report_begin(f->dwfl);
    f->mod = dwfl_report_elf(f->dwfl, f->path, f->path, -1, 0, true);
    dwfl_report_end(f->dwfl, NULL, NULL);
    if (!f->mod) {
        snprintf(f->error, sizeof f->error, "not a usable ELF file (%s)",
                 dwfl_errmsg(-1));
        dwfl_end(f->dwfl);
        f->dwfl = NULL;
        return;
    }
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(f->mod, &bits, &vaddr);
    if (n > 0) {
        f->build_id = bits;
        f->build_id_size = n;
    }
    Dwarf_Addr lo = 0, hi = 0;
    dwfl_module_info(f->mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
    f->lo = lo;
    f->hi = hi;
}

/* The file at path, opened once per symbolizer; NULL on out of memory. */
static struct elf_file *get_file(struct mtl_symbols *s, const char *path)
{
    uint64_t h = hash_string(path);
    struct elf_file *f = map_get(&s->files, h, 0);
    if (f && strcmp(f->path, path) == 0)
        return f;
    int cached = f == NULL; /* a hash collision leaves the first one cached */
    f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->path = strdup(path);
    if (!f->path) {
        free(f);
        return NULL;
    }
    load_file(f);
    if (cached && map_put(&s->files, h, 0, f) < 0) {
        free_file(f);
        return NULL;
    }
    f->next = s->file_list;
    s->file_list = f;
    return f;
}

static int has_build_id(const struct mtl_module *m)
{
    return m->build_id && m->build_id_size > 0;
}

static int same_build_id(const struct elf_file *f, const struct mtl_module *m)
{
    return f->build_id && has_build_id(m) &&
           (size_t)f->build_id_size == m->build_id_size &&
           memcmp(f->build_id, m->build_id, m->build_id_size) == 0;
}

/* Whether every recorded PT_LOAD segment is one of the file's. */
static int same_segments(const struct elf_file *f, const struct mtl_module *m)
{
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(f->mod, &bias);
    size_t n;
    if (!m->segments)
        return 1; /* nothing to compare */
    if (!elf || elf_getphdrnum(elf, &n) < 0)
        return 0;
    for (size_t i = 0; i < m->nsegments; i++) {
        int found = 0;
        for (size_t j = 0; j < n && !found; j++) {
            GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)j, &mem);
            found = ph && ph->p_type == PT_LOAD &&
                    ph->p_vaddr == m->segments[i].vaddr &&
                    ph->p_memsz == m->segments[i].memsz;
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* The usable file for module m, or NULL (then maybe a warning). */
static struct elf_file *find_file(struct mtl_symbols *s,
                                  const struct mtl_module *m,
                                  const char *path)
{
    int is_file = strchr(path, '/') != NULL;
    const char *why = NULL;
    if (is_file) {
        struct elf_file *f = get_file(s, path);
        if (!f)
            return NULL;
        if (f->error[0])
            why = f->error;
        else if (has_build_id(m) && !same_build_id(f, m))
            why = "changed since recording (build id differs)";
        else if (!has_build_id(m) && !same_segments(f, m))
            why = "changed since recording (load segments differ)";
        else
            return f;
    }
    if (has_build_id(m) && m->build_id_size >= 2 &&
        m->build_id_size <= MAX_BUILD_ID) {
        char dpath[sizeof DEBUG_ROOT + 2 * MAX_BUILD_ID + 16];
        size_t k = (size_t)snprintf(dpath, sizeof dpath, "%s%02x/", DEBUG_ROOT,
                                    m->build_id[0]);
        for (size_t i = 1; i < m->build_id_size; i++)
            k += (size_t)snprintf(dpath + k, sizeof dpath - k, "%02x",
                                  m->build_id[i]);
        snprintf(dpath + k, sizeof dpath - k, ".debug");
        if (access(dpath, F_OK) == 0) {
            struct elf_file *d = get_file(s, dpath);
            if (d && !d->error[0] && same_build_id(d, m))
                return d;
        }
    }
    if (why)
        warn(s, path, why);
    return NULL;
}

/* The state of module index, NULL when there is no such module (yet). */
static struct module_state *get_module(struct mtl_symbols *s, uint32_t index)
{
    if (index == UINT32_MAX)
        return NULL;
    struct module_state *ms = map_get(&s->modules, index, 0);
    if (ms)
        return ms;
    const struct mtl_module *m = s->get(s->arg, index);
    if (!m)
        return NULL;
    ms = arena_alloc(&s->arena, sizeof *ms);
    if (!ms)
        return NULL;
    memset(ms, 0, sizeof *ms);
    ms->path = arena_strdup(&s->arena, m->path ? m->path : "");
    ms->base = m->base;
    if (m->nsegments && m->segments &&
        m->nsegments < SIZE_MAX / sizeof *ms->segs) {
        ms->segs = arena_alloc(&s->arena, m->nsegments * sizeof *ms->segs);
        if (ms->segs) {
            memcpy(ms->segs, m->segments, m->nsegments * sizeof *ms->segs);
            ms->nsegs = m->nsegments;
        }
    }
    if (!ms->path)
        return NULL;
    ms->file = find_file(s, m, ms->path);
    if (map_put(&s->modules, index, 0, ms) < 0)
        return NULL;
    return ms;
}

/* ---- names ---- */

static int is_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return 0;
    return 1;
}

/* Writes code point c as UTF-8 at out; returns the bytes written. */
static size_t put_utf8(char *out, unsigned long c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3f));
    out[2] = (char)(0x80 | (c >> 6 & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Decodes, in place, the escapes of Rust's legacy mangling in a demangled
 * path: "$LT$" is '<', "$u20$" is ' ', ".." is "::", and a path element
 * that starts with "_$" loses its '_'.  The result is never longer. */
static void rust_unescape(char *s)
{
    static const struct { const char *esc; char c; } table[] = {
        { "$SP$", '@' }, { "$BP$", '*' }, { "$RF$", '&' }, { "$LT$", '<' },
        { "$GT$", '>' }, { "$LP$", '(' }, { "$RP$", ')' }, { "$C$", ',' },
    };
    char *out = s;
    const char *p = s;
    int element_start = 1;
    while (*p) {
        if (element_start && p[0] == '_' && p[1] == '$')
            p++;
        element_start = 0;
        if (p[0] == ':' && p[1] == ':') {
            *out++ = *p++;
            *out++ = *p++;
            element_start = 1;
            continue;
        }
        if (p[0] == '.') {
            if (p[1] == '.') {
                *out++ = ':';
                *out++ = ':';
                p += 2;
            } else {
                *out++ = *p++;
            }
            continue;
        }
        if (p[0] == '$') {
            size_t i, done = 0;
            for (i = 0; i < sizeof table / sizeof table[0] && !done; i++) {
                size_t n = strlen(table[i].esc);
                if (strncmp(p, table[i].esc, n) == 0) {
                    *out++ = table[i].c;
                    p += n;
                    done = 1;
                }
            }
            if (!done && p[1] == 'u') {
                const char *end = strchr(p + 2, '$');
                size_t n = end ? (size_t)(end - (p + 2)) : 0;
                if (n >= 1 && n <= 6 && is_hex(p + 2, n)) {
                    unsigned long c = strtoul(p + 2, NULL, 16);
                    if (c > 0 && c <= 0x10ffff && !(c >= 0xd800 && c < 0xe000)) {
                        out += put_utf8(out, c);
                        p = end + 1;
                        done = 1;
                    }
                }
            }
            if (done)
                continue;
        }
        *out++ = *p++;
    }
    *out = '\0';
}

char *mtl_sym_demangle(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    /* LLVM's ThinLTO adds ".llvm.<number>" to local symbols it promotes;
     * the demangler would print it as a clone suffix. */
    const char *llvm = strstr(name, ".llvm.");
    char *copy = NULL;
    if (llvm) {
        copy = strndup(name, (size_t)(llvm - name));
        if (!copy)
            return NULL;
        name = copy;
    }
    /* Rust's legacy mangling ends its path with a hash element,
     * "17h0123456789abcdefE"; Itanium C++ names never do in practice. */
    size_t len = strlen(name);
    int rust = len > 23 && name[len - 1] == 'E' &&
               memcmp(name + len - 20, "17h", 3) == 0 &&
               is_hex(name + len - 17, 16);
    int status = -1;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    free(copy);
    if (status != 0 || !d) {
        free(d);
        return NULL;
    }
    size_t n = strlen(d);
    if (rust && n > 19 && memcmp(d + n - 19, "::h", 3) == 0 &&
        is_hex(d + n - 16, 16)) {
        d[n - 19] = '\0';
        rust_unescape(d);
    }
    return d;
}

/* The readable form of a symbol name, demangled once per string (names
 * live in libdw's data, so the string's address is its identity). */
static const char *readable(struct mtl_symbols *s, const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return name;
    const char *known = map_get(&s->names, (uintptr_t)name, 0);
    if (known)
        return known;
    char *d = mtl_sym_demangle(name);
    const char *r = name;
    if (d) {
        char *copy = arena_strdup(&s->arena, d);
        free(d);
        if (copy)
            r = copy;
    }
    map_put(&s->names, (uintptr_t)name, 0, (void *)r); /* or not cached */
    return r;
}

static int lang_has_scopes(Dwarf_Die *cu)
{
    switch (dwarf_srclang(cu)) {
    case DW_LANG_C_plus_plus:
    case DW_LANG_C_plus_plus_03:
    case DW_LANG_C_plus_plus_11:
    case DW_LANG_C_plus_plus_14:
    case DW_LANG_Rust:
    case DW_LANG_D:
        return 1;
    default:
        return 0;
    }
}

static const char *die_name(struct mtl_symbols *s, struct elf_file *f,
                            Dwarf_Die *die, int scoped, int depth);

/* name, qualified by the namespaces, classes and functions around the DIE
 * that declares it: "std::vector<int>::vector", or for a lambda's
 * operator() inlined somewhere, "main::<lambda>::operator()". */
static const char *qualified(struct mtl_symbols *s, struct elf_file *f,
                             Dwarf_Die *die, const char *name, int depth)
{
    /* Follow DW_AT_abstract_origin and DW_AT_specification to the DIE that
     * carries the name: that one sits in the class or namespace. */
    Dwarf_Die decl = *die;
    for (int i = 0; i < 8 && !dwarf_hasattr(&decl, DW_AT_name); i++) {
        Dwarf_Attribute at;
        Dwarf_Attribute *a = dwarf_attr(&decl, DW_AT_abstract_origin, &at);
        if (!a)
            a = dwarf_attr(&decl, DW_AT_specification, &at);
        Dwarf_Die next;
        if (!a || !dwarf_formref_die(a, &next))
            break;
        decl = next;
    }
    Dwarf_Off off = dwarf_dieoffset(&decl);
    const char *known = map_get(&s->quals, (uintptr_t)f, off);
    if (known)
        return known;
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(&decl, &scopes);
    char buf[8192];
    size_t len = 0;
    for (int i = n - 1; i >= 1; i--) {
        const char *part;
        switch (dwarf_tag(&scopes[i])) {
        case DW_TAG_namespace:
            part = dwarf_diename(&scopes[i]);
            if (!part)
                part = "(anonymous namespace)";
            break;
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
            part = dwarf_diename(&scopes[i]);
            if (!part)
                part = "<lambda>"; /* what else has member functions */
            break;
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
        case DW_TAG_module:
            part = dwarf_diename(&scopes[i]);
            break;
        case DW_TAG_subprogram:
            /* A local class: its function's own full name replaces the
             * scopes outside it. */
            part = depth < 4 ? die_name(s, f, &scopes[i], 1, depth + 1) : NULL;
            if (part)
                len = 0;
            break;
        default:
            part = NULL;
        }
        if (part && len < sizeof buf)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s::", part);
    }
    free(scopes);
    const char *r = name;
    if (len > 0 && len < sizeof buf) {
        snprintf(buf + len, sizeof buf - len, "%s", name);
        char *copy = arena_strdup(&s->arena, buf);
        if (copy)
            r = copy;
    }
    map_put(&s->quals, (uintptr_t)f, off, (void *)r); /* or not cached */
    return r;
}

/* The name of a subprogram or inlined subroutine DIE, NULL when none;
 * scoped: qualify a bare DW_AT_name (C++, Rust, D). */
static const char *die_name(struct mtl_symbols *s, struct elf_file *f,
                            Dwarf_Die *die, int scoped, int depth)
{
    static const char none[] = ""; /* cached "no name" */
    Dwarf_Off off = dwarf_dieoffset(die);
    const char *name = map_get(&s->dnames, (uintptr_t)f, off);
    if (name)
        return name == none ? NULL : name;
    Dwarf_Attribute at, *a = dwarf_attr_integrate(die, DW_AT_linkage_name, &at);
    if (!a)
        a = dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at);
    name = dwarf_formstring(a);
    if (name) {
        name = readable(s, name);
    } else {
        name = dwarf_diename(die);
        if (name && scoped)
            name = qualified(s, f, die, name, depth);
    }
    map_put(&s->dnames, (uintptr_t)f, off, (void *)(name ? name : none));
    return name;
}

/* ---- the ELF symbol table ---- */

static int cmp_sym(const void *a, const void *b)
{
    const struct func_sym *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return y->rank - x->rank;
}

static void load_syms(struct elf_file *f)
{
    f->syms_loaded = 1;
    int n = dwfl_module_getsymtab(f->mod);
    if (n <= 0)
        return;
    f->syms = malloc((size_t)n * sizeof *f->syms);
    if (!f->syms)
        return;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr,
                                                   &shndx, NULL, NULL);
        if (!name || !*name || shndx == SHN_UNDEF)
            continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC)
            continue;
        int bind = GELF_ST_BIND(sym.st_info);
        struct func_sym *fs = &f->syms[f->nsyms++];
        fs->lo = addr;
        fs->size = sym.st_size;
        fs->name = name;
        fs->rank = (bind == STB_GLOBAL ? 8 : bind == STB_WEAK ? 4 : 0) +
                   (name[0] != '_' ? 2 : 0) + (sym.st_size > 0);
    }
    if (f->nsyms > 1)
        qsort(f->syms, f->nsyms, sizeof *f->syms, cmp_sym);
}

/* The name of the function symbol containing a, NULL when none. */
static const char *symtab_name(struct elf_file *f, uint64_t a)
{
    if (!f->syms_loaded)
        load_syms(f);
    size_t lo = 0, hi = f->nsyms; /* first symbol with lo > a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->syms[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct func_sym *best = NULL;
    /* Aliases share an address (sorted best first); a sized symbol may
     * cover a past a sizeless one. */
    for (size_t i = lo, k = 0; i-- > 0 && k < 64; k++) {
        const struct func_sym *fs = &f->syms[i];
        if (best && fs->lo != best->lo)
            break;
        if (fs->size > 0 && a - fs->lo < fs->size)
            best = fs;
    }
    if (!best && f->syms[lo - 1].size == 0) {
        best = &f->syms[lo - 1];
        while (best > f->syms && best[-1].lo == best->lo)
            best--;
    }
    return best ? best->name : NULL;
}

/* ---- DWARF ---- */

static int cmp_func(const void *a, const void *b)
{
    const struct cu_func *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int add_ranges(struct cu_index *ci, size_t *cap, Dwarf_Die *die)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (hi <= lo)
            continue;
        if (ci->n == *cap) {
            size_t c = *cap ? *cap * 2 : 64;
            struct cu_func *p = realloc(ci->funcs, c * sizeof *p);
            if (!p)
                return -1;
            ci->funcs = p;
            *cap = c;
        }
        ci->funcs[ci->n].lo = lo;
        ci->funcs[ci->n].hi = hi;
        ci->funcs[ci->n].die = *die;
        ci->n++;
    }
    return 0;
}

/* Adds the ranges of the subprograms below die, looking into namespaces
 * and types (where some compilers put methods) and into functions and
 * their blocks (GNU C nested functions), not into anything else. */
static int index_dies(struct cu_index *ci, size_t *cap, Dwarf_Die *die,
                      int depth)
{
    Dwarf_Die child;
    if (depth > MAX_DIE_DEPTH || dwarf_child(die, &child) != 0)
        return 0;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
            if ((dwarf_hasattr(&child, DW_AT_low_pc) ||
                 dwarf_hasattr(&child, DW_AT_ranges)) &&
                add_ranges(ci, cap, &child) < 0)
                return -1;
            if (index_dies(ci, cap, &child, depth + 1) < 0)
                return -1;
            break;
        case DW_TAG_lexical_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            if (index_dies(ci, cap, &child, depth + 1) < 0)
                return -1;
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static struct cu_index *get_cu_index(struct mtl_symbols *s,
                                     struct elf_file *f, Dwarf_Die *cu)
{
    Dwarf_Off off = dwarf_dieoffset(cu);
    struct cu_index *ci = map_get(&s->cus, (uintptr_t)f, off);
    if (ci)
        return ci;
    ci = calloc(1, sizeof *ci);
    if (!ci)
        return NULL;
    size_t cap = 0;
    if (index_dies(ci, &cap, cu, 0) < 0 ||
        map_put(&s->cus, (uintptr_t)f, off, ci) < 0) {
        free(ci->funcs);
        free(ci);
        return NULL;
    }
    if (ci->n > 1)
        qsort(ci->funcs, ci->n, sizeof *ci->funcs, cmp_func);
    return ci;
}

/* The innermost subprogram containing pc, into *fn.  Returns 1 or 0. */
static int find_subprogram(struct mtl_symbols *s, struct elf_file *f,
                           Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *fn)
{
    struct cu_index *ci = get_cu_index(s, f, cu);
    if (!ci)
        return 0;
    size_t lo = 0, hi = ci->n; /* first range with lo > pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ci->funcs[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Ranges do not overlap but for nested functions: the smallest wins. */
    const struct cu_func *best = NULL;
    for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++) {
        const struct cu_func *cf = &ci->funcs[i];
        if (pc < cf->hi && (!best || cf->hi - cf->lo < best->hi - best->lo))
            best = cf;
    }
    if (!best)
        return 0;
    *fn = best->die;
    return 1;
}

/* Fills chain[0] = fn, chain[1..] = the inlined subroutines containing pc,
 * outermost first; returns the number of DIEs. */
static int inline_chain(Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die *chain,
                        int cap)
{
    int n = 0;
    chain[n++] = *fn;
    Dwarf_Die cur = *fn;
    for (int depth = 0; depth < 256 && n < cap; depth++) {
        Dwarf_Die child;
        int found = 0;
        if (dwarf_child(&cur, &child) == 0) {
            do {
                int tag = dwarf_tag(&child);
                if (tag != DW_TAG_inlined_subroutine &&
                    tag != DW_TAG_lexical_block &&
                    tag != DW_TAG_try_block && tag != DW_TAG_catch_block)
                    continue;
                if (dwarf_haspc(&child, pc) == 1) {
                    if (tag == DW_TAG_inlined_subroutine)
                        chain[n++] = child;
                    cur = child;
                    found = 1;
                    break;
                }
            } while (dwarf_siblingof(&child, &child) == 0);
        }
        if (!found)
            break;
    }
    return n;
}

/* Indexes the address ranges of the file's compilation units. */
static void load_cus(struct elf_file *f)
{
    f->cus_loaded = 1;
    Dwarf *dw = dwfl_module_getdwarf(f->mod, &f->dwbias);
    if (!dw)
        return;
    size_t cap = 0;
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t unit_type;
    while (dwarf_get_units(dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
        if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton)
            continue;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            if (hi <= lo)
                continue;
            if (f->ncus == cap) {
                size_t c = cap ? cap * 2 : 64;
                struct cu_func *p = realloc(f->cus, c * sizeof *p);
                if (!p)
                    goto done;
                f->cus = p;
                cap = c;
            }
            f->cus[f->ncus].lo = lo;
            f->cus[f->ncus].hi = hi;
            f->cus[f->ncus].die = cudie;
            f->ncus++;
        }
    }
done:
    if (f->ncus > 1)
        qsort(f->cus, f->ncus, sizeof *f->cus, cmp_func);
}

/* The CU containing file address a, into *cu with the DWARF bias (DWARF
 * address = a - bias).  Returns 1 or 0. */
static int find_cu(struct elf_file *f, uint64_t a, Dwarf_Die *cu,
                   Dwarf_Addr *bias)
{
    Dwarf_Die *found = dwfl_module_addrdie(f->mod, a, bias);
    if (found) {
        *cu = *found;
        return 1;
    }
    /* libdw 0.188 finds CUs only through .debug_aranges: clang has none. */
    if (!f->cus_loaded)
        load_cus(f);
    uint64_t pc = a - f->dwbias;
    size_t lo = 0, hi = f->ncus; /* first range with lo > pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->cus[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || pc >= f->cus[lo - 1].hi)
        return 0;
    *cu = f->cus[lo - 1].die;
    *bias = f->dwbias;
    return 1;
}

/* ---- resolving ---- */

static int in_segments(const struct module_state *ms, uint64_t a)
{
    if (!ms->nsegs)
        return 1;
    for (size_t i = 0; i < ms->nsegs; i++)
        if (a >= ms->segs[i].vaddr && a - ms->segs[i].vaddr < ms->segs[i].memsz)
            return 1;
    return 0;
}

static int v_ok(Dwarf_Attribute *at, Dwarf_Word *v)
{
    return dwarf_formudata(at, v) == 0;
}

/* Where inlined subroutine inl was inlined: the position in its caller. */
static void call_site(Dwarf_Die *inl, Dwarf_Files *files, size_t nfiles,
                      const char **file, unsigned *line)
{
    Dwarf_Attribute at;
    Dwarf_Word v;
    *file = NULL;
    *line = 0;
    if (files && v_ok(dwarf_attr(inl, DW_AT_call_file, &at), &v) && v < nfiles)
        *file = dwarf_filesrc(files, v, NULL, NULL);
    if (v_ok(dwarf_attr(inl, DW_AT_call_line, &at), &v) && v <= UINT32_MAX)
        *line = (unsigned)v;
}

/* Resolves file address a (the call instruction) into e[0..cap); returns
 * the number of entries filled, 0 when unknown. */
static int resolve_in_file(struct mtl_symbols *s, struct elf_file *f,
                           uint64_t a, struct mtl_sym *e, int cap)
{
    if (a < f->lo || a >= f->hi)
        return 0;
    const char *file = NULL;
    unsigned line = 0;
    Dwarf_Addr bias = 0;
    Dwarf_Die cu, fn;
    if (find_cu(f, a, &cu, &bias)) {
        Dwarf_Line *l = dwarf_getsrc_die(&cu, a - bias);
        int lineno = 0;
        if (l && (file = dwarf_linesrc(l, NULL, NULL)) &&
            dwarf_lineno(l, &lineno) == 0 && lineno > 0)
            line = (unsigned)lineno;
        if (find_subprogram(s, f, &cu, a - bias, &fn)) {
            Dwarf_Die chain[MAX_ENTRIES];
            int n = inline_chain(&fn, a - bias, chain,
                                 cap < MAX_ENTRIES ? cap : MAX_ENTRIES);
            int scoped = lang_has_scopes(&cu);
            Dwarf_Files *files = NULL;
            size_t nfiles = 0;
            if (n > 1 && dwarf_getsrcfiles(&cu, &files, &nfiles) != 0)
                files = NULL;
            for (int i = n - 1, k = 0; i >= 0; i--, k++) {
                e[k].function = die_name(s, f, &chain[i], scoped, 0);
                e[k].file = file;
                e[k].line = line;
                e[k].inlined = i > 0;
                if (i > 0)
                    call_site(&chain[i], files, nfiles, &file, &line);
            }
            if (!e[n - 1].function)
                e[n - 1].function = readable(s, symtab_name(f, a));
            return n;
        }
    }
    e[0].function = readable(s, symtab_name(f, a));
    e[0].file = file;
    e[0].line = line;
    e[0].inlined = 0;
    return e[0].function || file ? 1 : 0;
}

int mtl_symbols_resolve(struct mtl_symbols *s, uint32_t module, uint64_t addr,
                        const struct mtl_sym **out)
{
    assert(s && out);
    struct result *r = map_get(&s->results, module, addr);
    if (r) {
        *out = r->e;
        return r->n;
    }
    struct module_state *ms = get_module(s, module);
    struct mtl_sym e[MAX_ENTRIES];
    int n = 0;
    uint64_t offset = ms ? addr - ms->base : addr;
    if (ms && ms->file && in_segments(ms, offset - 1))
        n = resolve_in_file(s, ms->file, offset - 1, e, MAX_ENTRIES);
    if (n == 0) {
        memset(&e[0], 0, sizeof e[0]);
        n = 1;
    }
    r = arena_alloc(&s->arena, sizeof *r + (size_t)n * sizeof r->e[0]);
    if (!r)
        return MTL_ENOMEM;
    r->n = n;
    for (int i = 0; i < n; i++) {
        r->e[i] = e[i];
        r->e[i].module = ms ? ms->path : "";
        r->e[i].offset = offset;
    }
    /* A module not defined yet may be defined later: not cached then. */
    if ((ms || module == UINT32_MAX) && map_put(&s->results, module, addr, r) < 0)
        return MTL_ENOMEM;
    *out = r->e;
    return n;
}

const char *mtl_sym_name(const struct mtl_sym *e, char *buf, size_t cap)
{
    assert(e && buf && cap > 0);
    if (e->function)
        return e->function;
    const char *m = e->module ? e->module : "";
    const char *base = strrchr(m, '/');
    base = base ? base + 1 : m;
    if (*base)
        snprintf(buf, cap, "%s+0x%" PRIx64, base, e->offset);
    else
        snprintf(buf, cap, "0x%" PRIx64, e->offset);
    return buf;
}
