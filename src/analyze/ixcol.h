/*
 * ixcol.h: one column of an index chunk (index.c): up to MTL_IX_CHUNK
 * unsigned values, stored as their difference from the chunk's smallest
 * (the base) in the fewest whole bytes that hold the largest (0, 1, 2, 4
 * or 8), then compressed with zstd.  A column of one repeated value costs
 * nothing but its base; a column of small ids or times close together
 * costs a byte or two a value before zstd, less after.
 */
#ifndef MTL_ANALYZE_IXCOL_H
#define MTL_ANALYZE_IXCOL_H

#include <stddef.h>
#include <stdint.h>

#define MTL_IX_CHUNK 65536u    /* rows per chunk */

/* How a column's values are turned before they are stored: as they
 * are, or (times, block numbers) as the zigzag-coded difference from the
 * value before, which is small when they grow slowly or stay close. */
enum mtl_ixcol_code { MTL_IXCOL_PLAIN = 0, MTL_IXCOL_DELTA = 1 };

/* Where a column of a chunk is, in the index file. */
struct mtl_ixcol {
    uint64_t offset;           /* of its zstd frame */
    uint64_t base;             /* the smallest stored value */
    uint32_t csize;            /* bytes of the frame, 0 when width is 0 */
    uint8_t width;             /* bytes per stored value before compression */
    uint8_t code;              /* enum mtl_ixcol_code */
    uint8_t pad[2];
};

/* Encodes n values coded as code into out (which needs mtl_ixcol_bound(n)
 * bytes).  Sets c->base, c->width, c->code, c->csize (c->offset is the
 * caller's).  scratch holds 16 * n bytes.  Returns 0 or MTL_ENOMEM. */
int mtl_ixcol_encode(struct mtl_ixcol *c, const uint64_t *v, size_t n,
                     enum mtl_ixcol_code code, void *cctx, uint8_t *out, size_t cap,
                     uint8_t *scratch);
size_t mtl_ixcol_bound(size_t n);

/* Decodes the column of n values whose frame is at data (c->csize bytes)
 * into v.  scratch holds 16 * n bytes.  Returns 0, or MTL_ECORRUPT when the
 * frame does not give n values of the width. */
int mtl_ixcol_decode(const struct mtl_ixcol *c, const uint8_t *data, size_t n, void *dctx,
                     uint64_t *v, uint8_t *scratch);

#endif
