/* exact_realloc: realloc in every form and reallocarray, including failures
 * that must count nothing.  realloc of a live block to a non-zero size is one
 * free plus one allocation; realloc(p, 0) is one free.
 *
 * Truth (from the code):
 *   allocations 7, frees 6, bytes_allocated 5770, peak_live_bytes 5210,
 *   live_bytes_at_end 50, threads 1.  Prints "realloc ok", exits 0.
 * valgrind 3.19 counts the failing realloc(a, huge) as one free plus one
 * allocation of SIZE_MAX/2 bytes (8 allocs, 7 frees); without that call it
 * agrees exactly (7 allocs, 6 frees, 5770 bytes; massif's peak 5210).  A failed
 * realloc leaves the block live and returns no block, so it counts nothing.
 * The peak is reached by a plain malloc, so it does not depend on whether a
 * realloc's old and new blocks are counted live at the same moment (at most
 * 400 bytes are live around any realloc here).
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
    char *a = realloc(NULL, 100);           /* alloc 100: live 100 */
    if (!a) die("realloc(NULL) failed\n");
    memset(a, 'a', 100);
    a = realloc(a, 300);                    /* free 100, alloc 300: live 300 */
    if (!a || a[99] != 'a') die("grow failed\n");
    a = realloc(a, 50);                     /* free 300, alloc 50: live 50 */
    if (!a || a[49] != 'a') die("shrink failed\n");
    if (realloc(a, huge)) die("huge realloc succeeded\n"); /* fails: nothing */
    char *b = malloc(80);                   /* alloc 80: live 130 */
    if (!b) die("malloc failed\n");
    if (realloc(b, 0) != NULL) die("realloc(p, 0) returned a block\n"); /* free 80: live 50 */
    long *c = reallocarray(NULL, 10, 8);    /* alloc 80: live 130 */
    if (!c) die("reallocarray(NULL) failed\n");
    c[9] = 9;
    c = reallocarray(c, 20, 8);             /* free 80, alloc 160: live 210 */
    if (!c || c[9] != 9) die("reallocarray grow failed\n");
    /* through a pointer, so that the compiler does not warn about c's reuse */
    void *(*volatile ra)(void *, size_t, size_t) = reallocarray;
    if (ra(c, huge, 4)) die("overflowing reallocarray succeeded\n"); /* nothing */
    char *big = malloc(5000);               /* alloc 5000: live 5210, the peak */
    if (!big) die("malloc failed\n");
    memset(big, 0, 5000);
    free(big);                              /* live 210 */
    free(c);                                /* live 50 */
    say("realloc ok\n");
    return 0;                               /* a still live: 50 */
}
