/*
 * debugcache.c: decompressed copies of separate debug files.
 *
 * Distributions compress the DWARF of their debug packages (SHF_COMPRESSED
 * sections, zlib), and libdw inflates every debug section of a file when
 * it first reads its DWARF: for Debian's libc6-dbg, 4 MB of sections into
 * 14 MB, 35 ms at every analysis that names a frame of libc, which is
 * most of the time `report` takes on a trace of a million events.  So the
 * first time such a file is read, a copy with its sections decompressed is
 * written to the cache directory (the index cache's `debug/`), named by
 * its build id, and mapped from then on.  The copy is made with libelf:
 * the same ELF header, program headers and sections in the same order,
 * each compressed one replaced by its contents, laid out anew.
 *
 * Anything that goes wrong (no cache directory, a full disk, a file
 * libelf cannot copy) leaves the original file in use: the cache only
 * saves time.
 */
#include <errno.h>
#include <fcntl.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/internal.h"

#define MAX_COPY (1ull << 30) /* a debug file larger decompressed is not copied */

/* Whether e has a compressed section, and the size it would take
 * decompressed (*size); 0 when it has none. */
static int compressed(Elf *e, uint64_t *size)
{
    Elf_Scn *scn = NULL;
    int any = 0;
    *size = 0;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            return 0;
        if (sh.sh_flags & SHF_COMPRESSED) {
            GElf_Chdr ch;
            if (!gelf_getchdr(scn, &ch))
                return 0;
            *size += ch.ch_size;
            any = 1;
        } else if (sh.sh_type != SHT_NOBITS) {
            *size += sh.sh_size;
        }
    }
    return any;
}

/* Writes to out_fd a copy of in with its sections decompressed. */
static int copy_decompressed(Elf *in, int out_fd)
{
    Elf *out = elf_begin(out_fd, ELF_C_WRITE, NULL);
    GElf_Ehdr eh;
    size_t nph;
    int ok = out && gelf_getehdr(in, &eh) && gelf_newehdr(out, gelf_getclass(in)) &&
             elf_getphdrnum(in, &nph) == 0;
    if (ok && nph) {
        ok = gelf_newphdr(out, nph) != NULL;
        for (size_t i = 0; ok && i < nph; i++) {
            GElf_Phdr ph;
            ok = gelf_getphdr(in, (int)i, &ph) && gelf_update_phdr(out, (int)i, &ph);
        }
    }
    Elf_Scn *scn = NULL;
    while (ok && (scn = elf_nextscn(in, scn))) {
        GElf_Shdr sh;
        ok = gelf_getshdr(scn, &sh) != NULL;
        if (ok && (sh.sh_flags & SHF_COMPRESSED))
            ok = elf_compress(scn, 0, 0) >= 0 && gelf_getshdr(scn, &sh) != NULL;
        Elf_Scn *o = ok ? elf_newscn(out) : NULL;
        ok = o != NULL;
        Elf_Data *d = NULL;
        while (ok && (d = elf_getdata(scn, d))) {
            Elf_Data *od = elf_newdata(o);
            if (!(ok = od != NULL))
                break;
            *od = *d; /* the buffer stays in's until elf_update has written it */
        }
        ok = ok && gelf_update_shdr(o, &sh);
    }
    ok = ok && gelf_update_ehdr(out, &eh) && elf_update(out, ELF_C_WRITE) >= 0;
    if (out)
        elf_end(out);
    return ok ? 0 : -1;
}

static int same_build_id(int fd, const void *id, size_t n)
{
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *bits;
    int same = e && dwelf_elf_gnu_build_id(e, &bits) == (ssize_t)n && !memcmp(bits, id, n);
    if (e)
        elf_end(e);
    return same;
}

/* Makes dir/debug, private; its path, or NULL. */
static char *debug_dir(const char *dir)
{
    size_t n = strlen(dir);
    char *path = malloc(n + 8);
    if (!path)
        return NULL;
    memcpy(path, dir, n);
    memcpy(path + n, "/debug", 7);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        free(path);
        return NULL;
    }
    if (mkdir(path, 0700) < 0 && errno != EEXIST) {
        free(path);
        return NULL;
    }
    return path;
}

int mtl__debug_cache(struct mtl_symbolizer *s, int fd, char **path)
{
    if (!s->cache_dir)
        return fd;
    Elf *in = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *bits;
    ssize_t nid = in ? dwelf_elf_gnu_build_id(in, &bits) : -1;
    uint64_t size;
    if (!in || nid < 2 || nid > MTL_SYM_MAX_BUILD_ID || !compressed(in, &size) ||
        size > MAX_COPY) {
        if (in)
            elf_end(in);
        return fd;
    }
    char name[2 * MTL_SYM_MAX_BUILD_ID + 8];
    for (ssize_t i = 0; i < nid; i++)
        snprintf(name + 2 * i, 3, "%02x", ((const unsigned char *)bits)[i]);
    strcat(name, ".debug");
    char *dir = debug_dir(s->cache_dir);
    char *copy = dir ? malloc(strlen(dir) + strlen(name) + 2) : NULL;
    int cfd = -1;
    if (copy) {
        sprintf(copy, "%s/%s", dir, name);
        /* Made before (a copy cut short by a crash was never renamed to
         * its name). */
        cfd = open(copy, O_RDONLY | O_CLOEXEC);
        if (cfd >= 0 && !same_build_id(cfd, bits, (size_t)nid)) {
            close(cfd); /* not what its name says: made again */
            unlink(copy);
            cfd = -1;
        }
        if (cfd < 0) {
            char *tmp = malloc(strlen(copy) + 8);
            int tfd = -1;
            if (tmp) {
                sprintf(tmp, "%s.XXXXXX", copy);
                tfd = mkostemp(tmp, O_CLOEXEC);
            }
            if (tfd >= 0 && copy_decompressed(in, tfd) == 0 && rename(tmp, copy) == 0)
                cfd = tfd;
            else if (tfd >= 0) {
                close(tfd);
                unlink(tmp);
            }
            free(tmp);
        }
    }
    elf_end(in);
    free(dir);
    if (cfd < 0) {
        free(copy);
        return fd;
    }
    /* Used now: the cache's eviction goes by modification time. */
    futimens(cfd, NULL);
    close(fd);
    free(*path);
    *path = copy;
    return cfd;
}
