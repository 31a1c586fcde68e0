/*
 * eventcost: what one event (an allocation or a free) costs the program,
 * measured so that the machine's noise drops out.
 *
 *   eventcost SHAPE [ROUNDS]      ROUNDS at least 10 (default 20000)
 *
 * A round is a fixed piece of allocation work, timed alone; the program
 * prints the 10th percentile of the rounds' times per event, in ns.  A
 * round the machine slowed (another tenant, an interrupt, the writer
 * sharing the core) is simply not among the fastest: on this project's
 * shared machine the figure stays within about 1% from run to run, where
 * the wall time of a whole recorded run moves by 10 to 30%.  It is the
 * cost of the hooks on the program's own thread, not memtally record's
 * (the writer, on the other core, is measured by the wall time of
 * bench/run.sh).
 *
 * SHAPE:
 *   flat  64 mallocs of 16 to 79 bytes, then their 64 frees, eight times,
 *         from one call site 10 frames deep: every stack the last one
 *         (the recent stacks' path, src/preload/recent.h).
 *   tree  a binary tree of depth 9 (1,023 nodes of 16 bytes) made by two
 *         recursive functions, one for left children and one for right
 *         ones, then freed: every allocation's stack a different one, 2
 *         to 11 frames deep, known after the first round (the walk's
 *         reuse and the thread's stack cache, binary trees' path).
 *   new   a path of 40 calls, each to one of two functions by a bit of
 *         the round's number, a 16-byte block allocated at each level,
 *         then the 40 freed: the stack at level i is new when the round's
 *         number is below 2^i, so past round 2^15 the 25 deepest of each
 *         round's stacks were never seen (interning them: binary trees'
 *         917,502 new stacks).  ROUNDS up to 2^39.
 *
 * stdout: "SHAPE ns/event P10 (median MEDIAN)".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct node {
    struct node *left, *right;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *must_malloc(size_t size)
{
    void *p = malloc(size);
    if (p == NULL) {
        perror("eventcost: malloc");
        exit(1);
    }
    return p;
}

static __attribute__((noinline)) void flat_leaf(void **blocks)
{
    for (int k = 0; k < 64; k++)
        blocks[k] = must_malloc(16 + (size_t)k);
    for (int k = 0; k < 64; k++)
        free(blocks[k]);
}

/* depth frames between the round and the allocating one; the empty asm
 * keeps the recursion a real call, not a loop. */
static __attribute__((noinline)) void flat_at(int depth, void **blocks)
{
    if (depth > 0) {
        flat_at(depth - 1, blocks);
        __asm__ volatile("");
    } else {
        flat_leaf(blocks);
    }
}

static void flat_round(void)
{
    void *blocks[64];
    for (int i = 0; i < 8; i++)
        flat_at(9, blocks);
}

static struct node *make_right(int depth);

static __attribute__((noinline, noclone)) struct node *make_left(int depth)
{
    struct node *n = must_malloc(sizeof *n);
    n->left = depth > 0 ? make_left(depth - 1) : NULL;
    n->right = depth > 0 ? make_right(depth - 1) : NULL;
    return n;
}

static __attribute__((noinline, noclone)) struct node *make_right(int depth)
{
    struct node *n = must_malloc(sizeof *n);
    n->right = depth > 0 ? make_right(depth - 1) : NULL;
    n->left = depth > 0 ? make_left(depth - 1) : NULL;
    return n;
}

static void free_tree(struct node *n)
{
    if (n->left != NULL)
        free_tree(n->left);
    if (n->right != NULL)
        free_tree(n->right);
    free(n);
}

static void tree_round(void)
{
    free_tree(make_left(9));
}

#define NEW_DEPTH 40

static void new_right(unsigned long r, int depth, void **blocks);

/* The empty asm keeps each call a real call, not a jump. */
static __attribute__((noinline, noclone)) void new_left(unsigned long r, int depth, void **blocks)
{
    blocks[depth] = must_malloc(16);
    if (depth + 1 < NEW_DEPTH)
        ((r >> depth) & 1 ? new_right : new_left)(r, depth + 1, blocks);
    __asm__ volatile("");
}

static __attribute__((noinline, noclone)) void new_right(unsigned long r, int depth, void **blocks)
{
    blocks[depth] = must_malloc(16);
    if (depth + 1 < NEW_DEPTH)
        ((r >> depth) & 1 ? new_right : new_left)(r, depth + 1, blocks);
    __asm__ volatile("");
}

static unsigned long new_rounds;

static void new_round(void)
{
    void *blocks[NEW_DEPTH];
    new_left(new_rounds++, 0, blocks);
    for (int i = 0; i < NEW_DEPTH; i++)
        free(blocks[i]);
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    void (*round)(void);
    double events;
    if (argc >= 2 && strcmp(argv[1], "flat") == 0) {
        round = flat_round;
        events = 8 * 128;
    } else if (argc >= 2 && strcmp(argv[1], "tree") == 0) {
        round = tree_round;
        events = 2 * 1023;
    } else if (argc >= 2 && strcmp(argv[1], "new") == 0) {
        round = new_round;
        events = 2 * NEW_DEPTH;
    } else {
        fprintf(stderr, "usage: eventcost flat|tree|new [ROUNDS]\n");
        return 2;
    }
    long rounds = argc >= 3 ? atol(argv[2]) : 20000;
    if (rounds < 10) {
        fprintf(stderr, "eventcost: ROUNDS must be at least 10\n");
        return 2;
    }
    uint64_t *took = must_malloc((size_t)rounds * sizeof *took);
    for (long r = 0; r < rounds; r++) {
        uint64_t t0 = now_ns();
        round();
        took[r] = now_ns() - t0;
    }
    qsort(took, (size_t)rounds, sizeof *took, by_value);
    printf("%s ns/event %.2f (median %.2f)\n", argv[1], (double)took[rounds / 10] / events,
           (double)took[rounds / 2] / events);
    free(took);
    return 0;
}
