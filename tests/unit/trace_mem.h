/*
 * trace_mem.h: traces written in memory, event by event, for the unit
 * tests of the engine (test_scan.c, test_analyses.c), with the encoder
 * of tests/trace_encode.h (kept apart from the recorder's on purpose, see
 * there).  What tests/tools/mktrace does from a text description, as C
 * calls: stacks are made of custom frames named by strings (docs/FORMAT.md,
 * "Stacks"), so the analyses name them without any binary; pointers take
 * the window coding when the window holds them, else the difference
 * (version 3: readers still read it; the recorder writes the newest).
 * Header-only.
 *
 *     struct tm_trace t;
 *     tm_open(&t, MTL_MODE_FULL, 0);
 *     uint32_t s = tm_stack(&t, "f", "main", NULL);    innermost first
 *     tm_thread(&t, 0, 0, 100, "main");
 *     tm_alloc(&t, 10, 0, 0x1000, 64, s);
 *     tm_free(&t, 20, 0, 0x1000);
 *     tm_end(&t, 30);
 *     tm_close(&t);           t.data, t.size: the trace
 *     ...
 *     tm_release(&t);
 *
 * Mistakes of the test (time going back, an unknown thread) fail a CHECK.
 */
#ifndef MTL_TESTS_UNIT_TRACE_MEM_H
#define MTL_TESTS_UNIT_TRACE_MEM_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "trace_encode.h"

#define TM_MAX_NODES 4096
#define TM_MAX_STRINGS 1024
#define TM_MAX_FRAMES 64

struct tm_trace {
    char *data;             /* the trace, once closed */
    size_t size;
    struct tb_file out;     /* out.f: a memory stream until closed */
    struct tb_buf *b;       /* the block being filled */
    uint64_t now;           /* time of the last record with a dt */
    uint64_t window[MTL_PTR_WINDOW]; /* the newest at window[head] */
    unsigned head;
    int64_t cur_thread;     /* of the last THREAD_SWITCH, -1 before any */
    uint32_t threads;       /* started */
    uint32_t nnodes;        /* [0] is the root */
    uint32_t parent[TM_MAX_NODES], string[TM_MAX_NODES];
    uint32_t nstrings;
    char *strings[TM_MAX_STRINGS];
};

static inline void tm_flush(struct tm_trace *t)
{
    if (tb_empty(t->b))
        return;
    CHECK(tb_block(&t->out, t->b, 0) == 0);
    tb_clear(t->b);
}

/* Before each record: a new block when a stream is half full. */
static inline void tm_room(struct tm_trace *t)
{
    if (tb_fullest(t->b) > TB_STREAM_CAP / 2)
        tm_flush(t);
}

/* Starts a trace: the file header and the HEADER record (program
 * /bin/unit, pid 4242, the mode and, sampled, its rate, depth 64). */
static inline void tm_open(struct tm_trace *t, enum mtl_mode mode, uint64_t rate)
{
    memset(t, 0, sizeof *t);
    t->cur_thread = -1;
    t->nnodes = 1;
    t->b = calloc(1, sizeof *t->b);
    CHECK(t->b != NULL);
    t->out.f = open_memstream(&t->data, &t->size);
    CHECK(t->out.f != NULL);
    CHECK(tb_file_header(&t->out, MTL_FORMAT_WINDOW_LAST, 0) == 0);
    tb_byte(t->b, MTL_REC_HEADER);
    tb_var(t->b, mode == MTL_MODE_SAMPLED ? 5 : 4);
    tb_var(t->b, 1), tb_var(t->b, 1), tb_str(t->b, "/bin/unit");
    tb_var(t->b, 3), tb_var(t->b, 0), tb_var(t->b, 4242);
    tb_var(t->b, 8), tb_var(t->b, 0), tb_var(t->b, 64);
    tb_var(t->b, 6), tb_var(t->b, 0), tb_var(t->b, (uint64_t)mode);
    if (mode == MTL_MODE_SAMPLED)
        tb_var(t->b, 7), tb_var(t->b, 0), tb_var(t->b, rate);
}

/* The dt field of a record at time us. */
static inline void tm_at(struct tm_trace *t, uint64_t us)
{
    CHECK(us >= t->now);
    tb_dt(t->b, us - t->now);
    t->now = us;
}

static inline uint32_t tm_string(struct tm_trace *t, const char *s)
{
    for (uint32_t i = 0; i < t->nstrings; i++)
        if (!strcmp(t->strings[i], s))
            return i + 1;
    CHECK(t->nstrings < TM_MAX_STRINGS);
    t->strings[t->nstrings] = strdup(s);
    CHECK(t->strings[t->nstrings] != NULL);
    uint32_t id = ++t->nstrings; /* ids count from 1 */
    tm_room(t);
    tb_byte(t->b, MTL_REC_STRING);
    tb_var(t->b, id);
    tb_str(t->b, s);
    return id;
}

/* A stack of custom frames, innermost first; its id.  Stacks share the
 * nodes of their common outer frames, as the recorder's do. */
static inline uint32_t tm_stackv(struct tm_trace *t, const char *const *frames, int n)
{
    uint32_t ids[TM_MAX_FRAMES], node = 0, first = t->nnodes, nfresh = 0;
    uint32_t fresh_parent[TM_MAX_FRAMES], fresh_string[TM_MAX_FRAMES];
    CHECK(n <= TM_MAX_FRAMES);
    for (int i = 0; i < n; i++)
        ids[i] = tm_string(t, frames[i]);
    for (int i = n - 1; i >= 0; i--) {
        uint32_t child = 0;
        for (uint32_t c = 1; c < t->nnodes && !child; c++)
            if (t->parent[c] == node && t->string[c] == ids[i])
                child = c;
        if (!child) {
            CHECK(t->nnodes < TM_MAX_NODES);
            child = t->nnodes++;
            t->parent[child] = node;
            t->string[child] = ids[i];
            fresh_parent[nfresh] = node;
            fresh_string[nfresh++] = ids[i];
        }
        node = child;
    }
    if (nfresh) {
        tm_room(t);
        tb_byte(t->b, MTL_REC_STACK_NODES);
        tb_var(t->b, first);
        tb_var(t->b, nfresh);
        for (uint32_t i = 0; i < nfresh; i++) {
            tb_var(t->b, first + i - fresh_parent[i]);          /* parent_delta */
            tb_var(t->b, (uint64_t)fresh_string[i] << 1 | 1);   /* a custom frame */
        }
    }
    return node;
}

/* tm_stack(t, "inner", ..., "outer", NULL) */
static inline uint32_t tm_stack(struct tm_trace *t, ...)
{
    const char *frames[TM_MAX_FRAMES];
    int n = 0;
    va_list ap;
    va_start(ap, t);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) {
        CHECK(n < TM_MAX_FRAMES);
        frames[n++] = s;
    }
    va_end(ap);
    return tm_stackv(t, frames, n);
}

/* Thread index (0, 1, ... in order) starts with kernel id tid and a name
 * (NULL: none). */
static inline void tm_thread(struct tm_trace *t, uint64_t us, uint32_t index, uint32_t tid,
                             const char *name)
{
    CHECK_EQ(index, t->threads);
    t->threads++;
    tm_room(t);
    tb_byte(t->b, MTL_REC_THREAD_START);
    tm_at(t, us);
    tb_var(t->b, index);
    tb_var(t->b, tid);
    if (name) {
        tb_byte(t->b, MTL_REC_THREAD_NAME);
        tm_at(t, us);
        tb_var(t->b, index);
        tb_str(t->b, name);
    }
}

static inline void tm_switch(struct tm_trace *t, uint32_t thread)
{
    CHECK(thread < t->threads);
    if (t->cur_thread == (int64_t)thread)
        return;
    tm_room(t);
    tb_byte(t->b, MTL_REC_THREAD_SWITCH);
    tb_var(t->b, thread);
    t->cur_thread = thread;
}

static inline void tm_pointer(struct tm_trace *t, uint64_t ptr)
{
    unsigned k;
    for (k = 0; k < MTL_PTR_WINDOW; k++)
        if (t->window[(t->head + MTL_PTR_WINDOW - k) % MTL_PTR_WINDOW] == ptr)
            break;
    if (k < MTL_PTR_WINDOW)
        tb_ptr_window(t->b, k);
    else
        tb_ptr_delta(t->b, (int64_t)(ptr - t->window[t->head]));
    t->head = (t->head + 1) % MTL_PTR_WINDOW;
    t->window[t->head] = ptr;
}

/* An ALLOC record, or with a tag (a string id, not 0) an ALLOC_EX. */
static inline void tm_alloc_tagged(struct tm_trace *t, uint64_t us, uint32_t thread,
                                   uint64_t ptr, uint64_t size, uint32_t stack, uint32_t tag)
{
    CHECK(stack < t->nnodes);
    tm_switch(t, thread);
    tm_room(t);
    tb_byte(t->b, tag ? MTL_REC_ALLOC_EX : MTL_REC_ALLOC);
    tm_at(t, us);
    tb_size(t->b, size);
    tb_stack(t->b, stack);
    tm_pointer(t, ptr);
    if (tag) {
        tb_var(t->b, MTL_ALLOC_EX_TAG);
        tb_var(t->b, tag);
    }
}

static inline void tm_alloc(struct tm_trace *t, uint64_t us, uint32_t thread, uint64_t ptr,
                            uint64_t size, uint32_t stack)
{
    tm_alloc_tagged(t, us, thread, ptr, size, stack, 0);
}

static inline void tm_free(struct tm_trace *t, uint64_t us, uint32_t thread, uint64_t ptr)
{
    tm_switch(t, thread);
    tm_room(t);
    tb_byte(t->b, MTL_REC_FREE);
    tm_at(t, us);
    tm_pointer(t, ptr);
}

static inline void tm_rss(struct tm_trace *t, uint64_t us, uint64_t bytes)
{
    tm_room(t);
    tb_byte(t->b, MTL_REC_RSS);
    tm_at(t, us);
    tb_var(t->b, bytes);
}

/* The END record (a normal exit) at us. */
static inline void tm_end(struct tm_trace *t, uint64_t us)
{
    tm_room(t);
    tb_byte(t->b, MTL_REC_END);
    tm_at(t, us);
    tb_var(t->b, MTL_END_EXIT);
    tb_var(t->b, 0);
}

/* Writes the last block: t->data and t->size hold the trace. */
static inline void tm_close(struct tm_trace *t)
{
    tm_flush(t);
    CHECK(fclose(t->out.f) == 0);
    t->out.f = NULL;
}

/* Writes the closed trace to a file. */
static inline void tm_save(const struct tm_trace *t, const char *path)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(t->data, 1, t->size, f) == t->size);
    CHECK(fclose(f) == 0);
}

static inline void tm_release(struct tm_trace *t)
{
    if (t->out.f)
        fclose(t->out.f);
    for (uint32_t i = 0; i < t->nstrings; i++)
        free(t->strings[i]);
    free(t->data);
    free(t->b);
    t->data = NULL;
    t->b = NULL;
    t->nstrings = 0;
}

#endif
