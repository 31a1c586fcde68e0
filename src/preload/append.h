/*
 * append.h: an event into the thread's chunk, inline (events.c has the
 * rest: the threads' states, the wait for a free chunk).
 *
 * Every allocation and free the hooks record comes through here.  As
 * calls, each saving its registers (the thread's state, room, the clock,
 * put; then one call from the hooks into events.c), they cost 2 to 3 ns
 * of an event's 26 (bench/eventcost.sh; docs/PERFORMANCE.md, "One
 * event's cost").  Inline is the common case: the thread's chunk has
 * room; a full one goes to mtl__room_wait.
 */
#ifndef MEMTALLY_PRELOAD_APPEND_H
#define MEMTALLY_PRELOAD_APPEND_H

#define EVENT_INLINE static inline __attribute__((always_inline))

/* With ts held (*held: mtl_state_enter's): a slot once the thread's full
 * chunk is queued and another taken, waiting for the writer if need be
 * (under the lock, which it may let go and take again: *held becomes 1);
 * NULL when recording has to stop. */
struct mtl_cev *mtl__room_wait(struct mtl_tstate *ts, int *held) MTL_HIDDEN;
/* After an event found no room: stops recording if the writer is gone. */
void mtl__append_failed(void) MTL_HIDDEN;

/* The state threads share once past their exit. */
EVENT_INLINE struct mtl_tstate *mtl__orphan_state(void)
{
    return mtl_region_state(mtl__pl.region, 0);
}

/* With ts held: a slot for one event, or NULL when recording has to
 * stop.  May let ts go and take it again while waiting for the writer, so
 * callers stamp the time after this returns. */
EVENT_INLINE struct mtl_cev *mtl__room(struct mtl_tstate *ts, int *held)
{
    struct mtl_cev *e = mtl_region_room(mtl__pl.region, ts, 0);
    return MTL_LIKELY(e != NULL) ? e : mtl__room_wait(ts, held);
}

/* The thread's hold of its state (region.h): 1 when it is the lock. */
EVENT_INLINE int mtl__hold(struct mtl_tstate *ts)
{
    return mtl_state_enter(mtl__pl.region, ts);
}

/* With ts held: the time of ts's next event.  Read after the loads
 * before it (clock.h) once a second thread has recorded: a block another
 * thread handed over must not be freed, in time, before it was made.
 * The threads past their exit that share state 0 each took a state
 * before, so they count. */
EVENT_INLINE uint64_t mtl__stamp(struct mtl_tstate *ts)
{
    int after_loads = atomic_load_explicit(&mtl__pl.states_taken, memory_order_relaxed) > 1;
    return mtl_region_stamp(ts, mtl__now_ns_at(after_loads));
}

/* With ts held: the event into slot e, published. */
EVENT_INLINE void mtl__put(struct mtl_tstate *ts, struct mtl_cev *e, uint64_t t, unsigned type,
                           uint64_t a, uint64_t b, uint32_t stack)
{
    e->t_type = t << 8 | type;
    e->a = a;
    e->b = b;
    e->stack = stack;
    /* The orphan state is shared by exiting threads: ask the caller's. */
    e->thread = ts == mtl__orphan_state() ? mtl__tls.index : ts->index;
    mtl_cev_commit(mtl__pl.region, ts);
}

EVENT_INLINE void mtl__append(struct mtl_tstate *ts, unsigned type, uint64_t a, uint64_t b,
                              uint32_t stack)
{
    int held = mtl__hold(ts);
    struct mtl_cev *e = mtl__room(ts, &held);
    if (e)
        mtl__put(ts, e, mtl__stamp(ts), type, a, b, stack);
    mtl_state_leave(ts, held);
    if (MTL_UNLIKELY(!e))
        mtl__append_failed();
}

EVENT_INLINE void mtl__record_alloc(uint64_t ptr, uint64_t size, uint32_t stack)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (ts) {
        mtl__append(ts, MTL_CEV_ALLOC, ptr, size, stack);
        mtl__user_hook(MTL_CEV_ALLOC, ptr, size, stack);
    }
}

EVENT_INLINE void mtl__record_free(uint64_t ptr)
{
    struct mtl_tstate *ts = mtl__thread_state();
    if (ts) {
        mtl__append(ts, MTL_CEV_FREE, ptr, 0, 0);
        mtl__user_hook(MTL_CEV_FREE, ptr, 0, 0);
    }
}

#endif
