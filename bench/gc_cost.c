/* What recording a Boehm GC program's heap costs (bench/gc.sh): ROUNDS
 * allocations of 16 to 256 bytes through GC_MALLOC, a list of the last
 * 1000 kept and the rest dropped for the collector, timed inside the
 * program. */
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
    static void **keep;
    GC_INIT();
    keep = GC_MALLOC(1000 * sizeof *keep);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (unsigned long i = 0; i < n; i++)
        keep[i % 1000] = GC_MALLOC(16 + (i * 7) % 241);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
    printf("%.0f ns per GC_MALLOC, %zu collections\n", ns, (size_t)GC_get_gc_no());
    return 0;
}
