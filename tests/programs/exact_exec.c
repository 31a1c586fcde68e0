/* exact_exec: allocates, then execv()s argv[1] with the remaining arguments
 * (the test passes exact_basic).  The trace of this program ends at the exec;
 * with --follow-exec the exec'd program gets its own trace.
 *
 * Truth for this program (from the code; valgrind agrees up to the exec):
 *   allocations 2, frees 1, bytes_allocated 1000, peak_live_bytes 1000,
 *   live_bytes_at_end 700, threads 1.
 * Prints "exec: before", then whatever argv[1] prints; the exit status is
 * argv[1]'s (127 if the exec fails).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    char *a = malloc(700);                  /* live 700 */
    char *b = malloc(300);                  /* live 1000: the peak */
    free(b);                                /* live 700 */
    if (!a || !b) return 1;
    (void)!write(1, "exec: before\n", 13);
    execv(argv[1], argv + 1);
    (void)!write(2, "exec failed\n", 12);
    return 127;
}
