/* exact_handoff: 4 threads in a ring, each allocating blocks and handing
 * them to the next, which frees them, as fast as they can: millions of
 * events from threads that the writer claims (src/common/region.h,
 * mtl_state_enter) while they append, with blocks that cross threads and
 * addresses that come back to another thread at once (run it with
 * glibc's per-thread cache off for more of those).  A free the writer put
 * after its address's next allocation, or an event lost, would change the
 * counts.
 *
 * Usage: exact_handoff ROUNDS.  Each thread allocates ROUNDS blocks of
 * 16 to 515 bytes and frees the ROUNDS its neighbour handed it.  glibc's
 * pthread_create makes one allocation of its own in the creating thread
 * (main): calloc of the new thread's DTV, D bytes, never freed (D as
 * tests/programs/exact_threads.c computes it).  Prints on stderr
 * "truth ALLOCS FREES BYTES LIVE" from the code:
 *   allocations 4 ROUNDS + 4, frees 4 ROUNDS, bytes the blocks' sizes + 4 D,
 *   live at the end 4 D, 5 threads (main and the workers).
 * Prints "handoff ok" on stdout (write(2): no stdio buffer), exits 0. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define RING 256 /* a power of two */

struct ring {
    _Atomic size_t head, tail; /* head: the producer's, tail: the consumer's */
    void *slot[RING];
};

static struct ring rings[THREADS]; /* ring i: from thread i to thread i + 1 */
static size_t rounds;

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

static size_t block_size(size_t thread, size_t k)
{
    return 16 + (thread * 7919 + k * 31) % 500;
}

static int max_modid(struct dl_phdr_info *info, size_t size, void *data)
{
    size_t *m = data;
    if (info->dlpi_tls_modid > *m) *m = info->dlpi_tls_modid;
    return 0;
}

static void *worker(void *arg)
{
    size_t me = (size_t)(uintptr_t)arg;
    struct ring *out = &rings[me], *in = &rings[(me + THREADS - 1) % THREADS];
    size_t made = 0, freed = 0;
    while (made < rounds || freed < rounds) {
        int did = 0;
        size_t h = atomic_load_explicit(&out->head, memory_order_relaxed);
        if (made < rounds && h - atomic_load_explicit(&out->tail, memory_order_acquire) < RING) {
            char *p = malloc(block_size(me, made));
            if (!p) die("malloc failed\n");
            p[0] = (char)made;
            out->slot[h % RING] = p;
            atomic_store_explicit(&out->head, h + 1, memory_order_release);
            made++;
            did = 1;
        }
        size_t t = atomic_load_explicit(&in->tail, memory_order_relaxed);
        if (freed < rounds && t != atomic_load_explicit(&in->head, memory_order_acquire)) {
            free(in->slot[t % RING]);
            atomic_store_explicit(&in->tail, t + 1, memory_order_release);
            freed++;
            did = 1;
        }
        if (!did)
            sched_yield();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t th[THREADS];
    for (size_t i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], &attr, worker, (void *)(uintptr_t)i) != 0)
            die("pthread_create failed\n");
    for (size_t i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    size_t m = 0;
    dl_iterate_phdr(max_modid, &m);
    size_t dtv = 16 * (m + 16), bytes = 0;
    for (size_t i = 0; i < THREADS; i++)
        for (size_t k = 0; k < rounds; k++)
            bytes += block_size(i, k);
    char line[128];
    int n = snprintf(line, sizeof line, "truth %zu %zu %zu %zu\n", THREADS * rounds + THREADS,
                     THREADS * rounds, bytes + THREADS * dtv, THREADS * dtv);
    (void)!write(2, line, (size_t)n);
    (void)!write(1, "handoff ok\n", 11);
    return 0;
}
