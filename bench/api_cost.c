/*
 * api_cost: what the in-program API (include/memtally.h) costs a program,
 * per call: N rounds of mtl_alloc + mtl_free of one block, then of
 * mtl_type of a name registered already, against the same loop without
 * them.  Prints nanoseconds per round of each and the differences.  Run by bench/api.sh, alone
 * (memtally loaded, not recording) and under memtally record.
 *
 *   api_cost [N]      N rounds (default 20000000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memtally.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char arena[4096];
static volatile unsigned sink;

/* api 0: nothing; 1: mtl_alloc + mtl_free; 2: mtl_type. */
__attribute__((noinline)) static void rounds(long n, int api, uint32_t tag)
{
    for (long i = 0; i < n; i++) {
        char *p = arena + (i & 255) * 16;
        if (api == 1) {
            mtl_alloc(p, 16, tag);
            mtl_free(p);
        } else if (api == 2) {
            sink += mtl_type("Obj");
        }
        sink += (unsigned char)p[0];
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    uint32_t tag = mtl_type("Obj");
    rounds(n / 10, 1, tag); /* warm up */
    double t0 = now_s();
    rounds(n, 0, tag);
    double t1 = now_s();
    rounds(n, 1, tag);
    double t2 = now_s();
    rounds(n, 2, tag);
    double t3 = now_s();
    double base = (t1 - t0) * 1e9 / (double)n, pair = (t2 - t1) * 1e9 / (double)n;
    double type = (t3 - t2) * 1e9 / (double)n;
    printf("%s: a round %.2f ns; with mtl_alloc + mtl_free %.2f ns (+%.2f); with mtl_type of a "
           "known name %.2f ns (+%.2f)\n", mtl_recording() ? "recording" : "not recording",
           base, pair, pair - base, type, type - base);
    return 0;
}
