/* exact_basic: single-threaded malloc/calloc/free mix, with free(NULL), a
 * zero-size malloc and two allocations that fail (they count nothing).
 *
 * Truth (from the code; valgrind agrees):
 *   allocations 7, frees 5, bytes_allocated 3351, peak_live_bytes 3050,
 *   live_bytes_at_end 2050, threads 1.  Prints "basic ok", exits 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char *s) { (void)!write(1, s, strlen(s)); }
static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

int main(void)
{
    volatile size_t huge = SIZE_MAX / 2;
    char *a = malloc(100);                  /* live  100 */
    char *b = calloc(10, 20);               /* live  300 */
    char *c = malloc(1);                    /* live  301 */
    free(NULL);                             /* nothing */
    free(a);                                /* live  201 */
    char *d = calloc(1, 1000);              /* live 1201 */
    if (!b || !c || !d) die("allocation failed\n");
    for (int i = 0; i < 200; i++) if (b[i]) die("calloc not zeroed\n");
    if (malloc(huge)) die("huge malloc succeeded\n");        /* fails: nothing */
    if (calloc(huge, 4)) die("overflowing calloc succeeded\n"); /* fails: nothing */
    free(b);                                /* live 1001 */
    char *e = malloc(50);                   /* live 1051 */
    free(c);                                /* live 1050 */
    char *f = malloc(0);                    /* a block of 0 bytes: live 1050 */
    if (!f) die("malloc(0) returned NULL\n");
    free(f);                                /* live 1050 */
    char *g = malloc(2000);                 /* live 3050: the peak */
    free(d);                                /* live 2050 */
    if (!e || !g) die("allocation failed\n");
    memset(e, 1, 50); memset(g, 2, 2000);
    say("basic ok\n");
    return 0;                               /* e and g still live: 2050 */
}
