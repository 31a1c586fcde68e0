/* damage_source: a trace with many blocks for the damaged-trace tests.  40
 * rounds, 40 ms apart (about 1.6 s: the recorder closes a block at least
 * every 250 ms, so about 7 blocks), each making 2500 allocations from three
 * different call paths and freeing them, all but the last 100 of the
 * program.
 *
 * Truth (from the code):
 *   allocations 100000, frees 99900, bytes_allocated 10050000
 *   (sizes 1..200 in turn: 500 * 20100), live_bytes_at_end 15050
 *   (the last 100 sizes: 101..200), threads 1.  Prints "damage ok", exits 0.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 40
#define PER_ROUND 2500
#define KEEP 100

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

/* Three call paths, so that the trace defines stacks in every block. */
static void *leaf(size_t n) { return malloc(n); }
static void *via_one(size_t n) { return leaf(n); }
static void *via_two(size_t n, int depth)
{
    return depth ? via_two(n, depth - 1) : calloc(1, n);
}

int main(void)
{
    static void *kept[KEEP];
    void *round[PER_ROUND];
    size_t i = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int j = 0; j < PER_ROUND; j++, i++) {
            size_t n = i % 200 + 1;
            void *p;
            switch (i % 3) {
            case 0: p = leaf(n); break;
            case 1: p = via_one(n); break;
            default: p = via_two(n, (int)(i % 5)); break;
            }
            if (!p) die("allocation failed\n");
            memset(p, 1, n);
            round[j] = p;
        }
        int last = r == ROUNDS - 1;
        for (int j = 0; j < PER_ROUND; j++) {
            if (last && j >= PER_ROUND - KEEP) kept[j - (PER_ROUND - KEEP)] = round[j];
            else free(round[j]);
        }
        usleep(40000);
    }
    (void)!write(1, "damage ok\n", 10);
    return kept[0] == NULL;
}
