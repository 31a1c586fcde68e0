/* exact_ctor_c: a constructor (__attribute__((constructor))) allocates before
 * main runs; main frees one of those blocks.
 *
 * Truth (from the code; valgrind agrees):
 *   allocations 4, frees 3, bytes_allocated 676, peak_live_bytes 444,
 *   live_bytes_at_end 333, threads 1.  Prints "ctor ok", exits 0.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *early;
static int ctor_ran;

__attribute__((constructor)) static void before_main(void)
{
    early = malloc(111);                    /* live 111 */
    char *tmp = calloc(3, 74);              /* live 333 */
    free(tmp);                              /* live 111 */
    ctor_ran = early != NULL;
}

int main(void)
{
    if (!ctor_ran) return 1;
    char *m = malloc(333);                  /* live 444: the peak */
    free(early);                            /* live 333 */
    char *n = malloc(10);                   /* live 343 */
    free(n);                                /* live 333 */
    if (!m) return 1;
    (void)!write(1, "ctor ok\n", 8);
    return 0;                               /* m still live: 333 */
}
