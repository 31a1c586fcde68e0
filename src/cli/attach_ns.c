/*
 * attach_ns.c: see attach_ns.h.  The libraries libmemtally.so needs
 * besides libc's own (libunwind, libzstd and theirs) are found by their
 * DT_NEEDED names in the usual directories, copied beside it, and listed
 * deepest first: the process dlopens each by its full path, so that when
 * libmemtally.so asks for libunwind.so.8 the loader finds it loaded
 * already, whatever the container's own library path holds.  libc, libm,
 * libpthread, libdl and the loader are the process's own.
 */
#include "cli/attach_ns.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const system_libs[] = {
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
};

static const char *const lib_dirs[] = {
    "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
    "/usr/lib", "/usr/local/lib",
};

static int is_system(const char *soname)
{
    for (size_t i = 0; i < sizeof system_libs / sizeof *system_libs; i++)
        if (!strcmp(soname, system_libs[i]))
            return 1;
    return 0;
}

/* The DT_NEEDED names of an ELF file, into names (n at most). */
static size_t needed(const char *path, char names[][64], size_t n)
{
    size_t got = 0;
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    Elf_Scn *scn = NULL;
    while (e && (scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Dyn dyn;
            const char *name;
            if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_NEEDED && got < n &&
                (name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)) && strlen(name) < 64)
                strcpy(names[got++], name);
        }
    }
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    return got;
}

static int find_lib(const char *soname, char *out, size_t cap)
{
    for (size_t i = 0; i < sizeof lib_dirs / sizeof *lib_dirs; i++) {
        snprintf(out, cap, "%s/%s", lib_dirs[i], soname);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

/* Copies descriptor in to out, closing both: 0, or -1 with errno. */
static int copy_fd(int in, int out)
{
    char buf[65536];
    ssize_t n = in < 0 || out < 0 ? -1 : 0;
    while (n >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            n = -1;
    int e = errno;
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) < 0 && n == 0)
        return -1;
    errno = e;
    return n < 0 ? -1 : 0;
}

static int copy_file(const char *from, int dirfd, const char *name, mode_t mode)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = in >= 0 ? openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) : -1;
    if (copy_fd(in, out) < 0)
        return -1;
    return fchmodat(dirfd, name, mode, 0);
}

/* Adds path's needs (deepest first), then path itself. */
static int stage_one(struct ns_stage *s, const char *path, const char *name, int depth,
                     char *why, size_t cap)
{
    for (size_t i = 0; i < s->nload; i++)
        if (!strcmp(s->file[i], name))
            return 0; /* staged already */
    char deps[16][64], dep[PATH_MAX];
    size_t n = depth < 4 ? needed(path, deps, 16) : 0;
    for (size_t i = 0; i < n; i++) {
        if (is_system(deps[i]))
            continue;
        if (find_lib(deps[i], dep, sizeof dep) < 0) {
            snprintf(why, cap, "cannot find %s, which %s needs", deps[i], name);
            return -1;
        }
        if (stage_one(s, dep, deps[i], depth + 1, why, cap) < 0)
            return -1;
    }
    if (s->nload == NS_MAX_LIBS || copy_file(path, s->dirfd, name, 0644) < 0) {
        snprintf(why, cap, "cannot copy %s into the process's /tmp: %s", path, strerror(errno));
        return -1;
    }
    snprintf(s->file[s->nload], sizeof s->file[0], "%s", name);
    snprintf(s->load[s->nload], sizeof s->load[0], "%.*s/%s", PATH_MAX - 80, s->inside, name);
    s->nload++;
    return 0;
}

int ns_stage(long pid, const char *lib, struct ns_stage *s, char *why, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->dirfd = s->tmpfd = -1;
    snprintf(s->outside, sizeof s->outside, "/proc/%ld/root/tmp/memtally-attach-XXXXXX", pid);
    if (!mkdtemp(s->outside)) {
        snprintf(why, cap, "cannot make a directory in pid %ld's /tmp: %s", pid, strerror(errno));
        s->outside[0] = '\0';
        return -1;
    }
    /* The process writes its trace here, whoever it runs as. */
    chmod(s->outside, 0777);
    snprintf(s->inside, sizeof s->inside, "%s", strstr(s->outside, "/tmp/memtally-attach-"));
    /* Held open: they stay reachable if the process (and its /proc) ends. */
    s->dirfd = open(s->outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *strrchr(s->outside, '/') = '\0';
    s->tmpfd = open(s->outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    s->outside[strlen(s->outside)] = '/';
    if (s->dirfd < 0 || s->tmpfd < 0) {
        snprintf(why, cap, "cannot open %s: %s", s->outside, strerror(errno));
        return -1;
    }
    const char *base = strrchr(lib, '/');
    return stage_one(s, lib, base ? base + 1 : lib, 0, why, cap);
}

int ns_collect(struct ns_stage *s, const char *name, const char *out, char *why, size_t cap)
{
    int in = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
    int fd = in >= 0 ? open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (copy_fd(in, fd) < 0) {
        snprintf(why, cap, "cannot bring the trace out to %s: %s", out, strerror(errno));
        return -1;
    }
    return 0;
}

void ns_cleanup(struct ns_stage *s)
{
    if (s->dirfd >= 0) {
        for (size_t i = 0; i < s->nload; i++)
            unlinkat(s->dirfd, s->file[i], 0);
        unlinkat(s->dirfd, "trace.mtly", 0);
        close(s->dirfd);
        s->dirfd = -1;
    }
    if (s->tmpfd >= 0) {
        unlinkat(s->tmpfd, strrchr(s->inside, '/') + 1, AT_REMOVEDIR);
        close(s->tmpfd);
        s->tmpfd = -1;
    }
}
