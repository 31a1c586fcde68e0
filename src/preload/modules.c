/*
 * modules.c: the module map (executable and shared objects) that lets an
 * analysis resolve addresses later and on another machine: path, load bias,
 * GNU build id and PT_LOAD segments of each object.
 *
 * The map is rescanned with dl_iterate_phdr after every dlopen/dlclose
 * through the hooks, and by the writer whenever glibc's load/unload
 * counters (dlpi_adds, dlpi_subs) moved, which catches objects that libc
 * loads itself (NSS, iconv).  When an object went away its addresses may
 * later mean other code, so the stack table forgets them.
 *
 * The table lives in the region (common/region.h), for the writer, which
 * writes each module's records once; its lock is the region's mod_lock.
 */
#include "preload/preload.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/varint.h"
#include "trace/format.h"

static struct {
    unsigned long long adds, subs;
} md;

#define R (mtl__pl.region)

static void lock(void)
{
    mtl_spin_lock(&R->mod_lock);
}

static void unlock(void)
{
    mtl_spin_unlock(&R->mod_lock);
}

/* With the lock held: a copy of s in the region's path arena. */
static void keep_path(struct mtl_region_module *m, const char *s)
{
    size_t n = strlen(s);
    m->path_off = m->path_len = 0;
    if (R->arena_used + n + 1 > MTL_PATH_ARENA)
        return;
    memcpy(mtl_region_arena(R) + R->arena_used, s, n + 1);
    m->path_off = R->arena_used;
    m->path_len = (uint32_t)n;
    R->arena_used += (uint32_t)n + 1;
}

static int same_path(const struct mtl_region_module *m, const char *s)
{
    return strlen(s) == m->path_len && memcmp(mtl_region_arena(R) + m->path_off, s, m->path_len) == 0;
}

static void read_build_id(struct mtl_region_module *m, const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof *nh;
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= MTL_MODULE_BUILD_ID) {
                memcpy(m->build_id, desc, nh->n_descsz);
                m->build_id_size = nh->n_descsz;
                return;
            }
            p = next;
        }
    }
}

/* The path of the file mapped at addr, from /proc/self/maps, into out;
 * 0, or -1 when none is. */
static int mapped_path(uint64_t addr, char *out, size_t cap)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[8192];
    size_t have = 0;
    int found = -1;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            char *end;
            uint64_t lo = strtoull(line, &end, 16), hi = *end == '-' ? strtoull(end + 1, NULL, 16) : 0;
            char *path = strchr(line, '/');
            if (addr >= lo && addr < hi && path) {
                mtl__fmt(out, cap, "%s", path);
                found = 0;
                break;
            }
            line = nl + 1;
        }
        if (found == 0)
            break;
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            have = 0; /* a line longer than the buffer: not one of ours */
    }
    close(fd);
    return found;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    char exe[4096];
    const char *path = info->dlpi_name;
    md.adds = info->dlpi_adds;
    md.subs = info->dlpi_subs;
    if (!path || !*path) {
        /* The main program (first entry) has no name: ask the kernel. */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        path = exe;
    } else if (path[0] != '/') {
        /* A dlopen of "./x.so": the name is relative to a working
         * directory that may change; the kernel knows the file. */
        for (int i = 0; i < info->dlpi_phnum; i++)
            if (info->dlpi_phdr[i].p_type == PT_LOAD) {
                if (mapped_path(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr, exe,
                                sizeof exe) == 0)
                    path = exe;
                break;
            }
    }
    uint32_t nm = atomic_load(&R->nmodules);
    for (uint32_t i = 0; i < nm; i++) {
        struct mtl_region_module *m = mtl_region_module(R, i);
        if (m->loaded && m->base == info->dlpi_addr && same_path(m, path)) {
            m->seen = 1;
            return 0;
        }
    }
    if (nm >= MTL_MAX_MODULES)
        return 0;
    struct mtl_region_module *m = mtl_region_module(R, nm);
    memset(m, 0, sizeof *m);
    keep_path(m, path);
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && m->nseg < MTL_MODULE_SEGMENTS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        m->seg[m->nseg].vaddr = ph->p_vaddr;
        m->seg[m->nseg].memsz = ph->p_memsz;
        m->seg[m->nseg].flags = ph->p_flags;
        m->nseg++;
    }
    read_build_id(m, info);
    m->load_ns = mtl__now_ns();
    m->loaded = m->seen = 1;
    atomic_store_explicit(&R->nmodules, nm + 1, memory_order_release);
    return 0;
}

static int rescan_locked(void)
{
    int unloaded = 0;
    for (uint32_t i = 0; i < atomic_load(&R->nmodules); i++)
        mtl_region_module(R, i)->seen = 0;
    dl_iterate_phdr(scan_one, NULL);
    for (uint32_t i = 0; i < atomic_load(&R->nmodules); i++) {
        struct mtl_region_module *m = mtl_region_module(R, i);
        if (m->loaded && !m->seen) {
            m->loaded = 0;
            m->unload_ns = mtl__now_ns();
            unloaded = 1;
        }
    }
    return unloaded;
}

int mtl__modules_init(void)
{
    mtl__modules_rescan();
    return 0;
}

void mtl__modules_rescan(void)
{
    lock();
    int unloaded = rescan_locked();
    unlock();
    /* Outside the lock: the stack table's lock is taken with ours free. */
    if (unloaded)
        mtl__stacks_forget_addresses();
}

static int peek_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *c = arg;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

int mtl__modules_changed(void)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(peek_counters, c);
    lock();
    int changed = c[0] != md.adds || c[1] != md.subs;
    unlock();
    return changed;
}

void mtl__modules_atfork(int phase)
{
    if (phase == 0)
        lock();
    else
        unlock(); /* the child's: in the region it goes on in */
}
