/*
 * unwindfds.c: libunwind's pipe, without a descriptor.
 *
 * libunwind (1.6) tests whether an address is readable by writing one
 * byte of it into a pipe it opens for that (write fails with EFAULT when
 * the address is not readable), reading the pipe empty first.  Opened at
 * our first unwind, the pipe took the program's lowest free descriptors
 * (3 and 4): its first open() returned 5, /proc/self/fd showed them, and
 * a program that redirected onto them had libunwind read its data.
 *
 * libunwind reaches all of that through its PLT (pipe2, read, and
 * syscall(SYS_write, ...)), so the hooks below see it.  Its pipe2 gets two
 * descriptor numbers that no descriptor can have; reading the one says
 * "empty" (EAGAIN, as libunwind's non-blocking pipe would), and writing
 * the other is answered by process_vm_readv on our own process, which
 * reads the byte without any descriptor and fails with EFAULT the same
 * way.  Where process_vm_readv is not allowed (some sandboxes), libunwind
 * gets a real pipe, moved to the top of the first 1024 descriptors (not
 * lower: bash keeps descriptors of 10 and up for itself, and restores one
 * it finds open after a redirection onto it).  Every other caller of
 * these functions goes straight on to libc's.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_READ_FD (-1000)     /* never a descriptor: negative */
#define FAKE_WRITE_FD (-1001)
#define PIPE_FD_TOP 1024         /* a real pipe, at most here */

extern ssize_t __read(int fd, void *buf, size_t n); /* libc's, exported */

static int (*real_pipe2)(int[2], int);
static long (*real_syscall)(long, ...);
static void *unwind_base;        /* libunwind's load address */
static int probe_works;          /* 0 unknown, 1 process_vm_readv, -1 not */

static void *next_symbol(const char *name)
{
    mtl__tls.in_hook++;
    void *f = dlsym(RTLD_NEXT, name);
    mtl__tls.in_hook--;
    return f;
}

void mtl__unwindfds_resolve(void)
{
    /* With the hooks' own, before any unwind: resolving lazily inside an
     * unwind would call dlsym from within a hook. */
    real_pipe2 = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
    real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
}

/* Whether addr is code of libunwind. */
static int from_libunwind(void *addr)
{
    Dl_info info;
    if (!unwind_base) {
        extern int unw_backtrace(void **, int);
        if (!dladdr((void *)unw_backtrace, &info))
            return 0;
        unwind_base = info.dli_fbase;
    }
    return dladdr(addr, &info) && info.dli_fbase == unwind_base;
}

/* Reads one byte at addr through the kernel: 1, or -1 with EFAULT. */
static long probe(const void *addr)
{
    char byte;
    struct iovec here = { &byte, 1 }, there = { (void *)addr, 1 };
    if (process_vm_readv(getpid(), &here, 1, &there, 1, 0) == 1)
        return 1;
    errno = EFAULT;
    return -1;
}

static int probe_allowed(void)
{
    if (!probe_works) {
        char byte = 1;
        char copy = 0;
        struct iovec here = { &copy, 1 }, there = { &byte, 1 };
        probe_works = process_vm_readv(getpid(), &here, 1, &there, 1, 0) == 1 && copy == 1
                          ? 1 : -1;
    }
    return probe_works > 0;
}

/* A real pipe, its ends moved to the top of the first 1024 descriptors. */
static int high_pipe(int fds[2], int flags)
{
    int low[2];
    if (real_pipe2(low, flags) < 0)
        return -1;
    struct rlimit lim;
    rlim_t top = PIPE_FD_TOP;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < top)
        top = lim.rlim_cur;
    int cmd = (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD;
    for (int i = 0; i < 2; i++) {
        int high = top > 16 ? fcntl(low[i], cmd, (int)top - 8) : -1;
        if (high >= 0) {
            close(low[i]);
            low[i] = high;
        }
    }
    fds[0] = low[0];
    fds[1] = low[1];
    return 0;
}

EXPORT int pipe2(int fds[2], int flags)
{
    void *caller = __builtin_return_address(0);
    if (!real_pipe2 && !(real_pipe2 = (int (*)(int[2], int))next_symbol("pipe2"))) {
        errno = ENOSYS;
        return -1;
    }
    if (!from_libunwind(caller))
        return real_pipe2(fds, flags);
    if (probe_allowed()) {
        fds[0] = FAKE_READ_FD;
        fds[1] = FAKE_WRITE_FD;
        return 0;
    }
    return high_pipe(fds, flags);
}

/* The fake numbers answer libunwind alone: anyone else passing them gets
 * what libc says of a descriptor that is not open. */
EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    if (MTL_UNLIKELY(fd == FAKE_READ_FD) && from_libunwind(__builtin_return_address(0))) {
        errno = EAGAIN; /* the pipe is always empty */
        return -1;
    }
    return __read(fd, buf, n);
}

EXPORT long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    /* An int argument fills only the low half of its register. */
    if (MTL_UNLIKELY(nr == SYS_write && (int)a1 == FAKE_WRITE_FD) &&
        from_libunwind(__builtin_return_address(0)))
        return probe((const void *)a2);
    if (MTL_UNLIKELY(!real_syscall) &&
        !(real_syscall = (long (*)(long, ...))next_symbol("syscall"))) {
        errno = ENOSYS;
        return -1;
    }
    return real_syscall(nr, a1, a2, a3, a4, a5, a6);
}
