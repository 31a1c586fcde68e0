/* Holds known live blocks while a test looks at its heap (memtally heap):
 *
 *   make_big    1 block of 1 MiB, starting with "MEMTALLY-MARKER big block"
 *   make_small  50 blocks of 100 bytes
 *
 * Prints "ready", waits until its standard input ends, frees them all and
 * prints "done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *big;
static void *small[50];

static __attribute__((noinline)) void make_big(void)
{
    big = malloc(1 << 20);
    memset(big, 0, 1 << 20);
    strcpy(big, "MEMTALLY-MARKER big block");
}

static __attribute__((noinline)) void make_small(void)
{
    for (int i = 0; i < 50; i++)
        small[i] = malloc(100);
}

int main(void)
{
    make_big();
    make_small();
    puts("ready");
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    free(big);
    for (int i = 0; i < 50; i++)
        free(small[i]);
    puts("done");
    return 0;
}
