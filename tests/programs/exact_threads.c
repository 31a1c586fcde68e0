/* exact_threads: 4 worker threads allocate known blocks while a 5th thread
 * allocates nothing; blocks cross threads: each worker frees a block that
 * main allocated, and main frees a block that each worker allocated.
 *
 * glibc's pthread_create makes one allocation of its own in the creating
 * thread (here main): calloc of the new thread's DTV, D bytes, never freed.
 * D = 16 * (highest TLS module id + 16), so it depends on what is loaded (a
 * preloaded library with TLS makes it larger); the program computes D the
 * way glibc 2.36 does (allocate_dtv: DTV_SURPLUS 14 + 2 header slots) and
 * prints "dtv_bytes D" on stderr, so that the truth holds in any process.
 *
 * Truth (from the code), with 5 threads created:
 *   allocations 21 (main 4 + 5 DTVs, each worker 3), frees 16,
 *   bytes_allocated 1836 + 5*D, peak_live_bytes 1736 + 5*D,
 *   live_bytes_at_end 5*D (the DTVs), threads 5 (main and the 4 workers;
 *   the 5th thread never allocates).  Prints "threads ok", exits 0.
 * valgrind agrees (D = 272 there: 21 allocs, 16 frees, 3196 bytes allocated,
 *   1360 bytes in use at exit, massif's peak 3096; and with a TLS library
 *   preloaded, D = 288: 3276 bytes, 1440 in use, peak 3176).
 * Threads get 256 KiB stacks: glibc caches the stacks of joined threads and,
 * past 40 MiB of cached stacks, frees the oldest with its DTV; with the
 * default 8 MiB stacks the fifth join would free one DTV.
 * The peak is deterministic: every allocation happens before a barrier that
 * all threads reach, only frees happen after it, and each worker frees its
 * temporary block (smaller than its kept ones) before allocating those.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORKERS 4

static pthread_barrier_t barrier;
static void *kept[WORKERS];
static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

static int max_modid(struct dl_phdr_info *info, size_t size, void *data)
{
    size_t *m = data;
    if (info->dlpi_tls_modid > *m) *m = info->dlpi_tls_modid;
    return 0;
}

static size_t dtv_bytes(void)
{
    size_t m = 0;
    dl_iterate_phdr(max_modid, &m);
    return 16 * (m + 16);
}

struct arg { int i; char pad[20]; };         /* 24 bytes */

static void *worker(void *p)
{
    struct arg *a = p;
    size_t n = (size_t)a->i + 1;
    char *tmp = malloc(10 * n);             /* 10, 20, 30, 40 */
    if (!tmp) die("malloc failed\n");
    free(tmp);
    kept[a->i] = malloc(100 * n);           /* 100, 200, 300, 400: main frees it */
    char *own = calloc(n, 64);              /* 64, 128, 192, 256 */
    if (!kept[a->i] || !own) die("allocation failed\n");
    pthread_barrier_wait(&barrier);
    free(own);
    free(a);                                /* allocated by main */
    return NULL;
}

static void *idle(void *p)
{
    pthread_barrier_wait(&barrier);         /* no allocation in this thread */
    return NULL;
}

int main(void)
{
    pthread_t t[WORKERS + 1];
    pthread_attr_t attr;
    struct arg *args[WORKERS];
    char msg[64];
    size_t d = dtv_bytes();

    pthread_barrier_init(&barrier, NULL, WORKERS + 2);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int i = 0; i < WORKERS; i++) {
        args[i] = malloc(sizeof *args[i]);  /* 4 x 24 */
        if (!args[i]) die("malloc failed\n");
        args[i]->i = i;
    }
    for (int i = 0; i < WORKERS; i++)       /* one DTV calloc each */
        if (pthread_create(&t[i], &attr, worker, args[i])) die("pthread_create failed\n");
    if (pthread_create(&t[WORKERS], &attr, idle, NULL)) die("pthread_create failed\n");
    if (dtv_bytes() != d) die("TLS modules changed\n");
    pthread_barrier_wait(&barrier);
    for (int i = 0; i <= WORKERS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < WORKERS; i++) free(kept[i]);
    snprintf(msg, sizeof msg, "dtv_bytes %zu\n", d);
    (void)!write(2, msg, strlen(msg));
    (void)!write(1, "threads ok\n", 11);
    return 0;
}
