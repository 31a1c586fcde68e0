/* forks: a program that starts many short processes, as a build or a
 * shell script does, for bench/follow.sh.
 *   forks CHILDREN BATCH   forks CHILDREN children, waiting for each
 *                          BATCH of them; child i makes i % 7 + 1
 *                          allocations of 100 bytes and exits
 * A thread of the parent meanwhile makes 200,000 malloc/free pairs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *churn(void *arg)
{
    for (int i = 0; i < 200000; i++) {
        char *volatile p = malloc(64);
        free(p);
    }
    return arg;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int children = atoi(argv[1]), batch = atoi(argv[2]);
    pthread_t t;
    if (pthread_create(&t, NULL, churn, NULL) != 0)
        return 1;
    for (int i = 0; i < children; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            for (int k = 0; k <= i % 7; k++) {
                char *volatile p = malloc(100);
                (void)p;
            }
            _exit(0);
        }
        if (batch > 0 && i % batch == batch - 1)
            while (wait(NULL) > 0) {
            }
    }
    while (wait(NULL) > 0) {
    }
    pthread_join(t, NULL);
    return 0;
}
