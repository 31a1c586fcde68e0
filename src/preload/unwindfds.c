/*
 * unwindfds.c: libunwind's pipe, out of the program's way.
 *
 * libunwind (1.6) opens a pipe when it initialises, to test later whether
 * an address is readable (by writing one byte of it into the pipe).  Made
 * at our first unwind, the pipe took the program's lowest free descriptors
 * (3 and 4): its first open() returned 5, and /proc/self/fd showed them.
 * It needs the pipe only to validate memory (frames without unwind
 * information, signal frames), and makes a new one whenever reading the
 * old one fails.  So the pipe it asks for first is refused (it keeps -1
 * and asks again when it first validates, which most programs soon need),
 * and one it asks for later is moved to the top of the first 1024
 * descriptors: the program's own then get the numbers they would have
 * had.  Not below: bash takes descriptors of 10 and up that are open for
 * its own and restores them after a redirection (`exec 900>file` onto our
 * descriptor failed).  /proc/self/fd still shows the two, up there.
 * libunwind calls pipe2 through its PLT, so the hook below sees it; every
 * other caller goes straight on to libc's.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#define UNWIND_PIPE_FD_TOP 1024 /* at most: a larger table costs the kernel */

static int (*real_pipe2)(int[2], int);
static void *unwind_base;       /* libunwind's load address */
static int refused;             /* its first pipe was refused */

/* Whether addr is code of libunwind. */
static int from_libunwind(void *addr)
{
    Dl_info info;
    if (!unwind_base) {
        /* unw_backtrace is libunwind's, whichever name it has inside. */
        extern int unw_backtrace(void **, int);
        if (!dladdr((void *)unw_backtrace, &info))
            return 0;
        unwind_base = info.dli_fbase;
    }
    return dladdr(addr, &info) && info.dli_fbase == unwind_base;
}

__attribute__((visibility("default"))) int pipe2(int fds[2], int flags)
{
    void *caller = __builtin_return_address(0);
    if (!real_pipe2) {
        mtl__tls.in_hook++;
        real_pipe2 = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
        mtl__tls.in_hook--;
        if (!real_pipe2) {
            errno = ENOSYS;
            return -1;
        }
    }
    if (!from_libunwind(caller))
        return real_pipe2(fds, flags);
    if (!refused) {
        refused = 1;
        errno = EMFILE; /* libunwind keeps -1 and asks again when it must */
        return -1;
    }
    int low[2];
    if (real_pipe2(low, flags) < 0)
        return -1;
    struct rlimit lim;
    rlim_t top = UNWIND_PIPE_FD_TOP;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < top)
        top = lim.rlim_cur;
    int cloexec = (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD;
    for (int i = 0; i < 2; i++) {
        /* The highest free numbers below top, tried from top - 8 up. */
        int high = top > 16 ? fcntl(low[i], cloexec, (int)top - 8) : -1;
        if (high >= 0) {
            close(low[i]);
            low[i] = high;
        }
    }
    fds[0] = low[0];
    fds[1] = low[1];
    return 0;
}
