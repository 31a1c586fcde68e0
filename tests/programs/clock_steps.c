/*
 * clock_steps.c: allocations whose times the program knows: N mallocs of
 * distinct sizes (1000 + i), a pause of MS milliseconds before each, and
 * CLOCK_MONOTONIC read just before and just after each, printed as
 * "i before_ns after_ns".  tests/integration/test_clock.sh checks the
 * trace's times against them.   clock_steps N MS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    long ms = argc > 2 ? atol(argv[2]) : 10;
    void **keep = calloc((size_t)n, sizeof *keep);
    for (int i = 0; i < n; i++) {
        struct timespec pause = { ms / 1000, (ms % 1000) * 1000000 };
        nanosleep(&pause, NULL);
        unsigned long long before = now();
        keep[i] = malloc(1000 + (size_t)i);
        unsigned long long after = now();
        printf("%d %llu %llu\n", i, before, after);
    }
    for (int i = 0; i < n; i++)
        free(keep[i]);
    free(keep);
    return 0;
}
