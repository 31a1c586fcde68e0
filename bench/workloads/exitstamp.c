/*
 * exitstamp: allocates and frees in a loop, then prints the wall clock
 * (CLOCK_REALTIME, ns) as its last act, for bench/endtail.sh, which
 * takes the time from there to memtally record's exit.
 *
 *   exitstamp [PAIRS]      malloc and free pairs (default 2,000,000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 2000000L;
    void *slot[64] = { 0 };
    for (long i = 0; i < pairs; i++) {
        free(slot[i & 63]);
        slot[i & 63] = malloc(16 + (size_t)(i & 255));
        if (!slot[i & 63])
            return 1;
    }
    for (int i = 0; i < 64; i++)
        free(slot[i]);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    printf("%lld\n", (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
    return 0;
}
