/* tree_fork: a parent and two forked children holding known blocks at
 * known times, for memtally merge --tree (tests/integration/test_merge.sh).
 *
 *   parent   malloc(1000), kept to the end
 *            forks child 1 and child 2, waits until both hold their block
 *   child 1  malloc(3000), tells the parent, waits for its word, frees it
 *   child 2  malloc(5000), the same
 *   parent   malloc(2000): the combined peak, 11000 bytes live (parent
 *            3000, child 1 3000, child 2 5000); sleeps 50 ms; tells the
 *            children to go on, waits for them, frees the 2000
 *
 * Truth: combined peak 11000 bytes, parent 3000, child 1 3000, child 2
 * 5000; 4 allocations (parent 2, each child 1), 11000 bytes in all; at the
 * end 1000 live (the parent's first block).  Children exit with _exit: no
 * stdio, no allocation of their own after the fork but these.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

static void child(size_t size, int ready, int go)
{
    char *p = malloc(size);
    if (!p)
        die("malloc failed\n");
    memset(p, 1, size);
    char c = 'r';
    if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
        die("child: pipe failed\n");
    free(p);
    _exit(0);
}

int main(void)
{
    char *first = malloc(1000);
    int ready[2], go[2];
    if (!first || pipe(ready) || pipe(go))
        die("setup failed\n");
    pid_t kids[2];
    size_t sizes[2] = { 3000, 5000 };
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] < 0)
            die("fork failed\n");
        if (kids[i] == 0)
            child(sizes[i], ready[1], go[0]);
    }
    char c;
    for (int i = 0; i < 2; i++)
        if (read(ready[0], &c, 1) != 1)
            die("parent: pipe failed\n");
    char *peak = malloc(2000);
    if (!peak)
        die("malloc failed\n");
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    if (write(go[1], "gg", 2) != 2)
        die("parent: pipe failed\n");
    for (int i = 0; i < 2; i++)
        waitpid(kids[i], NULL, 0);
    free(peak);
    (void)!write(1, "tree ok\n", 8);
    return first[0] == 42; /* keeps the first block live to the end */
}
