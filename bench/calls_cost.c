/* What record --calls costs: ROUNDS calls of a tiny function built with
 * -finstrument-functions (bench/calls.sh), timed in the program, so that
 * start-up and the trace's writing are left out. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void tiny(unsigned long i)
{
    sink += i;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (unsigned long i = 0; i < n; i++)
        tiny(i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
    printf("%.1f ns per call\n", ns);
    return 0;
}
