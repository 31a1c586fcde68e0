/*
 * clock.h: the events' clock, inline (clock.c has the rest and says how
 * the TSC becomes CLOCK_MONOTONIC).
 *
 * Every event reads it: as two calls (mtl__now_ns, then mtl__clock_ns) it
 * cost 1.5 to 1.7 ns an event more on the program's side
 * (bench/eventcost.sh; docs/PERFORMANCE.md, "One event's cost").  Inline
 * here is the common case only: a line published and not being changed,
 * the TSC short of the next anchor.  Everything else goes to
 * mtl__clock_ns_slow, which decides it all again.
 */
#ifndef MEMTALLY_PRELOAD_CLOCK_H
#define MEMTALLY_PRELOAD_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define MTL_HAVE_TSC 1
#else
#define MTL_HAVE_TSC 0
#endif

#if MTL_HAVE_TSC
/* The TSC, read once every load before it is done (after_loads), or as
 * soon as the processor gets to it.  A plain rdtsc may run ahead of the
 * loads before it: a thread that frees a block another thread just handed
 * it could then stamp the free before the other thread's allocation of
 * it, and the trace would free the block before making it
 * (tests/integration/test_exact_handoff.sh caught that).  The locked
 * instruction of the thread's lock used to keep the two in order; the
 * hold without it (common/region.h) needs rdtscp, 5 ns more than rdtsc
 * here and 5 less than the two together (bench/clock_cost.sh).  A
 * program with one recording thread has no other thread's stamp to come
 * after, and reads rdtsc (mtl__stamp). */
static inline uint64_t mtl__tsc(int after_loads)
{
    unsigned aux;
    return after_loads ? __rdtscp(&aux) : __rdtsc();
}
#endif

struct mtl__clock {
    int usable;               /* the TSC may be used at all */
    uint64_t tsc0, ns0;       /* the first reading: slopes are measured from it */
    atomic_uint seq;          /* 0: no line yet; odd: being changed */
    _Atomic uint64_t tsc_a, ns_a, slope; /* the line (slope: ns per tick, 32.32) */
    _Atomic uint64_t next_tsc; /* when to anchor again */
    atomic_int busy;          /* a thread is anchoring */
};
extern struct mtl__clock mtl__ck MTL_HIDDEN;

uint64_t mtl__clock_ns_slow(void) MTL_HIDDEN;

static inline uint64_t mtl__clock_on_line(uint64_t tsc, uint64_t tsc_a, uint64_t ns_a,
                                          uint64_t slope)
{
    uint64_t d = tsc > tsc_a ? tsc - tsc_a : 0;
    return ns_a + (uint64_t)(((unsigned __int128)d * slope) >> 32);
}

/* CLOCK_MONOTONIC, in ns; after_loads: read after the loads before it
 * (mtl__tsc). */
static inline uint64_t mtl__clock_ns_at(int after_loads)
{
#if MTL_HAVE_TSC
    /* A line is published only where the TSC is usable (clock.c). */
    unsigned s = atomic_load_explicit(&mtl__ck.seq, memory_order_acquire);
    if (MTL_LIKELY(s != 0 && !(s & 1))) {
        uint64_t tsc_a = atomic_load_explicit(&mtl__ck.tsc_a, memory_order_relaxed);
        uint64_t ns_a = atomic_load_explicit(&mtl__ck.ns_a, memory_order_relaxed);
        uint64_t slope = atomic_load_explicit(&mtl__ck.slope, memory_order_relaxed);
        uint64_t tsc = mtl__tsc(after_loads);
        atomic_thread_fence(memory_order_acquire);
        if (MTL_LIKELY(atomic_load_explicit(&mtl__ck.seq, memory_order_relaxed) == s &&
                       tsc < atomic_load_explicit(&mtl__ck.next_tsc, memory_order_relaxed)))
            return mtl__clock_on_line(tsc, tsc_a, ns_a, slope);
    }
#endif
    return mtl__clock_ns_slow();
}

static inline uint64_t mtl__clock_ns(void)
{
    return mtl__clock_ns_at(1);
}

/* The trace's clock: ns since its start.  The start lives in the region
 * once there is one: memtally record restarts it when it begins a trace
 * for `memtally ctl`. */
static inline uint64_t mtl__now_ns_at(int after_loads)
{
    struct mtl_region *r = mtl__pl.region;
    uint64_t start = r ? atomic_load_explicit(&r->start_ns, memory_order_relaxed)
                       : mtl__pl.start_ns;
    uint64_t now = mtl__clock_ns_at(after_loads);
    return now > start ? now - start : 0;
}

static inline uint64_t mtl__now_ns(void)
{
    return mtl__now_ns_at(1);
}

#endif
