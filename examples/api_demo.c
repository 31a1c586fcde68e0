/*
 * api_demo.c: every call of the in-program API (include/memtally.h), on
 * work whose allocations are known, so that tests/integration/test_api.sh
 * can check the numbers.  Build: cc -Iinclude api_demo.c -Lbuild -lmemtally
 * (`make` builds it as build/examples/api_demo), or with
 * `pkg-config --cflags --libs memtally` once installed.
 *
 *   api_demo DIR    writes its traces into DIR
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtally.h"

#define NOINLINE __attribute__((noinline))

static void *volatile sink, *volatile kept_sink;

/* Not alike, or the compiler would fold them into one. */
NOINLINE static void *make_block(size_t n) { return sink = malloc(n); }
NOINLINE static void *keep_block(size_t n) { return kept_sink = calloc(1, n); }

static void *kept[5];

/* 10 blocks of 100 bytes made and freed, 5 of 200 kept: 15 calls, 2000 bytes. */
static void work(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++)
        free(make_block(100));
    for (int i = 0; i < 5; i++)
        kept[i] = keep_block(200);
}

NOINLINE static void *thread_work(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        free(sink = malloc(50));
    return NULL;
}

/* Two threads of 3 x 50 bytes each, and 1 x 64 in the caller. */
static void spawner(void *arg)
{
    (void)arg;
    pthread_t t[2];
    free(make_block(64));
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, thread_work, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

/* 4 blocks, then more than the timeout of sleep. */
static void slow(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++)
        free(make_block(10));
    usleep(1500 * 1000);
}

NOINLINE static void phase(const char *what, int n, size_t size)
{
    (void)what;
    for (int i = 0; i < n; i++)
        free(sink = malloc(size));
}

static void check(int rc, const char *call)
{
    if (rc < 0) {
        fprintf(stderr, "api_demo: %s: %s\n", call, mtl_api_strerror(rc));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char path[4096];

    /* MEMTALLY=FILE records the whole run: then the other calls say busy. */
    check(mtl_trace_if_requested(), "mtl_trace_if_requested");
    if (mtl_recording()) {
        work(NULL);
        printf("recording the whole run\n");
        return 0;
    }

    struct mtl_result *res;
    check(mtl_profile_call(work, NULL, NULL, &res), "mtl_profile_call");
    mtl_result_print(res, stdout, MTL_PRINT_TOTAL);
    mtl_result_free(res);

    struct mtl_profile_options follow = { .follow_threads = 1 };
    check(mtl_profile_call(spawner, NULL, &follow, &res), "mtl_profile_call (threads)");
    mtl_result_print(res, stdout, MTL_PRINT_ALL);
    printf("threads: %zu\n", res->nthreads);
    mtl_result_free(res);

    struct mtl_profile_options quick = { .timeout_ms = 300 };
    check(mtl_profile_call(slow, NULL, &quick, &res), "mtl_profile_call (timeout)");
    printf("timed out: %d, calls: %llu\n", res->timed_out,
           (unsigned long long)res->total.calls);
    mtl_result_free(res);

    /* A trace with a pause: 7 x 10 bytes, (100 x 1000 unseen), 3 x 20. */
    snprintf(path, sizeof path, "%s/paused.mtly", dir);
    check(mtl_start(path, NULL), "mtl_start");
    phase("before the pause", 7, 10);
    check(mtl_pause(), "mtl_pause");
    phase("while paused", 100, 1000);
    check(mtl_resume(), "mtl_resume");
    phase("after the pause", 3, 20);
    check(mtl_stop(), "mtl_stop");

    /* A trace reset midway: only the 2 x 30 after the reset remain. */
    snprintf(path, sizeof path, "%s/reset.mtly", dir);
    check(mtl_start(path, NULL), "mtl_start");
    phase("before the reset", 5, 99);
    check(mtl_reset(), "mtl_reset");
    phase("after the reset", 2, 30);
    check(mtl_stop(), "mtl_stop");

    snprintf(path, sizeof path, "%s/busy.mtly", dir);
    printf("busy while recording: %d\n", mtl_start(path, NULL) == 0 && mtl_start(path, NULL) < 0);
    mtl_stop();
    for (int i = 0; i < 5; i++)
        free(kept[i]);
    return 0;
}
