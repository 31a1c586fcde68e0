/*
 * unwind_shapes.c: allocations under the frame shapes that a stack walker
 * can get wrong, for memtally's own walker checked against libunwind
 * (tests/integration/test_unwind.sh).  Built -O2 (the shapes are the
 * optimiser's), with the chosen frames made on purpose:
 *   - recursion through two mutually recursive functions, as the
 *     binary-trees benchmark does (each path a stack of its own);
 *   - frames addressed by rbp: alloca of varying sizes, and functions built
 *     with frame pointers, mixed with ones built without;
 *   - one call site calling, through a pointer, functions with different
 *     frame sizes (the same return address at different depths);
 *   - a stack realigned to 64 bytes (CFI by expression: libunwind's part);
 *   - malloc in a signal handler, on the thread's stack and on an
 *     alternate one (a signal frame: libunwind's part);
 *   - longjmp out of deep recursion, then allocation from elsewhere;
 *   - a descent of hundreds of frames, past the depth kept, allocating
 *     at every level down and up: each walk is cut a frame further in,
 *     until the walker has to move the frames it keeps;
 *   - two threads doing all of it.
 * Prints the number of allocations it made, freed all along.
 */
#include <alloca.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

static _Atomic long made;

static NOINLINE void take(size_t n)
{
    void *p = malloc(n);
    KEEP(p);
    made++;
    free(p);
}

/* Two recursive functions: left and right children. */
static NOINLINE int right(int d);
static NOINLINE int left(int d)
{
    take(16);
    int r = d > 0 ? left(d - 1) + right(d - 1) : 1;
    KEEP(&r);
    return r;
}
static NOINLINE int right(int d)
{
    take(24);
    int r = d > 0 ? left(d - 1) + right(d - 1) : 1;
    KEEP(&r);
    return r;
}

/* Frames addressed by rbp. */
static NOINLINE int with_alloca(int d, size_t extra)
{
    char *buf = alloca(extra + 16);
    memset(buf, d, extra + 16);
    take(32 + (size_t)d);
    int r = d > 0 ? with_alloca(d - 1, (extra * 7 + 13) % 200) : buf[0];
    KEEP(buf);
    return r;
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static int fp_frame(int d);
static NOINLINE int nofp_frame(int d)
{
    take(40);
    int r = d > 0 ? fp_frame(d - 1) : 0;
    KEEP(&r);
    return r + 1;
}
__attribute__((noinline, optimize("no-omit-frame-pointer"))) static int fp_frame(int d)
{
    volatile char pad[48];
    pad[0] = (char)d;
    take(48);
    int r = d > 0 ? nofp_frame(d - 1) : 0;
    return r + pad[0];
}

/* One call site, callees of different frame sizes. */
static NOINLINE int small_frame(int d)
{
    take(56);
    return d;
}
static NOINLINE int big_frame(int d)
{
    volatile char pad[512];
    pad[d & 511] = 1;
    take(64);
    return d + pad[0];
}
static int (*volatile pick[2])(int) = { small_frame, big_frame };
static NOINLINE int through_pointer(int i)
{
    int r = pick[i & 1](i);
    KEEP(&r);
    return r;
}

/* A stack realigned to 64 bytes. */
static NOINLINE __attribute__((force_align_arg_pointer)) int realigned(int d)
{
    char buf[64] __attribute__((aligned(64)));
    memset(buf, d, sizeof buf);
    take(72);
    KEEP(buf);
    return buf[1];
}

/* malloc in a signal handler. */
static void on_signal(int sig)
{
    (void)sig;
    take(80);
    left(2);
}

static __thread jmp_buf out; /* each thread its own */
static NOINLINE void deep_then_jump(int d)
{
    take(88);
    if (d == 0)
        longjmp(out, 1);
    deep_then_jump(d - 1);
    KEEP(&d);
}

/* Three functions in turn, so that a stack read a frame off is another. */
static NOINLINE int descend_b(int d);
static NOINLINE int descend_c(int d);
static NOINLINE int descend(int d)
{
    take(32);
    int r = d > 0 ? descend_b(d - 1) + 1 : 0;
    take(40);
    KEEP(&r);
    return r;
}
static NOINLINE int descend_b(int d)
{
    char pad[24];
    KEEP(pad);
    take(48);
    int r = d > 0 ? descend_c(d - 1) + 2 : 0;
    KEEP(&r);
    return r;
}
static NOINLINE int descend_c(int d)
{
    int r = d > 0 ? descend(d - 1) + 3 : 0;
    take(56);
    KEEP(&r);
    return r;
}

static void *work(void *arg)
{
    long rounds = (long)(intptr_t)arg;
    for (long i = 0; i < rounds; i++) {
        left(6);
        with_alloca((int)(i % 9), (size_t)(i * 37 % 300));
        nofp_frame(5);
        fp_frame(4);
        through_pointer((int)i);
        through_pointer((int)i + 1);
        realigned((int)i);
        if (!setjmp(out))
            deep_then_jump(10 + (int)(i % 5));
        take(96);
        if (i % 10 == 0)
            descend(600);
        if (i % 50 == 0)
            raise(SIGUSR1);
    }
    return NULL;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, work, (void *)(intptr_t)300) != 0)
        return 1;
    work((void *)(intptr_t)300);
    pthread_join(t, NULL);

    /* The same on an alternate signal stack. */
    stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16 };
    sigaltstack(&ss, NULL);
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    work((void *)(intptr_t)100);
    printf("%ld\n", (long)made);
    return 0;
}
