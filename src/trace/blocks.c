/*
 * blocks.c: see blocks.h.
 *
 * Blocks go through slots.  Without workers there is one, filled by
 * mtl__blocks_next itself.  With workers there is one more than workers
 * (the one the reader holds): block n goes to slot n % nslots.  A worker
 * claims the next block under the lock (reads its 16-byte header, which says where the
 * one after starts), then reads, decompresses and decodes it unlocked;
 * the reader takes the slots in block order and frees each when it asks
 * for the next.  So the reader sees exactly the blocks, and the errors,
 * it would see reading alone, in the same order.
 */
#include "trace/blocks.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "common/varint.h"
#include "memtally/errors.h"
#include "trace/blocksums.h"

enum { FREE, BUSY, READY };

struct slot {
    struct mtl_block blk;
    int state;
    uint32_t csize, rsize;
    uint8_t *raw;
    size_t raw_cap;
    const uint8_t *sp[MTL_STREAMS], *se[MTL_STREAMS]; /* each stream's bytes */
    uint64_t *vals[MTL_STREAMS];
    size_t vals_cap[MTL_STREAMS];
    struct mtl_sums_buf sums;
    int sums_made;         /* for the block in blk */
};

/* What decoding needs of its own on each thread. */
struct decoder {
    ZSTD_DCtx *dctx;
    uint8_t *cbuf;
    size_t cbuf_cap;
    struct mtl_sums_scratch sums;
};

struct mtl_blocks {
    int fd;
    const uint8_t *mem;
    size_t mem_size;
    _Atomic int want_ptr;
    _Atomic int want_sums;
    enum mtl_mode mode;    /* for the sums' weights */
    uint32_t version;      /* the trace's: how its streams are coded */
    uint64_t rate;

    struct slot *slots;
    unsigned nslots;
    struct slot *cur;      /* handed out, freed at the next call */
    struct slot *final;    /* the end or an error, handed out from then on */
    struct decoder own;

    /* the next block to claim (under mu once workers run) */
    uint64_t pos, number;
    int ended;             /* the end or an error was claimed */

    /* From version 7 a block is compressed with the payload of the one
     * before as its prefix (docs/FORMAT.md, "Block"): blocks decompress
     * one after the other (the rest of decoding still runs in parallel),
     * each leaving its payload here for the next.  Under mu once workers
     * run. */
    uint64_t unpacked;     /* the number of the block whose turn it is */
    uint8_t *prefix;       /* the payload of block unpacked - 1 */
    size_t prefix_len, prefix_cap;
    int prefix_ok;         /* that block decompressed: prefix holds it */
    pthread_cond_t turn;

    unsigned nworkers;
    pthread_t *threads;
    unsigned started;      /* workers running */
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    uint64_t next_out;     /* the number of the block to hand out next */
};

static int from_errno(int e)
{
    return e == ENOMEM ? MTL_ENOMEM : MTL_EIO;
}

ssize_t mtl__read_at(int fd, const uint8_t *mem, size_t mem_size, uint64_t off, void *buf,
                     size_t n)
{
    if (mem) {
        if (off >= mem_size)
            return 0;
        size_t left = mem_size - (size_t)off;
        if (n > left)
            n = left;
        memcpy(buf, mem + off, n);
        return (ssize_t)n;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

static ssize_t read_at(const struct mtl_blocks *b, uint64_t off, void *buf, size_t n)
{
    return mtl__read_at(b->fd, b->mem, b->mem_size, off, buf, n);
}

static void finish(struct slot *s, int status, int partial)
{
    s->blk.status = status;
    s->blk.partial = partial;
}

/* Claims the next block into s: reads and checks its header and moves on
 * past it; or, at the end or on an error, marks the claims ended. */
static void claim(struct mtl_blocks *b, struct slot *s)
{
    uint8_t h[MTL_BLOCK_HEADER_SIZE];
    memset(&s->blk, 0, sizeof s->blk);
    s->sums_made = 0;
    s->blk.number = b->number;
    s->blk.start = b->pos;
    ssize_t n = read_at(b, b->pos, h, sizeof h);
    if (n <= 0 || n < (ssize_t)sizeof h) {
        finish(s, n < 0 ? from_errno(errno) : 0, n > 0);
        b->ended = 1;
        return;
    }
    uint32_t csize = mtl__get_u32le(h + 4), rsize = mtl__get_u32le(h + 8);
    if (mtl__get_u32le(h) != MTL_BLOCK_MAGIC ||
        mtl__get_u32le(h + 12) != mtl__block_check(csize, rsize, b->number) ||
        rsize > MTL_BLOCK_MAX_RAW || csize > ZSTD_compressBound(MTL_BLOCK_MAX_RAW)) {
        finish(s, MTL_ECORRUPT, 0);
        b->ended = 1;
        return;
    }
    s->csize = csize;
    s->rsize = rsize;
    s->blk.end = b->pos + sizeof h + csize;
    s->blk.status = 1;
    b->pos = s->blk.end;
    b->number++;
}

/* Version 4 on: a block's stack ids are differences from the one before. */
static inline int stack_deltas(const struct mtl_blocks *b)
{
    return b->version > MTL_FORMAT_WINDOW_LAST;
}

/* Room for n numbers of stream i in s: 0 or MTL_ENOMEM. */
static int vals_room(struct slot *s, int i, size_t n)
{
    if (n > s->vals_cap[i]) {
        uint64_t *v = realloc(s->vals[i], n * sizeof *v);
        if (!v)
            return MTL_ENOMEM;
        s->vals[i] = v;
        s->vals_cap[i] = n;
    }
    return 0;
}

/* The most records s's block can hold: a byte of MAIN each, but from
 * version 10 an ALLOC or FREE of a run has none there; it has a SIZE or a
 * PTR_FREE number of a byte at least. */
static size_t most_records(const struct mtl_blocks *b, const struct slot *s)
{
    size_t most = (size_t)(s->se[MTL_S_MAIN] - s->sp[MTL_S_MAIN]);
    if (b->version >= MTL_FORMAT_RUNS_FIRST)
        most += (size_t)(s->se[MTL_S_SIZE] - s->sp[MTL_S_SIZE]) +
                (size_t)(s->se[MTL_S_PTR_FREE] - s->sp[MTL_S_PTR_FREE]);
    return most;
}

/* Decodes the TIME stream of version 5 on (docs/FORMAT.md, "Times"): each
 * token t stands for t >> 1 zeros, then a 1 when t is even, else for the
 * number after it (nothing when that is 0).  There cannot be more times
 * than records (most_records): a longer run is damage, and a few bytes
 * cannot ask for gigabytes. */
static int decode_time_runs(const struct mtl_blocks *b, struct slot *s)
{
    const uint8_t *p = s->sp[MTL_S_TIME], *e = s->se[MTL_S_TIME];
    size_t most = most_records(b, s);
    if (vals_room(s, MTL_S_TIME, most ? most : 1) < 0)
        return MTL_ENOMEM;
    uint64_t *o = s->vals[MTL_S_TIME], *end = o + most;
    while (p < e) {
        uint64_t t, last = 1;
        if (mtl__get_varint(&p, e, &t) < 0 || ((t & 1) && mtl__get_varint(&p, e, &last) < 0) ||
            (t >> 1) + (last != 0) > (uint64_t)(end - o)) {
            s->blk.bad[MTL_S_TIME] = 1;
            break;
        }
        memset(o, 0, (size_t)(t >> 1) * sizeof *o);
        o += t >> 1;
        if (last)
            *o++ = last;
    }
    s->blk.val[MTL_S_TIME] = s->vals[MTL_S_TIME];
    s->blk.nval[MTL_S_TIME] = (uint32_t)(o - s->vals[MTL_S_TIME]);
    return 0;
}

/* Decodes stream i of s's payload into numbers (deltas: each the sum of
 * the differences so far, version 4's stacks). */
static int decode_stream(struct slot *s, int i, int deltas)
{
    const uint8_t *p = s->sp[i], *e = s->se[i];
    /* One more: an empty stream is decoded too (val set), once. */
    if (vals_room(s, i, (size_t)(e - p) + 1) < 0)
        return MTL_ENOMEM;
    uint64_t *o = s->vals[i];
    while (p < e) {
        if (*p < 0x80) {
            *o++ = *p++; /* most fields fit in one byte */
            continue;
        }
        if (mtl__get_varint(&p, e, o) < 0) {
            s->blk.bad[i] = 1;
            break;
        }
        o++;
    }
    s->blk.val[i] = s->vals[i];
    s->blk.nval[i] = (uint32_t)(o - s->vals[i]);
    if (deltas) {
        uint64_t sum = 0;
        for (uint64_t *v = s->vals[i]; v < o; v++)
            *v = sum += (uint64_t)mtl__unzigzag(*v);
    }
    return 0;
}

/* Decodes stream i of s as the trace's version codes it. */
static int decode_coded(const struct mtl_blocks *b, struct slot *s, int i)
{
    if (i == MTL_S_TIME && b->version >= MTL_FORMAT_TIME_RUNS_FIRST)
        return decode_time_runs(b, s);
    return decode_stream(s, i, i == MTL_S_STACK && stack_deltas(b));
}

/* Sums s's allocations per stack from the bytes of its SIZE and STACK
 * streams, which are then counted even when not decoded. */
static void make_sums(const struct mtl_blocks *b, struct slot *s, struct decoder *d)
{
    struct mtl_sums_stream size = { .p = s->sp[MTL_S_SIZE], .end = s->se[MTL_S_SIZE] };
    struct mtl_sums_stream stack = { .p = s->sp[MTL_S_STACK], .end = s->se[MTL_S_STACK],
                                     .deltas = (uint8_t)stack_deltas(b) };
    mtl__sums_make(&s->sums, &d->sums, &size, &stack, b->mode, b->rate);
    s->blk.nval[MTL_S_SIZE] = size.n;
    s->blk.bad[MTL_S_SIZE] = size.bad;
    s->blk.nval[MTL_S_STACK] = stack.n;
    s->blk.bad[MTL_S_STACK] = stack.bad;
    s->blk.counted[MTL_S_SIZE] = s->blk.counted[MTL_S_STACK] = 1;
    s->sums_made = 1;
}

/* Room for n bytes in buf (at least one): 0, or -1 out of memory. */
static int bytes_room(uint8_t **buf, size_t *cap, size_t n)
{
    if (n <= *cap && *buf)
        return 0;
    uint8_t *p = realloc(*buf, n ? n : 1);
    if (!p)
        return -1;
    *buf = p;
    *cap = n ? n : 1;
    return 0;
}

/* The compressed frame of the block claimed into s, in c: 1, or 0 when s
 * is finished (cut short, or an error). */
static int read_frame(struct mtl_blocks *b, struct slot *s, struct decoder *d, const uint8_t **c)
{
    if (!d->dctx)
        return finish(s, MTL_ENOMEM, 0), 0;
    uint64_t at = s->blk.start + MTL_BLOCK_HEADER_SIZE;
    if (b->mem) {
        if (at > b->mem_size || s->csize > b->mem_size - at)
            return finish(s, 0, 1), 0;
        *c = b->mem + at;
        return 1;
    }
    if (bytes_room(&d->cbuf, &d->cbuf_cap, s->csize) < 0)
        return finish(s, MTL_ENOMEM, 0), 0;
    ssize_t n = read_at(b, at, d->cbuf, s->csize);
    if (n < 0)
        return finish(s, from_errno(errno), 0), 0;
    if ((size_t)n < s->csize)
        return finish(s, 0, 1), 0;
    *c = d->cbuf;
    return 1;
}

/* Decompresses frame c into s's payload, with the prefix of the block
 * before when the version has one; keeps the payload as the next one's.
 * 1, or 0 when s is finished with an error. */
static int unpack(struct mtl_blocks *b, struct slot *s, struct decoder *d, const uint8_t *c)
{
    if (bytes_room(&s->raw, &s->raw_cap, s->rsize) < 0)
        return finish(s, MTL_ENOMEM, 0), 0;
    int chained = b->version >= MTL_FORMAT_PREFIX_FIRST;
    if (chained && s->blk.number > 0) {
        if (!b->prefix_ok) /* the block before could not be read: nor can this one */
            return finish(s, MTL_ECORRUPT, 0), 0;
        ZSTD_DCtx_refPrefix(d->dctx, b->prefix, b->prefix_len);
    }
    b->prefix_ok = 0;
    size_t got = ZSTD_decompressDCtx(d->dctx, s->raw, s->rsize, c, s->csize);
    if (ZSTD_isError(got) || got != s->rsize)
        return finish(s, MTL_ECORRUPT, 0), 0;
    if (chained) {
        if (bytes_room(&b->prefix, &b->prefix_cap, s->rsize) < 0)
            return finish(s, MTL_ENOMEM, 0), 0;
        memcpy(b->prefix, s->raw, s->rsize);
        b->prefix_len = s->rsize;
        b->prefix_ok = 1;
    }
    return 1;
}

/* Reads and decompresses the block claimed into s, in its turn: after the
 * block before it, whose payload may be its prefix.  Workers read frames
 * in parallel and wait here for their turn to decompress; one that cannot
 * read its block still passes the turn on (the blocks after it then fail,
 * and the reader stops at it anyway).  Read alone, a block cut short
 * keeps the turn and the prefix, to be read again once whole
 * (mtl__blocks_rewind).  1, or 0 when s is finished. */
static int read_in_turn(struct mtl_blocks *b, struct slot *s, struct decoder *d)
{
    const uint8_t *c = NULL;
    int ok = read_frame(b, s, d, &c);
    if (!b->nworkers) { /* read alone (workers that could not start too) */
        if (b->unpacked != s->blk.number)
            b->prefix_ok = 0; /* read from elsewhere: no prefix is known */
        if (!ok)
            return 0;
        b->unpacked = s->blk.number + 1;
        return unpack(b, s, d, c);
    }
    pthread_mutex_lock(&b->mu);
    while (b->unpacked != s->blk.number && !b->stop)
        pthread_cond_wait(&b->turn, &b->mu);
    int turn = b->unpacked == s->blk.number;
    pthread_mutex_unlock(&b->mu);
    if (!turn)
        return finish(s, MTL_ECORRUPT, 0), 0; /* closing */
    if (ok)
        ok = unpack(b, s, d, c);
    else
        b->prefix_ok = 0;
    pthread_mutex_lock(&b->mu);
    b->unpacked = s->blk.number + 1;
    pthread_cond_broadcast(&b->turn);
    pthread_mutex_unlock(&b->mu);
    return ok;
}

/* Reads, decompresses and decodes the block claimed into s. */
static void decode(struct mtl_blocks *b, struct slot *s, struct decoder *d)
{
    if (!read_in_turn(b, s, d))
        return;
    /* The stream table: their number, their lengths, then the streams. */
    const uint8_t *p = s->raw, *end = s->raw + s->rsize;
    /* A version's streams; those it does not have are empty. */
    uint64_t nstreams, len[MTL_STREAMS] = { 0 };
    unsigned have = mtl__streams_of(b->version);
    if (mtl__get_varint(&p, end, &nstreams) < 0 || nstreams != have)
        return finish(s, MTL_ECORRUPT, 0);
    for (unsigned i = 0; i < have; i++)
        if (mtl__get_varint(&p, end, &len[i]) < 0)
            return finish(s, MTL_ECORRUPT, 0);
    for (int i = 0; i < MTL_STREAMS; i++) {
        if (len[i] > (uint64_t)(end - p))
            return finish(s, MTL_ECORRUPT, 0);
        s->sp[i] = s->blk.bytes[i] = p;
        s->se[i] = s->blk.bytes_end[i] = p += len[i];
    }
    if (p != end)
        return finish(s, MTL_ECORRUPT, 0);
    s->blk.main = s->sp[MTL_S_MAIN];
    s->blk.main_end = s->se[MTL_S_MAIN];
    int sums = b->want_sums;
    for (int i = 1; i < MTL_STREAMS; i++) {
        if ((mtl__is_ptr_stream(i) && !b->want_ptr) ||
            (sums && (i == MTL_S_SIZE || i == MTL_S_STACK)))
            continue;
        if (decode_coded(b, s, i) < 0)
            return finish(s, MTL_ENOMEM, 0);
    }
    if (sums)
        make_sums(b, s, d);
}

static void *worker(void *arg)
{
    struct mtl_blocks *b = arg;
    struct decoder d = { ZSTD_createDCtx(), NULL, 0, MTL_SUMS_SCRATCH_INIT };
    pthread_mutex_lock(&b->mu);
    for (;;) {
        struct slot *s = &b->slots[b->number % b->nslots];
        if (b->stop)
            break;
        if (b->ended || s->state != FREE) {
            pthread_cond_wait(&b->work, &b->mu);
            continue;
        }
        claim(b, s);
        s->state = BUSY;
        pthread_mutex_unlock(&b->mu);
        if (s->blk.status == 1)
            decode(b, s, &d); /* in turn, even without a dctx */
        pthread_mutex_lock(&b->mu);
        s->state = READY;
        pthread_cond_broadcast(&b->done);
    }
    pthread_mutex_unlock(&b->mu);
    ZSTD_freeDCtx(d.dctx);
    free(d.cbuf);
    mtl__sums_scratch_release(&d.sums);
    return NULL;
}

int mtl__blocks_open(struct mtl_blocks **out, int fd, const uint8_t *mem, size_t mem_size,
                     uint64_t pos, uint64_t number)
{
    struct mtl_blocks *b = calloc(1, sizeof *b);
    if (!b)
        return MTL_ENOMEM;
    b->fd = fd;
    b->mem = mem;
    b->mem_size = mem_size;
    b->want_ptr = 1;
    b->pos = pos;
    b->number = b->next_out = b->unpacked = number;
    b->nslots = 1;
    b->slots = calloc(1, sizeof *b->slots);
    b->own.dctx = ZSTD_createDCtx();
    b->own.sums = (struct mtl_sums_scratch)MTL_SUMS_SCRATCH_INIT;
    if (!b->slots || !b->own.dctx) {
        mtl__blocks_close(b);
        return MTL_ENOMEM;
    }
    *out = b;
    return 0;
}

/* The slots' buffers. */
static void free_slots(struct mtl_blocks *b)
{
    for (unsigned i = 0; b->slots && i < b->nslots; i++) {
        free(b->slots[i].raw);
        for (int k = 0; k < MTL_STREAMS; k++)
            free(b->slots[i].vals[k]);
        mtl__sums_release(&b->slots[i].sums);
    }
    free(b->slots);
}

void mtl__blocks_workers(struct mtl_blocks *b, unsigned n)
{
    if (b->started || b->final)
        return;
    if (n > 16)
        n = 16;
    struct slot *s = n ? calloc(n + 1, sizeof *s) : NULL;
    if (!s)
        return; /* no workers then: the same blocks, read on one thread */
    free_slots(b); /* the block handed out last is done with */
    b->cur = NULL;
    b->next_out = b->number;
    b->slots = s;
    b->nslots = n + 1;
    b->nworkers = n;
}

void mtl__blocks_want_pointers(struct mtl_blocks *b, int want)
{
    b->want_ptr = want;
}

void mtl__blocks_version(struct mtl_blocks *b, uint32_t version)
{
    b->version = version;
}

void mtl__blocks_want_sums(struct mtl_blocks *b, enum mtl_mode mode, uint64_t rate)
{
    b->mode = mode;
    b->rate = rate;
    b->want_sums = 1;
}

/* Starts the workers; any that cannot start leave the work to the rest,
 * and with none the caller decodes after all. */
static void start(struct mtl_blocks *b)
{
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        goto alone;
    if (pthread_cond_init(&b->work, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        goto alone;
    }
    if (pthread_cond_init(&b->done, NULL) != 0) {
        pthread_cond_destroy(&b->work);
        pthread_mutex_destroy(&b->mu);
        goto alone;
    }
    if (pthread_cond_init(&b->turn, NULL) != 0) {
        pthread_cond_destroy(&b->done);
        pthread_cond_destroy(&b->work);
        pthread_mutex_destroy(&b->mu);
        goto alone;
    }
    if (!(b->threads = calloc(b->nworkers, sizeof *b->threads)))
        goto none;
    for (unsigned i = 0; i < b->nworkers; i++) {
        if (pthread_create(&b->threads[i], NULL, worker, b) != 0)
            break;
        b->started++;
    }
    if (b->started)
        return;
none:
    pthread_cond_destroy(&b->turn);
    pthread_cond_destroy(&b->done);
    pthread_cond_destroy(&b->work);
    pthread_mutex_destroy(&b->mu);
alone:
    b->nworkers = 0;
}

int mtl__blocks_next(struct mtl_blocks *b, const struct mtl_block **out)
{
    if (b->final) {
        *out = &b->final->blk;
        return b->final->blk.status;
    }
    if (b->nworkers && !b->started)
        start(b);
    struct slot *s;
    if (!b->started) {
        s = &b->slots[0];
        claim(b, s);
        if (s->blk.status == 1)
            decode(b, s, &b->own);
    } else {
        pthread_mutex_lock(&b->mu);
        if (b->cur) {
            b->cur->state = FREE;
            pthread_cond_broadcast(&b->work);
        }
        s = &b->slots[b->next_out % b->nslots];
        while (!(s->state == READY && s->blk.number == b->next_out))
            pthread_cond_wait(&b->done, &b->mu);
        b->next_out++;
        pthread_mutex_unlock(&b->mu);
    }
    b->cur = s;
    if (s->blk.status != 1)
        b->final = s;
    *out = &s->blk;
    return s->blk.status;
}

void mtl__blocks_rewind(struct mtl_blocks *b, uint64_t pos, uint64_t number)
{
    if (b->started)
        return;
    b->final = b->cur = NULL;
    b->pos = pos;
    b->number = b->next_out = number;
    b->ended = 0;
}

int mtl__block_stream(struct mtl_blocks *b, enum mtl__stream s)
{
    if (!b->cur || b->cur->blk.status != 1 || b->cur->blk.val[s] || s == MTL_S_MAIN)
        return 0;
    return decode_coded(b, b->cur, s);
}

const struct mtl_block_sums *mtl__block_sums(struct mtl_blocks *b)
{
    struct slot *s = b->cur;
    if (!s || s->blk.status != 1)
        return NULL;
    if (!s->sums_made)
        make_sums(b, s, &b->own);
    return &s->sums.out;
}

void mtl__blocks_close(struct mtl_blocks *b)
{
    if (!b)
        return;
    if (b->started) {
        pthread_mutex_lock(&b->mu);
        b->stop = 1;
        pthread_cond_broadcast(&b->work);
        pthread_cond_broadcast(&b->turn);
        pthread_mutex_unlock(&b->mu);
        for (unsigned i = 0; i < b->started; i++)
            pthread_join(b->threads[i], NULL);
        pthread_cond_destroy(&b->turn);
        pthread_cond_destroy(&b->done);
        pthread_cond_destroy(&b->work);
        pthread_mutex_destroy(&b->mu);
    }
    free(b->threads);
    free_slots(b);
    free(b->prefix);
    ZSTD_freeDCtx(b->own.dctx);
    free(b->own.cbuf);
    mtl__sums_scratch_release(&b->own.sums);
    free(b);
}
