/*
 * trace_encode.h: writing traces of versions 1 to 5 by hand (6 with
 * empty_more; 10's runs with all_streams, pointers left out), field by field, as docs/FORMAT.md lays them out, for the
 * tests: the reader's specification
 * test (tests/unit/test_reader_spec.c) and the hand-made traces of the
 * integration tests (tests/tools/mktrace.c).  Header-only.
 *
 * This is a second, independent writer of the format, kept apart from the
 * recorder's (src/preload/writer.c) on purpose: a test that read back what
 * the recorder's own code wrote would agree with a misreading of the spec
 * made in both halves.  Only the integer codings (common/varint.h) and the
 * constants (trace/format.h) are shared.
 *
 * Use: fill a struct tb_buf with records (tb_byte for a record's type byte,
 * then its fields in order, each with the function of its stream), then
 * tb_block() writes it as one block; tb_clear() empties it for the next.
 * Records that carry a time (docs/FORMAT.md, "dt") take the difference
 * from the previous one; tb_ptr_delta and tb_ptr_window are the two codings
 * of a pointer.  Nothing here checks that the records make sense: the
 * reader's tests write wrong ones on purpose.
 */
#ifndef MTL_TESTS_TRACE_ENCODE_H
#define MTL_TESTS_TRACE_ENCODE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "common/varint.h"
#include "trace/format.h"

/* Room in each stream of a block under construction.  The writer must not
 * put more in a stream than this: mktrace starts a new block when a stream
 * is half full, and its longest record takes less than that. */
#define TB_STREAM_CAP (1 << 14)

/* A block's payload as docs/FORMAT.md lays it out: one buffer a stream. */
struct tb_buf {
    uint8_t d[MTL_STREAMS][TB_STREAM_CAP];
    size_t n[MTL_STREAMS];
    int bad_count; /* write a wrong number of streams (damage tests) */
    int empty_more; /* empty streams after the five (version 6's PTR_MORE, 7's PTR_FREE) */
    int all_streams; /* every stream with its bytes (version 10's RUNS) */
};

/* A file being written: its block numbers count from 0. */
struct tb_file {
    FILE *f;
    uint64_t seq; /* the next block's number in the file */
};

static inline void tb_clear(struct tb_buf *b)
{
    memset(b->n, 0, sizeof b->n);
    b->bad_count = b->empty_more = b->all_streams = 0;
}

static inline int tb_empty(const struct tb_buf *b)
{
    for (int i = 0; i < MTL_STREAMS; i++)
        if (b->n[i])
            return 0;
    return 1;
}

/* The most bytes any stream holds. */
static inline size_t tb_fullest(const struct tb_buf *b)
{
    size_t m = 0;
    for (int i = 0; i < MTL_STREAMS; i++)
        if (b->n[i] > m)
            m = b->n[i];
    return m;
}

static inline void tb_var_in(struct tb_buf *b, int s, uint64_t v)
{
    b->n[s] = (size_t)(mtl__put_varint(b->d[s] + b->n[s], v) - b->d[s]);
}

/* A record's type byte. */
static inline void tb_byte(struct tb_buf *b, uint8_t v)
{
    b->d[MTL_S_MAIN][b->n[MTL_S_MAIN]++] = v;
}

/* A varint field of the MAIN stream. */
static inline void tb_var(struct tb_buf *b, uint64_t v) { tb_var_in(b, MTL_S_MAIN, v); }
/* The fields that have streams of their own. */
static inline void tb_dt(struct tb_buf *b, uint64_t v) { tb_var_in(b, MTL_S_TIME, v); }
static inline void tb_size(struct tb_buf *b, uint64_t v) { tb_var_in(b, MTL_S_SIZE, v); }
static inline void tb_stack(struct tb_buf *b, uint64_t v) { tb_var_in(b, MTL_S_STACK, v); }

/* A pointer given as a difference from the previous one (not the window). */
static inline void tb_ptr_delta(struct tb_buf *b, int64_t d)
{
    tb_var_in(b, MTL_S_PTR, 0);
    tb_var_in(b, MTL_S_PTR, mtl__zigzag(d));
}

/* A pointer given as the k-th newest of the window (k from 0). */
static inline void tb_ptr_window(struct tb_buf *b, unsigned k)
{
    tb_var_in(b, MTL_S_PTR, k + 1);
}

/* A bytes field (a string is bytes) of the MAIN stream. */
static inline void tb_bytes(struct tb_buf *b, const void *s, size_t n)
{
    tb_var(b, n);
    memcpy(b->d[MTL_S_MAIN] + b->n[MTL_S_MAIN], s, n);
    b->n[MTL_S_MAIN] += n;
}

static inline void tb_str(struct tb_buf *b, const char *s) { tb_bytes(b, s, strlen(s)); }

/* The streams of the versions written here (1 to 5): PTR_MORE came in
 * version 6. */
#define TB_STREAMS MTL_S_PTR_MORE

/* Version 10's RUNS value of an ALLOC's or FREE's run: how many more
 * records, and whether a run of the other type follows. */
static inline void tb_run(struct tb_buf *b, uint64_t more, int other_follows)
{
    tb_var_in(b, MTL_S_RUNS, more << 1 | (unsigned)other_follows);
}

/* The payload: the stream count and lengths, then the streams.  out must
 * have room for all of b and 64 bytes more. */
static inline size_t tb_payload(const struct tb_buf *b, uint8_t *out)
{
    int streams = b->all_streams ? MTL_STREAMS : TB_STREAMS;
    uint8_t *p = mtl__put_varint(out, (unsigned)(streams + b->bad_count + b->empty_more));
    for (int i = 0; i < streams; i++)
        p = mtl__put_varint(p, b->n[i]);
    for (int i = 0; i < b->empty_more; i++)
        p = mtl__put_varint(p, 0);
    for (int i = 0; i < streams; i++) {
        memcpy(p, b->d[i], b->n[i]);
        p += b->n[i];
    }
    return (size_t)(p - out);
}

/* Writes the 16-byte file header; block numbers start again from 0. */
static inline int tb_file_header(struct tb_file *t, uint32_t version, uint32_t flags)
{
    uint8_t h[MTL_FILE_HEADER_SIZE];
    t->seq = 0;
    memcpy(h, MTL_FILE_MAGIC, 8);
    mtl__put_u32le(h + 8, version);
    mtl__put_u32le(h + 12, flags);
    return fwrite(h, 1, sizeof h, t->f) == sizeof h ? 0 : -1;
}

/* Writes b as the next block: header, then one zstd frame with its content
 * checksum.  break_check is XORed into the check word (0: a good block).
 * Returns 0, or -1 when compressing or writing failed. */
static inline int tb_block(struct tb_file *t, const struct tb_buf *b, uint32_t break_check)
{
    static uint8_t raw[MTL_STREAMS * TB_STREAM_CAP + 64];
    static uint8_t c[MTL_STREAMS * TB_STREAM_CAP + 4096];
    size_t u = tb_payload(b, raw);
    ZSTD_CCtx *z = ZSTD_createCCtx();
    if (!z)
        return -1;
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    size_t n = ZSTD_compress2(z, c, sizeof c, raw, u);
    ZSTD_freeCCtx(z);
    if (ZSTD_isError(n))
        return -1;
    uint8_t h[MTL_BLOCK_HEADER_SIZE];
    mtl__put_u32le(h, MTL_BLOCK_MAGIC);
    mtl__put_u32le(h + 4, (uint32_t)n);
    mtl__put_u32le(h + 8, (uint32_t)u);
    mtl__put_u32le(h + 12, mtl__block_check((uint32_t)n, (uint32_t)u, t->seq++) ^ break_check);
    if (fwrite(h, 1, sizeof h, t->f) != sizeof h || fwrite(c, 1, n, t->f) != n)
        return -1;
    return 0;
}

#endif
