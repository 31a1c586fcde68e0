/*
 * binarytrees: the classic binary-trees benchmark (from the Computer
 * Language Benchmarks Game), for the side-by-side benchmark
 * (bench/README.md): millions of small blocks made by recursive code, each
 * with its own call stack.
 *
 *   binarytrees [DEPTH]      DEPTH at least 6 (default 17)
 *
 * As in the original: a "stretch" tree of depth DEPTH + 1 is built, checked
 * and freed; then a long-lived tree of depth DEPTH is built; then, for
 * each depth d = 4, 6, ..., DEPTH, 2^(DEPTH - d + 4) trees of depth d are
 * built, checked and freed one after the other; last the long-lived tree is
 * checked and freed.  Every node is one malloc of 16 bytes (two pointers),
 * freed by a recursive walk.
 *
 * What differs from the original: a node's left child is made by
 * make_left() and its right child by make_right(), two distinct recursive
 * functions that are never inlined, so the call stack of each allocation
 * spells the path from the root to the node.  A tree of depth d then has
 * 2^(d+1) - 1 distinct allocation stacks.  The stretch tree, the long-lived
 * tree and the iterated trees are each made from their own call site, and
 * the iterated trees of every depth from the same one (a smaller tree's
 * stacks are a subset of the largest one's), so at depth 17 a run has
 * 2^19 - 1 + 2^18 - 1 + 2^17 - 1 = 917501 distinct stacks (plus libc's
 * own), about 30 million allocations and as many frees.
 *
 * stdout: the original's report (node counts of every tree checked), the
 * same on every run.
 */
#include <stdio.h>
#include <stdlib.h>

struct node {
    struct node *left;
    struct node *right;
};

static struct node *make_right(int depth);

static struct node *new_node(void)
{
    struct node *n = malloc(sizeof *n);
    if (n == NULL) {
        perror("binarytrees: malloc");
        exit(1);
    }
    return n;
}

/*
 * The two builders differ in the order they make the children, so that the
 * compiler cannot fold them into one function (identical code folding),
 * which would still give distinct stacks but one name in reports.
 * new_node() is static and small: it is inlined, so the allocating frame is
 * the builder itself.
 */
static __attribute__((noinline, noclone)) struct node *make_left(int depth)
{
    struct node *n = new_node();
    if (depth > 0) {
        n->left = make_left(depth - 1);
        n->right = make_right(depth - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static __attribute__((noinline, noclone)) struct node *make_right(int depth)
{
    struct node *n = new_node();
    if (depth > 0) {
        n->right = make_right(depth - 1);
        n->left = make_left(depth - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static __attribute__((noinline)) long check(const struct node *n)
{
    if (n->left == NULL)
        return 1;
    return 1 + check(n->left) + check(n->right);
}

static __attribute__((noinline)) void delete_tree(struct node *n)
{
    if (n->left != NULL) {
        delete_tree(n->left);
        delete_tree(n->right);
    }
    free(n);
}

/*
 * Each kind of tree from its own call site: see the comment at the top.
 * Each maker counts its trees in its own slot, so that the three bodies
 * differ and the compiler cannot fold them into one; the count is used
 * after the call, so the call is not a tail call (a jump), which would drop
 * the maker's frame from the stacks.
 */
static long trees_made[3];

#define TREE_MAKER(NAME, K)                                                 \
    static __attribute__((noinline, noclone)) struct node *NAME(int depth)  \
    {                                                                       \
        struct node *t = make_left(depth);                                  \
        trees_made[K]++;                                                    \
        return t;                                                           \
    }

TREE_MAKER(make_stretch, 0)
TREE_MAKER(make_long_lived, 1)
TREE_MAKER(make_iterated, 2)

int main(int argc, char **argv)
{
    const int min_depth = 4;
    int max_depth = argc > 1 ? atoi(argv[1]) : 17;
    if (max_depth < min_depth + 2 || max_depth > 30) {
        fprintf(stderr, "usage: binarytrees [DEPTH (6 to 30)]\n");
        return 2;
    }

    struct node *stretch = make_stretch(max_depth + 1);
    printf("stretch tree of depth %d\t check: %ld\n", max_depth + 1, check(stretch));
    delete_tree(stretch);

    struct node *long_lived = make_long_lived(max_depth);

    for (int d = min_depth; d <= max_depth; d += 2) {
        long iterations = 1L << (max_depth - d + min_depth);
        long sum = 0;
        for (long i = 0; i < iterations; i++) {
            struct node *t = make_iterated(d);
            sum += check(t);
            delete_tree(t);
        }
        printf("%ld\t trees of depth %d\t check: %ld\n", iterations, d, sum);
    }

    printf("long lived tree of depth %d\t check: %ld\n", max_depth, check(long_lived));
    delete_tree(long_lived);
    if (trees_made[0] != 1 || trees_made[1] != 1) {
        fprintf(stderr, "binarytrees: wrong tree count\n");
        return 1;
    }
    return 0;
}
