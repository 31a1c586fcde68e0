/*
 * checksum.h: a fast 64-bit checksum of memory, to find damage (a bit
 * flipped, bytes overwritten or cut) in files memtally wrote itself and
 * reads back, such as an index.  Not for hostile input: it is not a MAC.
 */
#ifndef MTL_COMMON_CHECKSUM_H
#define MTL_COMMON_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MTL_CHECKSUM_INIT 0x6a09e667f3bcc909ull

/* The checksum of n bytes at data, continuing from h (MTL_CHECKSUM_INIT
 * to start): checksum(a, then b) = mtl_checksum(b, mtl_checksum(a, init)).
 * Eight bytes a step in four independent lanes: several GB a second. */
static inline uint64_t mtl_checksum(const void *data, size_t n, uint64_t h)
{
    const uint8_t *p = data;
    uint64_t lane[4] = { h, h ^ 0x9e3779b97f4a7c15ull, h ^ 0xbf58476d1ce4e5b9ull,
                         h ^ 0x94d049bb133111ebull };
    size_t len = n;
    while (n >= 32) {
        for (int i = 0; i < 4; i++) {
            uint64_t w;
            memcpy(&w, p + 8 * i, 8);
            lane[i] = (lane[i] ^ w) * 0x9e3779b97f4a7c15ull;
            lane[i] ^= lane[i] >> 29;
        }
        p += 32;
        n -= 32;
    }
    uint64_t tail[4] = { 0 };
    memcpy(tail, p, n);
    for (int i = 0; i < 4; i++) {
        lane[i] = (lane[i] ^ tail[i] ^ len) * 0xbf58476d1ce4e5b9ull;
        lane[i] ^= lane[i] >> 31;
    }
    return (lane[0] ^ (lane[1] << 1 | lane[1] >> 63) ^ (lane[2] << 2 | lane[2] >> 62) ^
            (lane[3] << 3 | lane[3] >> 61)) * 0x94d049bb133111ebull;
}

#endif
