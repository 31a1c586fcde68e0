/* ctlsock.c: see ctlsock.h. */
#include "common/ctlsock.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SUN_CAP sizeof(((struct sockaddr_un *)0)->sun_path)

void mtl_ctl_dir(char *out, size_t cap)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    /* "/memtally/" + a pid + ".sock" must still fit in sun_path. */
    if (xdg && xdg[0] == '/' && strlen(xdg) + 32 < SUN_CAP && stat(xdg, &st) == 0 &&
        S_ISDIR(st.st_mode) && access(xdg, W_OK | X_OK) == 0) {
        snprintf(out, cap, "%s/memtally", xdg);
        return;
    }
    snprintf(out, cap, "/tmp/memtally-%u", (unsigned)geteuid());
}

/* Makes the directory if needed and checks that it is ours alone. */
static int private_dir(const char *dir, char *why, size_t why_cap)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int err = errno;
        snprintf(why, why_cap, "%s cannot be made: %s", dir, strerror(err));
        return -err;
    }
    struct stat st;
    if (lstat(dir, &st) < 0) {
        int err = errno;
        snprintf(why, why_cap, "%s cannot be read: %s", dir, strerror(err));
        return -err;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        snprintf(why, why_cap, "%s is not a private directory (%s, owner %u, mode %04o)", dir,
                 S_ISLNK(st.st_mode) ? "a symlink"
                 : S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
                 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -EPERM;
    }
    return 0;
}

/* Listens on dir/PID.suffix, a socket of type. */
static int listen_at(pid_t pid, const char *suffix, int type, char *path, size_t cap, char *why,
                     size_t why_cap)
{
    char dir[SUN_CAP];
    mtl_ctl_dir(dir, sizeof dir);
    int rc = private_dir(dir, why, why_cap);
    if (rc < 0)
        return rc;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int n = snprintf(addr.sun_path, sizeof addr.sun_path, "%s/%d.%s", dir, (int)pid, suffix);
    if (n < 0 || (size_t)n + 1 >= sizeof addr.sun_path) {
        snprintf(why, why_cap, "%s is too long a path for a socket", dir);
        return -ENAMETOOLONG;
    }
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        int err = errno;
        snprintf(why, why_cap, "%s cannot be made: %s", addr.sun_path, strerror(err));
        return -err;
    }
    unlink(addr.sun_path); /* left by an earlier process with this pid */
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 8) < 0) {
        int err = errno;
        snprintf(why, why_cap, "%s cannot be opened: %s", addr.sun_path, strerror(err));
        unlink(addr.sun_path);
        close(fd);
        return -err;
    }
    chmod(addr.sun_path, 0600); /* the directory guards it already */
    snprintf(path, cap, "%s", addr.sun_path);
    return fd;
}

int mtl_ctl_listen(pid_t pid, char *path, size_t cap, char *why, size_t why_cap)
{
    return listen_at(pid, "sock", SOCK_STREAM, path, cap, why, why_cap);
}

int mtl_handover_listen(pid_t pid, char *path, size_t cap, char *why, size_t why_cap)
{
    return listen_at(pid, "rec", SOCK_SEQPACKET, path, cap, why, why_cap);
}

int mtl_ctl_peer_ok(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred &&
           cred.uid == geteuid();
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int ms_left(uint64_t deadline)
{
    uint64_t now = now_ms();
    return now >= deadline ? 0 : (int)(deadline - now);
}

int mtl_ctl_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    size_t n = 0;
    for (;;) {
        int ms = ms_left(deadline);
        if (ms == 0)
            return -ETIMEDOUT;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int rc = poll(&p, 1, ms);
        if (rc < 0 && errno != EINTR)
            return -errno;
        if (rc <= 0)
            continue;
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        char *nl = memchr(buf + n, '\n', (size_t)r);
        n += (size_t)r;
        if (nl) {
            n = (size_t)(nl - buf);
            break;
        }
        if (r == 0)
            break; /* the line ends with the connection */
        if (n == cap - 1)
            return -E2BIG;
    }
    while (n > 0 && (buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    return (int)n;
}

void mtl_ctl_write(int fd, const char *buf, size_t n, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    while (n > 0) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int ms = ms_left(deadline);
        if (ms == 0 || poll(&p, 1, ms) <= 0)
            return;
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return;
        }
        buf += w;
        n -= (size_t)w;
    }
}

/* --- what the answers say ------------------------------------------------- */

size_t mtl_ctl_format_status(char *buf, size_t cap, const struct mtl_ctl_status *s)
{
    static const char *const names[] = { "off", "recording", "off", "paused" };
    int n = snprintf(buf, cap,
                     "state=%s trace=%s mode=%s rate=%llu pid=%d events=%llu allocations=%llu "
                     "frees=%llu bytes=%llu",
                     names[s->state & 3], s->trace ? s->trace : "",
                     s->sample_rate ? "sampled" : "full", (unsigned long long)s->sample_rate,
                     s->pid, (unsigned long long)(s->allocations + s->frees),
                     (unsigned long long)s->allocations, (unsigned long long)s->frees,
                     (unsigned long long)s->bytes);
    if (n >= 0 && (size_t)n < cap && s->have_live)
        n += snprintf(buf + n, cap - (size_t)n, " live_bytes=%llu",
                      (unsigned long long)s->live_bytes);
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

const char *mtl_ctl_why(const char *cmd, int rc)
{
    if (rc == -EBUSY && !strcmp(cmd, "start"))
        return "already recording";
    if (rc == -EINVAL && !strcmp(cmd, "pause"))
        return "not recording";
    if (rc == -EINVAL && !strcmp(cmd, "continue"))
        return "not paused";
    if (rc == -EINVAL)
        return "no trace is open (state off)";
    return strerror(-rc);
}
