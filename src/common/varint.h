/*
 * varint.h: LEB128 variable-length integers and zigzag signed encoding, the
 * building blocks of the trace format (docs/FORMAT.md).  Header-only so the
 * writer's hot loop inlines them.
 */
#ifndef MTL_COMMON_VARINT_H
#define MTL_COMMON_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define MTL_VARINT_MAX 10 /* bytes of the longest 64-bit varint */

/* Writes v at p (which must have MTL_VARINT_MAX bytes of room); returns the
 * byte after it. */
static inline uint8_t *mtl__put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* The bytes mtl__put_varint writes for v. */
static inline unsigned mtl__varint_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

static inline uint64_t mtl__zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mtl__unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reads a varint from [*p, end); advances *p.  Returns 0, or -1 when the
 * input ends inside the varint or it is longer than 64 bits. */
static inline int mtl__get_varint(const uint8_t **p, const uint8_t *end,
                                  uint64_t *out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    const uint8_t *q = *p;
    while (q < end) {
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return -1;
    }
    return -1;
}

#endif
