/* sample_every: what sampled mode must keep of every block it samples
 * (memtally record --sample=1 samples them all).  The heap is dirtied
 * first (blocks filled with 0xff and freed), so that calloc's blocks come
 * from reused memory: each must read as zeros, whichever block the
 * program is given.  realloc's contents must survive growing and
 * shrinking, and each aligned allocation keep its alignment.  Every block
 * is freed.
 *
 * Truth (from the code): 10 allocations a round (five dirty blocks,
 * calloc, malloc, two reallocs, aligned_alloc), 1,000 in all, as many
 * frees (a realloc frees its old block), nothing live at the end.
 * Prints "every ok", exits 0.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 100

static void say(const char *s) { (void)!write(1, s, strlen(s)); }
static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

int main(void)
{
    static const size_t sizes[5] = { 48, 200, 1000, 5000, 40000 };
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = sizes[r % 5];
        /* dirty the heap: five blocks of n bytes of 0xff, freed */
        void *dirty[5];
        for (int i = 0; i < 5; i++) {
            if (!(dirty[i] = malloc(n)))
                die("malloc failed\n");
            memset(dirty[i], 0xff, n);
        }
        for (int i = 0; i < 5; i++)
            free(dirty[i]);
        unsigned char *z = calloc(1, n);
        if (!z)
            die("calloc failed\n");
        for (size_t i = 0; i < n; i++)
            if (z[i])
                die("calloc's block is not zeroed\n");
        free(z);
        unsigned char *g = malloc(n);
        if (!g)
            die("malloc failed\n");
        for (size_t i = 0; i < n; i++)
            g[i] = (unsigned char)(i * 7 + r);
        g = realloc(g, 2 * n);
        if (!g)
            die("realloc failed\n");
        for (size_t i = 0; i < n; i++)
            if (g[i] != (unsigned char)(i * 7 + r))
                die("realloc lost its contents growing\n");
        g = realloc(g, n / 2);
        if (!g)
            die("realloc failed\n");
        for (size_t i = 0; i < n / 2; i++)
            if (g[i] != (unsigned char)(i * 7 + r))
                die("realloc lost its contents shrinking\n");
        free(g);
        size_t al = (size_t)64 << (r % 3); /* 64, 128, 256 */
        void *a = aligned_alloc(al, n);
        if (!a || (uintptr_t)a % al)
            die("aligned_alloc misaligned\n");
        free(a);
    }
    say("every ok\n");
    return 0;
}
