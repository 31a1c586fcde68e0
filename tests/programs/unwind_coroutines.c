/*
 * unwind_coroutines.c: allocations on stacks that come and go, for the
 * walker's reuse of words it read before (the last walk, the thread's
 * recent stacks; tests/integration/test_unwind.sh).  A coroutine
 * (makecontext/swapcontext) allocates through recursion of a few depths
 * on a stack of its own, and the main stack does the same between
 * switches; each round's coroutine stack is of another size (16, 32 or 48
 * KiB), from malloc or from mmap, and is freed or unmapped at the round's
 * end, so that a later stack lies at the same addresses with another top.
 * Prints the number of allocations it made, freed all along.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

static ucontext_t main_ctx, co_ctx;
static long made;

static NOINLINE void leaf(int d)
{
    void *p = malloc(16 + (size_t)d);
    KEEP(p);
    made += p != NULL;
    free(p);
}

static NOINLINE void down(int d)
{
    if (d > 0)
        down(d - 1);
    leaf(d);
}

static void coroutine(void)
{
    for (int i = 0; i < 40; i++) {
        down(i % 7);
        swapcontext(&co_ctx, &main_ctx);
    }
}

int main(void)
{
    for (int round = 0; round < 600; round++) {
        size_t size = (size_t)(round % 3 + 1) * 16384;
        int mapped = round & 1;
        char *stack = mapped ? mmap(NULL, size, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                             : malloc(size);
        if (stack == NULL || stack == MAP_FAILED)
            return 1;
        getcontext(&co_ctx);
        co_ctx.uc_stack.ss_sp = stack;
        co_ctx.uc_stack.ss_size = size;
        co_ctx.uc_link = &main_ctx;
        makecontext(&co_ctx, coroutine, 0);
        for (int k = 0; k < 40; k++) {
            down(k % 5);
            swapcontext(&main_ctx, &co_ctx);
        }
        if (mapped)
            munmap(stack, size);
        else
            free(stack);
    }
    printf("%ld\n", made);
    return 0;
}
