/*
 * preloadable.c: whether LD_PRELOAD can reach a program at all, asked by
 * `memtally record` before it runs one, so that a program we cannot record
 * gets a reason instead of an empty trace.  Two kinds cannot be reached:
 *   - a statically linked program: no dynamic loader runs, so nothing is
 *     preloaded (no PT_INTERP in its program headers);
 *   - a program that runs with privileges it gains at exec (set-user-ID or
 *     set-group-ID to someone else, or file capabilities): the loader runs
 *     it in secure mode, which ignores LD_PRELOAD entries with a slash.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli/cli.h"

/* The file execvp would run for name, into out; 0 or -1. */
static int resolve(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/')) {
        snprintf(out, cap, "%s", name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        snprintf(out, cap, "%.*s%s%s", (int)n, p, n ? "/" : "", name);
        if (access(out, X_OK) == 0)
            return 0;
        if (!end)
            return -1;
        p = end;
    }
}

/* 1 if the ELF file on fd has a PT_INTERP header, 0 if not, -1 when it is
 * not a 64-bit ELF file we can read (a script, say: its interpreter is
 * what runs). */
static int has_interpreter(int fd)
{
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr))
        return -1;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) !=
            (ssize_t)sizeof ph)
            return -1;
        if (ph.p_type == PT_INTERP)
            return 1;
    }
    return 0;
}

const char *cli_unpreloadable(const char *program, char *file, size_t cap)
{
    if (resolve(program, file, cap) < 0)
        return NULL; /* exec will say it is not found */
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    int interp = has_interpreter(fd);
    int ok = fstat(fd, &st) == 0;
    close(fd);
    if (interp == 0)
        return "is statically linked: no dynamic loader runs it, so memtally cannot be "
               "preloaded into it";
    if (!ok)
        return NULL;
    if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
        ((st.st_mode & S_ISGID) && st.st_gid != getegid()))
        return "runs set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it "
               "(secure mode), so memtally cannot be preloaded into it";
    if (getxattr(file, "security.capability", NULL, 0) > 0)
        return "has file capabilities: the loader ignores LD_PRELOAD for it (secure mode), "
               "so memtally cannot be preloaded into it";
    return NULL;
}
