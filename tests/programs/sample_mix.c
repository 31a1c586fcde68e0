/*
 * sample_mix.c: known allocations for the sampling accuracy test:
 * 2,000,000 allocations from three functions, freed at once:
 *   small_objs: 1,200,000 x 64 bytes      =    76,800,000 bytes
 *   medium_objs:  600,000 x 1,000 bytes   =   600,000,000 bytes
 *   large_objs:   200,000 x 4,096 bytes   =   819,200,000 bytes
 *   total: 2,000,000 allocations, 1,496,000,000 bytes
 * interleaved (6 small, 3 medium, 1 large per round of 10).
 */
#include <stdlib.h>

static void *volatile sink;

__attribute__((noinline)) static void small_objs(void) { free(sink = malloc(64)); }
__attribute__((noinline)) static void medium_objs(void) { free(sink = malloc(1000)); }
__attribute__((noinline)) static void large_objs(void) { free(sink = malloc(4096)); }

int main(void)
{
    for (int round = 0; round < 200000; round++) {
        for (int i = 0; i < 6; i++)
            small_objs();
        for (int i = 0; i < 3; i++)
            medium_objs();
        large_objs();
    }
    return 0;
}
