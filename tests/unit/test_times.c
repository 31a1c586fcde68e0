/* test_times: version 5's coding of times (runs of zero differences,
 * docs/FORMAT.md "Times") gives back every record's time exactly, through
 * the encoder and both ways of reading (event by event, and the batches of
 * allocations): runs of every length, a run cut by a block's end, runs at
 * a block's end, differences of one and of many bits.  And an encoder
 * used again (memtally record keeps those of ended followed processes),
 * or given back and set up anew, writes the same trace byte for byte. */
#include <string.h>

#include "check.h"
#include "memtally/trace.h"
#include "trace/allocs.h"
#include "encoder_mem.h"

#define EVENTS 3000000 /* blocks of both sizes (encoder.c) */

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t *when; /* each allocation's time */

static struct em_trace trace;

/* The next difference: mostly 0 and 1 as in a real trace, now and then a
 * long run of zeros, a few bits, or many. */
static uint64_t next_dt(void)
{
    uint64_t r = check_xorshift(&rng) % 1000;
    if (r < 850)
        return 0;
    if (r < 980)
        return 1;
    if (r < 995)
        return 2 + check_xorshift(&rng) % 300;
    return check_xorshift(&rng) >> (40 + check_xorshift(&rng) % 24);
}

static void write_trace(void)
{
    struct mtl_encoder *e = em_begin(&trace);
    mtl_encoder_put_node(e, 1, 0, 0, 0x400000, 0);
    struct mtl_event ev = { .type = MTL_EV_THREAD_START };
    mtl_encoder_put_event(e, &ev, 100, NULL);
    uint64_t t = 0;
    for (size_t i = 0; i < EVENTS; i++) {
        /* Now and then a run of 5,000 zeros: longer than a byte's run. */
        if (i % 300000 == 7)
            for (int k = 0; k < 5000 && i < EVENTS - 1; k++, i++)
                when[i] = t;
        t += next_dt();
        when[i] = t;
    }
    for (size_t i = 0; i < EVENTS; i++) {
        struct mtl_event a = { .type = MTL_EV_ALLOC, .ptr = 0x10000 + 16 * i, .size = 16,
                               .stack = 1, .time_us = when[i] };
        mtl_encoder_put_event(e, &a, 0, NULL);
    }
    mtl_encoder_end_values(e, t, MTL_END_EXIT, 0);
    CHECK(!e->failed);
}

static void read_events(void)
{
    struct mtl_reader *r = em_open(&trace);
    struct mtl_event ev;
    size_t i = 0, wrong = 0;
    int rc;
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        if (ev.type != MTL_EV_ALLOC)
            continue;
        CHECK(i < EVENTS);
        wrong += ev.time_us != when[i];
        i++;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(i, EVENTS);
    CHECK_EQ(wrong, 0);
    CHECK(mtl_reader_info(r)->complete);
    CHECK(mtl_reader_blocks(r) > 3);
    CHECK_EQ(mtl_reader_info(r)->duration_us, when[EVENTS - 1]);
    mtl_reader_close(r);
}

static void read_batches(void)
{
    struct mtl_reader *r = em_open(&trace);
    static struct mtl_allocs b;
    size_t i = 0, wrong = 0;
    int rc;
    while ((rc = mtl__reader_allocs(r, &b)) > 0) {
        CHECK(i + b.n <= EVENTS);
        for (size_t k = 0; k < b.n; k++)
            wrong += b.time_us[k] != when[i + k];
        i += b.n;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(i, EVENTS);
    CHECK_EQ(wrong, 0);
    mtl_reader_close(r);
}

/* The trace again, by the encoder as the first left it, then by one given
 * back (mtl_encoder_release) and set up anew: the same bytes. */
static void encoder_again(void)
{
    size_t len = trace.len;
    uint8_t *first = malloc(len);
    CHECK(first != NULL);
    memcpy(first, trace.data, len);
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            mtl_encoder_release(&trace.enc);
            CHECK(trace.enc.zc == NULL && trace.enc.pc == NULL && trace.enc.raw == NULL);
        }
        rng = 0x2545f4914f6cdd1dull;
        write_trace();
        CHECK_EQ(trace.len, len);
        CHECK(memcmp(trace.data, first, len) == 0);
    }
    mtl_encoder_release(&trace.enc);
    free(first);
}

int main(void)
{
    when = malloc(EVENTS * sizeof *when);
    CHECK(when != NULL);
    write_trace();
    read_events();
    read_batches();
    encoder_again();
    free(when);
    free(trace.data);
    CHECKS_DONE();
}
