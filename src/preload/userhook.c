/*
 * userhook.c: mtl_set_hook, a function of the program called in the
 * allocating thread for each recorded allocation, free and tag (Crystal's
 * __trace_new).  It is called after the event is appended, with no lock
 * of ours held and memtally's own guard lowered, so that it may allocate:
 * what it allocates is recorded as the program's own, but not reported to
 * it again (a flag of the thread's).
 */
#include "preload/preload.h"

#include <stdatomic.h>

#include "memtally.h"
#include "trace/defs.h"

#define EXPORT __attribute__((visibility("default")))

struct hook {
    void (*fn)(const struct mtl_event *ev, void *arg);
    void *arg;
};

/* A hook set is never changed in place: a new one takes the next slot, so
 * a thread calling the old one sees it whole.  Slots are reused after 64
 * changes, which a program that changes its hook that often would race. */
#define HOOK_SLOTS 64
static struct hook slots[HOOK_SLOTS];
static _Atomic uint32_t next_slot;
_Atomic(struct hook *) mtl__user_hook_set;

EXPORT void mtl_set_hook(void (*fn)(const struct mtl_event *ev, void *arg), void *arg)
{
    if (!fn) {
        atomic_store(&mtl__user_hook_set, NULL);
        return;
    }
    struct hook *h = &slots[atomic_fetch_add(&next_slot, 1) % HOOK_SLOTS];
    h->fn = fn;
    h->arg = arg;
    atomic_store_explicit(&mtl__user_hook_set, h, memory_order_release);
}

void mtl__call_user_hook(unsigned type, uint64_t ptr, uint64_t size_tag, uint32_t stack)
{
    struct hook *h = atomic_load_explicit(&mtl__user_hook_set, memory_order_acquire);
    struct mtl__tls *tls = &mtl__tls;
    if (!h || tls->in_user_hook || tls->writer)
        return;
    struct mtl_event ev = {
        .type = type == MTL_CEV_ALLOC ? MTL_EV_ALLOC
                : type == MTL_CEV_TAG ? MTL_EV_TAG : MTL_EV_FREE,
        .time_us = mtl__now_ns() / 1000,
        .thread = tls->index,
        .ptr = ptr,
        .size = MTL_CEV_SIZE(size_tag),
        .stack = stack,
        .tag = MTL_CEV_TAG(size_tag),
        .heap = size_tag & MTL_CEV_GC ? MTL_HEAP_GC : MTL_HEAP_MALLOC,
    };
    if (type == MTL_CEV_ALLOC)
        mtl__weights(mtl__pl.opt.sample_rate ? MTL_MODE_SAMPLED : MTL_MODE_FULL,
                     mtl__pl.opt.sample_rate, ev.size, &ev.weight_count, &ev.weight_bytes);
    int in_hook = tls->in_hook;
    tls->in_user_hook = 1;
    tls->in_hook = 0;
    h->fn(&ev, h->arg);
    tls->in_hook = in_hook;
    tls->in_user_hook = 0;
}
