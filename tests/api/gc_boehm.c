/* A program on the Boehm GC (libgc, not linked with memtally), whose
 * allocations through the collector the test knows exactly:
 *
 *   make_nodes:   GC_MALLOC          100 x 48 bytes, kept reachable
 *   make_buffers: GC_MALLOC_ATOMIC    20 x 1000 bytes, dropped at once
 *   make_strings: GC_STRDUP            5 x "memtally" (9 bytes), kept
 *   make_freed:   GC_MALLOC            10 x 64 bytes, each GC_FREE'd
 *   grow:         GC_REALLOC           1 x 16 bytes to 4096 bytes
 *   make_debug:   GC_debug_malloc      3 x 24 bytes, kept (it calls GC_malloc
 *                                      inside: one allocation each all the same)
 *   make_typed:   GC_malloc_explicitly_typed  4 x 32 bytes, kept
 *
 * That is 144 allocations of 29,797 bytes through the collector (the
 * realloc is two: the 16 bytes and the 4096), and besides, one malloc of
 * 777 bytes (freed) in malloc's heap.  After the buffers are dropped, GC_gcollect() reclaims
 * at least some of them (the collector is conservative: a stale copy of an
 * address on the stack may keep one alive), and the kept ones never.
 * Prints "gc ok" at the end. */
#include <gc/gc.h>
#include <gc/gc_typed.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct node {
    struct node *next;
    char payload[40];
};

static struct node *nodes;      /* 100 nodes, reachable from here */
static char *strings[5];
static void *grown;
static void *debug_blocks[3], *typed_blocks[4];

static __attribute__((noinline)) void make_nodes(void)
{
    for (int i = 0; i < 100; i++) {
        struct node *n = GC_MALLOC(sizeof *n);
        n->next = nodes;
        nodes = n;
    }
}

static __attribute__((noinline)) void make_buffers(void)
{
    for (int i = 0; i < 20; i++) {
        char *b = GC_MALLOC_ATOMIC(1000);
        memset(b, i, 1000);
    }
}

static __attribute__((noinline)) void make_strings(void)
{
    for (int i = 0; i < 5; i++)
        strings[i] = GC_STRDUP("memtally");
}

static __attribute__((noinline)) void make_freed(void)
{
    for (int i = 0; i < 10; i++)
        GC_FREE(GC_MALLOC(64));
}

static __attribute__((noinline)) void grow(void)
{
    void *p = GC_MALLOC(16);
    grown = GC_REALLOC(p, 4096);
}

static __attribute__((noinline)) void make_debug(void)
{
    for (int i = 0; i < 3; i++)
        debug_blocks[i] = GC_debug_malloc(24, __FILE__, __LINE__);
}

static __attribute__((noinline)) void make_typed(void)
{
    GC_word bitmap = 1; /* the first word is a pointer */
    GC_descr d = GC_make_descriptor(&bitmap, 1);
    for (int i = 0; i < 4; i++)
        typed_blocks[i] = GC_malloc_explicitly_typed(32, d);
}

/* Clears the stack below us, so that no stale copy of a dropped buffer's
 * address keeps it alive through the collection. */
static __attribute__((noinline)) void scrub_stack(void)
{
    volatile char pad[16384];
    memset((char *)pad, 0, sizeof pad);
}

int main(void)
{
    GC_INIT();
    make_nodes();
    make_buffers();
    make_strings();
    make_freed();
    grow();
    make_debug();
    make_typed();
    scrub_stack();
    /* The collection 5 ms after the allocations: the live curve's buckets
     * are a millisecond at their finest (src/analyze/curve.h), so in a
     * faster run the heap's size came in the first bucket with them, and
     * the viewer's heap line was flat from its first point
     * (tests/integration/test_view_browser.sh looks for it rising). */
    struct timespec ms5 = { 0, 5000000 };
    nanosleep(&ms5, NULL);
    GC_gcollect();
    free(malloc(777));
    int n = 0;
    for (struct node *x = nodes; x; x = x->next)
        n++;
    if (n != 100 || strcmp(strings[4], "memtally") || !grown || !debug_blocks[2] ||
        !typed_blocks[3])
        return 1;
    puts("gc ok");
    return 0;
}
