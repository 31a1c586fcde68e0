/* A program to attach to (bench/attach.sh): malloc + free in a loop, two
 * calls deep, printing how many pairs it made in each half second, and
 * the longest gap between two pairs, so that a pause shows. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void pair(unsigned long i)
{
    void *volatile p = malloc(16 + i % 512); /* volatile: not elided */
    free(p);
}

__attribute__((noinline)) static void work(double seconds)
{
    double start = now(), window = start, last = start, gap = 0;
    unsigned long n = 0;
    for (unsigned long i = 0;; i++) {
        pair(i);
        n++;
        if ((i & 255) == 0) {
            double t = now();
            if (t - last > gap)
                gap = t - last;
            last = t;
            if (t - window >= 0.5) {
                printf("%.0f %.2f\n", (double)n / (t - window), gap * 1e3);
                fflush(stdout);
                n = 0;
                gap = 0;
                window = t;
            }
            if (t - start >= seconds)
                return;
        }
    }
}

int main(int argc, char **argv)
{
    work(argc > 1 ? atof(argv[1]) : 20);
    return 0;
}
