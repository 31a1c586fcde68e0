/* golden_phases: allocations in two phases separated by sleeps, for the
 * golden tests of peak, timeline and the time filters.
 *
 *   phase_one    1024 x malloc(1024) (1 MiB), at about 0 ms
 *   sleep until 200 ms after the start of main
 *   release_half frees the 512 blocks of even index
 *   phase_two    384 x malloc(2048) (768 KiB), at about 200 ms: the peak,
 *                512 KiB + 768 KiB = 1310720 bytes in 896 blocks
 *   sleep until 400 ms after the start of main
 *   cleanup      at about 400 ms frees all but phase_one's blocks 1, 3, 5
 *                and phase_two's blocks 0 and 1
 *
 * Truth (times from the start of the trace; every window used by the tests
 * lies at least 50 ms away from any allocation or free):
 *   all:                          1408 blocks, 1835008 bytes
 *   phase_one:                    1024 blocks, 1048576 bytes
 *   phase_two:                     384 blocks,  786432 bytes
 *   peak:                         1310720 bytes, 896 blocks (phase_one 512 /
 *                                 524288, phase_two 384 / 786432), between
 *                                 200 ms and 300 ms
 *   leaked:                       5 blocks, 7168 bytes (3 x 1024 + 2 x 2048)
 *   allocated in [0, 100 ms]:     phase_one's 1024 blocks
 *   allocated in [100, 300 ms]:   phase_two's 384 blocks
 *   live at 100 ms:               1024 blocks, 1048576 bytes
 *   live at 300 ms:               896 blocks, 1310720 bytes
 *   live in [150, 250 ms]:        all 1408 blocks
 *   freed in [100, 300 ms]:       512 blocks, 524288 bytes
 *   freed in [300 ms, 10 s]:      891 blocks, 1303552 bytes (509 x 1024 +
 *                                 382 x 2048)
 *   lifetime 300 ms or more:      phase_one's odd blocks: 512, 524288 bytes
 *   lifetime under 300 ms:        896 blocks, 1310720 bytes
 * Prints "phases ok" at the very end.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

static void *one[1024];
static void *two[384];

static struct timespec start;

/* Sleeps until ms milliseconds after the start of main, so that how long
 * the phases themselves take does not move what follows. */
static void until_ms(long ms)
{
    struct timespec t = start;
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
        ;
}

NOINLINE void phase_one(void)
{
    for (int i = 0; i < 1024; i++)
        if (!(one[i] = malloc(1024))) /* @phase_one */
            die("malloc failed\n");
    BARRIER();
}

NOINLINE void release_half(void)
{
    for (int i = 0; i < 1024; i += 2)
        free(one[i]);
    BARRIER();
}

NOINLINE void phase_two(void)
{
    for (int i = 0; i < 384; i++)
        if (!(two[i] = malloc(2048))) /* @phase_two */
            die("malloc failed\n");
    BARRIER();
}

NOINLINE void cleanup(void)
{
    for (int i = 7; i < 1024; i += 2)   /* 1, 3 and 5 leak */
        free(one[i]);
    for (int i = 2; i < 384; i++)       /* 0 and 1 leak */
        free(two[i]);
    BARRIER();
}

int main(void)
{
    clock_gettime(CLOCK_MONOTONIC, &start);
    phase_one();
    until_ms(200);
    release_half();
    phase_two();
    until_ms(400);
    cleanup();
    (void)!write(1, "phases ok\n", 10);
    return 0;
}
