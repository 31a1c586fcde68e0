/* golden_inline: an always-inline allocating function inlined into two
 * callers, and a plain (not inlined) one, for the attribution of inlined
 * frames.
 *
 *   caller_a    4 x inl_alloc(128), all freed     (inlined into caller_a)
 *   caller_b    3 x inl_alloc(256), the last leaks (inlined into caller_b)
 *   main        2 x plain_alloc(512), the second leaks
 *
 * Truth (self, by site: the innermost frame, the inlined function):
 *   inl_alloc 7 calls 1280 bytes, plain_alloc 2 calls 1024 bytes;
 *   total 9 calls 2304 bytes; leaked: plain_alloc 512, inl_alloc 256 (whose
 *   stack is inl_alloc (inlined), caller_b, main).
 * Inclusive: inl_alloc 7 / 1280, caller_a 4 / 512, caller_b 3 / 768,
 *   plain_alloc 2 / 1024, main 9 / 2304.
 * With inl_alloc hidden: caller_a 4 / 512, caller_b 3 / 768, plain_alloc 2 /
 *   1024.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

static inline __attribute__((always_inline)) void *inl_alloc(size_t n)
{
    void *p = malloc(n); /* @inl_alloc */
    if (!p) die("malloc failed\n");
    return p;
}

static void *a_blocks[4], *b_blocks[3], *plain_blocks[2];

NOINLINE void caller_a(void)
{
    for (int i = 0; i < 4; i++)
        a_blocks[i] = inl_alloc(128); /* @call_a */
    BARRIER();
}

NOINLINE void caller_b(void)
{
    for (int i = 0; i < 3; i++)
        b_blocks[i] = inl_alloc(256); /* @call_b */
    BARRIER();
}

NOINLINE void *plain_alloc(size_t n)
{
    void *p = malloc(n); /* @plain_alloc */
    if (!p) die("malloc failed\n");
    BARRIER();
    return p;
}

int main(void)
{
    caller_a();
    caller_b();
    plain_blocks[0] = plain_alloc(512);
    plain_blocks[1] = plain_alloc(512);
    for (int i = 0; i < 4; i++) free(a_blocks[i]);
    for (int i = 0; i < 2; i++) free(b_blocks[i]);
    free(plain_blocks[0]);
    BARRIER();
    (void)!write(1, "inline ok\n", 10);
    return 0;
}
