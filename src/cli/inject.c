/*
 * inject.c: loading libmemtally.so into a running process and starting a
 * trace there, without gdb (memtally attach).  x86-64 Linux.
 *
 * One thread of the process is stopped with ptrace (PTRACE_SEIZE and
 * PTRACE_INTERRUPT: no SIGSTOP, so neither the process nor its parent sees
 * a stop); the others run on.  Calls are made on it as a debugger makes
 * them: its registers saved, the arguments' bytes written below its stack
 * (past the red zone), a return address of 0 pushed, and the thread let go
 * at the function; it comes back as a SIGSEGV at address 0, which ptrace
 * sees before the process does, and its registers are put back.  orig_rax
 * is -1 during the call, so that a system call the thread was stopped in
 * is not restarted into our call; it is restarted as it would have been
 * once the registers are back.
 *
 * The thread must not be stopped inside malloc (dlopen allocates: the
 * arena's lock would be held by the thread itself) or inside the dynamic
 * loader: its instruction pointer and the words on top of its stack are
 * checked against libc's allocation functions (their symbols in libc's
 * .dynsym; the internal ones run under them), and the thread is let run
 * a millisecond and stopped again until it is clear of them.
 *
 * The functions' addresses in the process: libc's from its mapping in
 * /proc/PID/maps and its symbol table (libelf), ours the same way once
 * loaded.
 */
#include "cli/inject.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

char inject_task_state(pid_t pid, pid_t tid)
{
    char file[96], line[512];
    snprintf(file, sizeof file, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    FILE *f = fopen(file, "r");
    char state = 0;
    if (f && fgets(line, sizeof line, f)) {
        char *p = strrchr(line, ')');
        if (p && p[1] == ' ')
            state = p[2];
    }
    if (f)
        fclose(f);
    return state;
}

#if defined(__x86_64__)

#define SAFE_TRIES 500            /* 1 ms apart: half a second at most */
#define STACK_WORDS 512           /* words on top of the stack looked at */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void say(struct inject *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct inject *in, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in->why, sizeof in->why, fmt, ap);
    va_end(ap);
}

/* ---- the process's objects ----------------------------------------------------------- */

/* The object mapped from a file whose base name starts with prefix (or
 * whose path is prefix, when it has a '/'): its path and load base. */
static int find_object(pid_t pid, const char *prefix, char *path, size_t cap, uint64_t *base)
{
    char file[64], line[PATH_MAX + 128];
    snprintf(file, sizeof file, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        unsigned long long lo, off;
        int at = 0;
        if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %n", &lo, &off, &at) < 2 || !at)
            continue;
        char *p = line + at;
        p[strcspn(p, "\n")] = '\0';
        if (*p != '/')
            continue;
        const char *name = strchr(prefix, '/') ? p : strrchr(p, '/') + 1;
        if (strncmp(name, prefix, strlen(prefix)) != 0 || (strchr(prefix, '/') && strcmp(p, prefix)))
            continue;
        snprintf(path, cap, "%s", p);
        *base = lo - off;
        found = 0;
    }
    fclose(f);
    return found;
}

/* Looks up n names in the ELF file's dynamic symbols (then its symbol
 * table): value and size of each, 0 when not there. */
static int elf_symbols(const char *path, const char *const *names, size_t n, uint64_t *value,
                       uint64_t *size)
{
    memset(value, 0, n * sizeof *value);
    memset(size, 0, n * sizeof *size);
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    Elf_Scn *scn = NULL;
    while (e && (scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; d && i < count; i++) {
            GElf_Sym s;
            if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
                GELF_ST_TYPE(s.st_info) != STT_FUNC)
                continue;
            const char *name = elf_strptr(e, sh.sh_link, s.st_name);
            for (size_t k = 0; name && k < n; k++)
                if (!value[k] && !strcmp(name, names[k])) {
                    value[k] = s.st_value;
                    size[k] = s.st_size;
                }
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return 0;
}

/* ---- the thread -------------------------------------------------------------------------- */

/* Waits for the thread's next stop; its signal, or -1 when it is gone. */
static int wait_stop(struct inject *in, int *status)
{
    for (;;) {
        pid_t w = waitpid(in->tid, status, __WALL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 || WIFEXITED(*status) || WIFSIGNALED(*status))
            return -1;
        if (WIFSTOPPED(*status))
            return WSTOPSIG(*status);
    }
}

/* A thread of the process that can run code: the main one unless it has
 * ended (a zombie), else the first live one. */
static pid_t live_thread(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    pid_t best = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        pid_t tid = (pid_t)atoi(de->d_name);
        if (tid <= 0)
            continue;
        char state = inject_task_state(pid, tid);
        if (state && state != 'Z' && state != 'X' && (!best || tid == pid))
            best = tid;
    }
    if (d)
        closedir(d);
    return best;
}

static int read_mem(pid_t pid, uint64_t at, void *buf, size_t n)
{
    struct iovec l = { buf, n }, r = { (void *)(uintptr_t)at, n };
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int write_mem(pid_t pid, uint64_t at, const void *buf, size_t n)
{
    struct iovec l = { (void *)buf, n }, r = { (void *)(uintptr_t)at, n };
    if (process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n)
        return 0;
    for (size_t i = 0; i < n; i += sizeof(long)) { /* the stack of a process we may not vm-write */
        long word = 0;
        size_t k = n - i < sizeof word ? n - i : sizeof word;
        if (k < sizeof word && read_mem(pid, at + i, &word, sizeof word) < 0)
            return -1;
        memcpy(&word, (const char *)buf + i, k);
        if (ptrace(PTRACE_POKEDATA, pid, (void *)(uintptr_t)(at + i), (void *)word) < 0)
            return -1;
    }
    return 0;
}

/* Whether the stopped thread is clear of libc's allocator: neither its
 * instruction pointer nor a word on top of its stack (a return address
 * into one of them) lies in their code. */
static int clear_of_allocator(struct inject *in, const struct user_regs_struct *r)
{
    uint64_t words[STACK_WORDS];
    size_t n = read_mem(in->tid, r->rsp, words, sizeof words) == 0 ? STACK_WORDS : 0;
    for (size_t k = 0; k < in->nranges; k++) {
        uint64_t lo = in->range[k][0], hi = in->range[k][1];
        if (r->rip >= lo && r->rip < hi)
            return 0;
        for (size_t i = 0; i < n; i++)
            if (words[i] >= lo && words[i] < hi)
                return 0;
    }
    return 1;
}

int inject_stop(struct inject *in, pid_t pid)
{
    static const char *const alloc_fns[] = {
        "malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
        "aligned_alloc", "valloc", "pvalloc", "malloc_trim", "malloc_usable_size",
        "mallinfo", "mallinfo2", "malloc_info", "malloc_stats", "mallopt", "__libc_malloc",
        "__libc_free", "__libc_calloc", "__libc_realloc", "__libc_memalign", "fork",
        "dlopen", "dlclose", "dlsym", "dlmopen", "dl_iterate_phdr", "dladdr", "dladdr1",
    };
    enum { NFN = sizeof alloc_fns / sizeof *alloc_fns };
    memset(in, 0, sizeof *in);
    in->pid = pid;
    if (find_object(pid, "libc.so", in->libc, sizeof in->libc, &in->libc_base) < 0 &&
        find_object(pid, "libc-", in->libc, sizeof in->libc, &in->libc_base) < 0) {
        say(in, "pid %d has no libc loaded (a static binary?): memtally loads into dynamically "
                "linked programs only", (int)pid);
        return -1;
    }
    uint64_t value[NFN], size[NFN];
    elf_symbols(in->libc, alloc_fns, NFN, value, size);
    for (size_t k = 0; k < NFN; k++)
        if (value[k] && size[k] && in->nranges < INJECT_MAX_RANGES) {
            in->range[in->nranges][0] = in->libc_base + value[k];
            in->range[in->nranges][1] = in->libc_base + value[k] + size[k];
            in->nranges++;
        }
    if (!(in->tid = live_thread(pid))) {
        say(in, "pid %d has no thread that runs", (int)pid);
        return -1;
    }
    if (ptrace(PTRACE_SEIZE, in->tid, NULL, NULL) < 0) {
        int e = errno;
        if (e == EPERM)
            say(in, "not permitted to trace pid %d (kernel.yama.ptrace_scope, or another user's "
                    "process without CAP_SYS_PTRACE, or it is traced already)", (int)pid);
        else
            say(in, "cannot trace pid %d: %s", (int)pid, strerror(e));
        return -1;
    }
    in->seized = 1;
    int status;
    for (int tries = 0;; tries++) {
        if (ptrace(PTRACE_INTERRUPT, in->tid, NULL, NULL) < 0 || wait_stop(in, &status) < 0) {
            say(in, "pid %d ended while memtally stopped it", (int)pid);
            return -1;
        }
        if (status >> 16 != PTRACE_EVENT_STOP) {
            /* A signal for the program: delivered, and stopped again. */
            ptrace(PTRACE_CONT, in->tid, NULL, (void *)(intptr_t)WSTOPSIG(status));
            continue;
        }
        in->stopped_ns = now_ns();
        if (ptrace(PTRACE_GETREGS, in->tid, NULL, &in->saved) < 0) {
            say(in, "cannot read the registers of thread %d: %s", (int)in->tid, strerror(errno));
            return -1;
        }
        if (clear_of_allocator(in, &in->saved))
            return 0;
        if (tries == SAFE_TRIES) {
            say(in, "thread %d of pid %d stays inside malloc or the dynamic loader; try again",
                (int)in->tid, (int)pid);
            return -1;
        }
        ptrace(PTRACE_CONT, in->tid, NULL, NULL);
        in->stopped_total_ns += now_ns() - in->stopped_ns;
        usleep(1000);
    }
}

uint64_t inject_put(struct inject *in, const void *data, size_t n)
{
    /* Below the red zone, growing down from 256 bytes under the stack. */
    uint64_t at = (in->saved.rsp - 256 - in->scratch - n) & ~(uint64_t)15;
    if (write_mem(in->tid, at, data, n) < 0) {
        say(in, "cannot write to pid %d: %s", (int)in->pid, strerror(errno));
        return 0;
    }
    in->scratch = in->saved.rsp - 256 - at;
    return at;
}

int inject_call(struct inject *in, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t *ret)
{
    struct user_regs_struct r = in->saved;
    /* Under what inject_put wrote, aligned as right after a call: our
     * return address (0) on top. */
    uint64_t sp = ((in->saved.rsp - 256 - in->scratch - 64) & ~(uint64_t)15) - 8;
    uint64_t zero = 0;
    if (write_mem(in->tid, sp, &zero, sizeof zero) < 0) {
        say(in, "cannot write to pid %d: %s", (int)in->pid, strerror(errno));
        return -1;
    }
    r.rsp = sp;
    r.rip = fn;
    r.rdi = a0;
    r.rsi = a1;
    r.rax = 0;
    r.orig_rax = (unsigned long long)-1;
    if (ptrace(PTRACE_SETREGS, in->tid, NULL, &r) < 0 ||
        ptrace(PTRACE_CONT, in->tid, NULL, NULL) < 0) {
        say(in, "cannot run code in pid %d: %s", (int)in->pid, strerror(errno));
        return -1;
    }
    for (;;) {
        int status, sig = wait_stop(in, &status);
        if (sig < 0) {
            in->seized = 0;
            say(in, "pid %d ended during the call", (int)in->pid);
            return -1;
        }
        struct user_regs_struct now;
        if (sig == SIGSEGV && ptrace(PTRACE_GETREGS, in->tid, NULL, &now) == 0 && now.rip == 0) {
            *ret = now.rax;
            break;
        }
        /* The program's own signal (or a stop): on to it, as it would
         * have come anyway. */
        ptrace(PTRACE_CONT, in->tid, NULL,
               (void *)(intptr_t)(status >> 16 == PTRACE_EVENT_STOP ? 0 : sig));
    }
    if (ptrace(PTRACE_SETREGS, in->tid, NULL, &in->saved) < 0) {
        say(in, "cannot restore the registers of pid %d: %s", (int)in->pid, strerror(errno));
        return -1;
    }
    return 0;
}

uint64_t inject_libc_symbol(struct inject *in, const char *name)
{
    uint64_t v, s;
    elf_symbols(in->libc, &name, 1, &v, &s);
    return v ? in->libc_base + v : 0;
}

uint64_t inject_object_symbol(struct inject *in, const char *path, const char *file,
                              const char *name)
{
    char found[PATH_MAX];
    uint64_t base, v, s;
    if (find_object(in->pid, path, found, sizeof found, &base) < 0)
        return 0;
    elf_symbols(file, &name, 1, &v, &s);
    return v ? base + v : 0;
}

int inject_read(struct inject *in, uint64_t at, void *buf, size_t n)
{
    return read_mem(in->pid, at, buf, n);
}

int inject_read_string(struct inject *in, uint64_t at, char *out, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap && read_mem(in->pid, at + n, out + n, 1) == 0 && out[n])
        n++;
    out[n] = '\0';
    return 0;
}

void inject_release(struct inject *in)
{
    if (in->seized) {
        ptrace(PTRACE_DETACH, in->tid, NULL, NULL);
        in->stopped_total_ns += now_ns() - in->stopped_ns;
        in->seized = 0;
    }
}

#else

int inject_stop(struct inject *in, pid_t pid)
{
    memset(in, 0, sizeof *in);
    in->pid = pid;
    snprintf(in->why, sizeof in->why, "attaching is implemented for x86-64 only");
    return -1;
}

uint64_t inject_put(struct inject *in, const void *data, size_t n)
{
    (void)in, (void)data, (void)n;
    return 0;
}

int inject_call(struct inject *in, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t *ret)
{
    (void)in, (void)fn, (void)a0, (void)a1, (void)ret;
    return -1;
}

uint64_t inject_libc_symbol(struct inject *in, const char *name)
{
    (void)in, (void)name;
    return 0;
}

uint64_t inject_object_symbol(struct inject *in, const char *path, const char *file,
                              const char *name)
{
    (void)in, (void)path, (void)file, (void)name;
    return 0;
}

int inject_read(struct inject *in, uint64_t at, void *buf, size_t n)
{
    (void)in, (void)at, (void)buf, (void)n;
    return -1;
}

int inject_read_string(struct inject *in, uint64_t at, char *out, size_t cap)
{
    (void)in, (void)at, (void)cap;
    out[0] = '\0';
    return -1;
}

void inject_release(struct inject *in)
{
    (void)in;
}

#endif
