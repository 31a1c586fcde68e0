/* exact_fork: parent and child both allocate known amounts after fork(); the
 * child also frees a block that the parent allocated before the fork.  Each
 * trace counts only the allocations made in its own process, and a free
 * counts only when it matches an allocation of the same trace, so the child's
 * free(a) counts nowhere.  Prints "fork: parent PID child PID" on stderr.
 *
 * Truth (from the code):
 *   parent: allocations 3, frees 2, bytes_allocated 1600,
 *           peak_live_bytes 1400, live_bytes_at_end 400, threads 1
 *   child (its allocations after the fork only): allocations 3, frees 1,
 *           bytes_allocated 105, peak_live_bytes 100, live_bytes_at_end 75,
 *           threads 1
 * valgrind agrees on the parent (3 allocs, 2 frees, 1600 bytes, 400 in use,
 * massif's peak 1400).  Its child line, 5 allocs, 3 frees, 1305 bytes, 75 in
 * use, counts the whole history of the child's memory: the parent's 2
 * allocations (1200 bytes) and 1 free before the fork, the child's free(a),
 * and the child's own 3 allocations (105 bytes) and 1 free.
 * stdout: "child ok" then "parent ok"; exit status 0 (the child exits 3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

int main(void)
{
    char *a = malloc(1000);                 /* parent: live 1000 */
    char *b = malloc(200);                  /* parent: live 1200 */
    if (!a || !b) die("malloc failed\n");
    free(b);                                /* parent: live 1000 */
    pid_t pid = fork();
    if (pid < 0) die("fork failed\n");
    if (pid == 0) {
        free(a);                            /* the parent's block: counts nothing */
        char *c = malloc(30);               /* child: live 30 */
        char *d = calloc(2, 35);            /* child: live 100, its peak */
        free(c);                            /* child: live 70 */
        char *e = malloc(5);                /* child: live 75 */
        if (!c || !d || !e) die("child allocation failed\n");
        (void)!write(1, "child ok\n", 9);
        exit(3);                            /* d and e live: 75 */
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
        die("child did not exit with 3\n");
    char *f = malloc(400);                  /* parent: live 1400, its peak */
    free(a);                                /* parent: live 400 */
    if (!f) die("malloc failed\n");
    char msg[64];
    snprintf(msg, sizeof msg, "fork: parent %d child %d\n", (int)getpid(), (int)pid);
    (void)!write(2, msg, strlen(msg));
    (void)!write(1, "parent ok\n", 10);
    return 0;                               /* f live: 400 */
}
