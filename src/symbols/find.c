/*
 * find.c: finding the files that hold a module's symbols.
 *
 * A module is recorded with its path, load bias, build id and PT_LOAD
 * segments.  Its binary is the recorded path under the sysroot when that
 * file has the recorded build id (or, when none was recorded, the recorded
 * segments): the build id is what says that a file is the one that ran,
 * since a path may now hold a newer build.  Failing that (and a sysroot is
 * set), the recorded path itself, if its build id matches.  Failing that,
 * the separate debug file with the recorded build id stands in for the
 * binary: it has the same symbols, DWARF and program headers, only no
 * code.  It is looked for as DIR/.build-id/xx/rest.debug in each debug
 * directory (those given, then SYSROOT/usr/lib/debug, then /usr/lib/debug
 * when a sysroot is set), then asked of debuginfod (the debug file, then
 * the executable).  When nothing will do, the module's frames show as
 * addresses and one warning says why.  Modules whose path has no '/' are
 * not files (the vDSO is "linux-vdso.so.1"): addresses, quietly.
 *
 * A binary's own debug file.  libdw asks for it (through the
 * find_debuginfo callback below) when the binary lacks DWARF or a .symtab.
 * We search rather than let libdw's dwfl_standard_find_debuginfo do it,
 * because that one knows neither the sysroot (it looks for
 * /usr/lib/debug/<dir> with <dir> the directory under the sysroot) nor an
 * order we can document, and it asks debuginfod whenever DEBUGINFOD_URLS is
 * set.  The order: by the binary's build id in each debug directory; by
 * the name its .gnu_debuglink section gives, next to the binary, in its
 * .debug/ directory, in DIR/<the binary's recorded directory>/ (and its
 * real directory, when a symlink led there) for each debug directory DIR,
 * and in each given directory itself; then debuginfod.  A candidate must
 * have the binary's build id, or when the binary has none, the CRC its
 * debuglink names: gdb's and libdw's rules.
 *
 * dwz.  Debian's -dbgsym packages move the DWARF that several debug files
 * share into one supplementary file, named with its build id by each debug
 * file's .gnu_debugaltlink section.  libdw asks for it through the same
 * callback, with the altlink's name; we look at that path (under the
 * sysroot), by build id in each debug directory, in DIR/.dwz/, then
 * debuginfod, and check its build id.
 *
 * MiniDebugInfo needs nothing here: libdw reads .gnu_debugdata itself
 * (elfsyms.c).
 */
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "symbols/internal.h"

/* ---- paths ---- */

/* The concatenation of the strings up to a NULL, malloc'd; NULL on out of
 * memory. */
static char *cat(const char *first, ...)
{
    struct mtl_buf b = MTL_BUF_INIT;
    va_list ap;
    va_start(ap, first);
    for (const char *p = first; p; p = va_arg(ap, const char *))
        mtl_buf_adds(&b, p);
    va_end(ap);
    if (b.failed) {
        mtl_buf_release(&b);
        return NULL;
    }
    return mtl_buf_detach(&b);
}

/* The directory part of path ("" for "/x", "." for "x"), malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    return strndup(path, (size_t)(slash - path));
}

/* "xx/rest.debug" of a build id, into out (at least 2 * MAX + 8 bytes). */
static void build_id_name(char *out, const unsigned char *id, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        out[k++] = hex[id[i] >> 4];
        out[k++] = hex[id[i] & 15];
        if (i == 0)
            out[k++] = '/';
    }
    memcpy(out + k, ".debug", sizeof ".debug");
}

static int is_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return errno == EACCES || errno == EPERM ? MTL_EACCES : MTL_ENOENT;
    return S_ISDIR(st.st_mode) ? 0 : MTL_EINVAL;
}

/* A copy of dir without trailing slashes ("/" becomes ""), so that
 * dir + "/name" is a path. */
static char *dir_copy(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 0 && dir[n - 1] == '/')
        n--;
    return strndup(dir, n);
}

int mtl__sym_set_options(struct mtl_symbolizer *s,
                         const struct mtl_symbolizer_options *opt)
{
    static const struct mtl_symbolizer_options defaults = { 0 };
    if (!opt)
        opt = &defaults;
    if (opt->ndebug_dirs && !opt->debug_dirs)
        return MTL_EINVAL;
    int rc = opt->sysroot && *opt->sysroot ? is_dir(opt->sysroot) : 0;
    for (size_t i = 0; i < opt->ndebug_dirs && rc == 0; i++)
        rc = opt->debug_dirs[i] ? is_dir(opt->debug_dirs[i]) : MTL_EINVAL;
    if (rc < 0)
        return rc;
    s->sysroot = dir_copy(opt->sysroot ? opt->sysroot : "");
    s->roots = calloc(opt->ndebug_dirs + 2, sizeof *s->roots);
    if (!s->sysroot || !s->roots)
        return MTL_ENOMEM;
    for (size_t i = 0; i < opt->ndebug_dirs; i++)
        if (!(s->roots[s->nroots++] = dir_copy(opt->debug_dirs[i])))
            return MTL_ENOMEM;
    s->nuser_roots = s->nroots;
    if (!(s->roots[s->nroots++] = cat(s->sysroot, "/usr/lib/debug", NULL)))
        return MTL_ENOMEM;
    if (*s->sysroot && !(s->roots[s->nroots++] = strdup("/usr/lib/debug")))
        return MTL_ENOMEM;
    s->use_debuginfod = !opt->no_debuginfod;
    if (opt->cache_dir && *opt->cache_dir && !(s->cache_dir = strdup(opt->cache_dir)))
        return MTL_ENOMEM;
    return 0;
}

void mtl__sym_release_options(struct mtl_symbolizer *s)
{
    for (size_t i = 0; i < s->nroots; i++)
        free(s->roots[i]);
    free(s->roots);
    free(s->sysroot);
    free(s->cache_dir);
    s->roots = NULL;
    s->sysroot = NULL;
    s->cache_dir = NULL;
    s->nroots = s->nuser_roots = 0;
}

/* ---- candidates for a debug file ---- */

/* The GNU debuglink CRC: CRC-32 (zlib's, polynomial 0xedb88320) of the
 * whole file.  Bit by bit: it is only needed for binaries without a build
 * id, which toolchains have not made for a decade. */
static int file_crc(int fd, uint32_t *out)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0)
        return -1;
    const unsigned char *p = mmap(NULL, (size_t)st.st_size, PROT_READ,
                                  MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return -1;
    uint32_t crc = 0xffffffffu;
    for (off_t i = 0; i < st.st_size; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = crc >> 1 ^ (0xedb88320u & -(crc & 1));
    }
    munmap((void *)p, (size_t)st.st_size);
    *out = ~crc;
    return 0;
}

/* The build id of an open ELF file into id (at most MAX bytes); its
 * length, or 0. */
static size_t fd_build_id(int fd, unsigned char *id)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return 0;
    const void *bits;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
    size_t r = 0;
    if (n > 0 && n <= MTL_SYM_MAX_BUILD_ID) {
        memcpy(id, bits, (size_t)n);
        r = (size_t)n;
    }
    elf_end(elf);
    return r;
}

struct want {                   /* what a debug file must be */
    const unsigned char *id;    /* its build id, or NULL: */
    size_t n;
    uint32_t crc;               /* its CRC (when crc_set) */
    int crc_set;
    dev_t dev;                  /* not the binary itself */
    ino_t ino;
};

/* Opens path if it is the debug file w describes: its descriptor, or -1. */
static int try_candidate(const char *path, const struct want *w)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             !(st.st_dev == w->dev && st.st_ino == w->ino);
    if (ok && w->id) {
        unsigned char id[MTL_SYM_MAX_BUILD_ID];
        ok = fd_build_id(fd, id) == w->n && memcmp(id, w->id, w->n) == 0;
    } else if (ok) {
        uint32_t crc;
        ok = w->crc_set && file_crc(fd, &crc) == 0 && crc == w->crc;
    }
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Tries dir + "/" + name (name may hold '/'); on success sets *found. */
static int try_in(const char *dir, const char *sub, const char *name,
                  const struct want *w, char **found)
{
    char *path = sub ? cat(dir, "/", sub, "/", name, NULL)
                     : cat(dir, "/", name, NULL);
    if (!path)
        return -1;
    int fd = try_candidate(path, w);
    if (fd >= 0)
        *found = path;
    else
        free(path);
    return fd;
}

/* ROOT/.build-id/xx/rest.debug in each debug directory. */
static int try_build_id(struct mtl_symbolizer *s, const struct want *w,
                        char **found)
{
    if (!w->id || w->n < 2 || w->n > MTL_SYM_MAX_BUILD_ID)
        return -1;
    char name[2 * MTL_SYM_MAX_BUILD_ID + 16];
    build_id_name(name, w->id, w->n);
    for (size_t i = 0; i < s->nroots; i++) {
        int fd = try_in(s->roots[i], ".build-id", name, w, found);
        if (fd >= 0)
            return fd;
    }
    return -1;
}

static int try_debuginfod(struct mtl_symbolizer *s, const struct want *w,
                          char **found)
{
    if (!w->id)
        return -1;
    char *path = NULL;
    int fd = mtl__debuginfod_find(s, 0, w->id, w->n, &path);
    if (fd < 0)
        return -1;
    close(fd); /* checked like any candidate */
    fd = try_candidate(path, w);
    if (fd >= 0)
        *found = path;
    else
        free(path);
    return fd;
}

/* The debug file named by binary f's .gnu_debuglink. */
static int try_debuglink(struct mtl_symbolizer *s, struct mtl_symfile *f,
                         const char *name, const struct want *w, char **found)
{
    int fd = -1;
    char *here = dir_of(f->path);
    /* The recorded directory, and the real one (relative to the sysroot)
     * when a symlink led elsewhere, as /usr/lib/debug mirrors real paths. */
    char *dirs[2] = { dir_of(f->recorded), NULL };
    char *real = realpath(f->path, NULL);
    size_t nsys = strlen(s->sysroot);
    if (real && strncmp(real, s->sysroot, nsys) == 0 && real[nsys] == '/') {
        dirs[1] = dir_of(real + nsys);
        if (dirs[1] && dirs[0] && strcmp(dirs[0], dirs[1]) == 0) {
            free(dirs[1]);
            dirs[1] = NULL;
        }
    }
    free(real);
    if (!here || !dirs[0])
        goto done;
    if ((fd = try_in(here, NULL, name, w, found)) >= 0 ||
        (fd = try_in(here, ".debug", name, w, found)) >= 0)
        goto done;
    for (size_t i = 0; i < s->nroots; i++) {
        for (int k = 0; k < 2; k++)
            if (dirs[k] && (fd = try_in(s->roots[i], dirs[k], name, w, found)) >= 0)
                goto done;
        if (i < s->nuser_roots && (fd = try_in(s->roots[i], NULL, name, w, found)) >= 0)
            goto done;
    }
done:
    free(here);
    free(dirs[0]);
    free(dirs[1]);
    return fd;
}

/* The .gnu_debugaltlink of the ELF file at path: the supplementary file's
 * name (malloc'd) and build id.  Returns the build id's length, or 0. */
static size_t read_altlink(const char *path, char **name, unsigned char *id)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t shstrndx;
    if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
            GElf_Shdr mem, *sh = gelf_getshdr(scn, &mem);
            const char *sname = sh ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
            if (!sname || strcmp(sname, ".gnu_debugaltlink") != 0)
                continue;
            Elf_Data *d = elf_getdata(scn, NULL);
            const char *p = d ? d->d_buf : NULL;
            size_t len = p ? strnlen(p, d->d_size) : 0;
            if (len > 0 && len < d->d_size &&
                d->d_size - len - 1 >= 2 &&
                d->d_size - len - 1 <= MTL_SYM_MAX_BUILD_ID &&
                (*name = strndup(p, len))) {
                n = d->d_size - len - 1;
                memcpy(id, p + len + 1, n);
            }
            break;
        }
    }
    if (elf)
        elf_end(elf);
    close(fd);
    return n;
}

/* The dwz supplementary file for the debug data in debug_path, if its
 * altlink is altname.  Returns a descriptor, -1 when not found, or -2 when
 * debug_path has no such altlink (then the request is for a debug file). */
static int find_alt(struct mtl_symbolizer *s, const char *debug_path,
                    const char *altname, char **found)
{
    char *name = NULL;
    unsigned char id[MTL_SYM_MAX_BUILD_ID];
    size_t n = read_altlink(debug_path, &name, id);
    if (!n || strcmp(name, altname) != 0) {
        free(name);
        return -2;
    }
    struct want w = { id, n, 0, 0, 0, 0 };
    int fd;
    char *path = altname[0] == '/' ? cat(s->sysroot, altname, NULL) : NULL;
    if (altname[0] != '/') {
        char *dir = dir_of(debug_path);
        path = dir ? cat(dir, "/", altname, NULL) : NULL;
        free(dir);
    }
    if (path && (fd = try_candidate(path, &w)) >= 0) {
        *found = path;
        goto done;
    }
    free(path);
    if ((fd = try_build_id(s, &w, found)) >= 0)
        goto done;
    const char *base = strrchr(altname, '/');
    base = base ? base + 1 : altname;
    for (size_t i = 0; i < s->nroots; i++)
        if ((fd = try_in(s->roots[i], ".dwz", base, &w, found)) >= 0)
            goto done;
    fd = try_debuginfod(s, &w, found);
done:
    free(name);
    return fd;
}

/* libdw's find_debuginfo callback: a separate debug file for the module
 * (debuglink: its .gnu_debuglink name or NULL), or the dwz file for the
 * debug data in file_name (debuglink: the altlink's name).  Returns a
 * descriptor libdw takes, with the file's name (malloc'd, libdw frees it)
 * in *debuginfo_file_name, or -1. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name,
                          const char *debuglink, GElf_Word crc,
                          char **debuginfo_file_name)
{
    (void)mod, (void)modname, (void)base;
    struct mtl_symfile *f = *userdata;
    if (!f)
        return -1;
    struct mtl_symbolizer *s = f->s;
    char *found = NULL;
    int fd = -2;
    if (debuglink && file_name)
        fd = find_alt(s, file_name, debuglink, &found);
    if (fd == -2) {
        struct stat st;
        struct want w = { f->build_id, (size_t)f->build_id_size, crc,
                          debuglink != NULL && crc != 0, 0, 0 };
        if (stat(f->path, &st) == 0) {
            w.dev = st.st_dev;
            w.ino = st.st_ino;
        }
        if (!w.id || w.n == 0)
            w.id = NULL;
        if ((fd = try_build_id(s, &w, &found)) < 0 &&
            (!debuglink || (fd = try_debuglink(s, f, debuglink, &w, &found)) < 0))
            fd = try_debuginfod(s, &w, &found);
    }
    if (fd < 0) {
        errno = 0;
        return -1;
    }
    fd = mtl__debug_cache(s, fd, &found);
    *debuginfo_file_name = found;
    return fd;
}

/* find_elf is never needed (we report every file by name), and the
 * standard one would ask debuginfod. */
static int no_elf(Dwfl_Module *mod, void **userdata, const char *modname,
                  Dwarf_Addr base, char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
    return -1;
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = no_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* ---- opening files ---- */

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
static void load_file(struct mtl_symfile *f)
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
    f->dwfl = dwfl_begin(&callbacks);
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
    void **userdata;
    Dwarf_Addr lo = 0, hi = 0;
    dwfl_module_info(f->mod, &userdata, &lo, &hi, NULL, NULL, NULL, NULL);
    *userdata = f; /* for find_debuginfo */
    f->lo = lo;
    f->hi = hi;
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(f->mod, &bits, &vaddr);
    if (n > 0) {
        f->build_id = bits;
        f->build_id_size = n;
    }
}

void mtl__symfile_free(struct mtl_symfile *f)
{
    if (!f)
        return;
    if (f->dwfl)
        dwfl_end(f->dwfl);
    mtl__dwarf_release(f);
    free(f->syms);
    free(f->path);
    free(f->recorded);
    free(f);
}

/* The file at path, opened once per symbolizer (recorded: the module's
 * recorded path, for the debuglink search); NULL on out of memory. */
static struct mtl_symfile *get_file(struct mtl_symbolizer *s, const char *path,
                                    const char *recorded)
{
    uint32_t id;
    if (mtl_intern_str(&s->paths, path, &id) < 0)
        return NULL;
    if (id >= s->files_cap) {
        uint32_t cap = s->files_cap ? s->files_cap * 2 : 16;
        while (cap <= id)
            cap *= 2;
        struct mtl_symfile **p = realloc(s->files, cap * sizeof *p);
        if (!p)
            return NULL;
        memset(p + s->files_cap, 0, (cap - s->files_cap) * sizeof *p);
        s->files = p;
        s->files_cap = cap;
    }
    if (s->files[id])
        return s->files[id];
    struct mtl_symfile *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->s = s;
    f->path = strdup(path);
    f->recorded = strdup(recorded);
    if (!f->path || !f->recorded) {
        mtl__symfile_free(f);
        return NULL;
    }
    elf_version(EV_CURRENT);
    load_file(f);
    s->files[id] = f;
    return f;
}

/* ---- a module's binary ---- */

static int has_build_id(const struct mtl_module *m)
{
    return m->build_id && m->build_id_size > 0;
}

static int same_build_id(const struct mtl_symfile *f, const struct mtl_module *m)
{
    return f->build_id && has_build_id(m) &&
           (size_t)f->build_id_size == m->build_id_size &&
           memcmp(f->build_id, m->build_id, m->build_id_size) == 0;
}

/* Whether every recorded PT_LOAD segment is one of the file's. */
static int same_segments(const struct mtl_symfile *f, const struct mtl_module *m)
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

/* path's file if it exists and has m's build id. */
static struct mtl_symfile *by_path_and_id(struct mtl_symbolizer *s,
                                          const struct mtl_module *m,
                                          const char *path, const char *recorded)
{
    if (access(path, F_OK) != 0)
        return NULL;
    struct mtl_symfile *f = get_file(s, path, recorded);
    return f && !f->error[0] && same_build_id(f, m) ? f : NULL;
}

struct mtl_symfile *mtl__sym_find_file(struct mtl_symbolizer *s,
                                       const struct mtl_module *m,
                                       const char *m_path, const char **warning)
{
    if (!strchr(m_path, '/'))
        return NULL;
    char *path = cat(s->sysroot, m_path[0] == '/' ? "" : "/", m_path, NULL);
    if (!path)
        return NULL;
    const char *why;
    struct mtl_symfile *f = get_file(s, path, m_path);
    if (!f)
        goto out;
    if (f->error[0])
        why = f->error;
    else if (has_build_id(m) && !same_build_id(f, m))
        why = "changed since recording (build id differs)";
    else if (!has_build_id(m) && !same_segments(f, m))
        why = "changed since recording (load segments differ)";
    else
        goto out;
    f = NULL;
    if (has_build_id(m)) {
        if (*s->sysroot && (f = by_path_and_id(s, m, m_path, m_path)))
            goto out;
        if (m->build_id_size >= 2 && m->build_id_size <= MTL_SYM_MAX_BUILD_ID) {
            char name[2 * MTL_SYM_MAX_BUILD_ID + 16];
            build_id_name(name, m->build_id, m->build_id_size);
            for (size_t i = 0; i < s->nroots; i++) {
                char *p = cat(s->roots[i], "/.build-id/", name, NULL);
                f = p ? by_path_and_id(s, m, p, m_path) : NULL;
                free(p);
                if (f)
                    goto out;
            }
        }
        for (int exe = 0; exe < 2; exe++) {
            char *p = NULL;
            int fd = mtl__debuginfod_find(s, exe, m->build_id, m->build_id_size, &p);
            if (fd >= 0)
                close(fd);
            f = p ? by_path_and_id(s, m, p, m_path) : NULL;
            free(p);
            if (f)
                goto out;
        }
    }
    *warning = mtl__sym_warning(s, path, why);
out:
    free(path);
    return f;
}
