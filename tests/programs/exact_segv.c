/*
 * exact_segv: allocates 3 blocks (100, 200, 300 bytes), frees the first,
 * waits 100 ms (so the writer has run), then dies of SIGSEGV.  With the
 * default action, memtally's handler writes what was recorded and the END
 * record before the process dies by the same signal.
 *   allocations 3, frees 1, bytes 600, live at end 500
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    void *volatile a = malloc(100), *volatile b = malloc(200), *volatile c = malloc(300);
    free(a);
    (void)b;
    (void)c;
    usleep(100 * 1000);
    *(volatile int *)0 = 1; /* SIGSEGV */
    return 0;
}
