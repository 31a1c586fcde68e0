/*
 * ring.h: the shared memory through which the recorder inside the program
 * hands the trace's bytes to `memtally record`, which writes the file, so
 * that the program holds no descriptor of ours (it closes the memfd once
 * it has mapped it) and a program that closes every descriptor, or dies,
 * loses nothing that reached the ring.  One producer (the recorder's
 * writer, which writes whole blocks), one consumer (memtally record).
 *
 * Written once for both sides; nothing here allocates or locks.
 */
#ifndef MTL_COMMON_RING_H
#define MTL_COMMON_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/ctlsock.h"

#define MTL_RING_MAGIC 0x31474e49524c544dull /* "MTLRING1" */
#define MTL_RING_DATA (16u << 20)            /* bytes of data, a power of two */
#define MTL_RING_HEADER 16384u
#define MTL_RING_SIZE (MTL_RING_HEADER + MTL_RING_DATA)

struct mtl_ring {
    uint64_t magic;
    _Atomic uint64_t head;       /* bytes the producer has published */
    char pad1[48];
    _Atomic uint64_t tail;       /* bytes the consumer has written out */
    _Atomic uint64_t beat;       /* the consumer's CLOCK_MONOTONIC ns, kept fresh */
    _Atomic uint32_t gone;       /* the consumer stopped: never wait for it */
    _Atomic uint32_t ended;      /* the producer wrote the trace's END */
    _Atomic uint32_t attached;   /* the producer took the ring */
    _Atomic uint64_t allocations;/* recorded so far (the producer's count) */
    /* The control mailbox (common/ctlsock.h's protocol): memtally record
     * puts a command in ctl_line and bumps ctl_req (a futex, shared);
     * the recorder answers in ctl_answer and sets ctl_ans to ctl_req. */
    _Atomic uint32_t ctl_live;   /* the recorder answers (not after exec) */
    _Atomic uint32_t ctl_req;
    _Atomic uint32_t ctl_ans;
    char ctl_line[MTL_CTL_LINE];
    char ctl_answer[MTL_CTL_ANSWER];
};

_Static_assert(sizeof(struct mtl_ring) <= MTL_RING_HEADER, "the ring's header outgrew its room");

static inline uint8_t *mtl_ring_data(struct mtl_ring *r)
{
    return (uint8_t *)r + MTL_RING_HEADER;
}

static inline void mtl_ring_init(struct mtl_ring *r)
{
    memset(r, 0, sizeof *r);
    r->magic = MTL_RING_MAGIC;
}

/* Producer: room for n more bytes now. */
static inline int mtl_ring_room(struct mtl_ring *r, size_t n)
{
    uint64_t used = atomic_load_explicit(&r->head, memory_order_relaxed) -
                    atomic_load_explicit(&r->tail, memory_order_acquire);
    return MTL_RING_DATA - used >= n;
}

/* Producer: copies n bytes in (mtl_ring_room said there is room) and
 * publishes them. */
static inline void mtl_ring_put(struct mtl_ring *r, const void *p, size_t n)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    size_t at = (size_t)(head & (MTL_RING_DATA - 1));
    size_t first = n < MTL_RING_DATA - at ? n : MTL_RING_DATA - at;
    memcpy(mtl_ring_data(r) + at, p, first);
    memcpy(mtl_ring_data(r), (const uint8_t *)p + first, n - first);
    atomic_store_explicit(&r->head, head + n, memory_order_release);
}

/* Consumer: the bytes published and not yet taken, as at most two pieces
 * (the second after the wrap); returns their total. */
static inline size_t mtl_ring_peek(struct mtl_ring *r, const uint8_t **a, size_t *na,
                                   const uint8_t **b, size_t *nb)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    size_t n = (size_t)(head - tail), at = (size_t)(tail & (MTL_RING_DATA - 1));
    *na = n < MTL_RING_DATA - at ? n : MTL_RING_DATA - at;
    *a = mtl_ring_data(r) + at;
    *nb = n - *na;
    *b = mtl_ring_data(r);
    return n;
}

/* Consumer: n bytes written out. */
static inline void mtl_ring_take(struct mtl_ring *r, size_t n)
{
    atomic_fetch_add_explicit(&r->tail, n, memory_order_release);
}

#endif
