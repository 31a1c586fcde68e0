/* exact_exit_now: allocates, then leaves at once with _exit(5): no atexit
 * handler or destructor runs, yet the allocations must be in the trace.
 *
 * Truth (from the code; valgrind agrees):
 *   allocations 3, frees 1, bytes_allocated 150, peak_live_bytes 120,
 *   live_bytes_at_end 50, threads 1.  Prints "exit now", exit status 5.
 */
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    char *a = malloc(100);                  /* live 100 */
    char *b = malloc(20);                   /* live 120: the peak */
    free(a);                                /* live 20 */
    char *c = calloc(1, 30);                /* live 50 */
    if (!a || !b || !c) return 1;
    (void)!write(1, "exit now\n", 9);
    _exit(5);
}
