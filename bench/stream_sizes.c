/* stream_sizes: what a trace's size is made of, stream by stream
 * (docs/PERFORMANCE.md, trace size).  Two figures a stream:
 *   ALONE     the stream compressed on its own per block;
 *   IN TRACE  what it adds to the trace: the blocks compressed as the
 *             writer does at its base level (the streams together, each
 *             block with the one before as its prefix, long-distance
 *             matching), less the same without this stream.
 * The two differ much: zstd finds in the whole payload what repeats in
 * a stream alone, and long repeats across streams and blocks.  A coding
 * change shrinks the trace by about its IN TRACE figure, not ALONE's.
 * Then what the times would take coded by a context model instead
 * (times_model below): how far their coding is from one that predicts
 * better than zstd can; and what the trace would be with each size coded
 * against its stack's last sizes (sizes_by_stack below), or each stack
 * by its rank in its block (stacks_by_rank below), codings tried and not
 * kept.
 *   stream_sizes TRACE */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "common/varint.h"
#include "trace/blocks.h"
#include "trace/encoder.h"
#include "trace/format.h"

static const char *const names[MTL_STREAMS] = { "records (main)", "times", "sizes", "stacks",
                                                "addresses", "addresses' 2nd", "frees' addresses",
                                                "runs" };

/* One way of writing the trace's blocks: all streams, or all but one. */
struct chain {
    ZSTD_CCtx *zc;
    uint8_t *payload, *prefix;
    size_t prefix_len;
    unsigned long long bytes;
};

static int chain_init(struct chain *c)
{
    c->zc = ZSTD_createCCtx();
    c->payload = malloc(MTL_BLOCK_MAX_RAW + 64);
    c->prefix = malloc(MTL_BLOCK_MAX_RAW + 64);
    if (!c->zc || !c->payload || !c->prefix)
        return -1;
    ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, MTL_ENC_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(c->zc, ZSTD_c_windowLog, MTL_ENC_ZSTD_WINDOW_LOG);
    ZSTD_CCtx_setParameter(c->zc, ZSTD_c_enableLongDistanceMatching, 1);
    return 0;
}

/* Block k's payload as the writer lays it out (docs/FORMAT.md,
 * "Streams"), stream `without` left empty (-1: none), compressed after
 * the chain's last block. */
static int chain_add(struct chain *c, const struct mtl_block *k, unsigned nstreams, int without,
                     uint8_t *out, size_t out_cap)
{
    uint8_t *p = mtl__put_varint(c->payload, nstreams);
    for (unsigned s = 0; s < nstreams; s++)
        p = mtl__put_varint(p, (int)s == without ? 0 : (uint64_t)(k->bytes_end[s] - k->bytes[s]));
    for (unsigned s = 0; s < nstreams; s++) {
        if ((int)s == without)
            continue;
        memcpy(p, k->bytes[s], (size_t)(k->bytes_end[s] - k->bytes[s]));
        p += k->bytes_end[s] - k->bytes[s];
    }
    size_t raw = (size_t)(p - c->payload);
    if (c->prefix_len)
        ZSTD_CCtx_refPrefix(c->zc, c->prefix, c->prefix_len);
    size_t n = ZSTD_compress2(c->zc, out, out_cap, c->payload, raw);
    if (ZSTD_isError(n))
        return -1;
    c->bytes += n;
    uint8_t *t = c->prefix;
    c->prefix = c->payload;
    c->payload = t;
    c->prefix_len = raw;
    return 0;
}

/* The code length, in bits, of the records' times (each dt in us) under
 * an adaptive model, as an arithmetic coder would reach it: whether a
 * record moves to a later microsecond, from the same of the 16 records
 * before (Krichevsky-Trofimov counts per context), then by how much,
 * from the counts of the values so far (an escape and the value's
 * Elias-gamma code for those above 64).  Not a lower bound, but what a
 * coder that learns the program's rhythm would take. */
struct times_model {
    uint32_t ctx;
    uint32_t (*moved)[2];   /* per context: records that stayed, moved */
    uint64_t value[66];     /* dt 1..64, 65: above */
    uint64_t values;
    double bits;
};

static void times_model_add(struct times_model *m, uint64_t dt)
{
    uint32_t *c = m->moved[m->ctx & 0xffff];
    int moved = dt > 0;
    m->bits -= log2((c[moved] + 0.5) / (c[0] + c[1] + 1.0));
    c[moved]++;
    m->ctx = m->ctx << 1 | (uint32_t)moved;
    if (!moved)
        return;
    unsigned v = dt > 64 ? 65 : (unsigned)dt;
    m->bits -= log2((m->value[v] + 1.0) / (m->values + 65.0));
    m->value[v]++;
    m->values++;
    if (v == 65)
        m->bits += 2 * floor(log2((double)dt)) + 1;
}

/* Sizes by stack: most call sites ask for a few sizes, so each size as
 * its place in its stack's list of the last SBS_KEEP sizes (move to
 * front), or SBS_KEEP + the size when not there; the lists start empty
 * each block (blocks are summed alone) and are found by stack in a table
 * of 2^SBS_BITS, a collision starting the list again.  The recoded SIZE
 * stream goes into a chain of its own, the other streams as they are. */
#define SBS_KEEP 4
#define SBS_BITS 16
struct sizes_by_stack {
    uint32_t stack[1u << SBS_BITS];
    uint8_t n[1u << SBS_BITS];
    uint64_t size[1u << SBS_BITS][SBS_KEEP];
    uint8_t *out;
    size_t cap;
};

/* Block k's SIZE stream recoded into s->out; its length, or -1. */
static long sizes_by_stack(struct sizes_by_stack *s, const struct mtl_block *k)
{
    memset(s->n, 0, sizeof s->n);
    uint32_t n = k->nval[MTL_S_SIZE];
    if (!s->out || s->cap < (size_t)n * MTL_VARINT_MAX) {
        free(s->out);
        s->cap = (size_t)n * MTL_VARINT_MAX + 1;
        if (!(s->out = malloc(s->cap)))
            return -1;
    }
    uint8_t *p = s->out;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t stack = (uint32_t)k->val[MTL_S_STACK][i]; /* decoded: the id */
        uint64_t size = k->val[MTL_S_SIZE][i];
        uint32_t h = (stack * 0x9e3779b1u) >> (32 - SBS_BITS);
        if (!s->n[h] || s->stack[h] != stack) {
            p = mtl__put_varint(p, size);
            s->stack[h] = stack;
            s->n[h] = 1;
            s->size[h][0] = size;
            continue;
        }
        unsigned j = 0;
        while (j < s->n[h] && s->size[h][j] != size)
            j++;
        if (j < s->n[h]) {
            p = mtl__put_varint(p, j);
        } else {
            p = mtl__put_varint(p, size + SBS_KEEP);
            if (s->n[h] < SBS_KEEP)
                s->n[h]++;
            j = s->n[h] - 1u;
        }
        for (; j > 0; j--)
            s->size[h][j] = s->size[h][j - 1];
        s->size[h][0] = size;
    }
    return (long)(p - s->out);
}

/* Stacks by rank: a block's STACK stream as its distinct stacks, most
 * used first (their count, then each id as a difference from the one
 * before), then each allocation's stack as its place in that list.  Stack
 * ids are trie nodes, far more than a block's stacks (the storm: 3,514
 * stacks among 26,986 nodes), and a random choice among them costs its
 * difference from the last.  st->count and st->rank are indexed by id. */
struct stacks_by_rank {
    uint32_t *count, *rank, *list, cap;
    uint8_t *out;
    size_t out_cap;
};

static const uint32_t *sbr_count; /* for by_count */

static int by_count(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (sbr_count[x] != sbr_count[y])
        return sbr_count[x] < sbr_count[y] ? 1 : -1;
    return (x > y) - (x < y);
}

/* Block k's STACK stream recoded into st->out; its length, or -1. */
static long stacks_by_rank(struct stacks_by_rank *st, const struct mtl_block *k)
{
    uint32_t n = k->nval[MTL_S_STACK], d = 0;
    const uint64_t *id = k->val[MTL_S_STACK];
    uint32_t top = 0;
    for (uint32_t i = 0; i < n; i++)
        if (id[i] >= top)
            top = (uint32_t)id[i] + 1;
    if (top > st->cap) {
        free(st->count), free(st->rank), free(st->list);
        st->cap = top * 2;
        st->count = calloc(st->cap, sizeof *st->count);
        st->rank = malloc(st->cap * sizeof *st->rank);
        st->list = malloc(st->cap * sizeof *st->list);
        if (!st->count || !st->rank || !st->list)
            return -1;
    }
    if (st->out_cap < ((size_t)n + top) * MTL_VARINT_MAX + 16) {
        free(st->out);
        st->out_cap = ((size_t)n + top) * MTL_VARINT_MAX + 16;
        if (!(st->out = malloc(st->out_cap)))
            return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!st->count[id[i]]++)
            st->list[d++] = (uint32_t)id[i];
    sbr_count = st->count;
    qsort(st->list, d, sizeof *st->list, by_count);
    uint8_t *p = mtl__put_varint(st->out, d);
    int64_t last = 0;
    for (uint32_t r = 0; r < d; r++) {
        st->rank[st->list[r]] = r;
        p = mtl__put_varint(p, mtl__zigzag((int64_t)st->list[r] - last));
        last = st->list[r];
    }
    for (uint32_t i = 0; i < n; i++)
        p = mtl__put_varint(p, st->rank[id[i]]);
    for (uint32_t r = 0; r < d; r++)
        st->count[st->list[r]] = 0;
    return (long)(p - st->out);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stream_sizes TRACE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct mtl_blocks *b;
    uint8_t head[MTL_FILE_HEADER_SIZE];
    if (fd < 0 || pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        mtl__blocks_open(&b, fd, NULL, 0, MTL_FILE_HEADER_SIZE, 0) < 0) {
        fprintf(stderr, "stream_sizes: cannot read %s\n", argv[1]);
        return 1;
    }
    uint32_t version = mtl__get_u32le(head + 8);
    unsigned nstreams = mtl__streams_of(version);
    mtl__blocks_version(b, version); /* its streams */
    uint64_t raw[MTL_STREAMS] = { 0 }, packed[MTL_STREAMS] = { 0 }, blocks = 0;
    size_t cap = ZSTD_compressBound(MTL_BLOCK_MAX_RAW + 64);
    uint8_t *out = malloc(cap);
    /* chains[0] has every stream, chains[1 + s] all but s */
    struct chain chains[MTL_STREAMS + 1] = { 0 };
    for (unsigned i = 0; i <= nstreams; i++)
        if (chain_init(&chains[i]) < 0 || !out) {
            fprintf(stderr, "stream_sizes: out of memory\n");
            return 1;
        }
    struct times_model tm = { .moved = calloc(1u << 16, sizeof *tm.moved) };
    struct sizes_by_stack *sbs = calloc(1, sizeof *sbs);
    struct chain sbs_chain = { 0 }, sbr_chain = { 0 };
    struct stacks_by_rank sbr = { 0 };
    if (!tm.moved || !sbs || chain_init(&sbs_chain) < 0 || chain_init(&sbr_chain) < 0)
        return 1;
    uint64_t records = 0;
    const struct mtl_block *k;
    int rc;
    while ((rc = mtl__blocks_next(b, &k)) > 0) {
        blocks++;
        for (uint32_t i = 0; i < k->nval[MTL_S_TIME]; i++)
            times_model_add(&tm, k->val[MTL_S_TIME][i]);
        records += k->nval[MTL_S_TIME];
        for (unsigned s = 0; s < nstreams; s++) {
            size_t n = (size_t)(k->bytes_end[s] - k->bytes[s]);
            raw[s] += n;
            if (n)
                packed[s] += ZSTD_compress(out, cap, k->bytes[s], n, MTL_ENC_ZSTD_LEVEL);
        }
        struct mtl_block recoded = *k;
        long len = sizes_by_stack(sbs, k);
        recoded.bytes[MTL_S_SIZE] = sbs->out;
        recoded.bytes_end[MTL_S_SIZE] = sbs->out + (len > 0 ? len : 0);
        if (len < 0 || chain_add(&sbs_chain, &recoded, nstreams, -1, out, cap) < 0) {
            fprintf(stderr, "stream_sizes: out of memory or zstd failed\n");
            return 1;
        }
        recoded = *k;
        len = stacks_by_rank(&sbr, k);
        recoded.bytes[MTL_S_STACK] = sbr.out;
        recoded.bytes_end[MTL_S_STACK] = sbr.out + (len > 0 ? len : 0);
        if (len < 0 || chain_add(&sbr_chain, &recoded, nstreams, -1, out, cap) < 0) {
            fprintf(stderr, "stream_sizes: out of memory or zstd failed\n");
            return 1;
        }
        for (unsigned i = 0; i <= nstreams; i++)
            if (chain_add(&chains[i], k, nstreams, (int)i - 1, out, cap) < 0) {
                fprintf(stderr, "stream_sizes: zstd failed\n");
                return 1;
            }
    }
    if (rc < 0) {
        fprintf(stderr, "stream_sizes: %s is damaged after %llu blocks\n", argv[1],
                (unsigned long long)blocks);
        return 1;
    }
    unsigned long long whole = chains[0].bytes, alone = 0;
    for (unsigned s = 0; s < nstreams; s++)
        alone += packed[s];
    printf("%-16s %12s %12s %12s %7s\n", "STREAM", "RAW", "ALONE", "IN TRACE", "SHARE");
    for (unsigned s = 0; s < nstreams; s++) {
        long long in = (long long)whole - (long long)chains[1 + s].bytes;
        printf("%-16s %12llu %12llu %12lld %6.1f%%\n", names[s], (unsigned long long)raw[s],
               (unsigned long long)packed[s], in, whole ? 100.0 * (double)in / (double)whole : 0);
    }
    printf("%-16s %12s %12llu %12llu   (%llu blocks; IN TRACE: the blocks at zstd level %d)\n",
           "total", "", alone, whole, (unsigned long long)blocks, MTL_ENC_ZSTD_LEVEL);
    printf("times: %llu records with a time, %llu of them a microsecond or more after the one "
           "before; coded by a context model of the 16 records before: %.0f bytes\n",
           (unsigned long long)records, (unsigned long long)tm.values, tm.bits / 8);
    printf("sizes coded by their stack's last %d sizes (tried, not kept): %llu bytes, %.3f of "
           "the trace\n",
           SBS_KEEP, sbs_chain.bytes, whole ? (double)sbs_chain.bytes / (double)whole : 0);
    printf("stacks coded by their rank in their block (tried, not kept): %llu bytes, %.3f of "
           "the trace\n",
           sbr_chain.bytes, whole ? (double)sbr_chain.bytes / (double)whole : 0);
    mtl__blocks_close(b);
    return 0;
}
