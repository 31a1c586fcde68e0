/* exact_abort: allocates, sleeps 100 ms, then abort()s: the trace must exist,
 * be readable and hold the allocations made before the sleep.
 *
 * Truth (from the code; valgrind agrees):
 *   allocations 3, frees 1, bytes_allocated 4104, peak_live_bytes 4096,
 *   live_bytes_at_end 104, threads 1.  Prints "aborting", dies by SIGABRT.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    char *a = malloc(4000);                 /* live 4000 */
    char *b = malloc(96);                   /* live 4096: the peak */
    free(a);                                /* live 96 */
    char *c = malloc(8);                    /* live 104 */
    if (!a || !b || !c) return 1;
    (void)!write(1, "aborting\n", 9);
    struct timespec ts = { 0, 100 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    abort();
}
