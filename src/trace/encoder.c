/* encoder.c: see encoder.h. */
#include "trace/encoder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "common/tracefile.h"
#include "common/varint.h"
#include "trace/ptrcode.h"

/* A block is written at the end of a round once it holds its target of
 * streams (or has waited long enough), and mid-round past its limit.  A
 * trace's first LARGE_AFTER bytes go in blocks of 1 MiB, so that a short
 * trace still comes in blocks enough for a reader to decode them in
 * parallel (cc1's, 4.7 MB, in 6); then blocks of 2 MiB, in which zstd
 * finds what repeats further apart (a program's rounds, a tree built
 * again): binary trees' trace a third smaller, python3's a tenth
 * (docs/PERFORMANCE.md, "Trace size").  Not larger: a reader holds each
 * block it decodes ahead whole, and at 4 MiB cold `report` of binary
 * trees took more memory than heaptrack_print. */
#define SMALL_TARGET (1u << 20)
#define SMALL_LIMIT (2u << 20)
#define LARGE_TARGET (2u << 20)
#define LARGE_LIMIT (3u << 20)
#define LARGE_AFTER (8u << 20)
/* A stream's room: a block is written when one stream fills it. */
#define STREAM_CAP ((2u << 20) + (64u << 10))
/* The largest block: events up to the limit, then the definitions of a
 * round, which may fill the MAIN stream's room.  Readers take 8 MiB. */
_Static_assert(LARGE_LIMIT + STREAM_CAP + 4096 <= MTL_BLOCK_MAX_RAW, "a block a reader takes");
#define RAW_CAP (MTL_STREAMS * STREAM_CAP + 64)
_Static_assert((1u << MTL_ENC_ZSTD_WINDOW_LOG) >= MTL_BLOCK_MAX_RAW, "the window covers a block");

static inline int large_blocks(const struct mtl_encoder *e)
{
    return e->raw_written >= LARGE_AFTER;
}
#define MAX_RUNS (MTL_CHUNK_BUDGET + 16)
/* What the values API holds back: the nodes' bytes, and the events. */
#define HELD_NODES_CAP (256u << 10)
#define HELD_EVENTS 8192
#define BUSY_SPINS MTL_ENC_BUSY_SPINS

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t mtl_encoder_now(const struct mtl_encoder *e)
{
    uint64_t now = monotonic_ns(), start = atomic_load(&e->r->start_ns);
    return now > start ? now - start : 0;
}

static void *pages(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* "/proc/self/..." or "/proc/PID/..." into buf (snprintf of %d and %s
 * stays off malloc, as the recorder's own messages rely on). */
static void proc_path(const struct mtl_encoder *e, char *buf, size_t cap, const char *rest)
{
    if (e->pid > 0)
        snprintf(buf, cap, "/proc/%d%s", (int)e->pid, rest);
    else
        snprintf(buf, cap, "/proc/self%s", rest);
}

/* --- blocks ------------------------------------------------------------ */

/* The spins of a lock taken here: 0 (wait) for our own process's writer,
 * bounded where the program may die holding the lock. */
static unsigned lock_spins(const struct mtl_encoder *e)
{
    return e->skip_when_busy ? BUSY_SPINS : 0;
}

/* A chunk written out goes back to the pool: 0, or -1 when its lock was
 * not had (the chunk stays in the runs for the next round).  Not into a
 * dead program's pool: nobody takes chunks from it any more. */
static int give_back(struct mtl_encoder *e, uint32_t id)
{
    if (e->owner_dead)
        return 0;
    return mtl_pool_release(e->r, id, lock_spins(e));
}

static void fail(struct mtl_encoder *e, int err)
{
    e->failed = 1;
    if (!e->err)
        e->err = err;
}

/* The TIME stream codes each nonzero difference with the run of zeros
 * before it (docs/FORMAT.md, "Times"): t = zeros << 1 for a 1, else
 * zeros << 1 | 1 and the difference (0: the block ends in zeros).  Most
 * records come within the microsecond of the one before: a run and a 1
 * take one byte. */
static inline void put_time_run(struct mtl_encoder *e, uint64_t dt)
{
    uint8_t *p = e->stream[MTL_S_TIME] + e->used[MTL_S_TIME], *q = p;
    q = mtl__put_varint(q, e->time_zeros << 1 | (dt != 1));
    if (dt != 1)
        q = mtl__put_varint(q, dt);
    e->used[MTL_S_TIME] += (size_t)(q - p);
    e->total += (size_t)(q - p);
    e->time_zeros = 0;
}

/* zstd's level for the block written now (encoder.h): from the writer's
 * share of the time since the last block, counting this round so far. */
static int block_level(const struct mtl_encoder *e)
{
    if (e->hard_to_pack)
        return MTL_ENC_ZSTD_LEVEL_HARD;
    if (e->closing || !e->r)
        return MTL_ENC_ZSTD_LEVEL;
    uint64_t now = mtl_encoder_now(e);
    if (now <= e->busy_since_ns || now < e->round_started_ns)
        return MTL_ENC_ZSTD_LEVEL;
    uint64_t busy = e->busy_ns + (now - e->round_started_ns), span = now - e->busy_since_ns;
    return 2 * busy < span ? MTL_ENC_ZSTD_LEVEL_IDLE
           : 4 * busy < 3 * span ? MTL_ENC_ZSTD_LEVEL_SPARE
                                 : MTL_ENC_ZSTD_LEVEL;
}

static void set_level(struct mtl_encoder *e, int level)
{
    if (level == e->level)
        return;
    /* The base level keeps zstd's own tables, as ever; the harder ones
     * take small ones (encoder.h).  0 is zstd's "by the level". */
    int table_log = level == MTL_ENC_ZSTD_LEVEL ? 0 : MTL_ENC_ZSTD_TABLE_LOG;
    ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(e->zc, ZSTD_c_hashLog, table_log);
    ZSTD_CCtx_setParameter(e->zc, ZSTD_c_chainLog, table_log);
    e->level = level;
}

/* The open run's value into RUNS (docs/FORMAT.md, "Runs"): how many
 * more records of its type, and whether a run of the other type follows
 * at once. */
static inline void put_run_value(struct mtl_encoder *e, int other_follows)
{
    uint8_t *p = e->stream[MTL_S_RUNS] + e->used[MTL_S_RUNS];
    size_t n = (size_t)(mtl__put_varint(p, e->run_more << 1 | (unsigned)other_follows) - p);
    e->used[MTL_S_RUNS] += n;
    e->total += n;
}

static inline void end_run(struct mtl_encoder *e)
{
    if (!e->run_type)
        return;
    put_run_value(e, 0);
    e->run_type = 0;
}

/* The block being filled, to the sink. */
static void flush_block(struct mtl_encoder *e)
{
    if (e->total == 0 || e->failed)
        return;
    if (e->time_zeros)
        put_time_run(e, 0);
    end_run(e); /* a run ends with its block */
    /* The payload: the stream lengths, then the streams. */
    uint8_t *p = mtl__put_varint(e->raw, MTL_STREAMS);
    for (int i = 0; i < MTL_STREAMS; i++)
        p = mtl__put_varint(p, e->used[i]);
    for (int i = 0; i < MTL_STREAMS; i++) {
        memcpy(p, e->stream[i], e->used[i]);
        p += e->used[i];
        e->used[i] = 0;
    }
    e->last_stack = 0; /* a block's stacks are differences from 0 on */
    size_t raw = (size_t)(p - e->raw);
    e->total = 0;
    set_level(e, block_level(e));
    /* The block before as a prefix, unless it hardly shrank: random data
     * (the storm's) has nothing to repeat, and hashing the prefix would
     * halve zstd's speed for it.  A frame need not refer to its prefix.
     * Nor long distance matching, for the same reason: on storm2 zstd's
     * share of the samples 3.3% instead of 3.9%, the trace 1.0002 of
     * what it was (docs/PERFORMANCE.md, "Trace size"). */
    if (e->prefix_len && !e->hard_to_pack)
        ZSTD_CCtx_refPrefix(e->zc, e->prefix, e->prefix_len);
    ZSTD_CCtx_setParameter(e->zc, ZSTD_c_enableLongDistanceMatching, !e->hard_to_pack);
    size_t c = ZSTD_compress2(e->zc, e->out + MTL_BLOCK_HEADER_SIZE,
                              e->out_cap - MTL_BLOCK_HEADER_SIZE, e->raw, raw);
    if (ZSTD_isError(c)) {
        fail(e, ENOMEM);
        return;
    }
    /* This block is the next one's prefix: the buffers change places. */
    uint8_t *t = e->prefix;
    e->prefix = e->raw;
    e->raw = t;
    e->prefix_len = raw;
    /* The next block's level starts from here.  A block that hardly
     * shrank (random sizes and addresses, as in an allocation storm)
     * gains under 2% at harder levels: the next one takes level 1
     * (encoder.h). */
    e->hard_to_pack = raw > 4096 && 2 * c > raw;
    e->raw_written += raw;
    if (e->r) {
        e->busy_ns = 0;
        e->busy_since_ns = e->round_started_ns = mtl_encoder_now(e);
    }
    mtl__put_u32le(e->out, MTL_BLOCK_MAGIC);
    mtl__put_u32le(e->out + 4, (uint32_t)c);
    mtl__put_u32le(e->out + 8, (uint32_t)raw);
    mtl__put_u32le(e->out + 12, mtl__block_check((uint32_t)c, (uint32_t)raw, e->block_seq));
    int rc = e->sink(e->sink_ctx, e->out, MTL_BLOCK_HEADER_SIZE + c);
    e->block_seq++;
    if (rc < 0)
        fail(e, -rc);
}

/* Makes room for n more bytes in every stream, flushing the block if need
 * be, or once it holds its limit of bytes: a bound on what a reader that
 * decodes a few blocks ahead holds, whichever stream is largest. */
static inline void reserve(struct mtl_encoder *e, size_t n)
{
    if (e->total >= (large_blocks(e) ? LARGE_LIMIT : SMALL_LIMIT)) {
        flush_block(e);
        return;
    }
    /* (And for the run of zero times a flush may end with.) */
    for (int i = 0; i < MTL_STREAMS; i++)
        if (e->used[i] + n + 2 * MTL_VARINT_MAX > STREAM_CAP) {
            flush_block(e);
            return;
        }
}

static inline void put_byte(struct mtl_encoder *e, int stream, uint8_t b)
{
    e->stream[stream][e->used[stream]++] = b;
    e->total++;
}

static inline void put_var(struct mtl_encoder *e, int stream, uint64_t v)
{
    uint8_t *p = e->stream[stream] + e->used[stream];
    size_t n = (size_t)(mtl__put_varint(p, v) - p);
    e->used[stream] += n;
    e->total += n;
}

/* The type byte of an ALLOC or a FREE.  When nothing came into MAIN
 * since the open run began (a record written there is read between), it
 * is one more of the run, or the first of a run of the other type, which
 * needs no byte; else a run of its own. */
static inline void put_run_type(struct mtl_encoder *e, uint8_t type)
{
    if (e->run_type && e->used[MTL_S_MAIN] == e->run_main_end) {
        if (type != e->run_type) {
            put_run_value(e, 1);
            e->run_type = type;
            e->run_more = 0;
        } else {
            e->run_more++;
        }
        return;
    }
    end_run(e);
    put_byte(e, MTL_S_MAIN, type);
    e->run_type = type;
    e->run_main_end = e->used[MTL_S_MAIN];
    e->run_more = 0;
}

static void put_str(struct mtl_encoder *e, int stream, const char *str, size_t n)
{
    put_var(e, stream, n);
    memcpy(e->stream[stream] + e->used[stream], str, n);
    e->used[stream] += n;
    e->total += n;
}

/* --- the header -------------------------------------------------------- */

enum { HK_PROGRAM = 1, HK_CMDLINE, HK_PID, HK_PPID, HK_START_UNIX_US, HK_MODE,
       HK_SAMPLE_RATE, HK_MAX_DEPTH, HK_CALLS, HK_ATTACHED, HK_TIME_RESOLUTION };

static void hdr_int(struct mtl_encoder *e, unsigned key, uint64_t v)
{
    put_var(e, MTL_S_MAIN, key);
    put_var(e, MTL_S_MAIN, 0);
    put_var(e, MTL_S_MAIN, v);
}

static void hdr_str(struct mtl_encoder *e, unsigned key, const char *str, size_t n)
{
    put_var(e, MTL_S_MAIN, key);
    put_var(e, MTL_S_MAIN, 1);
    put_str(e, MTL_S_MAIN, str, n);
}

/* The HEADER record: the program and its command line (lengths given:
 * not NUL-terminated in the region), the rest from in (a sample rate of
 * 0 is full mode). */
static void write_header(struct mtl_encoder *e, const char *exe, size_t elen, const char *cmd,
                         size_t clen, const struct mtl_trace_info *in)
{
    reserve(e, elen + clen + 128);
    put_byte(e, MTL_S_MAIN, MTL_REC_HEADER);
    /* Every time from here on is floored to the step the header states;
     * a trace in microseconds (the default) does not state one. */
    e->time_step_us = in->time_resolution_us > 1 ? in->time_resolution_us : 1;
    put_var(e, MTL_S_MAIN, 8u + (in->calls_counted != 0) + (in->attached != 0) +
                               (e->time_step_us > 1));
    hdr_str(e, HK_PROGRAM, exe, elen);
    hdr_str(e, HK_CMDLINE, cmd, clen);
    hdr_int(e, HK_PID, in->pid);
    hdr_int(e, HK_PPID, in->ppid);
    hdr_int(e, HK_START_UNIX_US, in->start_unix_us);
    hdr_int(e, HK_MODE, in->sample_rate ? 1 : 0);
    hdr_int(e, HK_SAMPLE_RATE, in->sample_rate);
    hdr_int(e, HK_MAX_DEPTH, in->max_depth);
    if (in->calls_counted)
        hdr_int(e, HK_CALLS, 1);
    if (in->attached)
        hdr_int(e, HK_ATTACHED, 1);
    if (e->time_step_us > 1)
        hdr_int(e, HK_TIME_RESOLUTION, e->time_step_us);
}

static void write_header_record(struct mtl_encoder *e)
{
    const struct mtl_region_info *in = &e->r->info;
    size_t elen = strnlen(in->exe, sizeof in->exe);
    size_t clen = in->cmdline_len < sizeof in->cmdline ? in->cmdline_len : sizeof in->cmdline;
    struct mtl_trace_info info = {
        .pid = (uint32_t)in->pid, .ppid = (uint32_t)in->ppid,
        .start_unix_us = in->start_unix_us, .sample_rate = in->sample_rate,
        .max_depth = in->depth, .calls_counted = in->calls != 0,
        .attached = in->attached != 0, .time_resolution_us = in->time_resolution_us };
    write_header(e, in->exe, elen, in->cmdline, clen, &info);
}

int mtl_encoder_setup(struct mtl_encoder *e)
{
    if (e->zc)
        return 0;
    for (int i = 0; i < MTL_STREAMS; i++)
        if (!e->stream[i] && !(e->stream[i] = pages(STREAM_CAP)))
            return -ENOMEM;
    e->raw = pages(RAW_CAP);
    e->prefix = pages(RAW_CAP);
    e->out_cap = ZSTD_compressBound(RAW_CAP) + MTL_BLOCK_HEADER_SIZE;
    e->out = pages(e->out_cap);
    e->runs = pages(MAX_RUNS * sizeof *e->runs);
    e->heap = pages(MAX_RUNS * sizeof *e->heap);
    if (!e->raw || !e->prefix || !e->out || !e->runs || !e->heap)
        return -ENOMEM;
    if (!e->pc && !(e->pc = mtl__pc_new(1, MTL_FORMAT_VERSION)))
        return -ENOMEM;
    e->zc = ZSTD_createCCtx();
    if (!e->zc)
        return -ENOMEM;
    ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, MTL_ENC_ZSTD_LEVEL);
    e->level = MTL_ENC_ZSTD_LEVEL;
    ZSTD_CCtx_setParameter(e->zc, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(e->zc, ZSTD_c_windowLog, MTL_ENC_ZSTD_WINDOW_LOG);
    /* Long distance matching is set block by block (flush_block). */
    return 0;
}

/* munmap of what pages() mapped, when it was. */
static void unpage(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

void mtl_encoder_release(struct mtl_encoder *e)
{
    for (int i = 0; i < MTL_STREAMS; i++)
        unpage(e->stream[i], STREAM_CAP);
    unpage(e->raw, RAW_CAP);
    unpage(e->prefix, RAW_CAP);
    unpage(e->out, e->out_cap);
    unpage(e->runs, MAX_RUNS * sizeof *e->runs);
    unpage(e->heap, MAX_RUNS * sizeof *e->heap);
    unpage(e->held_nodes, HELD_NODES_CAP);
    unpage(e->held, HELD_EVENTS * sizeof *e->held);
    if (e->pc)
        mtl__pc_free(e->pc);
    ZSTD_freeCCtx(e->zc); /* NULL is fine */
    memset(e->stream, 0, sizeof e->stream);
    e->raw = e->prefix = e->out = NULL;
    e->runs = NULL;
    e->heap = NULL;
    e->held_nodes = NULL;
    e->held = NULL;
    e->pc = NULL;
    e->zc = NULL;
}

static int write_file_header(struct mtl_encoder *e)
{
    uint8_t hdr[MTL_FILE_HEADER_SIZE] = {0};
    memcpy(hdr, MTL_FILE_MAGIC, 8);
    mtl__put_u32le(hdr + 8, MTL_FORMAT_VERSION);
    int rc = e->sink(e->sink_ctx, hdr, sizeof hdr);
    if (rc < 0)
        fail(e, -rc);
    return rc;
}

/* The state of a new file: empty block, pointer window and counts, no
 * definition written yet (a new trace knows nothing of the last). */
static void start_file(struct mtl_encoder *e, mtl_sink_fn sink, void *ctx)
{
    e->sink = sink;
    e->sink_ctx = ctx;
    memset(e->used, 0, sizeof e->used);
    e->total = 0;
    e->block_seq = 0;
    e->prefix_len = 0;
    mtl__pc_reset(e->pc);
    e->last_us = 0;
    e->time_step_us = 1;
    e->time_zeros = 0;
    e->last_stack = 0;
    e->run_type = 0;
    e->cur_thread = UINT32_MAX;
    e->last_rss = 0;
    e->allocations = e->frees = e->bytes = 0;
    e->failed = e->err = e->ended = 0;
    e->nodes_emitted = 1;
    e->strings_emitted = 0;
    e->busy_ns = e->busy_since_ns = e->round_started_ns = 0;
    e->hard_to_pack = e->closing = 0;
    e->raw_written = 0;
}

int mtl_encoder_begin(struct mtl_encoder *e, struct mtl_region *r, pid_t pid,
                      mtl_sink_fn sink, void *ctx)
{
    /* Whatever the last trace left behind belongs to it. */
    if (e->r == r)
        for (size_t i = 0; i < e->nruns; i++)
            give_back(e, e->runs[i]);
    e->nruns = 0;
    e->r = r;
    e->pid = pid;
    start_file(e, sink, ctx);
    e->owner_dead = 0;
    mtl_spin_lock(&r->mod_lock);
    uint32_t nm = atomic_load(&r->nmodules);
    for (uint32_t i = 0; i < nm; i++) {
        struct mtl_region_module *m = mtl_region_module(r, i);
        m->emitted_load = m->emitted_unload = !m->loaded;
    }
    r->mod_emit_next = 0;
    mtl_spin_unlock(&r->mod_lock);
    e->block_started_ns = mtl_encoder_now(e);

    int rc = write_file_header(e);
    if (rc < 0)
        return rc;
    write_header_record(e);
    flush_block(e);
    mtl_encoder_publish_counts(e); /* a status now says 0, not the last trace's */
    return e->failed ? -e->err : 0;
}

/* --- encoding events --------------------------------------------------- */

/* A time in microseconds floored to the trace's step (the header's). */
static inline uint64_t in_steps(const struct mtl_encoder *e, uint64_t us)
{
    return e->time_step_us > 1 ? us - us % e->time_step_us : us;
}

static inline void put_dt(struct mtl_encoder *e, uint64_t t_ns)
{
    uint64_t us = in_steps(e, t_ns / 1000);
    /* Events arrive in time order; a stamp from before the last one can
     * only be a thread-exit name refresh racing a round: clamp it. */
    if (us <= e->last_us) {
        e->time_zeros++;
        return;
    }
    put_time_run(e, us - e->last_us);
    e->last_us = us;
}

/* The values of an address (ptrcode.h): its code into the pointer
 * stream, a second value into a stream of their own. */
static inline void put_ptr_values(struct mtl_encoder *e, enum mtl__stream code, const uint64_t *v,
                                  unsigned n)
{
    put_var(e, code, v[0]);
    if (n > 1)
        put_var(e, MTL_S_PTR_MORE, v[1]);
}

/* TAG: the live block at ptr has type tag from now on (mtl_tag). */
static void put_tag(struct mtl_encoder *e, uint64_t t_ns, uint64_t ptr, uint32_t tag)
{
    put_byte(e, MTL_S_MAIN, MTL_REC_TAG);
    put_dt(e, t_ns);
    put_var(e, MTL_S_PTR, mtl__pc_put_tag(e->pc, ptr));
    put_var(e, MTL_S_MAIN, tag);
}

/* ALLOC, or ALLOC_EX for a block with a type tag or a collector's; the
 * counts are malloc's only. */
static void put_alloc(struct mtl_encoder *e, uint64_t t_ns, uint64_t size, uint32_t stack,
                      uint64_t ptr, uint32_t tag, int gc)
{
    unsigned flags = (tag ? MTL_ALLOC_EX_TAG : 0) | (gc ? MTL_ALLOC_EX_GC : 0);
    if (!gc) {
        e->allocations++;
        e->bytes += size;
    }
    if (flags)
        put_byte(e, MTL_S_MAIN, MTL_REC_ALLOC_EX);
    else
        put_run_type(e, MTL_REC_ALLOC);
    put_dt(e, t_ns);
    put_var(e, MTL_S_SIZE, size);
    put_var(e, MTL_S_STACK, mtl__zigzag((int64_t)stack - (int64_t)e->last_stack));
    e->last_stack = stack;
    uint64_t v[2];
    struct mtl_pc_news news = { 0 };
    put_ptr_values(e, MTL_S_PTR, v, mtl__pc_put_alloc(e->pc, e->cur_thread, size, ptr, gc, v, &news));
    if (e->observe) {
        if (news.gone)
            e->observe(e->observe_ctx, MTL_SEEN_GONE, ptr, news.gone_size);
        if (news.left)
            e->observe(e->observe_ctx, MTL_SEEN_LEFT, news.left_ptr, news.left_size);
        if (!gc)
            e->observe(e->observe_ctx, MTL_SEEN_ALLOC, ptr, size);
    }
    if (flags) {
        put_var(e, MTL_S_MAIN, flags);
        if (tag)
            put_var(e, MTL_S_MAIN, tag);
    }
}

/* FREE of the block at ptr, by the current thread. */
static void put_free(struct mtl_encoder *e, uint64_t t_ns, uint64_t ptr, int gc)
{
    e->frees += !gc;
    put_run_type(e, MTL_REC_FREE);
    put_dt(e, t_ns);
    uint64_t v[2];
    struct mtl_pc_news news = { 0 };
    unsigned n = mtl__pc_put_free(e->pc, e->cur_thread, ptr, v, &news);
    put_ptr_values(e, MTL_S_PTR_FREE, v, n);
    if (e->observe && news.gone)
        e->observe(e->observe_ctx, MTL_SEEN_GONE, ptr, news.gone_size);
    else if (e->observe && n == 2 && !gc)
        e->observe(e->observe_ctx, MTL_SEEN_FREE_OLD, ptr, 0);
}

/* GC_HEAP: the collector's heap size after a collection. */
static void put_gc_heap(struct mtl_encoder *e, uint64_t t_ns, uint64_t bytes)
{
    put_byte(e, MTL_S_MAIN, MTL_REC_GC_HEAP);
    put_dt(e, t_ns);
    put_var(e, MTL_S_MAIN, bytes);
}

/* CALLS: thread called the function of stack calls more times. */
static void put_calls(struct mtl_encoder *e, uint64_t t_ns, uint32_t thread, uint32_t stack,
                      uint64_t calls)
{
    e->calls_records++;
    put_byte(e, MTL_S_MAIN, MTL_REC_CALLS);
    put_dt(e, t_ns);
    put_var(e, MTL_S_MAIN, thread);
    put_var(e, MTL_S_MAIN, stack);
    put_var(e, MTL_S_MAIN, calls);
}

static void encode(struct mtl_encoder *e, const struct mtl_cev *ev)
{
    reserve(e, 64);
    unsigned type = MTL_CEV_TYPE(ev);
    uint64_t t = MTL_CEV_TIME(ev);
    if ((type == MTL_CEV_ALLOC || type == MTL_CEV_FREE) && ev->thread != e->cur_thread) {
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_SWITCH);
        put_var(e, MTL_S_MAIN, ev->thread);
        e->cur_thread = ev->thread;
    }
    switch (type) {
    case MTL_CEV_ALLOC:
        put_alloc(e, t, MTL_CEV_SIZE(ev->b), ev->stack, ev->a, MTL_CEV_TAG(ev->b),
                  (ev->b & MTL_CEV_GC) != 0);
        break;
    case MTL_CEV_GC_HEAP:
        put_gc_heap(e, t, ev->a);
        break;
    case MTL_CEV_CALLS:
        put_calls(e, t, (uint32_t)ev->b, ev->stack, ev->a);
        break;
    case MTL_CEV_FREE: /* b: MTL_CEV_GC for a collector's block */
        put_free(e, t, ev->a, (ev->b & MTL_CEV_GC) != 0);
        break;
    case MTL_CEV_TAG:
        put_tag(e, t, ev->a, (uint32_t)ev->b);
        break;
    case MTL_CEV_THREAD_START:
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_START);
        put_dt(e, t);
        put_var(e, MTL_S_MAIN, ev->thread);
        put_var(e, MTL_S_MAIN, ev->a);
        break;
    case MTL_CEV_THREAD_NAME: {
        char name[17];
        memcpy(name, &ev->a, 8);
        memcpy(name + 8, &ev->b, 8);
        name[16] = '\0';
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_NAME);
        put_dt(e, t);
        put_var(e, MTL_S_MAIN, ev->thread);
        put_str(e, MTL_S_MAIN, name, strlen(name));
        break;
    }
    case MTL_CEV_THREAD_EXIT:
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_EXIT);
        put_dt(e, t);
        put_var(e, MTL_S_MAIN, ev->thread);
        break;
    }
}

/* --- collecting and merging ---------------------------------------------- */

/* Detaches every thread's chunk into the runs; returns the cutoff time
 * below which every event has been collected.  *busy: a lock was held
 * (with skip_when_busy): nothing may be written this round. */
static uint64_t collect(struct mtl_encoder *e, unsigned trylock_spins, int *busy)
{
    struct mtl_region *r = e->r;
    uint64_t cutoff = mtl_encoder_now(e);
    uint32_t n = atomic_load(&r->nstates);
    /* Every state claimed under one barrier (region.h, mtl_state_enter):
     * its lock first, then its owner out of the append it may be in, so
     * that every event stamped before the cutoff is in its chunk.  A dead
     * program's states are read as they are: nobody appends again, and a
     * lock held at the death stays held. */
    if (!e->owner_dead) {
        for (uint32_t i = 0; i < n; i++) {
            struct mtl_tstate *ts = mtl_region_state(r, i);
            if (mtl_state_claim_start(r, ts, trylock_spins))
                e->claimed[i / 64] |= 1ull << (i % 64);
            else
                *busy |= e->skip_when_busy; /* a thread stopped inside memtally */
        }
        mtl_region_barrier(r);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct mtl_tstate *ts = mtl_region_state(r, i);
        if (!e->owner_dead) {
            uint64_t bit = 1ull << (i % 64);
            if (!(e->claimed[i / 64] & bit))
                continue;
            e->claimed[i / 64] &= ~bit;
            if (!mtl_state_claim_finish(ts, trylock_spins)) {
                *busy |= e->skip_when_busy;
                continue;
            }
        }
        if (ts->pending_ns < cutoff)
            cutoff = ts->pending_ns;
        if (ts->cur && atomic_load_explicit(&mtl_region_chunk(r, ts->cur)->n,
                                            memory_order_acquire) > 0 &&
            e->nruns < MAX_RUNS) {
            e->runs[e->nruns++] = ts->cur;
            ts->cur = 0;
        }
        if (!e->owner_dead)
            mtl_state_unclaim(ts);
    }
    /* After the threads' chunks, so that a chunk queued before we detached
     * its successor is not left for the next round. */
    int locked = e->owner_dead ? 0 : trylock_spins ? mtl_spin_trylock(&r->pool_lock, trylock_spins)
                                                   : (mtl_spin_lock(&r->pool_lock), 1);
    if (!locked && !e->owner_dead)
        *busy |= e->skip_when_busy;
    if (locked || e->owner_dead) {
        while (r->full_head && e->nruns < MAX_RUNS) {
            uint32_t id = r->full_head;
            r->full_head = mtl_region_chunk(r, id)->next;
            mtl_region_chunk(r, id)->next = 0;
            e->runs[e->nruns++] = id;
            r->nfull--;
        }
        if (!r->full_head)
            r->full_tail = 0;
        if (locked)
            mtl_spin_unlock(&r->pool_lock);
    }
    return cutoff;
}

static inline const struct mtl_chunk *run_chunk(const struct mtl_encoder *e, size_t i)
{
    return mtl_region_chunk(e->r, e->runs[i]);
}

static inline uint64_t run_time(const struct mtl_encoder *e, size_t i)
{
    const struct mtl_chunk *c = run_chunk(e, i);
    return MTL_CEV_TIME(&c->ev[c->pos]);
}

static inline uint32_t run_n(const struct mtl_encoder *e, size_t i)
{
    return atomic_load_explicit(&run_chunk(e, i)->n, memory_order_acquire);
}

/* A binary min-heap of run indices by their next event's time. */
static void sift_down(const struct mtl_encoder *e, size_t *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && run_time(e, heap[l]) < run_time(e, heap[m]))
            m = l;
        if (l + 1 < n && run_time(e, heap[l + 1]) < run_time(e, heap[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

/* The address model's lines fetched ahead of the events: the index's at
 * twice this many events ahead, the block it names at this many (about a
 * miss's time of encoding each).  Its probes missed the cache most of the
 * time: 37% of the writer's cycles on the two-thread storm.  Not for an
 * event in the same 4 KiB page as the one before it, whose lines the
 * model mostly has at hand (binary trees: the calls would cost more). */
#define PREFETCH_AHEAD 8

/* A chunk written out goes back to the pool during the round, not at its
 * end: a round may hold the whole pool, and a thread that finds the pool
 * empty sleeps until the round is over (binary trees slept 170 to 420
 * times a run, each a millisecond).  But only this many chunks later
 * (4 MiB), out of this core's cache by then: the pool hands out the chunk
 * given back last, which the program then writes to (docs/PERFORMANCE.md,
 * "Chunks given back during the round"). */
#define RELEASE_LAG 64

static void merge_runs(struct mtl_encoder *e, uint64_t cutoff)
{
    size_t *heap = e->heap, n = 0;
    size_t lag[RELEASE_LAG], lag_at = 0, nlag = 0; /* runs written out, oldest first */
    for (size_t i = 0; i < e->nruns; i++) {
        const struct mtl_chunk *c = run_chunk(e, i);
        if (c->pos < run_n(e, i) && run_time(e, i) < cutoff)
            heap[n++] = i;
    }
    for (size_t i = n; i-- > 0;)
        sift_down(e, heap, n, i);
    while (n > 0) {
        /* The top run's events up to the next run's first (ties go to
         * the top, as sift_down leaves it there): one sift a stretch, not
         * an event; a thread alone is a chunk a stretch. */
        struct mtl_chunk *c = mtl_region_chunk(e->r, e->runs[heap[0]]);
        uint32_t end = run_n(e, heap[0]);
        uint64_t until = cutoff;
        for (size_t k = 1; k <= 2 && k < n; k++)
            if (run_time(e, heap[k]) < until)
                until = run_time(e, heap[k]) + 1;
        do {
            if (__builtin_expect(e->discard_events, 0)) {
                c->pos++;
                continue;
            }
            if (c->pos + 2 * PREFETCH_AHEAD < end &&
                (c->ev[c->pos + 2 * PREFETCH_AHEAD].a ^ c->ev[c->pos + 2 * PREFETCH_AHEAD - 1].a) >> 12)
                mtl__pc_prefetch(e->pc, c->ev[c->pos + 2 * PREFETCH_AHEAD].a,
                                 c->ev[c->pos + PREFETCH_AHEAD].a);
            encode(e, &c->ev[c->pos]);
            c->pos++;
        } while (c->pos < end && MTL_CEV_TIME(&c->ev[c->pos]) < until);
        if (c->pos >= end) {
            /* Its run into the lag; the oldest there back to the pool
             * (release_runs gives back the rest, and any it could not). */
            if (nlag == RELEASE_LAG) {
                if (give_back(e, e->runs[lag[lag_at]]) == 0)
                    e->runs[lag[lag_at]] = 0;
                lag_at = (lag_at + 1) % RELEASE_LAG;
                nlag--;
            }
            lag[(lag_at + nlag++) % RELEASE_LAG] = heap[0];
            heap[0] = heap[--n];
        } else if (run_time(e, heap[0]) >= cutoff) {
            heap[0] = heap[--n];
        }
        sift_down(e, heap, n, 0);
    }
}

/* Chunks written out go back to the pool; the rest wait.  drop: every
 * chunk goes back, its events unwritten (they came after the end). */
static void release_runs(struct mtl_encoder *e, int drop)
{
    size_t keep = 0;
    for (size_t i = 0; i < e->nruns; i++) {
        if (!e->runs[i])
            continue; /* given back by merge_runs */
        if ((drop || run_chunk(e, i)->pos >= run_n(e, i)) && give_back(e, e->runs[i]) == 0)
            continue;
        e->runs[keep++] = e->runs[i];
    }
    e->nruns = keep;
}

/* --- definitions --------------------------------------------------------- */

static size_t module_record(const struct mtl_encoder *e, uint8_t *out, size_t cap,
                            const struct mtl_region *r,
                            uint32_t index, const struct mtl_region_module *m)
{
    size_t need = 8 * MTL_VARINT_MAX + m->path_len + m->build_id_size +
                  m->nseg * 3 * MTL_VARINT_MAX;
    if (need > cap)
        return 0;
    uint8_t *p = out;
    *p++ = MTL_REC_MODULE_LOAD;
    p = mtl__put_varint(p, index);
    p = mtl__put_varint(p, in_steps(e, m->load_ns / 1000)); /* modules too */
    p = mtl__put_varint(p, m->base);
    p = mtl__put_varint(p, m->path_len);
    memcpy(p, mtl_region_arena(r) + m->path_off, m->path_len);
    p += m->path_len;
    p = mtl__put_varint(p, m->build_id_size);
    memcpy(p, m->build_id, m->build_id_size);
    p += m->build_id_size;
    p = mtl__put_varint(p, m->nseg);
    for (uint32_t s = 0; s < m->nseg; s++) {
        p = mtl__put_varint(p, m->seg[s].vaddr);
        p = mtl__put_varint(p, m->seg[s].memsz);
        p = mtl__put_varint(p, m->seg[s].flags);
    }
    return (size_t)(p - out);
}

/* Module records not yet written, into the main stream: with
 * unloads_before 0 the loads, else the unloads that happened before that
 * time.  Returns 1 when more did not fit. */
static int emit_modules(struct mtl_encoder *e, uint64_t unloads_before)
{
    struct mtl_region *r = e->r;
    uint8_t *out = e->stream[MTL_S_MAIN] + e->used[MTL_S_MAIN];
    size_t cap = STREAM_CAP - e->used[MTL_S_MAIN], used = 0;
    int more = 0;
    uint32_t nm = atomic_load_explicit(&r->nmodules, memory_order_acquire);
    for (uint32_t i = r->mod_emit_next; i < nm; i++) {
        struct mtl_region_module *m = mtl_region_module(r, i);
        if (!unloads_before && !m->emitted_load) {
            size_t n = module_record(e, out + used, cap - used, r, i, m);
            if (!n) {
                more = 1;
                break;
            }
            used += n;
            m->emitted_load = 1;
        }
        if (unloads_before && m->emitted_load && !m->loaded && !m->emitted_unload &&
            m->unload_ns < unloads_before) {
            if (cap - used < 1 + 2 * MTL_VARINT_MAX) {
                more = 1;
                break;
            }
            uint8_t *p = out + used;
            *p++ = MTL_REC_MODULE_UNLOAD;
            p = mtl__put_varint(p, i);
            p = mtl__put_varint(p, in_steps(e, m->unload_ns / 1000));
            used = (size_t)(p - out);
            m->emitted_unload = 1;
        }
        if (i == r->mod_emit_next && m->emitted_unload)
            r->mod_emit_next = i + 1; /* nothing more to write for it */
    }
    e->used[MTL_S_MAIN] += used;
    e->total += used;
    return more;
}

/* With the module table's lock held by the round (or passed over). */
static void write_modules(struct mtl_encoder *e, uint64_t unloads_before)
{
    int more;
    do {
        reserve(e, STREAM_CAP / 2);
        more = emit_modules(e, unloads_before);
        if (more)
            flush_block(e);
    } while (more && !e->failed);
}

/* A node's fields in a STACK_NODES record, at p: its parent as a
 * difference, then a custom frame's string id, or a native frame coded
 * against its parent's address (parent_addr: 0 for the root or a custom
 * parent, as the reader adds it back).  Returns the end. */
static uint8_t *put_node_fields(uint8_t *p, uint32_t id, uint32_t parent, int custom,
                                uint64_t value, uint64_t parent_addr)
{
    p = mtl__put_varint(p, id - parent);
    return mtl__put_varint(p, custom ? value << 1 | 1
                                     : mtl__zigzag((int64_t)(value - parent_addr)) << 1);
}

/* The nodes defined since the last call, as one STACK_NODES record;
 * returns 1 when more did not fit. */
static int emit_nodes(struct mtl_encoder *e)
{
    const struct mtl_region *r = e->r;
    const uint32_t *parent = mtl_region_parents(r);
    const uint64_t *addr = mtl_region_addrs(r);
    uint8_t *out = e->stream[MTL_S_MAIN] + e->used[MTL_S_MAIN];
    size_t cap = STREAM_CAP - e->used[MTL_S_MAIN];
    uint32_t end = atomic_load_explicit(&r->nnodes, memory_order_acquire);
    uint32_t first = e->nodes_emitted;
    int more = 0;
    if (first >= end || cap < 32)
        return first < end;
    /* Room for the record header, then about 20 bytes a node at most. */
    size_t fit = (cap - 16) / (2 * MTL_VARINT_MAX);
    if (end - first > fit) {
        end = first + (uint32_t)fit;
        more = 1;
    }
    uint8_t *p = out;
    *p++ = MTL_REC_STACK_NODES;
    p = mtl__put_varint(p, first);
    p = mtl__put_varint(p, end - first);
    for (uint32_t id = first; id < end; id++) {
        uint32_t par = parent[id];
        uint64_t paddr = par && !(addr[par] & MTL_NODE_CUSTOM) ? addr[par] : 0;
        p = put_node_fields(p, id, par, (addr[id] & MTL_NODE_CUSTOM) != 0,
                            addr[id] & ~MTL_NODE_CUSTOM, paddr);
    }
    e->nodes_emitted = end;
    e->used[MTL_S_MAIN] += (size_t)(p - out);
    e->total += (size_t)(p - out);
    return more;
}

/* A reader names a stack node's module by the modules loaded when the
 * node is defined: loads first, then the nodes, then the unloads, so that
 * a library loaded, used and closed within one round (a dlopen loop) has
 * its nodes defined while it is loaded.  Only unloads from before the
 * nodes were taken: a node made before a later unload is in them. */
static void put_string_record(struct mtl_encoder *e, uint32_t id, const char *text, size_t n)
{
    reserve(e, n + 3 * MTL_VARINT_MAX);
    put_byte(e, MTL_S_MAIN, MTL_REC_STRING);
    put_var(e, MTL_S_MAIN, id);
    put_str(e, MTL_S_MAIN, text, n);
}

/* The type names registered since the last call, as STRING records: tag
 * k is string k (mtl_region_type).  Before the events of the round, which
 * only use tags registered before them. */
static void write_strings(struct mtl_encoder *e)
{
    uint32_t n = atomic_load_explicit(&e->r->nstrings, memory_order_acquire);
    for (; e->strings_emitted < n && !e->failed; e->strings_emitted++) {
        size_t len;
        const char *name = mtl_region_string_text(e->r, e->strings_emitted + 1, &len);
        put_string_record(e, e->strings_emitted + 1, name, len);
    }
}

static void write_definitions(struct mtl_encoder *e)
{
    write_strings(e);
    write_modules(e, 0);
    uint64_t nodes_taken = mtl_encoder_now(e);
    int more;
    do {
        reserve(e, STREAM_CAP / 2);
        more = emit_nodes(e);
        if (more)
            flush_block(e);
    } while (more && !e->failed);
    write_modules(e, nodes_taken ? nodes_taken : 1);
}

/* --- rounds ------------------------------------------------------------ */

static void sample_rss(struct mtl_encoder *e, uint64_t t_ns)
{
    char path[64], buf[128];
    /* Opened each time: a descriptor kept open could be closed by the
     * program (daemons close them all) and its number reused. */
    proc_path(e, path, sizeof path, "/statm");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    /* statm: size resident shared ... in pages */
    const char *s = strchr(buf, ' ');
    if (!s)
        return;
    uint64_t npages = 0;
    for (s++; *s >= '0' && *s <= '9'; s++)
        npages = npages * 10 + (uint64_t)(*s - '0');
    uint64_t rss = npages * (uint64_t)sysconf(_SC_PAGESIZE);
    if (rss == e->last_rss)
        return;
    e->last_rss = rss;
    reserve(e, 32);
    put_byte(e, MTL_S_MAIN, MTL_REC_RSS);
    put_dt(e, t_ns);
    put_var(e, MTL_S_MAIN, rss);
}

void mtl_encoder_publish_counts(struct mtl_encoder *e)
{
    atomic_store(&e->r->allocations, e->allocations);
    atomic_store(&e->r->frees, e->frees);
    atomic_store(&e->r->bytes, e->bytes);
}

static int encode_round(struct mtl_encoder *e, int final, uint64_t until,
                        unsigned trylock_spins, unsigned max_age_ms)
{
    int busy = 0;
    uint64_t cutoff = collect(e, trylock_spins, &busy);
    /* The module table's lock, held while the definitions are written: a
     * dead program's is passed over (it cannot change the table), and a
     * round that may not wait writes nothing rather than half. */
    int mod_locked = 0;
    if (!e->owner_dead && !busy) {
        if (!trylock_spins) {
            mtl_spin_lock(&e->r->mod_lock);
            mod_locked = 1;
        } else if (mtl_spin_trylock(&e->r->mod_lock, trylock_spins)) {
            mod_locked = 1;
        } else {
            busy = e->skip_when_busy;
        }
    }
    if (busy)
        return 1; /* the chunks taken wait in the runs for the next round */
    if (final)
        cutoff = UINT64_MAX;
    if (until < cutoff)
        cutoff = until;
    write_definitions(e);
    if (mod_locked)
        mtl_spin_unlock(&e->r->mod_lock);
    merge_runs(e, cutoff);
    release_runs(e, until != UINT64_MAX && cutoff == until);
    uint64_t now = mtl_encoder_now(e);
    if (now > until)
        now = until;
    sample_rss(e, final ? now : cutoff < now ? cutoff : now);
    mtl_encoder_publish_counts(e);
    if (final)
        return 0;
    if (e->total >= (large_blocks(e) ? LARGE_TARGET : SMALL_TARGET) ||
        now - e->block_started_ns >= (uint64_t)max_age_ms * 1000000ull ||
        now < e->block_started_ns) {
        flush_block(e);
        e->block_started_ns = now;
    }
    return 0;
}

int mtl_encoder_round(struct mtl_encoder *e, int final, uint64_t until,
                      unsigned trylock_spins, unsigned max_age_ms)
{
    if (e->failed || e->ended)
        return 0;
    /* Rounds that write the last events, once the program has ended or
     * the trace stops, are waited for: their blocks take the base level. */
    e->closing |= final || until != UINT64_MAX;
    e->round_started_ns = mtl_encoder_now(e);
    int skipped = encode_round(e, final, until, trylock_spins, max_age_ms);
    e->busy_ns += mtl_encoder_now(e) - e->round_started_ns; /* from a flush's, if one came */
    return skipped;
}

void mtl_encoder_end(struct mtl_encoder *e, unsigned reason, int detail)
{
    if (e->ended)
        return;
    e->closing = 1;
    uint64_t now = mtl_encoder_now(e);
    uint64_t until = atomic_load(&e->r->end_ns);
    if (until && until < now)
        now = until;
    reserve(e, 32);
    put_byte(e, MTL_S_MAIN, MTL_REC_END);
    put_dt(e, now);
    put_var(e, MTL_S_MAIN, reason);
    put_var(e, MTL_S_MAIN, (uint64_t)detail);
    flush_block(e);
    e->ended = 1;
    mtl_encoder_publish_counts(e);
}

/* --- thread names -------------------------------------------------------- */

void mtl_encoder_refresh_names(struct mtl_encoder *e)
{
    struct mtl_region *r = e->r;
    uint32_t n = atomic_load(&r->nstates);
    /* State 0 is shared by threads past their exit: no name of its own. */
    for (uint32_t i = 1; i < n; i++) {
        struct mtl_tstate *ts = mtl_region_state(r, i);
        if (!atomic_load(&ts->in_use) || !ts->tid)
            continue;
        char path[64], rest[40], buf[32] = {0};
        snprintf(rest, sizeof rest, "/task/%d/comm", (int)ts->tid);
        proc_path(e, path, sizeof path, rest);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* it exited meanwhile */
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (got <= 0)
            continue;
        if (buf[got - 1] == '\n')
            got--;
        char name[16] = {0};
        memcpy(name, buf, (size_t)got < 15 ? (size_t)got : 15);
        /* The name as last recorded, read without the claim (a barrier
         * for the program): only a change is worth one, and is read again
         * under it. */
        if (memcmp(ts->name, name, 16) == 0)
            continue;
        if (!mtl_state_claim(r, ts, 100000))
            continue;
        if (atomic_load(&ts->in_use) && memcmp(ts->name, name, 16) != 0) {
            struct mtl_cev *ev = mtl_region_room(r, ts, lock_spins(e));
            if (ev) {
                memcpy(ts->name, name, 16);
                ev->t_type = mtl_region_stamp(ts, mtl_encoder_now(e)) << 8 | MTL_CEV_THREAD_NAME;
                memcpy(&ev->a, name, 8);
                memcpy(&ev->b, name + 8, 8);
                ev->stack = 0;
                ev->thread = ts->index;
                mtl_cev_commit(r, ts);
            }
        }
        mtl_state_unclaim(ts);
    }
}

/* --- dumps --------------------------------------------------------------- */

static int fd_sink(void *ctx, const void *p, size_t n)
{
    return mtl_write_all(*(int *)ctx, p, n);
}

int mtl_encoder_dump(struct mtl_encoder *e, int src, int out)
{
    if (e->ended || e->failed)
        return -EINVAL;
    /* A round that may not wait leaves the newest events out of the copy. */
    mtl_encoder_round(e, 0, UINT64_MAX, e->skip_when_busy ? BUSY_SPINS : 0, 0);
    flush_block(e);
    /* The trace so far, block for block... */
    char buf[65536];
    off_t at = 0;
    for (;;) {
        ssize_t n = pread(src, buf, sizeof buf, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        int rc = fd_sink(&out, buf, (size_t)n);
        if (rc < 0)
            return rc;
        at += n;
    }
    /* ...and an END block of its own, written to the copy only: the
     * decoder state of the original goes on as if it never was. */
    uint64_t last_us = e->last_us, block_seq = e->block_seq;
    uint8_t *prefix = e->prefix, *raw = e->raw;
    size_t prefix_len = e->prefix_len;
    int failed = e->failed, err = e->err;
    mtl_sink_fn sink = e->sink;
    void *ctx = e->sink_ctx;
    e->sink = fd_sink;
    e->sink_ctx = &out;
    reserve(e, 32);
    put_byte(e, MTL_S_MAIN, MTL_REC_END);
    put_dt(e, mtl_encoder_now(e));
    put_var(e, MTL_S_MAIN, MTL_END_STOP);
    put_var(e, MTL_S_MAIN, 0);
    flush_block(e);
    e->sink = sink;
    e->sink_ctx = ctx;
    e->last_us = last_us;
    e->block_seq = block_seq;
    e->prefix = prefix; /* the original's next block refers to its last */
    e->raw = raw;
    e->prefix_len = prefix_len;
    int rc = e->failed ? -(e->err ? e->err : EIO) : 0;
    e->failed = failed; /* the copy's error is not the trace's */
    e->err = err;
    return rc;
}

/* --- records from values (memtally merge) ----------------------------------- */


static void put_event_now(struct mtl_encoder *e, const struct mtl_event *ev, uint32_t tid,
                          const char *name);

/* Writes what is held: the nodes as one record, then the events. */
static void put_held(struct mtl_encoder *e)
{
    if (e->held_count) {
        reserve(e, e->held_nodes_len + 3 * MTL_VARINT_MAX);
        put_byte(e, MTL_S_MAIN, MTL_REC_STACK_NODES);
        put_var(e, MTL_S_MAIN, e->held_first);
        put_var(e, MTL_S_MAIN, e->held_count);
        memcpy(e->stream[MTL_S_MAIN] + e->used[MTL_S_MAIN], e->held_nodes, e->held_nodes_len);
        e->used[MTL_S_MAIN] += e->held_nodes_len;
        e->total += e->held_nodes_len;
        e->held_count = 0;
        e->held_nodes_len = 0;
    }
    for (size_t i = 0; i < e->nheld; i++)
        put_event_now(e, &e->held[i], 0, NULL);
    e->nheld = 0;
}

/* What the values API holds goes into the block first. */
void mtl_encoder_flush(struct mtl_encoder *e)
{
    put_held(e);
    flush_block(e);
}

int mtl_encoder_begin_values(struct mtl_encoder *e, const struct mtl_trace_info *info,
                             mtl_sink_fn sink, void *ctx)
{
    e->r = NULL;
    start_file(e, sink, ctx);
    if ((!e->held_nodes && !(e->held_nodes = pages(HELD_NODES_CAP))) ||
        (!e->held && !(e->held = pages(HELD_EVENTS * sizeof *e->held)))) {
        fail(e, ENOMEM);
        return -ENOMEM;
    }
    e->held_count = 0;
    e->held_nodes_len = e->nheld = 0;
    int rc = write_file_header(e);
    if (rc < 0)
        return rc;
    const char *exe = info->program ? info->program : "";
    const char *cmd = info->command_line ? info->command_line : "";
    write_header(e, exe, strlen(exe), cmd, strlen(cmd), info);
    return e->failed ? -e->err : 0;
}

void mtl_encoder_put_module(struct mtl_encoder *e, uint32_t index, const struct mtl_module *m)
{
    put_held(e); /* the nodes held are not in it: they came before */
    size_t plen = strlen(m->path);
    reserve(e, 8 * MTL_VARINT_MAX + plen + m->build_id_size + m->nsegments * 3 * MTL_VARINT_MAX);
    put_byte(e, MTL_S_MAIN, MTL_REC_MODULE_LOAD);
    put_var(e, MTL_S_MAIN, index);
    put_var(e, MTL_S_MAIN, in_steps(e, m->load_us));
    put_var(e, MTL_S_MAIN, m->base);
    put_str(e, MTL_S_MAIN, m->path, plen);
    put_str(e, MTL_S_MAIN, (const char *)m->build_id, m->build_id_size);
    put_var(e, MTL_S_MAIN, m->nsegments);
    for (size_t i = 0; i < m->nsegments; i++) {
        put_var(e, MTL_S_MAIN, m->segments[i].vaddr);
        put_var(e, MTL_S_MAIN, m->segments[i].memsz);
        put_var(e, MTL_S_MAIN, m->segments[i].flags);
    }
}

/* A node is held, to go out with the ones after it in one record before
 * the events held: defined earlier than where it was put, as a node may
 * be, never later. */
void mtl_encoder_put_node(struct mtl_encoder *e, uint32_t id, uint32_t parent, int custom,
                          uint64_t addr, uint64_t parent_addr)
{
    if ((e->held_count && id != e->held_first + e->held_count) ||
        e->held_nodes_len + 2 * MTL_VARINT_MAX > HELD_NODES_CAP)
        put_held(e);
    if (!e->held_count)
        e->held_first = id;
    uint8_t *p = put_node_fields(e->held_nodes + e->held_nodes_len, id, parent, custom, addr,
                                 parent_addr);
    e->held_nodes_len = (size_t)(p - e->held_nodes);
    e->held_count++;
}

void mtl_encoder_put_string(struct mtl_encoder *e, uint32_t id, const char *text)
{
    put_held(e);
    put_string_record(e, id, text, strlen(text));
}

/* Allocations and frees are held (with the nodes they may need); any
 * other event first writes what is held. */
void mtl_encoder_put_event(struct mtl_encoder *e, const struct mtl_event *ev, uint32_t tid,
                           const char *name)
{
    if (ev->type == MTL_EV_ALLOC || ev->type == MTL_EV_FREE) {
        if (e->nheld == HELD_EVENTS)
            put_held(e);
        e->held[e->nheld++] = *ev;
        return;
    }
    put_held(e);
    put_event_now(e, ev, tid, name);
}

static void put_event_now(struct mtl_encoder *e, const struct mtl_event *ev, uint32_t tid,
                          const char *name)
{
    uint64_t t = ev->time_us * 1000; /* put_dt takes the encoder's nanoseconds */
    size_t nlen = name ? strlen(name) : 0;
    reserve(e, 64 + nlen);
    if ((ev->type == MTL_EV_ALLOC || ev->type == MTL_EV_FREE) && ev->thread != e->cur_thread) {
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_SWITCH);
        put_var(e, MTL_S_MAIN, ev->thread);
        e->cur_thread = ev->thread;
    }
    switch (ev->type) {
    case MTL_EV_ALLOC:
        put_alloc(e, t, ev->size, ev->stack, ev->ptr, ev->tag, ev->heap == MTL_HEAP_GC);
        break;
    case MTL_EV_GC_HEAP:
        put_gc_heap(e, t, ev->size);
        break;
    case MTL_EV_CALLS:
        put_calls(e, t, ev->thread, ev->stack, ev->size);
        break;
    case MTL_EV_FREE:
        put_free(e, t, ev->ptr, ev->heap == MTL_HEAP_GC);
        break;
    case MTL_EV_THREAD_START:
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_START);
        put_dt(e, t);
        put_var(e, MTL_S_MAIN, ev->thread);
        put_var(e, MTL_S_MAIN, tid);
        break;
    case MTL_EV_THREAD_NAME:
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_NAME);
        put_dt(e, t);
        put_var(e, MTL_S_MAIN, ev->thread);
        put_str(e, MTL_S_MAIN, name ? name : "", nlen);
        break;
    case MTL_EV_THREAD_EXIT:
        put_byte(e, MTL_S_MAIN, MTL_REC_THREAD_EXIT);
        put_dt(e, t);
        put_var(e, MTL_S_MAIN, ev->thread);
        break;
    case MTL_EV_RSS:
        put_byte(e, MTL_S_MAIN, MTL_REC_RSS);
        put_dt(e, t);
        put_var(e, MTL_S_MAIN, ev->size);
        break;
    case MTL_EV_TAG:
        put_tag(e, t, ev->ptr, ev->tag);
        break;
    default:
        break;
    }
}

void mtl_encoder_end_values(struct mtl_encoder *e, uint64_t time_us, unsigned reason,
                            int detail)
{
    put_held(e);
    reserve(e, 32);
    put_byte(e, MTL_S_MAIN, MTL_REC_END);
    put_dt(e, time_us * 1000);
    put_var(e, MTL_S_MAIN, reason);
    put_var(e, MTL_S_MAIN, (uint64_t)detail);
    flush_block(e);
    e->ended = 1;
}
