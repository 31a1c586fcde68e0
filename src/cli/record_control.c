/* record_control.c: see record_control.h. */
#include "cli/record_control.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/ctlsock.h"

static void *serve(void *arg)
{
    struct record_control *rc = arg;
    while (!atomic_load(&rc->stop)) {
        /* The eventfd wakes us at once when the program has ended. */
        struct pollfd p[2] = { { .fd = rc->fd, .events = POLLIN },
                               { .fd = rc->wake, .events = POLLIN } };
        if (poll(p, 2, -1) <= 0 || !(p[0].revents & POLLIN))
            continue;
        int fd = accept4(rc->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            continue;
        if (mtl_ctl_peer_ok(fd)) {
            char line[MTL_CTL_LINE], answer[MTL_CTL_ANSWER];
            int n = mtl_ctl_read_line(fd, line, sizeof line, MTL_CTL_TIMEOUT_MS);
            if (n > 0) {
                record_writer_control(rc->rw, line, answer, sizeof answer);
                mtl_ctl_write(fd, answer, strlen(answer), MTL_CTL_TIMEOUT_MS);
            } else if (n == -E2BIG) {
                static const char msg[] = "error command line too long\n";
                mtl_ctl_write(fd, msg, sizeof msg - 1, MTL_CTL_TIMEOUT_MS);
            }
        }
        close(fd);
    }
    return NULL;
}

int record_control_start(struct record_control *rc, struct record_writer *rw, pid_t pid)
{
    memset(rc, 0, sizeof *rc);
    rc->fd = -1;
    const char *env = getenv("MEMTALLY_CONTROL");
    if (env && !strcmp(env, "0"))
        return 0;
    rc->rw = rw;
    if ((rc->wake = eventfd(0, EFD_CLOEXEC)) < 0)
        return -1;
    char why[256];
    rc->fd = mtl_ctl_listen(pid, rc->path, sizeof rc->path, why, sizeof why);
    if (rc->fd < 0) {
        cli_error("%s; no live control (memtally ctl, memtally top)", why);
        close(rc->wake);
        return -1;
    }
    if (pthread_create(&rc->thread, NULL, serve, rc) != 0) {
        unlink(rc->path);
        close(rc->fd);
        close(rc->wake);
        rc->fd = -1;
        return -1;
    }
    struct stat st;
    if (stat(rc->path, &st) == 0)
        rc->ino = st.st_ino;
    rc->running = 1;
    return 0;
}

/* Removes the socket file if it is still ours. */
static void remove_socket(struct record_control *rc)
{
    struct stat st;
    if (stat(rc->path, &st) == 0 && st.st_ino == rc->ino)
        unlink(rc->path);
}

void record_control_stop(struct record_control *rc)
{
    if (!rc->running)
        return;
    atomic_store(&rc->stop, 1);
    uint64_t one = 1;
    if (write(rc->wake, &one, sizeof one) < 0) {
        /* an eventfd's counter cannot be full here */
    }
    pthread_join(rc->thread, NULL);
    rc->running = 0;
    remove_socket(rc);
    close(rc->fd);
    close(rc->wake);
    rc->fd = -1;
}
