/* unwind_new_stacks: threads that intern new stacks at the same time.
 *
 * Each of THREADS threads runs ROUNDS rounds; round i of thread t walks a
 * path DEPTH calls deep through two functions, the call at level d chosen
 * by bit d of r = i * THREADS + t, allocating one block at each level, then
 * frees the path's blocks.  The stack of the block at level d is set by
 * bits 0 .. d-1 of r, and r takes every value below THREADS * ROUNDS once:
 * the program's distinct allocation stacks number the sum over d of
 * min(2^d, THREADS * ROUNDS), most of them new when first met, interned by
 * several threads at once (src/preload/stacks.c: the trie's slots fetched
 * ahead, unlocked, and its tags).
 *
 * Truth: allocations THREADS * ROUNDS * DEPTH of the program's (and
 * glibc's own few: the threads' DTVs); stacks of the program's
 * STACKS (printed as "stacks N" on stdout).  Nodes of the stack trie
 * (memtally info's "frames in their tree"): each of those stacks' leaves
 * (a malloc call in the level's function), and above level d the
 * recursive call of each level's function (one call, by a pointer), set
 * by bits 0 .. d-1 as well: NODES (printed as "nodes N"), plus the few of
 * the threads' own callers and of main's stacks.  A trie that failed to
 * find a node it has would make it again: more.  Then "new stacks ok".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 3000
#define DEPTH 20

static void go_right(unsigned long r, int d, void **blocks);

static void go_left(unsigned long r, int d, void **blocks)
{
    blocks[d] = malloc(16);
    if (d + 1 < DEPTH)
        ((r >> d) & 1 ? go_right : go_left)(r, d + 1, blocks);
}

static void go_right(unsigned long r, int d, void **blocks)
{
    blocks[d] = malloc(16);
    if (d + 1 < DEPTH)
        ((r >> d) & 1 ? go_right : go_left)(r, d + 1, blocks);
}

static void *worker(void *arg)
{
    unsigned long t = (unsigned long)arg;
    void *blocks[DEPTH];
    for (unsigned long i = 0; i < ROUNDS; i++) {
        go_left(i * THREADS + t, 0, blocks);
        for (int d = 0; d < DEPTH; d++)
            free(blocks[d]);
    }
    return NULL;
}

int main(void)
{
    pthread_t th[THREADS];
    for (unsigned long t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0)
            return 1;
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    unsigned long stacks = 0, nodes = 0;
    for (int d = 0; d < DEPTH; d++) {
        unsigned long paths = (1ul << d) < THREADS * ROUNDS ? 1ul << d : THREADS * ROUNDS;
        stacks += paths;
        nodes += d + 1 < DEPTH ? 2 * paths : paths;
    }
    printf("stacks %lu\nnodes %lu\nnew stacks ok\n", stacks, nodes);
    return 0;
}
