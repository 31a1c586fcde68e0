/*
 * encoder_mem.h: the recorder's own encoder (src/trace/encoder.c) writing
 * a trace into memory, for the unit tests that read back what it wrote
 * (test_ptrcode.c, test_times.c).  Header-only.
 *
 *     static struct em_trace t;
 *     struct mtl_encoder *e = em_begin(&t);
 *     ... mtl_encoder_put_node, mtl_encoder_put_event ...
 *     mtl_encoder_end_values(e, end_us, MTL_END_EXIT, 0);
 *     struct mtl_reader *r = em_open(&t);
 */
#ifndef MTL_TESTS_UNIT_ENCODER_MEM_H
#define MTL_TESTS_UNIT_ENCODER_MEM_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memtally/trace.h"
#include "trace/encoder.h"

struct em_trace {
    struct mtl_encoder enc;
    uint8_t *data;
    size_t len, cap;
};

static int em_sink(void *ctx, const void *p, size_t n)
{
    struct em_trace *t = ctx;
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->data = realloc(t->data, t->cap);
        CHECK(t->data != NULL);
    }
    memcpy(t->data + t->len, p, n);
    t->len += n;
    return 0;
}

/* The encoder of t, begun on an empty trace of program "test". */
static inline struct mtl_encoder *em_begin(struct em_trace *t)
{
    CHECK(mtl_encoder_setup(&t->enc) == 0);
    struct mtl_trace_info info = { .program = "test", .command_line = "test", .pid = 1 };
    t->len = 0;
    CHECK(mtl_encoder_begin_values(&t->enc, &info, em_sink, t) == 0);
    return &t->enc;
}

/* A reader of what t's encoder wrote, which must be this version's. */
static inline struct mtl_reader *em_open(const struct em_trace *t)
{
    struct mtl_reader *r;
    CHECK(mtl_reader_open_memory(&r, t->data, t->len) == 0);
    CHECK_EQ(mtl_reader_info(r)->version, MTL_FORMAT_VERSION);
    return r;
}

#endif
