/* The reader against docs/FORMAT.md: traces built here by hand, record by
 * record (not by the recorder), and the events, stacks, modules and
 * threads the reader must give back; then every kind of damage the spec
 * names: cut files, bad headers, bad checks, malformed records. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "memtally/trace.h"
#include "trace/allocs.h"
#include "trace/blocksums.h"
#include "trace_encode.h"

static char path[] = "/tmp/memtally-unit-XXXXXX";
static struct tb_file out; /* the trace being written, at path */

static void file_header(FILE *f, uint32_t version, uint32_t flags)
{
    out.f = f;
    CHECK(tb_file_header(&out, version, flags) == 0);
}

static void block(FILE *f, const struct tb_buf *b, int break_check)
{
    out.f = f;
    CHECK(tb_block(&out, b, (uint32_t)break_check) == 0);
}

static void header_record(struct tb_buf *b)
{
    tb_byte(b, MTL_REC_HEADER);
    tb_var(b, 5);
    tb_var(b, 1), tb_var(b, 1), tb_str(b, "/bin/prog");
    tb_var(b, 3), tb_var(b, 0), tb_var(b, 4242);
    tb_var(b, 8), tb_var(b, 0), tb_var(b, 32);
    tb_var(b, 99), tb_var(b, 0), tb_var(b, 7);        /* unknown key: skipped */
    tb_var(b, 98), tb_var(b, 1), tb_str(b, "future"); /* unknown key: skipped */
}

/* Block 1: definitions and a few events; block 2: more events and END. */
static void good_blocks(struct tb_buf *b1, struct tb_buf *b2, int with_end)
{
    tb_clear(b1);
    tb_clear(b2);
    header_record(b1);
    tb_byte(b1, MTL_REC_MODULE_LOAD);
    tb_var(b1, 0), tb_var(b1, 5), tb_var(b1, 0x400000), tb_str(b1, "/bin/prog");
    tb_var(b1, 2), tb_byte(b1, 0xab), tb_byte(b1, 0xcd);
    tb_var(b1, 1), tb_var(b1, 0), tb_var(b1, 0x1000), tb_var(b1, 5);
    tb_byte(b1, MTL_REC_STACK_NODES);
    tb_var(b1, 1), tb_var(b1, 3);
    tb_var(b1, 1), tb_var(b1, mtl__zigzag(0x400100) << 1); /* 1: main */
    tb_var(b1, 1), tb_var(b1, mtl__zigzag(0x200) << 1);    /* 2: f, called by main */
    tb_var(b1, 2), tb_var(b1, mtl__zigzag(0x400300) << 1); /* 3: g, called by main */
    tb_byte(b1, MTL_REC_THREAD_START), tb_dt(b1, 10), tb_var(b1, 0), tb_var(b1, 4242);
    tb_byte(b1, MTL_REC_THREAD_NAME), tb_dt(b1, 0), tb_var(b1, 0), tb_str(b1, "main");
    tb_byte(b1, MTL_REC_THREAD_SWITCH), tb_var(b1, 0);
    tb_byte(b1, MTL_REC_ALLOC), tb_dt(b1, 5), tb_size(b1, 100), tb_stack(b1, 2), tb_ptr_delta(b1, 0x1000);
    tb_byte(b1, MTL_REC_ALLOC), tb_dt(b1, 0), tb_size(b1, 50), tb_stack(b1, 3), tb_ptr_delta(b1, 0x100);
    /* 0x1000 is the second newest pointer of the window now */
    tb_byte(b2, MTL_REC_FREE), tb_dt(b2, 20), tb_ptr_window(b2, 1);
    tb_byte(b2, MTL_REC_RSS), tb_dt(b2, 1), tb_var(b2, 8192);
    if (with_end)
        tb_byte(b2, MTL_REC_END), tb_dt(b2, 0), tb_var(b2, 0), tb_var(b2, 0);
}

static void write_trace_version(uint32_t version, const struct tb_buf *b1,
                                const struct tb_buf *b2)
{
    FILE *f = fopen(path, "wb");
    file_header(f, version, 0);
    block(f, b1, 0);
    if (b2)
        block(f, b2, 0);
    fclose(f);
}

static void write_trace(const struct tb_buf *b1, const struct tb_buf *b2)
{
    write_trace_version(1, b1, b2);
}

/* Reads to the end; returns mtl_reader_next's final code, counts events. */
static int read_all(int *allocs, int *frees)
{
    struct mtl_reader *r;
    int rc = mtl_reader_open(&r, path);
    if (rc < 0)
        return rc;
    struct mtl_event ev;
    *allocs = *frees = 0;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        *allocs += ev.type == MTL_EV_ALLOC;
        *frees += ev.type == MTL_EV_FREE;
    }
    mtl_reader_close(r);
    return rc;
}

static void test_good(void)
{
    struct tb_buf b1, b2;
    good_blocks(&b1, &b2, 1);
    write_trace(&b1, &b2);
    struct mtl_reader *r;
    CHECK(mtl_reader_open(&r, path) == 0);
    const struct mtl_trace_info *in = mtl_reader_info(r);
    CHECK(strcmp(in->program, "/bin/prog") == 0);
    CHECK_EQ(in->pid, 4242);
    CHECK_EQ(in->max_depth, 32);
    CHECK_EQ(in->mode, MTL_MODE_FULL);

    struct mtl_event ev;
    enum mtl_event_type expect[] = { MTL_EV_MODULE_LOAD, MTL_EV_THREAD_START,
                                     MTL_EV_THREAD_NAME, MTL_EV_ALLOC, MTL_EV_ALLOC,
                                     MTL_EV_FREE, MTL_EV_RSS };
    uint64_t times[] = { 5, 10, 10, 15, 15, 35, 36 };
    for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
        CHECK(mtl_reader_next(r, &ev) == 1);
        CHECK_EQ(ev.type, expect[i]);
        CHECK_EQ(ev.time_us, times[i]);
        if (i == 3) {
            CHECK_EQ(ev.ptr, 0x1000);
            CHECK_EQ(ev.size, 100);
            CHECK_EQ(ev.stack, 2);
            CHECK_EQ(ev.thread, 0);
            CHECK(ev.weight_count == 1 && ev.weight_bytes == 100);
        }
        if (i == 4)
            CHECK_EQ(ev.ptr, 0x1100);
        if (i == 5)
            CHECK_EQ(ev.ptr, 0x1000);
        if (i == 6)
            CHECK_EQ(ev.size, 8192);
    }
    CHECK(mtl_reader_next(r, &ev) == 0);
    CHECK(in->complete && !in->truncated);
    CHECK_EQ(in->duration_us, 36);
    CHECK_EQ(mtl_reader_blocks(r), 2);

    /* Stack 2 is f called by main; stack 3 is g called by main. */
    struct mtl_frame fr[4];
    CHECK_EQ(mtl_reader_stack(r, 2, fr, 4), 2);
    CHECK_EQ(fr[0].addr, 0x400300);
    CHECK_EQ(fr[1].addr, 0x400100);
    CHECK_EQ(fr[0].module, 0);
    CHECK_EQ(mtl_reader_stack(r, 3, fr, 1), 2); /* depth beyond cap */
    CHECK_EQ(fr[0].addr, 0x800400);
    CHECK_EQ(fr[0].module, UINT32_MAX);         /* outside every module */
    CHECK_EQ(mtl_reader_stack(r, 0, fr, 4), 0);
    CHECK(mtl_reader_stack(r, 4, fr, 4) == MTL_EINVAL);
    uint32_t parent;
    CHECK(mtl_reader_stack_node(r, 2, &parent, fr) == 0);
    CHECK_EQ(parent, 1);

    const struct mtl_module *m = mtl_reader_module(r, 0);
    CHECK(m && strcmp(m->path, "/bin/prog") == 0);
    CHECK_EQ(m->build_id_size, 2);
    CHECK_EQ(m->build_id[1], 0xcd);
    CHECK_EQ(m->nsegments, 1);
    const struct mtl_thread *t = mtl_reader_thread(r, 0);
    CHECK(t && strcmp(t->name, "main") == 0);
    CHECK_EQ(t->tid, 4242);
    CHECK(mtl_reader_thread(r, 1) == NULL);
    mtl_reader_close(r);
}

static void test_truncated(void)
{
    struct tb_buf b1, b2;
    int a, f;
    /* No END record. */
    good_blocks(&b1, &b2, 0);
    write_trace(&b1, &b2);
    struct mtl_reader *r;
    CHECK(mtl_reader_open(&r, path) == 0);
    struct mtl_event ev;
    while (mtl_reader_next(r, &ev) > 0)
        ;
    CHECK(mtl_reader_info(r)->truncated);
    mtl_reader_close(r);

    /* Cut at every byte of the second block: the first block's two
     * allocations are read, never a crash, never the free. */
    good_blocks(&b1, &b2, 1);
    write_trace(&b1, &b2);
    FILE *fp = fopen(path, "rb");
    fseek(fp, 0, SEEK_END);
    long full = ftell(fp);
    fclose(fp);
    for (long cut = full - 1; cut > 16; cut--) {
        CHECK(truncate(path, cut) == 0);
        int rc = read_all(&a, &f);
        if (rc == MTL_ECORRUPT)
            break; /* cut inside the first block: the header is gone */
        CHECK_EQ(rc, 0);
        CHECK(a == 2 || a == 0);
        CHECK_EQ(f, 0);
    }
}

static void expect_open_error(int code)
{
    struct mtl_reader *r;
    CHECK_EQ(mtl_reader_open(&r, path), code);
}

static void test_damage(void)
{
    struct tb_buf b1, b2;
    int a, f;
    FILE *fp;

    fp = fopen(path, "wb");
    file_header(fp, MTL_FORMAT_VERSION + 1, 0); /* a version newer than this reader's */
    fclose(fp);
    expect_open_error(MTL_EVERSION);
    fp = fopen(path, "wb");
    file_header(fp, 0, 0);
    fclose(fp);
    expect_open_error(MTL_EVERSION);

    good_blocks(&b1, &b2, 1);
    fp = fopen(path, "wb");
    file_header(fp, 1, 1);
    block(fp, &b1, 0);
    fclose(fp);
    expect_open_error(MTL_ECORRUPT);

    fp = fopen(path, "wb");
    fputs("not a trace at all", fp);
    fclose(fp);
    expect_open_error(MTL_ENOTTRACE);

    fp = fopen(path, "wb");
    file_header(fp, 1, 0);
    fclose(fp);
    expect_open_error(MTL_ECORRUPT); /* no header record at all */

    /* A block written twice: its number no longer matches its place. */
    fp = fopen(path, "wb");
    file_header(fp, 1, 0);
    block(fp, &b1, 0);
    block(fp, &b2, 0);
    out.seq--;
    block(fp, &b2, 0);
    fclose(fp);
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);

    /* A block whose check word is wrong, after a good one. */
    fp = fopen(path, "wb");
    file_header(fp, 1, 0);
    block(fp, &b1, 0);
    block(fp, &b2, 1);
    fclose(fp);
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);

    /* Malformed records in the second block. */
    for (int i = 0; i < 10; i++) {
        static struct tb_buf bad;
        tb_clear(&bad);
        switch (i) {
        case 0: /* parent_delta 0 */
            tb_byte(&bad, MTL_REC_STACK_NODES), tb_var(&bad, 4), tb_var(&bad, 1), tb_var(&bad, 0), tb_var(&bad, 0);
            break;
        case 1: /* first != count so far */
            tb_byte(&bad, MTL_REC_STACK_NODES), tb_var(&bad, 9), tb_var(&bad, 1), tb_var(&bad, 1), tb_var(&bad, 0);
            break;
        case 2: /* stack 77 undefined */
            tb_byte(&bad, MTL_REC_ALLOC), tb_dt(&bad, 0), tb_size(&bad, 1), tb_stack(&bad, 77), tb_ptr_delta(&bad, 8);
            break;
        case 3: /* unknown record type */
            tb_byte(&bad, 0x7f);
            break;
        case 4: /* a FREE whose pointer field is missing */
            tb_byte(&bad, MTL_REC_FREE), tb_dt(&bad, 0);
            break;
        case 5: /* module 5 undefined */
            tb_byte(&bad, MTL_REC_MODULE_UNLOAD), tb_var(&bad, 5), tb_var(&bad, 0);
            break;
        case 6: /* unknown ALLOC_EX flag */
            tb_byte(&bad, MTL_REC_ALLOC_EX), tb_dt(&bad, 0), tb_size(&bad, 1), tb_stack(&bad, 1);
            tb_ptr_delta(&bad, 8), tb_var(&bad, 4);
            break;
        case 7: /* a window index past the window */
            tb_byte(&bad, MTL_REC_FREE), tb_dt(&bad, 0), tb_ptr_window(&bad, MTL_PTR_WINDOW);
            break;
        case 8: /* a field left over in a stream */
            tb_byte(&bad, MTL_REC_FREE), tb_dt(&bad, 0), tb_ptr_delta(&bad, 8), tb_size(&bad, 3);
            break;
        case 9: /* the wrong number of streams */
            tb_byte(&bad, MTL_REC_FREE), tb_dt(&bad, 0), tb_ptr_delta(&bad, 8);
            bad.bad_count = 1;
            break;
        }
        write_trace(&b1, &bad);
        int rc = read_all(&a, &f);
        if (rc != MTL_ECORRUPT)
            fprintf(stderr, "bad record %d read as %d\n", i, rc);
        CHECK_EQ(rc, MTL_ECORRUPT);
    }

    unlink(path);
    expect_open_error(MTL_ENOENT);
    expect_open_error(MTL_ENOENT);
    char dir[] = "/tmp";
    struct mtl_reader *r;
    CHECK_EQ(mtl_reader_open(&r, dir), MTL_EINVAL);
    CHECK(strcmp(mtl_strerror(MTL_ECORRUPT), "corrupt trace") == 0);
    CHECK(strcmp(mtl_strerror(12345), "unknown error") == 0);
}

/* END, then more records (an exec that failed), then END again: complete;
 * without the second END: truncated. */
static void test_records_after_end(void)
{
    struct tb_buf b1, b2;
    good_blocks(&b1, &b2, 1);
    tb_byte(&b2, MTL_REC_ALLOC), tb_dt(&b2, 1), tb_size(&b2, 8), tb_stack(&b2, 1), tb_ptr_delta(&b2, 64);
    write_trace(&b1, &b2);
    int a, f;
    struct mtl_reader *r;
    CHECK_EQ(read_all(&a, &f), 0);
    CHECK_EQ(a, 3);
    CHECK(mtl_reader_open(&r, path) == 0);
    struct mtl_event ev;
    while (mtl_reader_next(r, &ev) > 0)
        ;
    CHECK(mtl_reader_info(r)->truncated && !mtl_reader_info(r)->complete);
    mtl_reader_close(r);
    tb_byte(&b2, MTL_REC_END), tb_dt(&b2, 0), tb_var(&b2, 1), tb_var(&b2, 0);
    write_trace(&b1, &b2);
    CHECK(mtl_reader_open(&r, path) == 0);
    while (mtl_reader_next(r, &ev) > 0)
        ;
    CHECK(!mtl_reader_info(r)->truncated && mtl_reader_info(r)->complete);
    mtl_reader_close(r);
}

/* TAG (version 2): the block at its pointer gets a type tag; in a
 * version 1 file the record is corrupt. */
static void test_tag(void)
{
    struct tb_buf b1, b2;
    good_blocks(&b1, &b2, 0);
    tb_byte(&b2, MTL_REC_STRING), tb_var(&b2, 1), tb_str(&b2, "Node");
    /* the last pointer was 0x1000 (the free): 0x1100 is the block of 50 */
    tb_byte(&b2, MTL_REC_TAG), tb_dt(&b2, 3), tb_ptr_delta(&b2, 0x100), tb_var(&b2, 1);
    tb_byte(&b2, MTL_REC_END), tb_dt(&b2, 0), tb_var(&b2, 0), tb_var(&b2, 0);
    write_trace_version(2, &b1, &b2);
    struct mtl_reader *r;
    CHECK(mtl_reader_open(&r, path) == 0);
    CHECK_EQ(mtl_reader_info(r)->version, 2);
    struct mtl_event ev;
    int tags = 0, rc;
    while ((rc = mtl_reader_next(r, &ev)) > 0)
        if (ev.type == MTL_EV_TAG) {
            tags++;
            CHECK_EQ(ev.ptr, 0x1100);
            CHECK_EQ(ev.tag, 1);
            CHECK(strcmp(mtl_reader_string(r, ev.tag), "Node") == 0);
        }
    CHECK_EQ(rc, 0);
    CHECK_EQ(tags, 1);
    CHECK(mtl_reader_info(r)->complete);
    mtl_reader_close(r);
    write_trace_version(1, &b1, &b2);
    int a, f;
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);
}

/* A collector's block (ALLOC_EX flag 2, version 3) and GC_HEAP: a reader
 * gives malloc's heap by default, the collector's when asked, both when
 * asked; its free goes with it.  In a version 2 file the flag is corrupt. */
static void gc_blocks(struct tb_buf *b1, struct tb_buf *b2)
{
    good_blocks(b1, b2, 0);
    /* the last pointer was 0x1000 (the free) */
    tb_byte(b2, MTL_REC_ALLOC_EX), tb_dt(b2, 2), tb_size(b2, 64), tb_stack(b2, 3),
        tb_ptr_delta(b2, 0x8000), tb_var(b2, MTL_ALLOC_EX_GC);
    tb_byte(b2, MTL_REC_GC_HEAP), tb_dt(b2, 1), tb_var(b2, 65536);
    tb_byte(b2, MTL_REC_FREE), tb_dt(b2, 1), tb_ptr_window(b2, 0); /* the block of 64 */
    tb_byte(b2, MTL_REC_END), tb_dt(b2, 0), tb_var(b2, 0), tb_var(b2, 0);
}

static void count_heap(unsigned heaps, int *allocs, int *frees, int *gc_allocs, int *gc_heap)
{
    struct mtl_reader *r;
    struct mtl_event ev;
    int rc;
    *allocs = *frees = *gc_allocs = *gc_heap = 0;
    CHECK(mtl_reader_open(&r, path) == 0);
    if (heaps)
        mtl_reader_heaps(r, heaps);
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        *allocs += ev.type == MTL_EV_ALLOC;
        *frees += ev.type == MTL_EV_FREE;
        *gc_allocs += ev.type == MTL_EV_ALLOC && ev.heap == MTL_HEAP_GC;
        if (ev.type == MTL_EV_GC_HEAP)
            *gc_heap = (int)ev.size;
    }
    CHECK_EQ(rc, 0);
    CHECK(mtl_reader_info(r)->complete);
    CHECK_EQ(mtl_reader_info(r)->other_heap_allocations,
             heaps == MTL_HEAPS_ALL ? 0 : heaps == MTL_HEAPS_GC ? 2 : 1);
    mtl_reader_close(r);
}

static void test_gc_heap(void)
{
    struct tb_buf b1, b2;
    int a, f, g, h;
    gc_blocks(&b1, &b2);
    write_trace_version(3, &b1, &b2);
    count_heap(0, &a, &f, &g, &h); /* malloc's: 2 blocks, 1 free */
    CHECK(a == 2 && f == 1 && g == 0 && h == 0);
    count_heap(MTL_HEAPS_GC, &a, &f, &g, &h);
    CHECK(a == 1 && f == 1 && g == 1 && h == 65536);
    count_heap(MTL_HEAPS_ALL, &a, &f, &g, &h);
    CHECK(a == 3 && f == 2 && g == 1 && h == 65536);
    write_trace_version(2, &b1, &b2);
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);
}

/* Version 5's TIME stream, tokens written by hand from docs/FORMAT.md
 * ("Times"): t >> 1 zeros, then a 1 (t even) or the number after t (t
 * odd; none when it is 0).  Records without pointers, so that nothing
 * else of version 4 is needed: a thread start, RSS samples and END. */
static void time_blocks(struct tb_buf *b, const uint64_t *tokens, size_t ntokens, int records)
{
    tb_clear(b);
    header_record(b);
    tb_byte(b, MTL_REC_THREAD_START), tb_var(b, 0), tb_var(b, 4242);
    for (int i = 0; i < records; i++)
        tb_byte(b, MTL_REC_RSS), tb_var(b, 4096 * (uint64_t)(i + 1));
    tb_byte(b, MTL_REC_END), tb_var(b, 0), tb_var(b, 0);
    for (size_t i = 0; i < ntokens; i++)
        tb_dt(b, tokens[i]);
}

static void test_time_runs(void)
{
    /* dt 10; 0, 0, 1; 0, 5; then 0 for the last two RSS and the END */
    const uint64_t tokens[] = { 1, 10, 2 << 1, 1 << 1 | 1, 5, 3 << 1 | 1, 0 };
    const uint64_t times[] = { 10, 10, 10, 11, 11, 16, 16, 16, 16 };
    struct tb_buf b;
    time_blocks(&b, tokens, sizeof tokens / sizeof *tokens, 7);
    write_trace_version(MTL_FORMAT_TIME_RUNS_FIRST, &b, NULL);
    struct mtl_reader *r;
    CHECK(mtl_reader_open(&r, path) == 0);
    struct mtl_event ev;
    size_t n = 0;
    int rc;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        CHECK(n < sizeof times / sizeof *times);
        CHECK_EQ(ev.time_us, times[n]);
        n++;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(n, 8); /* END is not an event */
    CHECK(mtl_reader_info(r)->complete);
    CHECK_EQ(mtl_reader_info(r)->duration_us, 16);
    mtl_reader_close(r);

    /* The same tokens read as one number a record (version 4): seven
     * numbers for nine records, corrupt. */
    write_trace_version(4, &b, NULL);
    int a, f;
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);

    /* Version 6 has a sixth stream (an address's second values), here
     * empty: read as version 5's five, the block is corrupt; with it, the
     * same events. */
    write_trace_version(MTL_FORMAT_PTR_MORE_FIRST, &b, NULL);
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);
    b.empty_more = 1;
    write_trace_version(MTL_FORMAT_PTR_MORE_FIRST, &b, NULL);
    CHECK_EQ(read_all(&a, &f), 0);
    write_trace_version(MTL_FORMAT_TIME_RUNS_FIRST, &b, NULL);
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);
    /* Version 7 has a seventh (the frees' address codes). */
    write_trace_version(MTL_FORMAT_PTR_FREE_FIRST, &b, NULL);
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);
    b.empty_more = 2;
    write_trace_version(MTL_FORMAT_PTR_FREE_FIRST, &b, NULL);
    CHECK_EQ(read_all(&a, &f), 0);
    write_trace_version(MTL_FORMAT_PTR_MORE_FIRST, &b, NULL);
    CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);
    b.empty_more = 0;

    /* A run past the block's records; a run a record short; an odd token
     * without its number; a run of 2^62: each corrupt, none a crash. */
    const uint64_t long_run[] = { 1, 10, 20 << 1 | 1, 0 };
    const uint64_t short_run[] = { 1, 10, 6 << 1 | 1, 0 }; /* 8 wanted */
    const uint64_t no_number[] = { 1, 10, 7 << 1 | 1 };
    const uint64_t huge[] = { 1, 10, 1ull << 63 | 1, 0 };
    const uint64_t *bad[] = { long_run, short_run, no_number, huge };
    const size_t nbad[] = { 4, 4, 3, 4 };
    for (int i = 0; i < 4; i++) {
        time_blocks(&b, bad[i], nbad[i], 7);
        write_trace_version(MTL_FORMAT_TIME_RUNS_FIRST, &b, NULL);
        CHECK_EQ(read_all(&a, &f), MTL_ECORRUPT);
    }
}

/* Version 10's runs (docs/FORMAT.md, "Runs"), pointers left out (the
 * reader skips them): MAIN's ALLOC opens a run of three allocations
 * followed by two frees (RUNS 2<<1|1, then 1<<1); an RSS; MAIN's FREE
 * opens a run of one, followed by a run of one allocation.  Every record
 * 1 us after the one before: the token 0 ("Times"). */
static void runs_block(struct tb_buf *b, uint64_t first_more, int extra_value)
{
    tb_clear(b);
    b->all_streams = 1;
    header_record(b);
    tb_byte(b, MTL_REC_STACK_NODES);
    tb_var(b, 1), tb_var(b, 2);
    tb_var(b, 1), tb_var(b, mtl__zigzag(0x400100) << 1);
    tb_var(b, 1), tb_var(b, mtl__zigzag(0x200) << 1);
    tb_byte(b, MTL_REC_THREAD_START), tb_var(b, 0), tb_var(b, 4242);
    tb_byte(b, MTL_REC_ALLOC), tb_run(b, first_more, 1), tb_run(b, 1, 0);
    tb_byte(b, MTL_REC_RSS), tb_var(b, 8192);
    tb_byte(b, MTL_REC_FREE), tb_run(b, 0, 1), tb_run(b, 0, 0);
    if (extra_value)
        tb_run(b, 0, 0);
    tb_byte(b, MTL_REC_END), tb_var(b, 0), tb_var(b, 0);
    for (int i = 0; i < 10; i++)
        tb_dt(b, 0);
    const uint64_t sizes[] = { 10, 20, 30, 40 }, stacks[] = { 1, 2, 1, 2 };
    uint64_t last = 0;
    for (int i = 0; i < 4; i++) {
        tb_size(b, sizes[i]);
        tb_stack(b, mtl__zigzag((int64_t)stacks[i] - (int64_t)last));
        last = stacks[i];
    }
}

/* Reads path's events without pointers: their types as letters (a, f,
 * r: RSS, s: thread start), each at 1 us after the one before. */
static int read_runs(char *types, size_t cap)
{
    struct mtl_reader *r;
    int rc = mtl_reader_open(&r, path);
    if (rc < 0)
        return rc;
    mtl_reader_skip_pointers(r, 1);
    struct mtl_event ev;
    size_t n = 0;
    while ((rc = mtl_reader_next(r, &ev)) > 0 && n + 1 < cap) {
        CHECK_EQ(ev.time_us, n + 1);
        types[n++] = ev.type == MTL_EV_ALLOC ? 'a' : ev.type == MTL_EV_FREE ? 'f'
                     : ev.type == MTL_EV_RSS ? 'r' : ev.type == MTL_EV_THREAD_START ? 's' : '?';
    }
    types[n] = 0;
    if (rc == 0 && !mtl_reader_info(r)->complete)
        rc = -1000;
    mtl_reader_close(r);
    return rc;
}

static void test_runs(void)
{
    struct tb_buf b;
    char types[64];
    runs_block(&b, 2, 0);
    write_trace_version(MTL_FORMAT_RUNS_FIRST, &b, NULL);
    CHECK_EQ(read_runs(types, sizeof types), 0);
    CHECK(strcmp(types, "saaaffrfa") == 0);

    /* The same allocations one by one, and summed per stack. */
    struct mtl_reader *r;
    CHECK(mtl_reader_open(&r, path) == 0);
    mtl_reader_skip_pointers(r, 1);
    static struct mtl_allocs got;
    CHECK_EQ(mtl__reader_allocs(r, &got), 1);
    CHECK_EQ(got.n, 4);
    const uint64_t seq[] = { 0, 1, 2, 6 }, time[] = { 2, 3, 4, 9 };
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(got.seq[i], seq[i]);
        CHECK_EQ(got.time_us[i], time[i]);
        CHECK_EQ(got.size[i], 10 * (uint64_t)(i + 1));
        CHECK_EQ(got.stack[i], i % 2 ? 2 : 1);
    }
    CHECK_EQ(mtl__reader_allocs(r, &got), 0);
    CHECK_EQ(mtl_reader_info(r)->duration_us, 10);
    mtl_reader_close(r);
    CHECK(mtl_reader_open(&r, path) == 0);
    mtl_reader_skip_pointers(r, 1);
    const struct mtl_block_sums *s;
    CHECK_EQ(mtl__reader_alloc_sums(r, &s), 1);
    CHECK_EQ(s->allocs, 4);
    CHECK_EQ(s->n, 2);
    CHECK_EQ(mtl__reader_alloc_sums(r, &s), 0);
    CHECK_EQ(mtl_reader_info(r)->duration_us, 10);
    CHECK(mtl_reader_info(r)->complete);
    mtl_reader_close(r);

    /* Damage: a run longer than the block's records (the times run out);
     * a RUNS value no run used; the same block as version 9, which has no
     * RUNS stream.  Each corrupt on every path, none a crash. */
    for (int k = 0; k < 3; k++) {
        runs_block(&b, k == 0 ? 1000 : 2, k == 1);
        write_trace_version(k == 2 ? MTL_FORMAT_RUNS_FIRST - 1 : MTL_FORMAT_RUNS_FIRST, &b, NULL);
        CHECK_EQ(read_runs(types, sizeof types), MTL_ECORRUPT);
        int rc = mtl_reader_open(&r, path); /* version 9: its first block */
        if (rc == 0) {
            mtl_reader_skip_pointers(r, 1);
            while ((rc = mtl__reader_alloc_sums(r, &s)) > 0)
                ;
            mtl_reader_close(r);
        }
        CHECK_EQ(rc, MTL_ECORRUPT);
    }
}

int main(void)
{
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    test_good();
    test_truncated();
    test_records_after_end();
    test_tag();
    test_gc_heap();
    test_time_runs();
    test_runs();
    test_damage();
    unlink(path);
    CHECKS_DONE();
}
