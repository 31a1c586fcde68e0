/*
 * test_reader_threads.c: decoding ahead on worker threads
 * (mtl_reader_threads) and the batches of allocations (trace/allocs.h)
 * read exactly what the plain reader reads.  A trace of 60 blocks is
 * written by hand (tests/trace_encode.h) with what carries from one block
 * to the next: times, the pointer window (pointers that name the window's
 * entries of the block before), the current thread, stack nodes defined
 * blocks before their use; then read whole, cut at and around every
 * block boundary, and with a byte damaged in a middle block, with 0, 1, 2
 * and 5 workers, from a file and from memory.  Every event, the final
 * code and the truncated and complete flags must agree.  The same again
 * on a trace of this version written by the recorder's encoder, whose
 * blocks decompress in turn, each with the payload of the one before as
 * its prefix (docs/FORMAT.md, "Block").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "memtally/errors.h"
#include "memtally/trace.h"
#include "encoder_mem.h"
#include "trace/allocs.h"
#include "trace_encode.h"

static char path[] = "/tmp/memtally-test-reader-threads-XXXXXX";
static uint8_t *whole;
static size_t whole_size;
static uint64_t bounds[128];
static size_t nbounds;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next_rand(void)
{
    return check_xorshift(&rng);
}

/* Writes the trace; remembers each block's offset. */
static void write_trace(void)
{
    static struct tb_buf b;
    struct tb_file t = { fopen(path, "wb"), 0 };
    CHECK(t.f != NULL);
    CHECK(tb_file_header(&t, MTL_FORMAT_WINDOW_LAST, 0) == 0);
    uint32_t nodes = 1, threads = 0;
    for (int k = 0; k < 60; k++) {
        tb_clear(&b);
        if (k == 0) {
            tb_byte(&b, MTL_REC_HEADER);
            tb_var(&b, 1); /* one field: the program (key 1, bytes) */
            tb_var(&b, 1), tb_var(&b, 1), tb_str(&b, "/bin/prog");
        }
        /* New stack nodes now and then, each the child of an older one. */
        if (k % 7 == 0) {
            uint32_t n = 20 + (uint32_t)(next_rand() % 50);
            tb_byte(&b, MTL_REC_STACK_NODES), tb_var(&b, nodes), tb_var(&b, n);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t id = nodes + i;
                tb_var(&b, 1 + next_rand() % id);
                tb_var(&b, mtl__zigzag((int64_t)(next_rand() % 4096)) << 1);
            }
            nodes += n;
        }
        if (k % 11 == 0) {
            tb_byte(&b, MTL_REC_THREAD_START), tb_dt(&b, 3), tb_var(&b, threads),
                tb_var(&b, 100 + threads);
            threads++;
        }
        for (int i = 0; i < 300; i++) {
            uint64_t r = next_rand();
            switch (r % 16) {
            case 0: /* the thread changes; the next block goes on with it */
                tb_byte(&b, MTL_REC_THREAD_SWITCH), tb_var(&b, (r >> 8) % threads);
                break;
            case 1:
                tb_byte(&b, MTL_REC_RSS), tb_dt(&b, r >> 60), tb_var(&b, r >> 40);
                break;
            case 2:
                tb_byte(&b, MTL_REC_ALLOC_EX), tb_dt(&b, (r >> 8) % 5),
                    tb_size(&b, (r >> 16) % 70000), tb_stack(&b, (r >> 32) % nodes),
                    tb_ptr_delta(&b, (int64_t)((r >> 40) % 512) - 256), tb_var(&b, 0);
                break;
            case 3: case 4: case 5: case 6: case 7: case 8:
                /* early in a block, the window is mostly the block before's */
                tb_byte(&b, MTL_REC_FREE), tb_dt(&b, (r >> 8) % 3),
                    tb_ptr_window(&b, (unsigned)((r >> 16) % MTL_PTR_WINDOW));
                break;
            default:
                tb_byte(&b, MTL_REC_ALLOC), tb_dt(&b, (r >> 8) % 1000),
                    tb_size(&b, (r >> 24) % 300), tb_stack(&b, (r >> 32) % nodes);
                if (r & 1)
                    tb_ptr_delta(&b, (int64_t)((r >> 40) % 100000) - 50000);
                else
                    tb_ptr_window(&b, (unsigned)((r >> 48) % MTL_PTR_WINDOW));
            }
        }
        if (k == 59)
            tb_byte(&b, MTL_REC_END), tb_dt(&b, 1), tb_var(&b, 0), tb_var(&b, 0);
        bounds[nbounds++] = (uint64_t)ftell(t.f);
        CHECK(tb_block(&t, &b, 0) == 0);
    }
    CHECK(fclose(t.f) == 0);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    whole_size = (size_t)ftell(f);
    rewind(f);
    whole = malloc(whole_size);
    CHECK(whole && fread(whole, 1, whole_size, f) == whole_size);
    fclose(f);
}

/* Block offsets of the trace in whole. */
static void find_bounds(void)
{
    nbounds = 0;
    for (uint64_t at = MTL_FILE_HEADER_SIZE; at + MTL_BLOCK_HEADER_SIZE <= whole_size;
         at += MTL_BLOCK_HEADER_SIZE + mtl__get_u32le(whole + at + 4)) {
        CHECK(nbounds < sizeof bounds / sizeof *bounds);
        bounds[nbounds++] = at;
    }
}

/* The same kind of trace written by the encoder: 60 blocks of random
 * allocations and frees from three threads, whose sizes and stacks cycle
 * alike in every block, so that each block refers to the one before (what
 * its prefix is for). */
static void write_encoded_trace(void)
{
    static struct em_trace t;
    struct mtl_encoder *e = em_begin(&t);
    for (uint32_t id = 1; id <= 40; id++)
        mtl_encoder_put_node(e, id, id > 4 ? id - 4 : 0, 0, 0x401000 + 32 * id, 0x401000);
    for (uint32_t th = 0; th < 3; th++) {
        struct mtl_event ev = { .type = MTL_EV_THREAD_START, .thread = th };
        mtl_encoder_put_event(e, &ev, 100 + th, NULL);
    }
    static uint64_t live[4096];
    uint64_t top = 0x5555000000ull, us = 0;
    for (int k = 0; k < 60; k++) {
        for (int i = 0; i < 1500; i++) {
            uint64_t r = next_rand(), slot = r % 4096;
            struct mtl_event ev = { .thread = (uint32_t)(i % 3), .time_us = us += r % 3 };
            if (live[slot]) {
                ev.type = MTL_EV_FREE, ev.ptr = live[slot];
                live[slot] = 0;
            } else {
                ev.type = MTL_EV_ALLOC, ev.size = 16 + 8 * (uint64_t)(i % 40);
                ev.stack = 1 + (uint32_t)(i % 40), ev.ptr = live[slot] = top += 64;
            }
            mtl_encoder_put_event(e, &ev, 0, NULL);
        }
        mtl_encoder_flush(e);
    }
    mtl_encoder_end_values(e, us + 1, MTL_END_EXIT, 0);
    CHECK(!e->failed);
    whole = t.data, whole_size = t.len;
    find_bounds();
    CHECK(nbounds >= 60);
    /* Its middle blocks do refer to their prefix: alone, one does not
     * decompress. */
    const uint8_t *h = whole + bounds[30];
    uint32_t csize = mtl__get_u32le(h + 4), rsize = mtl__get_u32le(h + 8);
    void *out = malloc(rsize);
    CHECK(out != NULL);
    size_t got = ZSTD_decompress(out, rsize, h + MTL_BLOCK_HEADER_SIZE, csize);
    CHECK(ZSTD_isError(got) || got != rsize);
    free(out);
}

/* What a reading saw: a hash of every event, counts, the end. */
struct seen {
    uint64_t hash, events, allocs, alloc_hash;
    int rc, truncated, complete;
    uint64_t duration;
};

static void mix(uint64_t *h, uint64_t v)
{
    *h = (*h ^ v) * 0x100000001b3u;
}

static void mix_alloc(uint64_t *h, uint64_t seq, uint64_t t, uint64_t size, uint32_t stack,
                      uint32_t thread)
{
    mix(h, seq), mix(h, t), mix(h, size), mix(h, stack), mix(h, thread);
}

/* Reads bytes [0, size) with n workers, from memory or from a file. */
static struct seen read_events(size_t size, unsigned n, int from_file)
{
    struct seen s = { 0 };
    struct mtl_reader *r;
    int rc;
    if (from_file) {
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(whole, 1, size, f) == size);
        fclose(f);
        rc = mtl_reader_open(&r, path);
    } else {
        rc = mtl_reader_open_memory(&r, whole, size);
    }
    if (rc < 0) {
        s.rc = rc;
        return s;
    }
    mtl_reader_threads(r, n);
    struct mtl_event ev;
    uint64_t seq = 0;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        s.events++;
        mix(&s.hash, ev.type), mix(&s.hash, ev.time_us), mix(&s.hash, ev.thread);
        mix(&s.hash, ev.ptr), mix(&s.hash, ev.size), mix(&s.hash, ev.stack);
        mix(&s.hash, ev.tag), mix(&s.hash, ev.module);
        if (ev.type == MTL_EV_ALLOC) {
            s.allocs++;
            mix_alloc(&s.alloc_hash, seq, ev.time_us, ev.size, ev.stack, ev.thread);
        }
        seq += ev.type == MTL_EV_ALLOC || ev.type == MTL_EV_FREE;
    }
    s.rc = rc;
    s.truncated = mtl_reader_info(r)->truncated;
    s.complete = mtl_reader_info(r)->complete;
    s.duration = mtl_reader_info(r)->duration_us;
    mtl_reader_close(r);
    return s;
}

/* The same through batches of allocations (without pointers). */
static struct seen read_allocs(size_t size, unsigned n)
{
    struct seen s = { 0 };
    struct mtl_reader *r;
    static struct mtl_allocs b;
    int rc = mtl_reader_open_memory(&r, whole, size);
    if (rc < 0) {
        s.rc = rc;
        return s;
    }
    mtl_reader_threads(r, n);
    mtl_reader_skip_pointers(r, 1);
    while ((rc = mtl__reader_allocs(r, &b)) > 0) {
        CHECK(b.n > 0 && b.n <= MTL_ALLOCS_BATCH);
        for (size_t i = 0; i < b.n; i++) {
            s.allocs++;
            mix_alloc(&s.alloc_hash, b.seq[i], b.time_us[i], b.size[i], b.stack[i],
                      b.thread[i]);
        }
    }
    s.rc = rc;
    s.truncated = mtl_reader_info(r)->truncated;
    s.complete = mtl_reader_info(r)->complete;
    s.duration = mtl_reader_info(r)->duration_us;
    mtl_reader_close(r);
    return s;
}

static void same(const struct seen *a, const struct seen *b, int events)
{
    CHECK_EQ(a->rc, b->rc);
    CHECK_EQ(a->truncated, b->truncated);
    CHECK_EQ(a->complete, b->complete);
    CHECK_EQ(a->allocs, b->allocs);
    CHECK_EQ(a->alloc_hash, b->alloc_hash);
    if (events) {
        CHECK_EQ(a->events, b->events);
        CHECK_EQ(a->hash, b->hash);
    }
    /* A corrupt trace stops at the damage; only a good one's duration is
     * its last event's time, in both ways of reading. */
    if (a->rc == 0)
        CHECK_EQ(a->duration, b->duration);
}

/* Every way of reading [0, size) agrees with the plain reader. */
static void check_all(size_t size)
{
    static const unsigned workers[] = { 1, 2, 5 };
    struct seen base = read_events(size, 0, 0);
    for (size_t i = 0; i < 3; i++) {
        struct seen s = read_events(size, workers[i], i == 1);
        same(&base, &s, 1);
    }
    if (base.rc == MTL_ECORRUPT)
        return; /* the batches stop at the same block, not the same event */
    for (size_t i = 0; i < 3; i++) {
        struct seen s = read_allocs(size, workers[i]);
        same(&base, &s, 0);
    }
}

/* Every check on the trace in whole, of at least 46 blocks. */
static void check_trace(void)
{
    struct seen full = read_events(whole_size, 0, 0);
    CHECK_EQ(full.rc, 0);
    CHECK(full.complete && !full.truncated);
    CHECK(full.allocs > 5000);
    check_all(whole_size);

    /* Cut at, just before and just after every block boundary. */
    for (size_t i = 1; i < nbounds; i++) {
        check_all(bounds[i]);
        check_all(bounds[i] - 1);
        check_all(bounds[i] + 1);
        struct seen s = read_events(bounds[i] + 1, 2, 0);
        CHECK(s.truncated && s.rc == 0);
    }

    /* A byte damaged in the middle of block 30's frame: an error there, in
     * every way, after the same events. */
    size_t at = bounds[30] + MTL_BLOCK_HEADER_SIZE + 40;
    whole[at] ^= 0x55;
    struct seen bad = read_events(whole_size, 0, 0);
    CHECK_EQ(bad.rc, MTL_ECORRUPT);
    check_all(whole_size);
    struct seen part = read_allocs(whole_size, 2);
    CHECK_EQ(part.rc, MTL_ECORRUPT);
    whole[at] ^= 0x55;

    /* A damaged block header: the same. */
    whole[bounds[45] + 12] ^= 1;
    CHECK_EQ(read_events(whole_size, 0, 0).rc, MTL_ECORRUPT);
    check_all(whole_size);
    whole[bounds[45] + 12] ^= 1;
}

int main(void)
{
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_trace();
    check_trace();
    free(whole);
    write_encoded_trace();
    CHECK_EQ(mtl__get_u32le(whole + 8), MTL_FORMAT_VERSION);
    check_trace();
    unlink(path);
    free(whole);
    CHECKS_DONE();
}
