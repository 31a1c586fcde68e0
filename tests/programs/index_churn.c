/*
 * index_churn.c: allocations that fill many chunks of a trace's index
 * (65,536 blocks each, 16 of them kept pending while it is built), so that
 * tests/integration/test_index_equivalence.sh covers every path of the
 * index: blocks freed while their chunk is pending, blocks freed long
 * after (late frees), blocks never freed, temporary blocks, two threads,
 * three stacks and sizes from 1 byte to 64 KiB.
 *
 *   index_churn [BLOCKS]     (default 1,500,000)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

NOINLINE static void *short_lived(size_t n) { return malloc(n); }
NOINLINE static void *long_lived(size_t n) { return calloc(1, n); }
NOINLINE static void *scratch(size_t n) { return sink = malloc(n); }

static long blocks = 1500000;

static void *churn(void *arg)
{
    long share = (long)(intptr_t)arg;
    void **ring = calloc(4096, sizeof *ring);
    void **kept = calloc((size_t)share / 97 + 1, sizeof *kept);
    long nkept = 0;
    unsigned x = 12345u + (unsigned)share;
    for (long i = 0; i < share; i++) {
        x = x * 1103515245u + 12345u;
        size_t size = 1 + (x >> 8) % ((x & 0x7000) ? 64 : 65536);
        if (i % 97 == 0) {
            kept[nkept++] = long_lived(size);
        } else if (i % 5 == 0) {
            free(scratch(size)); /* temporary: freed right away */
        } else {
            free(ring[i % 4096]);
            ring[i % 4096] = short_lived(size);
        }
    }
    /* Half the kept blocks go at the end: long after their chunk was
     * written.  The rest stay: never freed. */
    for (long i = 0; i < nkept; i += 2)
        free(kept[i]);
    for (int i = 0; i < 4096; i++)
        free(ring[i]);
    free(ring);
    free(kept);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        blocks = atol(argv[1]);
    pthread_t t;
    pthread_create(&t, NULL, churn, (void *)(intptr_t)(blocks / 3));
    churn((void *)(intptr_t)(blocks - blocks / 3));
    pthread_join(t, NULL);
    return 0;
}
