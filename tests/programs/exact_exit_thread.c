/* exact_exit_thread: a thread that is not main calls exit(3) while another
 * thread is still running (blocked in pause()) and main waits in
 * pthread_join.  Every allocation is made before that exit().
 *
 * pthread_create callocs each new thread's DTV in main: D bytes each, D =
 * 16 * (highest TLS module id + 16) (see exact_threads.c), printed on stderr
 * as "dtv_bytes D".
 *
 * Truth (from the code):
 *   allocations 6 (main 1 + 2 DTVs, thread A 1, thread B 2), frees 1,
 *   bytes_allocated 960 + 2*D, peak_live_bytes 960 + 2*D,
 *   live_bytes_at_end 704 + 2*D, threads 3.
 * valgrind agrees (D = 272: 6 allocs, 1 free, 1504 bytes, 1248 in use).
 * Prints "exit from thread", exit status 3.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sem_t a_ready;
static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

static int max_modid(struct dl_phdr_info *info, size_t size, void *data)
{
    size_t *m = data;
    if (info->dlpi_tls_modid > *m) *m = info->dlpi_tls_modid;
    return 0;
}

static void *thread_a(void *p)
{
    if (!malloc(128)) die("malloc failed\n");   /* live 64 + 2D + 128 */
    sem_post(&a_ready);
    for (;;) pause();                           /* still running at exit */
    return p;
}

static void *thread_b(void *p)
{
    sem_wait(&a_ready);
    char *b1 = malloc(256);
    char *b2 = malloc(512);                     /* live 960 + 2D: the peak */
    if (!b1 || !b2) die("malloc failed\n");
    free(b1);                                   /* live 704 + 2D */
    (void)!write(1, "exit from thread\n", 17);
    exit(3);
}

int main(void)
{
    pthread_t a, b;
    char msg[64];
    size_t m = 0;
    dl_iterate_phdr(max_modid, &m);
    snprintf(msg, sizeof msg, "dtv_bytes %zu\n", 16 * (m + 16));
    (void)!write(2, msg, strlen(msg));
    sem_init(&a_ready, 0, 0);
    if (!malloc(64)) die("malloc failed\n");    /* live 64 */
    if (pthread_create(&a, NULL, thread_a, NULL)) die("pthread_create failed\n");
    if (pthread_create(&b, NULL, thread_b, NULL)) die("pthread_create failed\n");
    pthread_join(b, NULL);                      /* never returns */
    return 1;
}
