/* exact_aligned: posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * and a posix_memalign with an invalid alignment that fails (counts nothing).
 * Each allocation's bytes are the requested size: pvalloc(100) counts 100,
 * not the page it rounds up to.
 *
 * Truth (from the code):
 *   allocations 6, frees 4, bytes_allocated 3762, peak_live_bytes 3622,
 *   live_bytes_at_end 110, threads 1.  Prints "aligned ok", exits 0.
 * valgrind 3.19 agrees on allocations and frees but counts pvalloc(100) as
 * the rounded page (4096 bytes), hence 3996 more bytes: the code is the truth.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char *s) { (void)!write(1, s, strlen(s)); }
static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }
static void aligned(void *p, uintptr_t al, const char *what)
{
    if (!p || (uintptr_t)p % al) die(what);
}

int main(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    void *a, *x = NULL, *f;
    if (posix_memalign(&a, 64, 100)) die("posix_memalign failed\n"); /* live 100 */
    aligned(a, 64, "posix_memalign misaligned\n");
    if (posix_memalign(&x, 3, 100) != EINVAL || x) die("bad alignment accepted\n"); /* nothing */
    void *b = aligned_alloc(256, 512);      /* live 612 */
    aligned(b, 256, "aligned_alloc misaligned\n");
    void *c = memalign(32, 40);             /* live 652 */
    aligned(c, 32, "memalign misaligned\n");
    void *d = valloc(10);                   /* live 662 */
    aligned(d, pg, "valloc misaligned\n");
    void *e = pvalloc(100);                 /* requested 100: live 762 */
    aligned(e, pg, "pvalloc misaligned\n");
    free(a);                                /* live 662 */
    free(c);                                /* live 622 */
    if (posix_memalign(&f, 4096, 3000)) die("posix_memalign failed\n"); /* live 3622: peak */
    aligned(f, 4096, "posix_memalign misaligned\n");
    free(b);                                /* live 3110 */
    free(f);                                /* live 110 */
    say("aligned ok\n");
    return 0;                               /* d and e still live: 110 */
}
