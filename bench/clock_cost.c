/* clock_cost: what an event's clock read and its thread's hold cost on
 * this processor, in ns each, back to back (bench/clock_cost.sh): the
 * TSC read as the events read it (rdtscp, after the loads before it) and
 * as a plain rdtsc; a locked exchange and a release store (a spinlock
 * taken and let go, as every event did before the hold without it,
 * src/common/region.h); both together, as they were; and the hold
 * without a locked instruction (two byte stores and a load) with the
 * clock.  A store to a ring of words comes first in each round, as an
 * event has stores before its clock.  Usage: clock_cost [ROUNDS] */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static volatile uint64_t ring[64];
static atomic_int lock;
static _Atomic uint8_t busy, revoke;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define TIMED(name, body)                                                        \
    do {                                                                         \
        double t0 = now();                                                       \
        for (long i = 0; i < n; i++) {                                           \
            ring[i & 63] = (uint64_t)i;                                          \
            body;                                                                \
        }                                                                        \
        printf("%-34s %6.2f ns\n", name, (now() - t0) / (double)n * 1e9);        \
    } while (0)

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 50000000;
    uint64_t sum = 0;
    unsigned aux;
    TIMED("rdtsc", sum += __rdtsc());
    TIMED("rdtscp (the events' clock)", sum += __rdtscp(&aux));
    TIMED("xchg + release store (a spinlock)",
          sum += (uint64_t)atomic_exchange_explicit(&lock, 1, memory_order_acquire);
          atomic_store_explicit(&lock, 0, memory_order_release));
    TIMED("spinlock + rdtsc (before)",
          sum += (uint64_t)atomic_exchange_explicit(&lock, 1, memory_order_acquire);
          sum += __rdtsc(); atomic_store_explicit(&lock, 0, memory_order_release));
    TIMED("busy, revoke + rdtscp (now)",
          atomic_store_explicit(&busy, 1, memory_order_relaxed);
          atomic_signal_fence(memory_order_seq_cst);
          sum += atomic_load_explicit(&revoke, memory_order_relaxed); sum += __rdtscp(&aux);
          atomic_store_explicit(&busy, 0, memory_order_release));
    return sum == 42; /* keeps the reads */
}
