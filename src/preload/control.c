/*
 * control.c: the control socket, through which `memtally ctl` and
 * `memtally top` steer a running process (control.h).
 *
 * Where: a unix stream socket PID.sock in $XDG_RUNTIME_DIR/memtally/ when
 * XDG_RUNTIME_DIR names a usable directory, else in /tmp/memtally-UID/.
 * The directory is made with mode 0700 and used only if lstat says it is a
 * real directory (no symlink), owned by our effective user, with no
 * permission for group or others: then nobody else can reach the socket.
 * Each client's credentials (SO_PEERCRED) are checked as well: another
 * user's connection is closed unanswered.
 *
 * Protocol: the client sends one line ("start", "pause", "continue",
 * "restart", "dump PATH", "stop", "status"); we answer one line, "ok"
 * (for status "ok " and the mtl__ctl_status text) or "error MESSAGE",
 * and close.  A relative dump PATH is relative to the program's working
 * directory; `memtally ctl` sends absolute paths.
 *
 * The thread: detached (it never keeps the process alive), every signal
 * blocked (the program's handlers never run on it), marked inside
 * memtally for its whole life (what it allocates, in the mtl__ctl_*
 * operations or in libc, passes through the hooks unrecorded), and it
 * never makes the program wait: a client has one second to send its line
 * and one to take the answer.  It wakes once a second to see whether it
 * was stopped, or the program closed its descriptor.
 *
 * fork: the child inherits the listening descriptor but not the thread.
 * A fork handler closes it there (and the client being served, if any),
 * and mtl__control_start, which the recorder calls again in a child that
 * records, does the same first if the handler has not run yet (the
 * recorder's own handler may run before ours); the pid that owns the
 * socket tells.  Only that pid ever removes the socket file.
 */
#include "preload/control.h"
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CONTROL_FD_MIN 920      /* descriptors kept out of the program's way */
#define CLIENT_TIMEOUT_MS 1000  /* to send the command, and to take the answer */
#define WAKE_MS 1000            /* the thread checks whether it is stopped */
#define LINE_MAX_LEN (PATH_MAX + 64)

static struct {
    atomic_int fd;          /* the listening socket being served, or -1 */
    atomic_int client;      /* the connection being served, or -1 */
    atomic_int pid;         /* the process the socket belongs to, or 0 */
    dev_t dev;              /* the listening socket's identity */
    ino_t ino;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int said;               /* the one message was given */
    int atfork_set;
} ctl = { .fd = -1, .client = -1 };

/* --- where the socket lives ---------------------------------------------- */

/* The directory, per the rule above (the CLI's cmd_ctl.c follows the same
 * rule); 0, or -ENAMETOOLONG. */
static int control_dir(char *out, size_t cap)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    /* "/memtally/" + a pid + ".sock" must still fit in sun_path. */
    if (xdg && xdg[0] == '/' && strlen(xdg) + 32 < sizeof ctl.path &&
        stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && access(xdg, W_OK | X_OK) == 0) {
        mtl__fmt(out, cap, "%s/memtally", xdg);
        return 0;
    }
    mtl__fmt(out, cap, "/tmp/memtally-%u", (unsigned)geteuid());
    return 0;
}

static void say_once(const char *what, const char *path, int err)
{
    if (ctl.said)
        return;
    ctl.said = 1;
    mtl__say("%s %s%s%s; no live control (memtally ctl, memtally top)", path, what,
             err ? ": " : "", err ? strerror(err) : "");
}

/* Makes the directory if needed and checks that it is ours alone. */
static int private_dir(const char *dir)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int err = errno;
        say_once("cannot be made", dir, err);
        return -err;
    }
    struct stat st;
    if (lstat(dir, &st) < 0) {
        int err = errno;
        say_once("cannot be read", dir, err);
        return -err;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        char what[128];
        mtl__fmt(what, sizeof what,
                 "is not a private directory (%s, owner %u, mode %04o)",
                 S_ISLNK(st.st_mode) ? "a symlink"
                 : S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
                 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        say_once(what, dir, 0);
        return -EPERM;
    }
    return 0;
}

/* --- serving one client --------------------------------------------------- */

static int ms_left(uint64_t deadline)
{
    uint64_t now = mtl__monotonic_ns();
    return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* Reads one line (without its newline) within the deadline.  Returns its
 * length, or a negative errno (-ETIMEDOUT, -E2BIG, -ECONNRESET...). */
static int read_line(int fd, char *buf, size_t cap, uint64_t deadline)
{
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

static void write_answer(int fd, const char *buf, size_t n, uint64_t deadline)
{
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

/* What a failed operation means, in the client's words. */
static const char *why(const char *cmd, int rc)
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

/* Runs one command line; the answer, with its newline, goes to out. */
static size_t run_command(char *line, char *out, size_t cap)
{
    int rc;
    const char *cmd = line;
    if (!strcmp(line, "status")) {
        char status[PATH_MAX + 512];
        rc = mtl__ctl_status(status, sizeof status);
        if (rc == 0) {
            /* One line, whatever a path holds. */
            for (char *s = status; *s; s++)
                if (*s == '\n' || *s == '\r')
                    *s = '?';
            return mtl__fmt(out, cap, "ok %s\n", status);
        }
    } else if (!strcmp(line, "start")) {
        rc = mtl__ctl_start(NULL, 0, 0);
    } else if (!strcmp(line, "pause")) {
        rc = mtl__ctl_pause();
    } else if (!strcmp(line, "continue")) {
        rc = mtl__ctl_resume();
    } else if (!strcmp(line, "restart")) {
        rc = mtl__ctl_restart();
    } else if (!strcmp(line, "stop")) {
        rc = mtl__ctl_stop();
    } else if (!strncmp(line, "dump ", 5) && line[5]) {
        line[4] = '\0';
        rc = mtl__ctl_dump(line + 5);
    } else {
        return mtl__fmt(out, cap, "error unknown command (start, pause, continue, "
                                  "restart, dump PATH, stop, status)\n");
    }
    if (rc == 0)
        return mtl__fmt(out, cap, "ok\n");
    return mtl__fmt(out, cap, "error %s: %s\n", cmd, why(cmd, rc));
}

static void serve(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    atomic_store(&ctl.client, fd);
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
        len == sizeof cred && cred.uid == geteuid()) {
        char line[LINE_MAX_LEN], answer[PATH_MAX + 1024];
        uint64_t deadline = mtl__monotonic_ns() + CLIENT_TIMEOUT_MS * 1000000ull;
        int n = read_line(fd, line, sizeof line, deadline);
        if (n > 0) {
            size_t m = run_command(line, answer, sizeof answer);
            deadline = mtl__monotonic_ns() + CLIENT_TIMEOUT_MS * 1000000ull;
            write_answer(fd, answer, m, deadline);
        } else if (n == -E2BIG) {
            static const char msg[] = "error command line too long\n";
            write_answer(fd, msg, sizeof msg - 1, deadline);
        }
    }
    atomic_store(&ctl.client, -1);
    close(fd);
}

/* Still the socket we opened?  A program may close every descriptor it
 * does not know, and open something else under the same number. */
static int still_ours(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == ctl.dev &&
           st.st_ino == ctl.ino;
}

static void *control_main(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    mtl__tls.in_hook = 1; /* for the thread's whole life */
    int fd = (int)(intptr_t)arg;
    while (atomic_load(&ctl.fd) == fd) {
        if (!still_ours(fd)) {
            int expected = fd;
            if (atomic_compare_exchange_strong(&ctl.fd, &expected, -1))
                say_once("lost (the program closed its descriptor)", ctl.path, 0);
            return NULL; /* the number is not ours to close */
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int rc = poll(&p, 1, WAKE_MS);
        if (rc > 0 && (p.revents & POLLIN) && atomic_load(&ctl.fd) == fd)
            serve(fd);
        else if (rc > 0 && (p.revents & POLLNVAL))
            return NULL;
    }
    close(fd);
    return NULL;
}

/* --- start and stop ------------------------------------------------------- */

/* Forgets a socket inherited from the parent (fork): its descriptors are
 * closed here, its file stays the parent's. */
static void forget_inherited(void)
{
    int pid = atomic_load(&ctl.pid);
    if (pid == 0 || pid == (int)getpid())
        return;
    int fd = atomic_exchange(&ctl.fd, -1);
    if (fd >= 0)
        close(fd);
    int client = atomic_exchange(&ctl.client, -1);
    if (client >= 0)
        close(client);
    ctl.path[0] = '\0';
    ctl.said = 0;
    atomic_store(&ctl.pid, 0);
}

static void atfork_child(void)
{
    forget_inherited();
}

int mtl__control_start(void)
{
    const char *env = getenv("MEMTALLY_CONTROL");
    if (env && !strcmp(env, "0"))
        return 0;
    mtl__tls.in_hook++;
    int saved = errno;
    int rc = 0;
    forget_inherited();
    if (atomic_load(&ctl.fd) >= 0)
        goto out; /* running already */
    if (!ctl.atfork_set) {
        ctl.atfork_set = 1;
        pthread_atfork(NULL, NULL, atfork_child);
    }

    char dir[sizeof ctl.path];
    control_dir(dir, sizeof dir);
    if ((rc = private_dir(dir)) < 0)
        goto out;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    size_t n = mtl__fmt(addr.sun_path, sizeof addr.sun_path, "%s/%d.sock", dir,
                        (int)getpid());
    if (n + 1 >= sizeof addr.sun_path) {
        rc = -ENAMETOOLONG;
        say_once("is too long a path for a socket", dir, 0);
        goto out;
    }
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
        rc = -errno;
        say_once("cannot be made", addr.sun_path, errno);
        goto out;
    }
    int fd = fcntl(s, F_DUPFD_CLOEXEC, CONTROL_FD_MIN);
    if (fd >= 0) {
        close(s);
    } else {
        fd = s;
    }
    unlink(addr.sun_path); /* left by an earlier process with our pid */
    struct stat st;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 8) < 0 ||
        fstat(fd, &st) < 0) {
        rc = -errno;
        say_once("cannot be opened", addr.sun_path, errno);
        unlink(addr.sun_path);
        close(fd);
        goto out;
    }
    chmod(addr.sun_path, 0600); /* the directory guards it already */
    ctl.dev = st.st_dev;
    ctl.ino = st.st_ino;
    memcpy(ctl.path, addr.sun_path, sizeof ctl.path);
    atomic_store(&ctl.pid, (int)getpid());
    atomic_store(&ctl.fd, fd);

    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int err = pthread_create(&thread, &attr, control_main, (void *)(intptr_t)fd);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        rc = -err;
        say_once("has no thread to serve it", addr.sun_path, err);
        atomic_store(&ctl.fd, -1);
        unlink(ctl.path);
        ctl.path[0] = '\0';
        close(fd);
    }
out:
    errno = saved;
    mtl__tls.in_hook--;
    return rc;
}

/* Also safe in a signal handler: atomics and unlink(2) only.  The thread
 * sees that it was stopped within WAKE_MS and closes its descriptor. */
void mtl__control_stop(void)
{
    if (atomic_load(&ctl.pid) != (int)getpid())
        return;
    int saved = errno;
    if (atomic_exchange(&ctl.fd, -1) >= 0 && ctl.path[0])
        unlink(ctl.path);
    errno = saved;
}
