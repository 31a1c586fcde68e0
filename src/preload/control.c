/*
 * control.c: how `memtally ctl` and `memtally top` steer a running process
 * (control.h): one command line in, one answer out (common/ctlsock.h has
 * the protocol and where the socket lives).
 *
 * Two ways in.  A process started by `memtally record` is served by
 * memtally record itself, which owns the socket and acts on the region it
 * shares with the program (common/region.h: the state word, the trace it
 * writes): the program then holds no descriptor and runs no thread of
 * ours for it.  Any other process (a followed child, a program that
 * starts recording itself) listens on the socket itself, on a descriptor
 * moved to 920 and up, out of the program's way, with a thread of ours.
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
 * socket tells.  Only that pid ever removes the socket file.  memtally
 * record's region serves its process alone (the pid it was taken in).
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

#include "common/ctlsock.h"
#include "common/region.h"

#define CONTROL_FD_MIN 920      /* descriptors kept out of the program's way */
#define WAKE_MS 1000            /* the thread checks whether it is stopped */

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

static void say_once(const char *why)
{
    if (ctl.said)
        return;
    ctl.said = 1;
    mtl__say("%s; no live control (memtally ctl, memtally top)", why);
}

/* --- serving one command -------------------------------------------------- */

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
    return mtl__fmt(out, cap, "error %s: %s\n", cmd, mtl_ctl_why(cmd, rc));
}

static void serve(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    atomic_store(&ctl.client, fd);
    if (mtl_ctl_peer_ok(fd)) {
        char line[MTL_CTL_LINE], answer[MTL_CTL_ANSWER];
        int n = mtl_ctl_read_line(fd, line, sizeof line, MTL_CTL_TIMEOUT_MS);
        if (n > 0) {
            size_t m = run_command(line, answer, sizeof answer);
            mtl_ctl_write(fd, answer, m, MTL_CTL_TIMEOUT_MS);
        } else if (n == -E2BIG) {
            static const char msg[] = "error command line too long\n";
            mtl_ctl_write(fd, msg, sizeof msg - 1, MTL_CTL_TIMEOUT_MS);
        }
    }
    atomic_store(&ctl.client, -1);
    close(fd);
}

/* memtally record serves the socket of the program it started, from the
 * region it shares with it (cli/record_writer.c): no thread here.  The
 * region says whether this process is still the one it records. */
static int served_by_memtally_record(void)
{
    struct mtl_region *r = mtl__pl.mailbox;
    if (!r || mtl__pl.mailbox_pid != (int)getpid())
        return 0;
    atomic_store(&r->ctl_live, 1);
    return 1;
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
            if (atomic_compare_exchange_strong(&ctl.fd, &expected, -1)) {
                char why[sizeof ctl.path + 64];
                mtl__fmt(why, sizeof why, "%s lost (the program closed its descriptor)",
                         ctl.path);
                say_once(why);
            }
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
    if (served_by_memtally_record())
        goto out;

    char path[sizeof ctl.path], why[sizeof ctl.path + 128];
    int s = mtl_ctl_listen(getpid(), path, sizeof path, why, sizeof why);
    if (s < 0) {
        rc = s;
        say_once(why);
        goto out;
    }
    int fd = fcntl(s, F_DUPFD_CLOEXEC, CONTROL_FD_MIN);
    if (fd >= 0) {
        close(s);
    } else {
        fd = s;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        unlink(path);
        close(fd);
        goto out;
    }
    ctl.dev = st.st_dev;
    ctl.ino = st.st_ino;
    memcpy(ctl.path, path, sizeof ctl.path);
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
        mtl__fmt(why, sizeof why, "%s has no thread to serve it", ctl.path);
        say_once(why);
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
    if (mtl__pl.mailbox && mtl__pl.mailbox_pid == (int)getpid())
        atomic_store(&mtl__pl.mailbox->ctl_live, 0);
    if (atomic_load(&ctl.pid) != (int)getpid())
        return;
    int saved = errno;
    if (atomic_exchange(&ctl.fd, -1) >= 0 && ctl.path[0])
        unlink(ctl.path);
    errno = saved;
}
