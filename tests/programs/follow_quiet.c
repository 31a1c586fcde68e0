/* follow_quiet: what a process that memtally record follows can notice of
 * it, and what its trace keeps when it is killed.
 *
 *   follow_quiet fork N   forks; the child allocates N blocks of 100 bytes
 *                         (freeing none), says what it sees, and exits 0
 *   follow_quiet kill N   the same, but the child then kills itself with
 *                         SIGKILL (the parent says how the child ended)
 *   follow_quiet exec N   execs itself as "follow_quiet image N", which
 *                         does what the child does and exits 0
 *   follow_quiet hold N   the child allocates N blocks, writes its pid to
 *                         the file "child.pid" and waits (20 s at most)
 *                         for a file "go" to appear, then exits 0
 *   follow_quiet orphan N the same, but the parent exits as soon as the
 *                         child has written child.pid, without waiting
 *                         for it to end (by then the child has handed its
 *                         region to memtally record: one whose parent
 *                         ended before it could, under a loaded machine,
 *                         found no memtally record to take it and wrote
 *                         its trace itself, so the test could not see
 *                         memtally record wait for it)
 *
 * What a process sees: "threads T fds F" (its entries of /proc/self/task
 * and /proc/self/fd, read with getdents64: nothing here allocates but the
 * N blocks).  Without memtally: threads 1, fds 3.  Under memtally record
 * with --follow-fork or --follow-exec it must be the same: no thread, no
 * descriptor of ours.  Truth for the child's or the image's trace:
 *   allocations N, frees 0, bytes_allocated 100 N, live_bytes_at_end 100 N.
 */
#include <fcntl.h>
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Entries of directory path, but . and .. (and for /proc/self/fd the
 * descriptor that reads it). */
static int entries(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    int n = 0;
    long got;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
        for (long at = 0; at < got;) {
            unsigned short reclen;
            memcpy(&reclen, buf + at + 16, sizeof reclen);
            const char *name = buf + at + 19;
            if (strcmp(name, ".") && strcmp(name, ".."))
                n++;
            at += reclen;
        }
    close(fd);
    return n;
}

static void say(const char *who)
{
    char line[128];
    int fds = entries("/proc/self/fd") - 1;
    int len = snprintf(line, sizeof line, "%s: threads %d fds %d\n", who,
                       entries("/proc/self/task"), fds);
    (void)!write(1, line, (size_t)len);
}

/* The child's or the image's part. */
static void allocate(long n)
{
    for (long i = 0; i < n; i++) {
        volatile char *p = malloc(100);
        if (!p)
            _exit(1);
        p[0] = 1;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long n = atol(argv[2]);
    if (!strcmp(argv[1], "image")) {
        allocate(n);
        say("image");
        return 0;
    }
    if (!strcmp(argv[1], "exec")) {
        char *args[] = { argv[0], "image", argv[2], NULL };
        execv("/proc/self/exe", args);
        return 127;
    }
    int killed = !strcmp(argv[1], "kill"), orphan = !strcmp(argv[1], "orphan");
    int hold = orphan || !strcmp(argv[1], "hold");
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        allocate(n);
        if (hold) {
            char line[32];
            int len = snprintf(line, sizeof line, "%d\n", (int)getpid());
            int fd = open("child.pid.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (fd < 0 || write(fd, line, (size_t)len) != len || close(fd) < 0 ||
                rename("child.pid.new", "child.pid") < 0)
                _exit(1);
            struct timespec ms = { 0, 10000000 };
            for (int i = 0; i < 2000 && access("go", F_OK) < 0; i++)
                nanosleep(&ms, NULL);
            _exit(0);
        }
        say("child");
        if (killed)
            raise(SIGKILL);
        _exit(0);
    }
    if (orphan) {
        struct timespec ms = { 0, 10000000 };
        for (int i = 0; i < 2000 && access("child.pid", F_OK) < 0; i++)
            nanosleep(&ms, NULL);
        return 0;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0)
        return 1;
    char line[64];
    int len = snprintf(line, sizeof line, "child ended: %s %d\n",
                       WIFSIGNALED(status) ? "signal" : "exit",
                       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    (void)!write(1, line, (size_t)len);
    return 0;
}
