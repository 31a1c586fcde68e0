/*
 * redirect.c: libraries that bind past our hooks.
 *
 * A library opened with dlopen(..., RTLD_DEEPBIND) looks its symbols up in
 * itself and its own dependencies before the global scope, so its malloc
 * and free bind straight to libc's, past the preloaded hooks: nothing it
 * allocates is recorded, and a block it frees for the program looks
 * leaked.  heaptrack strips the flag, which changes how the program binds.
 * We keep the flag and, once such a library is loaded, point its
 * references (GOT slots) to every function we hook at our hook instead,
 * as the global scope would have: the library still binds everything else
 * its own way.
 *
 * A slot is redirected only when its symbol is undefined in the object (a
 * library with an allocator of its own keeps it) and it holds the very
 * function our hook forwards to (or, with lazy binding, still the
 * object's own PLT stub).  Read-only slots (RELRO) are made writable for
 * the store and read-only again.
 *
 * The same serves memtally attach (attach.c), for every object loaded: we
 * were loaded into the running program, in front of nothing, so its
 * references are pointed at our hooks, each slot's old value kept so that
 * detaching puts it back; dlopen then redirects what each call brings in.
 *
 * dlopen is hooked for this alone, and only for RTLD_DEEPBIND: any other
 * call jumps straight on to the real dlopen with the caller's return
 * address untouched, as glibc resolves a relative name against the
 * caller's RUNPATH (x86-64 only; elsewhere dlopen is not hooked).  A
 * relative name opened with RTLD_DEEPBIND is resolved as if we were the
 * caller (without the caller's RUNPATH or $ORIGIN).
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Every function we hook (hooks.c, newdelete.c, signals.c, redirect.c,
 * unwindfds.c). */
static const char *const hooked[] = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc",
    "valloc", "pvalloc", "posix_memalign", "dlclose", "execve", "execvpe", "fexecve",
    "execv", "execvp", "execl", "execlp", "execle", "posix_spawn", "posix_spawnp",
    "_exit", "_Exit", "sigaction", "signal", "bsd_signal", "sysv_signal", "dlopen",
    "pipe2", "syscall",
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
    "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};
#define NHOOKED (sizeof hooked / sizeof hooked[0])

#define MAX_SAVED 65536      /* slots redirected by an attach, at most */

static struct {
    int resolved;
    void *ours[NHOOKED];   /* our hook, or NULL when it is not ours */
    void *next[NHOOKED];   /* what our hook forwards to */
    uintptr_t self_base;   /* our own object, never redirected */
    /* memtally attach: each redirected slot and what it held */
    struct saved { void **slot; void *old; } *saved;
    size_t nsaved;
} rd;

int mtl__attached;

void *(*mtl__real_dlopen)(const char *, int);

static void resolve(void)
{
    if (rd.resolved)
        return;
    Dl_info self;
    if (dladdr((void *)&resolve, &self))
        rd.self_base = (uintptr_t)self.dli_fbase;
    /* Our own definitions through our own handle: loaded by memtally
     * attach, the global scope does not have them.  What they forward to
     * is the next in our own scope either way: preloaded, the global one;
     * loaded later, libc's (a program whose malloc is another, linked in,
     * keeps its slots: they do not hold libc's). */
    void *own = self.dli_fname ? dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    for (size_t i = 0; own && i < NHOOKED; i++) {
        void *f = dlsym(own, hooked[i]);
        Dl_info where;
        if (f && dladdr(f, &where) && (uintptr_t)where.dli_fbase == rd.self_base) {
            rd.ours[i] = f;
            rd.next[i] = dlsym(RTLD_NEXT, hooked[i]);
        }
    }
    if (own)
        dlclose(own);
    /* A name found nowhere left an error message, malloc'd while we were
     * inside memtally: read and free it now, so that the program's next
     * dl call does not free a block the trace never saw. */
    (void)dlerror();
    (void)dlerror();
    rd.resolved = 1;
}

static int hooked_index(const char *name)
{
    for (size_t i = 0; i < NHOOKED; i++)
        if (name[0] == hooked[i][0] && strcmp(name, hooked[i]) == 0)
            return (int)i;
    return -1;
}

/* Whether addr lies in one of the object's loaded segments. */
static int inside(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz)
            return 1;
    }
    return 0;
}

static void store(void **slot, void *value, uintptr_t relro_lo, uintptr_t relro_hi)
{
    uintptr_t at = (uintptr_t)slot;
    if (at >= relro_lo && at < relro_hi) {
        long page = sysconf(_SC_PAGESIZE);
        void *p = (void *)(at & ~(uintptr_t)(page - 1));
        if (mprotect(p, (size_t)page, PROT_READ | PROT_WRITE) != 0)
            return;
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        mprotect(p, (size_t)page, PROT_READ);
        return;
    }
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
}

static void redirect_relocs(const struct dl_phdr_info *info, const ElfW(Rela) *rel,
                            size_t n, const ElfW(Sym) *symtab, const char *strtab,
                            uintptr_t relro_lo, uintptr_t relro_hi)
{
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const ElfW(Sym) *s = &symtab[ELF64_R_SYM(rel[i].r_info)];
        if (s->st_shndx != SHN_UNDEF || !s->st_name)
            continue; /* defined here: the object's own, kept */
        int k = hooked_index(strtab + s->st_name);
        if (k < 0 || !rd.ours[k])
            continue;
        void **slot = (void **)(info->dlpi_addr + rel[i].r_offset);
        void *v = *slot;
        if (v == rd.ours[k])
            continue;
        if (v != rd.next[k] && !inside(info, (uintptr_t)v))
            continue;
        if (mtl__attached) {
            if (rd.nsaved == MAX_SAVED ||
                (!rd.saved && !(rd.saved = mtl__pages_alloc(MAX_SAVED * sizeof *rd.saved))))
                continue; /* no room to undo it: left alone */
            rd.saved[rd.nsaved++] = (struct saved){ slot, v };
        }
        store(slot, rd.ours[k], relro_lo, relro_hi);
    }
}

/* A dynamic entry's address: relocated in place by ld.so for most
 * objects, not for all. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
    return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

static int redirect_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (info->dlpi_addr == rd.self_base || !info->dlpi_name ||
        strstr(info->dlpi_name, "/ld-linux") || strstr(info->dlpi_name, "linux-vdso"))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t relro_lo = 0, relro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO) {
            relro_lo = info->dlpi_addr + ph->p_vaddr;
            relro_hi = relro_lo + ph->p_memsz;
        }
    }
    if (!dyn)
        return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_size = 0, rela_size = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmprel_size = dyn->d_un.d_val; break;
        case DT_RELA: rela = (const void *)dyn_addr(info, dyn->d_un.d_ptr); break;
        case DT_RELASZ: rela_size = dyn->d_un.d_val; break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    if (jmprel)
        redirect_relocs(info, jmprel, jmprel_size / sizeof *jmprel, symtab, strtab,
                        relro_lo, relro_hi);
    if (rela)
        redirect_relocs(info, rela, rela_size / sizeof *rela, symtab, strtab, relro_lo,
                        relro_hi);
    return 0;
}

/* A slot's page bounds for store(): the object's RELRO, which
 * dl_iterate_phdr tells by the address. */
struct relro_of { uintptr_t at, lo, hi; };

static int find_relro(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct relro_of *r = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_RELRO && r->at >= lo && r->at < lo + ph->p_memsz) {
            r->lo = lo;
            r->hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

void mtl__redirect_loaded(void)
{
    mtl__tls.in_hook++;
    resolve();
    dl_iterate_phdr(redirect_one, NULL);
    mtl__tls.in_hook--;
}

void mtl__redirect_restore(void)
{
    mtl__tls.in_hook++;
    for (size_t i = rd.nsaved; i-- > 0;) {
        struct saved *s = &rd.saved[i];
        int k = -1;
        for (size_t j = 0; j < NHOOKED && k < 0; j++)
            if (*s->slot == rd.ours[j])
                k = (int)j;
        if (k < 0)
            continue; /* changed since by someone else: theirs now */
        struct relro_of r = { (uintptr_t)s->slot, 0, 0 };
        dl_iterate_phdr(find_relro, &r);
        store(s->slot, s->old, r.lo, r.hi);
    }
    rd.nsaved = 0;
    mtl__tls.in_hook--;
}

#if defined(__x86_64__)
/* The dlopen of RTLD_DEEPBIND (and every dlopen while attached): opens,
 * then redirects what came in. */
__attribute__((used)) static void *dlopen_deep(const char *file, int mode)
{
    void *h = mtl__real_dlopen(file, mode);
    if (h) {
        int saved = errno;
        mtl__redirect_loaded();
        if (atomic_load(mtl__pl.state) == MTL_RECORDING)
            mtl__modules_rescan();
        errno = saved;
    }
    return h;
}

/* Before anything resolved the real dlopen (a constructor's first call). */
__attribute__((used)) static void *dlopen_first(const char *file, int mode)
{
    mtl__hooks_first_use();
    if (!mtl__real_dlopen)
        mtl__real_dlopen = dlsym(RTLD_NEXT, "dlopen");
    if (mode & RTLD_DEEPBIND)
        return dlopen_deep(file, mode);
    return mtl__real_dlopen ? mtl__real_dlopen(file, mode) : NULL;
}

/* The hook itself: no frame of ours for the common call, so that the real
 * dlopen sees its caller's return address. */
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        "    testl $0x8, %esi\n"                 /* RTLD_DEEPBIND */
        "    jnz 1f\n"
        "    cmpl $0, mtl__attached(%rip)\n"     /* attached: every dlopen */
        "    jne 1f\n"
        "    movq mtl__real_dlopen(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jz 2f\n"
        "    jmp *%rax\n"
        "1:  jmp dlopen_deep\n"
        "2:  jmp dlopen_first\n"
        ".size dlopen, .-dlopen\n");
#endif
