/* rusage: runs a command and prints its wall time in microseconds and the
 * largest resident set of the process it started (ru_maxrss of wait4, in
 * KiB), for bench/follow.sh.  Its exit status is the command's.
 *   rusage COMMAND ARGS... */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long us = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
    printf("%lld %ld\n", us, ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
