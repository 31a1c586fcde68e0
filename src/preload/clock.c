/*
 * clock.c: the events' clock, CLOCK_MONOTONIC read through the CPU's time
 * stamp counter.
 *
 * Every event is stamped, and clock_gettime costs about 22 ns here (the
 * vDSO's) against 10 for rdtsc: on a recording of python3 that was a
 * tenth of the program's time.  Where the TSC is invariant (CPUID says so)
 * and the kernel itself keeps time with it (clocksource "tsc": it checked
 * the TSC is in step across CPUs), the clock is a line through the TSC:
 *
 *     ns = ns_a + (tsc - tsc_a) * slope
 *
 * anchored to clock_gettime.  The slope is measured against
 * clock_gettime from the first reading on, so it gets more exact as the
 * run goes.  One thread takes a new anchor after 20 ms, 40, 80... then
 * every second: where the old line is (so the clock never jumps, and
 * never goes back), with a slope that also makes up, over the next
 * period, the difference the old line had grown from clock_gettime (NTP's
 * slewing included, up to 0.1%): the two stay within microseconds.
 * Until the first 20 ms have passed, and wherever the TSC is not usable,
 * clock_gettime is read as before.
 *
 * One line for all threads, so the stamps of two threads keep the order
 * of their TSC readings.  The parameters are read under a sequence count
 * (a writer makes it odd while it changes them); nothing here locks,
 * allocates or makes a system call on the fast path.
 */
#include "preload/preload.h"

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if MTL_HAVE_TSC
#include <cpuid.h>
#endif

#define CALIBRATE_AFTER_NS 20000000ull   /* the first line: after 20 ms */
#define REANCHOR_NS 1000000000ull        /* new anchors: at most a second apart */

struct mtl__clock mtl__ck;

#if MTL_HAVE_TSC
/* A TSC reading and clock_gettime taken together (the TSC at the middle):
 * the closest of three tries, so that a preemption between the two does
 * not skew the line. */
static void read_both(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    *tsc = *ns = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t t1 = __rdtsc();
        uint64_t n = mtl__monotonic_ns();
        uint64_t t2 = __rdtsc();
        if (t2 - t1 < best) {
            best = t2 - t1;
            *tsc = t1 + (t2 - t1) / 2;
            *ns = n;
        }
    }
}

static int kernel_clock_is_tsc(void)
{
    char buf[32];
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 3 && memcmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}
#endif

void mtl__clock_init(void)
{
#if MTL_HAVE_TSC
    unsigned a, b, c, d;
    /* CPUID 0x80000007, EDX bit 8: the TSC runs at a constant rate in
     * every state of the CPU. */
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) && kernel_clock_is_tsc()) {
        read_both(&mtl__ck.tsc0, &mtl__ck.ns0);
        mtl__ck.usable = 1;
    }
#endif
}

#if MTL_HAVE_TSC
static void publish(uint64_t tsc_a, uint64_t ns_a, uint64_t slope)
{
    unsigned s = atomic_load_explicit(&mtl__ck.seq, memory_order_relaxed);
    atomic_store_explicit(&mtl__ck.seq, s | 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&mtl__ck.tsc_a, tsc_a, memory_order_relaxed);
    atomic_store_explicit(&mtl__ck.ns_a, ns_a, memory_order_relaxed);
    atomic_store_explicit(&mtl__ck.slope, slope, memory_order_relaxed);
    atomic_store_explicit(&mtl__ck.seq, (s | 1) + 1, memory_order_release);
}

/* A new anchor at the TSC reading now, by one thread at a time: where the
 * line is (first: where clock_gettime is), with the slope measured since
 * the first reading, corrected so that the line meets clock_gettime again
 * a second later.  0 when another thread is at it. */
static int anchor(void)
{
    if (atomic_exchange_explicit(&mtl__ck.busy, 1, memory_order_acquire))
        return 0;
    uint64_t tsc, ns;
    read_both(&tsc, &ns);
    if (tsc > mtl__ck.tsc0 && ns > mtl__ck.ns0) {
        uint64_t slope =
            (uint64_t)(((unsigned __int128)(ns - mtl__ck.ns0) << 32) / (tsc - mtl__ck.tsc0));
        /* The next anchor as far ahead as the run is old (the slope's
         * error shrinks as the baseline grows), a second at most. */
        uint64_t period = ns - mtl__ck.ns0;
        if (period > REANCHOR_NS)
            period = REANCHOR_NS;
        if (period < CALIBRATE_AFTER_NS)
            period = CALIBRATE_AFTER_NS;
        uint64_t at = ns;
        if (atomic_load_explicit(&mtl__ck.seq, memory_order_acquire)) {
            at = mtl__clock_on_line(tsc,
                                    atomic_load_explicit(&mtl__ck.tsc_a, memory_order_relaxed),
                                    atomic_load_explicit(&mtl__ck.ns_a, memory_order_relaxed),
                                    atomic_load_explicit(&mtl__ck.slope, memory_order_relaxed));
            int64_t behind = (int64_t)(ns - at), most = (int64_t)period / 1000;
            if (behind > most)
                behind = most;
            if (behind < -most)
                behind = -most;
            slope = (uint64_t)((unsigned __int128)slope * (uint64_t)((int64_t)period + behind) /
                               period);
        }
        if (slope) {
            publish(tsc, at, slope);
            uint64_t ticks = (uint64_t)(((unsigned __int128)period << 32) / slope);
            atomic_store_explicit(&mtl__ck.next_tsc, tsc + ticks, memory_order_relaxed);
        }
    }
    atomic_store_explicit(&mtl__ck.busy, 0, memory_order_release);
    return 1;
}
#endif

/* Every case, the common one's too, which clock.h has inline. */
uint64_t mtl__clock_ns_slow(void)
{
#if MTL_HAVE_TSC
    if (MTL_LIKELY(mtl__ck.usable)) {
        for (;;) {
            unsigned s = atomic_load_explicit(&mtl__ck.seq, memory_order_acquire);
            if (MTL_UNLIKELY(s == 0)) {
                uint64_t ns = mtl__monotonic_ns();
                if (ns - mtl__ck.ns0 >= CALIBRATE_AFTER_NS)
                    anchor();
                return ns;
            }
            if (s & 1)
                return mtl__monotonic_ns(); /* being changed: a rare moment */
            uint64_t tsc_a = atomic_load_explicit(&mtl__ck.tsc_a, memory_order_relaxed);
            uint64_t ns_a = atomic_load_explicit(&mtl__ck.ns_a, memory_order_relaxed);
            uint64_t slope = atomic_load_explicit(&mtl__ck.slope, memory_order_relaxed);
            uint64_t tsc = mtl__tsc(1);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&mtl__ck.seq, memory_order_relaxed) != s)
                continue;
            uint64_t next = atomic_load_explicit(&mtl__ck.next_tsc, memory_order_relaxed);
            if (MTL_UNLIKELY(tsc >= next) && anchor())
                continue;
            return mtl__clock_on_line(tsc, tsc_a, ns_a, slope);
        }
    }
#endif
    return mtl__monotonic_ns();
}

void mtl__clock_atfork_child(void)
{
    atomic_store(&mtl__ck.busy, 0);
}
