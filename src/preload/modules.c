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

#define MAX_MODULES 8192
#define MAX_SEGMENTS 8
#define MAX_BUILD_ID 64
#define PATH_ARENA (4u << 20)

struct module {
    const char *path;
    uint64_t base;
    uint8_t build_id[MAX_BUILD_ID];
    uint32_t build_id_size;
    uint32_t nseg;
    struct { uint64_t vaddr, memsz; uint32_t flags; } seg[MAX_SEGMENTS];
    uint64_t load_ns, unload_ns;
    int loaded, seen, emitted_load, emitted_unload;
};

static struct {
    pthread_mutex_t mu;
    struct module *mod;     /* MAX_MODULES entries, mmap'd */
    uint32_t n;
    char *arena;            /* path strings */
    size_t arena_used;
    unsigned long long adds, subs;
    uint32_t emit_next;     /* first module whose load may be unwritten */
} md = { .mu = PTHREAD_MUTEX_INITIALIZER };

static const char *keep_path(const char *s)
{
    size_t n = strlen(s) + 1;
    if (md.arena_used + n > PATH_ARENA)
        return "";
    char *p = md.arena + md.arena_used;
    memcpy(p, s, n);
    md.arena_used += n;
    return p;
}

static void read_build_id(struct module *m, const struct dl_phdr_info *info)
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
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= MAX_BUILD_ID) {
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
    for (uint32_t i = 0; i < md.n; i++) {
        struct module *m = &md.mod[i];
        if (m->loaded && m->base == info->dlpi_addr && strcmp(m->path, path) == 0) {
            m->seen = 1;
            return 0;
        }
    }
    if (md.n >= MAX_MODULES)
        return 0;
    struct module *m = &md.mod[md.n];
    memset(m, 0, sizeof *m);
    m->path = keep_path(path);
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && m->nseg < MAX_SEGMENTS; i++) {
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
    md.n++;
    return 0;
}

static void rescan_locked(void)
{
    int unloaded = 0;
    for (uint32_t i = 0; i < md.n; i++)
        md.mod[i].seen = 0;
    dl_iterate_phdr(scan_one, NULL);
    for (uint32_t i = 0; i < md.n; i++) {
        struct module *m = &md.mod[i];
        if (m->loaded && !m->seen) {
            m->loaded = 0;
            m->unload_ns = mtl__now_ns();
            unloaded = 1;
        }
    }
    if (unloaded)
        mtl__stacks_forget_addresses();
}

int mtl__modules_init(void)
{
    md.mod = mtl__pages_alloc(MAX_MODULES * sizeof *md.mod);
    md.arena = mtl__pages_alloc(PATH_ARENA);
    if (!md.mod || !md.arena)
        return -1;
    mtl__modules_rescan();
    return 0;
}

void mtl__modules_rescan(void)
{
    pthread_mutex_lock(&md.mu);
    rescan_locked();
    pthread_mutex_unlock(&md.mu);
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
    pthread_mutex_lock(&md.mu);
    int changed = c[0] != md.adds || c[1] != md.subs;
    pthread_mutex_unlock(&md.mu);
    return changed;
}

static size_t module_record(uint8_t *out, size_t cap, uint32_t index,
                            const struct module *m)
{
    size_t plen = strlen(m->path);
    size_t need = 8 * MTL_VARINT_MAX + plen + m->build_id_size +
                  m->nseg * 3 * MTL_VARINT_MAX;
    if (need > cap)
        return 0;
    uint8_t *p = out;
    *p++ = MTL_REC_MODULE_LOAD;
    p = mtl__put_varint(p, index);
    p = mtl__put_varint(p, m->load_ns / 1000);
    p = mtl__put_varint(p, m->base);
    p = mtl__put_varint(p, plen);
    memcpy(p, m->path, plen);
    p += plen;
    p = mtl__put_varint(p, m->build_id_size);
    memcpy(p, m->build_id, m->build_id_size);
    p += m->build_id_size;
    p = mtl__put_varint(p, m->nseg);
    for (uint32_t s = 0; s < m->nseg; s++) {
        p = mtl__put_varint(p, m->seg[s].vaddr);
        p = mtl__put_varint(p, m->seg[s].memsz);
        p = mtl__put_varint(p, m->seg[s].flags);
    }
    return (size_t)(p - out);
}

size_t mtl__modules_emit(uint8_t *out, size_t cap, uint64_t unloads_before, int *more)
{
    size_t used = 0;
    *more = 0;
    pthread_mutex_lock(&md.mu);
    for (uint32_t i = md.emit_next; i < md.n; i++) {
        struct module *m = &md.mod[i];
        if (!unloads_before && !m->emitted_load) {
            size_t n = module_record(out + used, cap - used, i, m);
            if (!n) {
                *more = 1;
                break;
            }
            used += n;
            m->emitted_load = 1;
        }
        if (unloads_before && m->emitted_load && !m->loaded && !m->emitted_unload &&
            m->unload_ns < unloads_before) {
            if (cap - used < 1 + 2 * MTL_VARINT_MAX) {
                *more = 1;
                break;
            }
            uint8_t *p = out + used;
            *p++ = MTL_REC_MODULE_UNLOAD;
            p = mtl__put_varint(p, i);
            p = mtl__put_varint(p, m->unload_ns / 1000);
            used = (size_t)(p - out);
            m->emitted_unload = 1;
        }
        if (i == md.emit_next && m->emitted_unload)
            md.emit_next = i + 1; /* nothing more to write for it */
    }
    pthread_mutex_unlock(&md.mu);
    return used;
}

/* A forked child that records on starts a new trace: every loaded module
 * is written again, the unloaded ones are no longer of interest. */
void mtl__modules_rewind(void)
{
    pthread_mutex_lock(&md.mu);
    for (uint32_t i = 0; i < md.n; i++) {
        int gone = !md.mod[i].loaded;
        md.mod[i].emitted_load = gone;
        md.mod[i].emitted_unload = gone;
    }
    md.emit_next = 0;
    pthread_mutex_unlock(&md.mu);
}

void mtl__modules_atfork(int phase)
{
    if (phase == 0)
        pthread_mutex_lock(&md.mu);
    else if (phase == 1)
        pthread_mutex_unlock(&md.mu);
    else
        pthread_mutex_init(&md.mu, NULL);
}
