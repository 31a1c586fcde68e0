/* ixcol.c: see ixcol.h. */
#include "analyze/ixcol.h"

#include <string.h>
#include <zstd.h>

#include "memtally/errors.h"

/* zstd's fastest level: an index is built once per trace but its columns
 * are read back at every query, and level 1 decompresses as fast as any. */
#define IX_LEVEL 1

size_t mtl_ixcol_bound(size_t n)
{
    return ZSTD_compressBound(8 * n);
}

int mtl_ixcol_encode(struct mtl_ixcol *c, const uint64_t *v, size_t n,
                     enum mtl_ixcol_code code, void *cctx, uint8_t *out, size_t cap,
                     uint8_t *scratch)
{
    c->code = (uint8_t)code;
    if (code == MTL_IXCOL_DELTA) {
        /* The differences, zigzag-coded, in the upper half of scratch. */
        uint64_t *d = (uint64_t *)(void *)(scratch + 8 * n), prev = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t x = (int64_t)(v[i] - prev);
            d[i] = ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
            prev = v[i];
        }
        v = d;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < lo)
            lo = v[i];
        if (v[i] > hi)
            hi = v[i];
    }
    if (!n)
        lo = hi = 0;
    uint64_t span = hi - lo;
    c->base = lo;
    c->width = span == 0 ? 0 : span <= 0xff ? 1 : span <= 0xffff ? 2 : span <= 0xffffffffu ? 4 : 8;
    c->csize = 0;
    if (c->width == 0)
        return 0;
    switch (c->width) {
    case 1:
        for (size_t i = 0; i < n; i++)
            scratch[i] = (uint8_t)(v[i] - lo);
        break;
    case 2:
        for (size_t i = 0; i < n; i++) {
            uint16_t x = (uint16_t)(v[i] - lo);
            memcpy(scratch + 2 * i, &x, 2);
        }
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            uint32_t x = (uint32_t)(v[i] - lo);
            memcpy(scratch + 4 * i, &x, 4);
        }
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            uint64_t x = v[i] - lo;
            memcpy(scratch + 8 * i, &x, 8);
        }
    }
    /* With the frame's checksum: damage to the index is found when read. */
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, IX_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)))
        return MTL_ENOMEM;
    size_t got = ZSTD_compress2(cctx, out, cap, scratch, n * c->width);
    if (ZSTD_isError(got))
        return MTL_ENOMEM;
    c->csize = (uint32_t)got;
    return 0;
}

static int decode_stored(const struct mtl_ixcol *c, const uint8_t *data, size_t n,
                         void *dctx, uint64_t *v, uint8_t *scratch)
{
    uint64_t base = c->base;
    if (c->width == 0) {
        for (size_t i = 0; i < n; i++)
            v[i] = base;
        return 0;
    }
    if (c->width != 1 && c->width != 2 && c->width != 4 && c->width != 8)
        return MTL_ECORRUPT;
    size_t want = n * c->width;
    size_t got = ZSTD_decompressDCtx(dctx, scratch, want, data, c->csize);
    if (ZSTD_isError(got) || got != want)
        return MTL_ECORRUPT;
    switch (c->width) {
    case 1:
        for (size_t i = 0; i < n; i++)
            v[i] = base + scratch[i];
        break;
    case 2:
        for (size_t i = 0; i < n; i++) {
            uint16_t x;
            memcpy(&x, scratch + 2 * i, 2);
            v[i] = base + x;
        }
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            uint32_t x;
            memcpy(&x, scratch + 4 * i, 4);
            v[i] = base + x;
        }
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            uint64_t x;
            memcpy(&x, scratch + 8 * i, 8);
            v[i] = base + x;
        }
    }
    return 0;
}

static void undo_delta(uint64_t *v, size_t n)
{
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = v[i];
        prev += (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
        v[i] = prev;
    }
}

int mtl_ixcol_decode(const struct mtl_ixcol *c, const uint8_t *data, size_t n, void *dctx,
                     uint64_t *v, uint8_t *scratch)
{
    if (c->code != MTL_IXCOL_PLAIN && c->code != MTL_IXCOL_DELTA)
        return MTL_ECORRUPT;
    int rc = decode_stored(c, data, n, dctx, v, scratch);
    if (rc == 0 && c->code == MTL_IXCOL_DELTA)
        undo_delta(v, n);
    return rc;
}
