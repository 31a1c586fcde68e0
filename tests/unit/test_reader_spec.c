/* The reader against docs/FORMAT.md: traces built here by hand, record by
 * record (not by the recorder), and the events, stacks, modules and
 * threads the reader must give back; then every kind of damage the spec
 * names: cut files, bad headers, bad checks, malformed records. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "common/varint.h"
#include "memtally/trace.h"
#include "trace/format.h"

/* A block's payload as docs/FORMAT.md lays it out: one buffer a stream. */
struct buf {
    uint8_t d[MTL_STREAMS][1 << 14];
    size_t n[MTL_STREAMS];
    int bad_count; /* write a wrong number of streams */
};

static void svar_in(struct buf *b, int s, uint64_t v)
{
    b->n[s] = (size_t)(mtl__put_varint(b->d[s] + b->n[s], v) - b->d[s]);
}
static void byte(struct buf *b, uint8_t v) { b->d[MTL_S_MAIN][b->n[MTL_S_MAIN]++] = v; }
static void var(struct buf *b, uint64_t v) { svar_in(b, MTL_S_MAIN, v); }
static void dt(struct buf *b, uint64_t v) { svar_in(b, MTL_S_TIME, v); }
static void size_(struct buf *b, uint64_t v) { svar_in(b, MTL_S_SIZE, v); }
static void stack_(struct buf *b, uint64_t v) { svar_in(b, MTL_S_STACK, v); }
/* A pointer given as a difference from the previous one (not the window). */
static void ptr_delta(struct buf *b, int64_t d)
{
    svar_in(b, MTL_S_PTR, 0);
    svar_in(b, MTL_S_PTR, mtl__zigzag(d));
}
/* A pointer given as the k-th newest of the window (k from 0). */
static void ptr_window(struct buf *b, unsigned k) { svar_in(b, MTL_S_PTR, k + 1); }
static void str(struct buf *b, const char *s)
{
    var(b, strlen(s));
    memcpy(b->d[MTL_S_MAIN] + b->n[MTL_S_MAIN], s, strlen(s));
    b->n[MTL_S_MAIN] += strlen(s);
}

static void clear(struct buf *b)
{
    memset(b->n, 0, sizeof b->n);
    b->bad_count = 0;
}

/* The payload: the stream count and lengths, then the streams. */
static size_t payload(const struct buf *b, uint8_t *out)
{
    uint8_t *p = mtl__put_varint(out, MTL_STREAMS + (unsigned)b->bad_count);
    for (int i = 0; i < MTL_STREAMS; i++)
        p = mtl__put_varint(p, b->n[i]);
    for (int i = 0; i < MTL_STREAMS; i++) {
        memcpy(p, b->d[i], b->n[i]);
        p += b->n[i];
    }
    return (size_t)(p - out);
}

static char path[] = "/tmp/memtally-unit-XXXXXX";
static uint64_t block_seq; /* the next block's number in the file */

static void file_header(FILE *f, uint32_t version, uint32_t flags)
{
    block_seq = 0;
    uint8_t h[16];
    memcpy(h, "MEMTALLY", 8);
    mtl__put_u32le(h + 8, version);
    mtl__put_u32le(h + 12, flags);
    fwrite(h, 1, 16, f);
}

static void block(FILE *f, const struct buf *b, int break_check)
{
    static uint8_t raw[1 << 17], c[1 << 17];
    size_t u = payload(b, raw);
    ZSTD_CCtx *z = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    size_t n = ZSTD_compress2(z, c, sizeof c, raw, u);
    ZSTD_freeCCtx(z);
    CHECK(!ZSTD_isError(n));
    uint8_t h[16];
    mtl__put_u32le(h, MTL_BLOCK_MAGIC);
    mtl__put_u32le(h + 4, (uint32_t)n);
    mtl__put_u32le(h + 8, (uint32_t)u);
    mtl__put_u32le(h + 12, mtl__block_check((uint32_t)n, (uint32_t)u, block_seq++) ^
                               (uint32_t)break_check);
    fwrite(h, 1, 16, f);
    fwrite(c, 1, n, f);
}

static void header_record(struct buf *b)
{
    byte(b, MTL_REC_HEADER);
    var(b, 5);
    var(b, 1), var(b, 1), str(b, "/bin/prog");
    var(b, 3), var(b, 0), var(b, 4242);
    var(b, 8), var(b, 0), var(b, 32);
    var(b, 99), var(b, 0), var(b, 7);        /* unknown key: skipped */
    var(b, 98), var(b, 1), str(b, "future"); /* unknown key: skipped */
}

/* Block 1: definitions and a few events; block 2: more events and END. */
static void good_blocks(struct buf *b1, struct buf *b2, int with_end)
{
    clear(b1);
    clear(b2);
    header_record(b1);
    byte(b1, MTL_REC_MODULE_LOAD);
    var(b1, 0), var(b1, 5), var(b1, 0x400000), str(b1, "/bin/prog");
    var(b1, 2), byte(b1, 0xab), byte(b1, 0xcd);
    var(b1, 1), var(b1, 0), var(b1, 0x1000), var(b1, 5);
    byte(b1, MTL_REC_STACK_NODES);
    var(b1, 1), var(b1, 3);
    var(b1, 1), var(b1, mtl__zigzag(0x400100) << 1); /* 1: main */
    var(b1, 1), var(b1, mtl__zigzag(0x200) << 1);    /* 2: f, called by main */
    var(b1, 2), var(b1, mtl__zigzag(0x400300) << 1); /* 3: g, called by main */
    byte(b1, MTL_REC_THREAD_START), dt(b1, 10), var(b1, 0), var(b1, 4242);
    byte(b1, MTL_REC_THREAD_NAME), dt(b1, 0), var(b1, 0), str(b1, "main");
    byte(b1, MTL_REC_THREAD_SWITCH), var(b1, 0);
    byte(b1, MTL_REC_ALLOC), dt(b1, 5), size_(b1, 100), stack_(b1, 2), ptr_delta(b1, 0x1000);
    byte(b1, MTL_REC_ALLOC), dt(b1, 0), size_(b1, 50), stack_(b1, 3), ptr_delta(b1, 0x100);
    /* 0x1000 is the second newest pointer of the window now */
    byte(b2, MTL_REC_FREE), dt(b2, 20), ptr_window(b2, 1);
    byte(b2, MTL_REC_RSS), dt(b2, 1), var(b2, 8192);
    if (with_end)
        byte(b2, MTL_REC_END), dt(b2, 0), var(b2, 0), var(b2, 0);
}

static void write_trace(const struct buf *b1, const struct buf *b2)
{
    FILE *f = fopen(path, "wb");
    file_header(f, 1, 0);
    block(f, b1, 0);
    if (b2)
        block(f, b2, 0);
    fclose(f);
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
    struct buf b1, b2;
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
    struct buf b1, b2;
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
    struct buf b1, b2;
    int a, f;
    FILE *fp;

    fp = fopen(path, "wb");
    file_header(fp, 2, 0);
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
    block_seq--;
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
        static struct buf bad;
        clear(&bad);
        switch (i) {
        case 0: /* parent_delta 0 */
            byte(&bad, MTL_REC_STACK_NODES), var(&bad, 4), var(&bad, 1), var(&bad, 0), var(&bad, 0);
            break;
        case 1: /* first != count so far */
            byte(&bad, MTL_REC_STACK_NODES), var(&bad, 9), var(&bad, 1), var(&bad, 1), var(&bad, 0);
            break;
        case 2: /* stack 77 undefined */
            byte(&bad, MTL_REC_ALLOC), dt(&bad, 0), size_(&bad, 1), stack_(&bad, 77), ptr_delta(&bad, 8);
            break;
        case 3: /* unknown record type */
            byte(&bad, 0x7f);
            break;
        case 4: /* a FREE whose pointer field is missing */
            byte(&bad, MTL_REC_FREE), dt(&bad, 0);
            break;
        case 5: /* module 5 undefined */
            byte(&bad, MTL_REC_MODULE_UNLOAD), var(&bad, 5), var(&bad, 0);
            break;
        case 6: /* unknown ALLOC_EX flag */
            byte(&bad, MTL_REC_ALLOC_EX), dt(&bad, 0), size_(&bad, 1), stack_(&bad, 1);
            ptr_delta(&bad, 8), var(&bad, 4);
            break;
        case 7: /* a window index past the window */
            byte(&bad, MTL_REC_FREE), dt(&bad, 0), ptr_window(&bad, MTL_PTR_WINDOW);
            break;
        case 8: /* a field left over in a stream */
            byte(&bad, MTL_REC_FREE), dt(&bad, 0), ptr_delta(&bad, 8), size_(&bad, 3);
            break;
        case 9: /* the wrong number of streams */
            byte(&bad, MTL_REC_FREE), dt(&bad, 0), ptr_delta(&bad, 8);
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
    struct buf b1, b2;
    good_blocks(&b1, &b2, 1);
    byte(&b2, MTL_REC_ALLOC), dt(&b2, 1), size_(&b2, 8), stack_(&b2, 1), ptr_delta(&b2, 64);
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
    byte(&b2, MTL_REC_END), dt(&b2, 0), var(&b2, 1), var(&b2, 0);
    write_trace(&b1, &b2);
    CHECK(mtl_reader_open(&r, path) == 0);
    while (mtl_reader_next(r, &ev) > 0)
        ;
    CHECK(!mtl_reader_info(r)->truncated && mtl_reader_info(r)->complete);
    mtl_reader_close(r);
}

int main(void)
{
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    test_good();
    test_truncated();
    test_records_after_end();
    test_damage();
    unlink(path);
    CHECKS_DONE();
}
