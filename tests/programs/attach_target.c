/* A program that memtally attach is attached to and detached from while
 * it runs (test_attach).  Four worker threads; commands on standard input,
 * one a line, each answered on standard output:
 *
 *   burst N       each worker makes N blocks of 48 bytes in burst_alloc,
 *                 fills, checks and frees them: exactly 4 N allocations
 *   storm on|off  the workers allocate and free without pause in
 *                 storm_alloc (sizes 16 to 4111 bytes), checking each block
 *   dlopen PATH   opens PATH and calls its plugin_run (exact_plugin.c.in:
 *                 3 allocations), freeing what it returns
 *
 * At the end of input: "checksum C corrupt K" (C from the bursts' bytes, K
 * the blocks found damaged, 0), and exit status 3. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 4

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static int generation, finished, storm, quit;
static long burst_n;
static unsigned long checksum;
static long corrupt;

static __attribute__((noinline)) unsigned long burst_alloc(long n, int k)
{
    unsigned long sum = 0;
    for (long i = 0; i < n; i++) {
        unsigned char *p = malloc(48);
        memset(p, (int)(i + k) & 0xff, 48);
        sum += p[47];
        free(p);
    }
    return sum;
}

static __attribute__((noinline)) long storm_alloc(unsigned long *seed)
{
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = 16 + (*seed >> 33) % 4096;
    unsigned char *p = malloc(n);
    memset(p, 0x5a, n);
    long bad = p[0] != 0x5a || p[n - 1] != 0x5a;
    free(p);
    return bad;
}

static void *worker(void *arg)
{
    int k = (int)(long)arg, seen = 0;
    unsigned long seed = (unsigned long)k + 1;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!quit && generation == seen && !storm)
            pthread_cond_wait(&cv, &mu);
        if (quit)
            break;
        if (generation != seen) {
            seen = generation;
            long n = burst_n;
            pthread_mutex_unlock(&mu);
            unsigned long s = burst_alloc(n, k);
            pthread_mutex_lock(&mu);
            checksum += s;
            if (++finished == WORKERS)
                pthread_cond_signal(&done_cv);
            continue;
        }
        pthread_mutex_unlock(&mu);
        long bad = 0;
        for (int i = 0; i < 1000; i++)
            bad += storm_alloc(&seed);
        pthread_mutex_lock(&mu);
        corrupt += bad;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(void)
{
    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    char line[4096];
    puts("ready");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "burst ", 6)) {
            pthread_mutex_lock(&mu);
            burst_n = atol(line + 6);
            finished = 0;
            generation++;
            pthread_cond_broadcast(&cv);
            while (finished < WORKERS)
                pthread_cond_wait(&done_cv, &mu);
            pthread_mutex_unlock(&mu);
            puts("burst done");
        } else if (!strncmp(line, "storm ", 6)) {
            pthread_mutex_lock(&mu);
            storm = !strcmp(line + 6, "on");
            pthread_cond_broadcast(&cv);
            pthread_mutex_unlock(&mu);
            puts("storm done");
        } else if (!strncmp(line, "dlopen ", 7)) {
            void *h = dlopen(line + 7, RTLD_NOW);
            void *(*run)(void) = h ? (void *(*)(void))dlsym(h, "plugin_run") : NULL;
            if (run)
                free(run());
            puts(run ? "dlopen done" : "dlopen failed");
        }
        fflush(stdout);
    }
    pthread_mutex_lock(&mu);
    quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    printf("checksum %lu corrupt %ld\n", checksum, corrupt);
    return 3;
}
