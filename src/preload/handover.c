/*
 * handover.c: a process that memtally record follows hands it its region.
 *
 * Under `memtally record --follow-fork` or `--follow-exec`, a forked child
 * that records on, and a program that a recorded one execs, each need a
 * writer.  Written by a thread of ours in the program, as a program that
 * records by itself is, its trace would cost it more than memtally
 * record's own child pays: from that thread's creation glibc counts the
 * process as multi-threaded and its malloc takes the locked paths (a
 * seventh to a quarter of a malloc-bound program's time,
 * docs/PERFORMANCE.md); and the program would hold our trace's
 * descriptor, have our fatal-signal handlers, and lose its last block to
 * a SIGKILL.  So the process makes its region in a memory file, sends the
 * descriptor to memtally record over the socket its environment names
 * (common/ctlsock.h), waits for the answer that memtally record has a
 * writer on it, and closes both descriptors.  From then on it records as
 * memtally record's own child does.  Whatever fails leaves the process to
 * a private region and a writer of its own, as without memtally record.
 *
 * System calls only: this runs in a fork child's handler and early in a
 * program's start, where nothing may allocate.  Its two descriptors are
 * gone before the program runs on, and errno is as it was.
 */
#include "preload/preload.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/ctlsock.h"
#include "common/region.h"

/* Sends fd and waits for the answer: whether memtally record took it. */
static int send_region(const char *path, int fd)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof addr.sun_path)
        return 0;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return 0;
    int taken = 0;
    uint32_t magic = MTL_HANDOVER_MAGIC;
    struct iovec iov = { &magic, sizeof magic };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof control.buf };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (connect(sock, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof magic) {
        struct pollfd p = { .fd = sock, .events = POLLIN };
        unsigned char answer = 0;
        int n;
        do
            n = poll(&p, 1, MTL_HANDOVER_WAIT_MS);
        while (n < 0 && errno == EINTR);
        if (n == 1 && recv(sock, &answer, 1, MSG_DONTWAIT) == 1)
            taken = answer == MTL_HANDOVER_TAKEN;
    }
    close(sock);
    return taken;
}

struct mtl_region *mtl__handover_region(void)
{
    if (!mtl__pl.opt.handover[0])
        return NULL;
    int saved = errno;
    size_t size = mtl_region_size();
    struct mtl_region *r = NULL;
    void *p = MAP_FAILED;
    int fd = memfd_create("memtally-region", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, (off_t)size) == 0)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p != MAP_FAILED) {
        r = mtl_region_init(p);
        atomic_store(&r->attached, 1);
        if (!send_region(mtl__pl.opt.handover, fd)) {
            munmap(p, size);
            r = NULL;
        }
    }
    if (fd >= 0)
        close(fd);
    errno = saved;
    return r;
}
