/* exact_syscalls: read(2) and syscall(2), which the recorder hooks to
 * answer libunwind's memory checks, behave for the program as without it:
 * a pipe written with syscall(SYS_write) and read back, the numbers the
 * hooks answer libunwind on (-1000, -1001) refused as libc refuses any
 * closed descriptor, syscall(SYS_getpid) and SYS_gettid right.  Prints one
 * line, the same with and without memtally; exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
    free(malloc(10)); /* an unwind, so that libunwind's check has run */
    int p[2];
    if (pipe(p))
        return 1;
    long w = syscall(SYS_write, p[1], "abc", 3);
    char buf[4] = {0};
    ssize_t r = read(p[0], buf, 3);
    errno = 0;
    ssize_t bad = read(-1000, buf, 1);
    int e1 = errno;
    errno = 0;
    long bad2 = syscall(SYS_write, -1001, "x", 1);
    int e2 = errno;
    printf("getpid %d write %ld read %zd %s; fd -1000: %zd %s; fd -1001: %ld %s; gettid %d\n",
           getpid() == syscall(SYS_getpid), w, r, buf, bad, strerror(e1), bad2, strerror(e2),
           syscall(SYS_gettid) == gettid());
    return 0;
}
