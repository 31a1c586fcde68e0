/* golden_threads: three named threads allocate distinct known amounts from
 * their own functions, for the per-thread tables and --thread.
 *
 *   thread    name        function      calls  bytes
 *   main      (program)   main_work         5   2500   (5 x malloc(500))
 *   worker 1  worker-1    fill_small       10   1000   (10 x malloc(100))
 *   worker 2  worker-2    fill_medium      20   4000   (20 x malloc(200))
 *   worker 3  worker-3    fill_large       30   9000   (30 x malloc(300))
 *
 * Each worker names itself (pthread_setname_np) before it allocates, and
 * frees its blocks before it ends; main frees its own after the joins.
 * glibc's pthread_create makes one allocation of its own in main: calloc of
 * the new thread's DTV, D bytes, never freed (see exact_threads.c); the
 * program computes D the way glibc 2.36 does.  The three workers run at the
 * same time (256 KiB stacks, so no stack, and no DTV, is reused).
 * Truth: main's table is main_work 5 / 2500 plus 3 DTVs (3 / 3D); in all,
 * 68 calls and 16500 + 3D bytes.
 * At the end it prints on stderr "dtv_bytes D", "main TID" and
 * "worker-K TID" for each worker (kernel thread ids), and "threads ok" on
 * stdout.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }
static void say(const char *s) { (void)!write(2, s, strlen(s)); }

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

static void release(void **blocks, int n)
{
    for (int i = 0; i < n; i++)
        free(blocks[i]);
}

/* Each allocating function calls malloc itself, so that it is the site. */
NOINLINE void fill_small(void **b)
{
    for (int i = 0; i < 10; i++)
        if (!(b[i] = malloc(100))) /* @fill_small */
            die("malloc failed\n");
    BARRIER();
}

NOINLINE void fill_medium(void **b)
{
    for (int i = 0; i < 20; i++)
        if (!(b[i] = malloc(200))) /* @fill_medium */
            die("malloc failed\n");
    BARRIER();
}

NOINLINE void fill_large(void **b)
{
    for (int i = 0; i < 30; i++)
        if (!(b[i] = malloc(300))) /* @fill_large */
            die("malloc failed\n");
    BARRIER();
}

NOINLINE void main_work(void **b)
{
    for (int i = 0; i < 5; i++)
        if (!(b[i] = malloc(500))) /* @main_work */
            die("malloc failed\n");
    BARRIER();
}

struct job {
    const char *name;
    void (*work)(void **);
    int n;
    pid_t tid;
};

static void *worker(void *p)
{
    struct job *j = p;
    void *b[30];
    if (pthread_setname_np(pthread_self(), j->name)) die("setname failed\n");
    j->tid = gettid();
    j->work(b);
    release(b, j->n);
    return NULL;
}

int main(void)
{
    static struct job jobs[3] = {
        { "worker-1", fill_small, 10, 0 },
        { "worker-2", fill_medium, 20, 0 },
        { "worker-3", fill_large, 30, 0 },
    };
    pthread_t t[3];
    pthread_attr_t attr;
    void *mine[5];
    char msg[128];
    size_t d = dtv_bytes();

    main_work(mine);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t[i], &attr, worker, &jobs[i])) die("pthread_create failed\n");
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    if (dtv_bytes() != d) die("TLS modules changed\n");
    release(mine, 5);
    snprintf(msg, sizeof msg, "dtv_bytes %zu\nmain %d\n", d, (int)getpid());
    say(msg);
    for (int i = 0; i < 3; i++) {
        snprintf(msg, sizeof msg, "%s %d\n", jobs[i].name, (int)jobs[i].tid);
        say(msg);
    }
    (void)!write(1, "threads ok\n", 11);
    return 0;
}
