/* record_followers.c: see record_followers.h. */
#include "cli/record_followers.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/record_control.h"
#include "cli/record_writer.h"
#include "common/ctlsock.h"
#include "common/procstat.h"

struct record_follower {
    struct record_writer rw;
    struct record_control ctl;
    int pidfd;      /* -1: a program memtally record's child exec'd (ends with it) */
    int ended;
    struct record_follower *next;
};

/* The wait status of a process that has ended but is not yet reaped
 * (/proc/PID/stat: its state Z, its exit_code, field 52), or -1 once its
 * parent has reaped it (then nobody can tell).  The pidfd says the
 * process read was still ours after the read: a pid is not reused while
 * its zombie lasts. */
static int zombie_status(pid_t pid, int pidfd)
{
    uint64_t f[MTL_STAT_FIELDS + 1];
    if (mtl_proc_stat(pid, f) < 0 || f[3] != 'Z' ||
        syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
        return -1;
    return (int)f[52];
}

/* A followed process ended with status (-1: not known). */
static void end_one(struct record_followers *f, struct record_follower *fl, int status)
{
    record_control_stop(&fl->ctl);
    fl->rw.status_unknown = status < 0;
    struct mtl_encoder *keep = f->nspare < RECORD_SPARE_ENCODERS ? &f->spare[f->nspare] : NULL;
    if (record_writer_finish(&fl->rw, status < 0 ? 0 : status, keep) < 0)
        f->failed = 1;
    if (keep && keep->zc)
        f->nspare++;
    f->traces += (unsigned)fl->rw.traces;
    if (fl->pidfd >= 0)
        close(fl->pidfd);
    fl->ended = 1;
}

/* The one message of a connection: the region's descriptor, or -1. */
static int take_region_fd(int c)
{
    struct pollfd p = { .fd = c, .events = POLLIN };
    if (poll(&p, 1, MTL_CTL_TIMEOUT_MS) != 1)
        return -1;
    uint32_t magic = 0;
    struct iovec iov = { &magic, sizeof magic };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof control.buf };
    ssize_t n = recvmsg(c, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    int fd = -1;
    struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    if (fd >= 0 && (n != (ssize_t)sizeof magic || magic != MTL_HANDOVER_MAGIC ||
                    (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A process hands its region over: a writer and a control socket for it,
 * then the answer that it is taken. */
static void take_one(struct record_followers *f)
{
    int c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return;
    struct ucred cred;
    socklen_t len = sizeof cred;
    int fd = -1;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred &&
        cred.uid == geteuid() && cred.pid > 0)
        fd = take_region_fd(c);
    struct record_follower *fl = fd >= 0 ? calloc(1, sizeof *fl) : NULL;
    unsigned char answer = 0;
    if (fl) {
        fl->pidfd = cred.pid == f->child ? -1 : (int)syscall(SYS_pidfd_open, cred.pid, 0);
        int adopted = -1;
        if (fl->pidfd >= 0 || cred.pid == f->child) {
            struct mtl_encoder *spare = f->nspare ? &f->spare[--f->nspare] : NULL;
            adopted = record_writer_adopt(&fl->rw, fd, cred.pid, spare); /* closes fd */
            fd = -1;
        }
        if (adopted == 0) {
            record_control_start(&fl->ctl, &fl->rw, cred.pid);
            fl->next = f->list;
            f->list = fl;
            f->live++;
            answer = MTL_HANDOVER_TAKEN;
        } else {
            if (fl->pidfd >= 0)
                close(fl->pidfd);
            free(fl);
        }
    }
    if (fd >= 0)
        close(fd);
    /* Not taken, the process writes its traces itself.  One that gave up
     * waiting does too: its writer here then waits for a trace never
     * begun, and ends with the process, writing nothing. */
    ssize_t sent = send(c, &answer, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;
    close(c);
}

/* Frees the followers that ended. */
static void sweep(struct record_followers *f)
{
    for (struct record_follower **at = &f->list; *at;) {
        struct record_follower *fl = *at;
        if (fl->ended) {
            *at = fl->next;
            free(fl);
            f->live--;
        } else {
            at = &fl->next;
        }
    }
}

/* memtally record waits a second for the followed processes still running,
 * then says which. */
static void say_waiting(struct record_followers *f)
{
    char pids[256];
    size_t n = 0;
    unsigned shown = 0;
    pids[0] = '\0';
    for (struct record_follower *fl = f->list; fl && shown < 8; fl = fl->next, shown++)
        if (n < sizeof pids)
            n += (size_t)snprintf(pids + n, sizeof pids - n, " %d", (int)fl->rw.pid);
    fprintf(stderr, "memtally: waiting for %u followed process%s still running (pid%s%s%s); "
                    "interrupt (Ctrl-C) to end their traces now\n",
            f->live, f->live == 1 ? "" : "es", f->live == 1 ? "" : "s", pids,
            f->live > shown ? " ..." : "");
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *serve(void *arg)
{
    struct record_followers *f = arg;
    struct pollfd *p = NULL;
    size_t cap = 0;
    uint64_t done_at = 0;
    int said = 0;
    for (;;) {
        int done = atomic_load(&f->child_done);
        if (done && !done_at)
            done_at = now_ms();
        if (done) {
            /* memtally record's child has ended: the programs it exec'd
             * with it; and a process whose trace has ended (it exec'd a
             * program not followed) is not waited for.  Interrupted, the
             * traces still open end here. */
            int stop = atomic_exchange(&f->interrupted, 0);
            if (stop && f->live && !f->quiet)
                fprintf(stderr, "memtally: interrupted: the trace%s of %u followed process%s "
                                "still running end%s here\n", f->live == 1 ? "" : "s",
                        f->live, f->live == 1 ? "" : "es", f->live == 1 ? "s" : "");
            for (struct record_follower *fl = f->list; fl; fl = fl->next)
                if (stop && fl->pidfd >= 0)
                    record_writer_stop(&fl->rw);
            for (struct record_follower *fl = f->list; fl; fl = fl->next)
                if (fl->pidfd < 0)
                    end_one(f, fl, f->child_status);
                else if (record_writer_ended(&fl->rw))
                    end_one(f, fl, -1);
            sweep(f);
            if (!f->live)
                break;
            if (!said && !f->quiet && now_ms() - done_at >= 1000) {
                say_waiting(f);
                said = 1;
            }
        }
        if (cap < f->live + 2) {
            cap = 2 * (f->live + 2);
            struct pollfd *grown = realloc(p, cap * sizeof *p);
            if (!grown) {
                struct timespec ms = { 0, 100000000 }; /* try again */
                nanosleep(&ms, NULL);
                continue;
            }
            p = grown;
        }
        size_t n = 0;
        p[n++] = (struct pollfd){ .fd = f->fd, .events = POLLIN };
        p[n++] = (struct pollfd){ .fd = f->wake, .events = POLLIN };
        for (struct record_follower *fl = f->list; fl; fl = fl->next)
            if (fl->pidfd >= 0)
                p[n++] = (struct pollfd){ .fd = fl->pidfd, .events = POLLIN };
        /* Once the child has ended, a trace that ends is looked for too. */
        if (poll(p, n, done ? 100 : -1) < 0)
            continue;
        size_t i = 2;
        for (struct record_follower *fl = f->list; fl; fl = fl->next)
            if (fl->pidfd >= 0 && p[i++].revents)
                end_one(f, fl, zombie_status(fl->rw.pid, fl->pidfd));
        sweep(f);
        if (p[0].revents & POLLIN)
            take_one(f);
        if (p[1].revents & POLLIN) {
            uint64_t v;
            if (read(f->wake, &v, sizeof v) < 0) {
                /* read again next time */
            }
        }
    }
    free(p);
    return NULL;
}

int record_followers_start(struct record_followers *f)
{
    memset(f, 0, sizeof *f);
    f->fd = f->wake = -1;
    char why[256];
    f->fd = mtl_handover_listen(getpid(), f->path, sizeof f->path, why, sizeof why);
    if (f->fd < 0) {
        cli_error("record: %s; followed processes write their own traces", why);
        return -1;
    }
    f->wake = eventfd(0, EFD_CLOEXEC);
    if (f->wake < 0) {
        unlink(f->path);
        close(f->fd);
        f->fd = -1;
        return -1;
    }
    return 0;
}

void record_followers_child(struct record_followers *f, pid_t pid)
{
    if (f->fd < 0)
        return;
    f->child = pid;
    if (pthread_create(&f->thread, NULL, serve, f) == 0)
        f->running = 1;
    else
        cli_error("record: cannot start a thread; followed processes write their own traces");
}

void record_followers_interrupt(struct record_followers *f)
{
    if (f->wake < 0)
        return;
    atomic_store(&f->interrupted, 1);
    uint64_t one = 1;
    ssize_t n = write(f->wake, &one, sizeof one);
    (void)n;
}

int record_followers_finish(struct record_followers *f, int status, int quiet)
{
    if (f->fd < 0)
        return 0;
    if (f->running) {
        f->child_status = status;
        f->quiet = quiet;
        atomic_store(&f->child_done, 1);
        uint64_t one = 1;
        if (write(f->wake, &one, sizeof one) < 0) {
            /* an eventfd's counter cannot be full here */
        }
        pthread_join(f->thread, NULL);
        f->running = 0;
    }
    while (f->nspare)
        mtl_encoder_release(&f->spare[--f->nspare]);
    unlink(f->path);
    close(f->fd);
    close(f->wake);
    f->fd = f->wake = -1;
    return f->failed ? -1 : 0;
}
