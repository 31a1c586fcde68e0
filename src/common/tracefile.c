/* tracefile.c: see tracefile.h. */
#include "common/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mtl_trace_create_new(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, MTL_TRACE_MODE);
    return fd < 0 ? -errno : fd;
}

int mtl_trace_create(const char *path)
{
    /* One of the process's own descriptors (mtl_profile_call's memfd): a
     * link by nature, to nothing anyone could plant. */
    if (!strncmp(path, "/proc/self/fd/", 14)) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
    }
    int fd = mtl_trace_create_new(path);
    if (fd != -EEXIST)
        return fd;
    fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : 0;
    if (rc == 0 && S_ISREG(st.st_mode)) {
        if (st.st_uid != geteuid())
            rc = -EPERM;
        else if (ftruncate(fd, 0) < 0)
            rc = -errno;
    }
    if (rc < 0)
        close(fd);
    return rc < 0 ? rc : fd;
}

const char *mtl_trace_create_error(int rc)
{
    return rc == -ELOOP ? "it is a symbolic link, which memtally does not follow"
           : rc == -EPERM ? "it belongs to another user"
           : strerror(-rc);
}

int mtl_trace_create_named(const char *path, int clobber, char *used, size_t cap)
{
    if ((size_t)snprintf(used, cap, "%s", path) >= cap)
        return -ENAMETOOLONG;
    if (clobber)
        return mtl_trace_create(used);
    for (int i = 1; i <= 1000; i++) {
        int fd = mtl_trace_create_new(used);
        if (fd != -EEXIST)
            return fd;
        if ((size_t)snprintf(used, cap, "%s.%d", path, i) >= cap)
            return -ENAMETOOLONG;
    }
    return -EEXIST;
}

int mtl_write_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}
