/*
 * fuzz_common.h: what the trace reader fuzzer (fuzz_reader.c) and its
 * replayer (replay.c) do with one input.  Header-only, included by both.
 *
 * An input is one of two things:
 * - a trace file, when it starts with the file magic "MEMTALLY": read as is,
 *   so that damage to the file header, block headers and zstd frames is
 *   explored;
 * - otherwise, the decompressed payloads of a trace's blocks, separated by
 *   the 4 bytes "MBLK": each is compressed into a valid block (frame with
 *   checksum, header with the right check word) behind a valid file header.
 *   Random damage to a real file almost always stops at a block's checksum;
 *   this form lets the fuzzer reach the record decoder, where the sizes,
 *   counts and indices read from the file live.
 *
 * The input is written to a memory file (memfd) and read back through its
 * /proc/self/fd path, as mtl_reader_open() takes a path.  Every event is
 * taken apart: each allocation's stack walked with mtl_reader_stack() and
 * mtl_reader_stack_node(), every string, thread and module it names looked
 * up and read in full (so that ASan sees any bad pointer the reader hands
 * out).  An event that names a stack the reader cannot resolve is a reader
 * bug: it aborts.  Then it is read again as the analyses of allocations
 * read it (fuzz_read_allocs).
 */
#ifndef MEMTALLY_FUZZ_COMMON_H
#define MEMTALLY_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "memtally/trace.h"
#include "trace/allocs.h"
#include "trace/blocksums.h"
#include "trace/format.h"

#define FUZZ_SEPARATOR "MBLK"

static volatile uint64_t fuzz_sink; /* keeps the reads below from being dropped */
static int fuzz_last_truncated;     /* of the last input read without error */

static void fuzz_touch(const void *p, size_t n)
{
    const volatile uint8_t *b = p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += b[i];
    fuzz_sink += s;
}

static void fuzz_touch_string(const char *s)
{
    if (s)
        fuzz_touch(s, strlen(s) + 1);
}

static void fuzz_bug(const char *what, uint64_t v)
{
    fprintf(stderr, "reader bug: %s (%llu)\n", what, (unsigned long long)v);
    abort();
}

static void fuzz_module(const struct mtl_reader *r, uint32_t index)
{
    const struct mtl_module *m = mtl_reader_module(r, index);
    if (!m)
        return;
    fuzz_touch_string(m->path);
    if (m->build_id)
        fuzz_touch(m->build_id, m->build_id_size);
    if (m->nsegments)
        fuzz_touch(m->segments, m->nsegments * sizeof *m->segments);
}

static void fuzz_stack(const struct mtl_reader *r, uint32_t stack)
{
    struct mtl_frame frames[64];
    int depth = mtl_reader_stack(r, stack, frames, 64);
    if (depth < 0)
        fuzz_bug("an allocation's stack cannot be read", stack);
    for (int i = 0; i < depth && i < 64; i++) {
        if (frames[i].kind == MTL_FRAME_CUSTOM)
            fuzz_touch_string(mtl_reader_string(r, frames[i].name));
        else if (frames[i].module != UINT32_MAX)
            fuzz_module(r, frames[i].module);
    }
    /* The same stack as a path in the tree. */
    int steps = 0;
    for (uint32_t id = stack; id != MTL_NO_STACK; steps++) {
        uint32_t parent;
        struct mtl_frame f;
        if (mtl_reader_stack_node(r, id, &parent, &f) < 0)
            fuzz_bug("a stack node cannot be read", id);
        if (steps >= depth)
            fuzz_bug("a stack's path is longer than its depth", stack);
        id = parent;
    }
    if (steps != depth)
        fuzz_bug("a stack's depth differs from its path", stack);
}

/* Reads the trace at path to the end; returns what the last call returned. */
static int fuzz_read_trace(const char *path)
{
    struct mtl_reader *r;
    struct mtl_event ev;
    int rc = mtl_reader_open(&r, path);
    if (rc < 0) {
        fuzz_touch_string(mtl_strerror(rc));
        return rc;
    }
    const struct mtl_trace_info *info = mtl_reader_info(r);
    fuzz_touch_string(info->program);
    fuzz_touch_string(info->command_line);
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        const struct mtl_thread *t = mtl_reader_thread(r, ev.thread);
        if (t)
            fuzz_touch_string(t->name);
        switch (ev.type) {
        case MTL_EV_ALLOC:
            fuzz_stack(r, ev.stack);
            if (ev.tag)
                fuzz_touch_string(mtl_reader_string(r, ev.tag));
            break;
        case MTL_EV_MODULE_LOAD:
        case MTL_EV_MODULE_UNLOAD:
            fuzz_module(r, ev.module);
            break;
        default:
            break;
        }
    }
    if (rc < 0)
        fuzz_touch_string(mtl_strerror(rc));
    info = mtl_reader_info(r);
    fuzz_last_truncated = info->truncated;
    fuzz_sink += mtl_reader_blocks(r) + (uint64_t)info->truncated + info->duration_us;
    fuzz_touch_string(info->program);
    for (uint32_t i = 0; i < mtl_reader_thread_count(r); i++)
        fuzz_touch_string(mtl_reader_thread(r, i)->name);
    for (uint32_t i = 0; i < mtl_reader_module_count(r); i++)
        fuzz_module(r, i);
    mtl_reader_close(r);
    return rc;
}

/* Reads the trace at path twice more as the analyses of allocations read
 * it: allocation by allocation (mtl__reader_allocs) and in per-block sums
 * made by a worker (mtl__reader_alloc_sums).  Both reading it whole, they
 * must count the same allocations. */
static void fuzz_read_allocs(const char *path)
{
    static struct mtl_allocs batch;
    struct mtl_reader *r;
    uint64_t one = 0, summed = 0;
    int rc1, rc2;
    if (mtl_reader_open(&r, path) < 0)
        return;
    mtl_reader_skip_pointers(r, 1);
    while ((rc1 = mtl__reader_allocs(r, &batch)) > 0)
        for (size_t i = 0; i < batch.n; i++) {
            fuzz_stack(r, batch.stack[i]);
            one++;
        }
    mtl_reader_close(r);
    if (mtl_reader_open(&r, path) < 0)
        return;
    mtl_reader_skip_pointers(r, 1);
    mtl_reader_threads(r, 1);
    const struct mtl_block_sums *b;
    while ((rc2 = mtl__reader_alloc_sums(r, &b)) > 0) {
        for (size_t i = 0; i < b->n; i++) {
            fuzz_stack(r, b->stack[i]);
            fuzz_sink += (uint64_t)b->calls[i] + (uint64_t)b->bytes[i];
        }
        summed += b->allocs;
    }
    mtl_reader_close(r);
    if (rc1 == 0 && rc2 == 0 && one != summed)
        fuzz_bug("the per-block sums count other allocations than the reader", summed);
}

/* Appends n bytes to the growing buffer *buf (of *len bytes). */
static void fuzz_append(uint8_t **buf, size_t *len, const void *p, size_t n)
{
    uint8_t *b = realloc(*buf, *len + n + 1);
    if (!b)
        abort();
    if (n)
        memcpy(b + *len, p, n);
    *buf = b;
    *len += n;
}

/* Makes a trace file of payloads separated by FUZZ_SEPARATOR: a file header,
 * then each payload as one valid block.  Returns a malloc'd buffer. */
static uint8_t *fuzz_wrap(const uint8_t *data, size_t size, size_t *out_len)
{
    static ZSTD_CCtx *cctx;
    static void *frame;
    static size_t frame_cap;
    uint8_t *out = NULL, h[MTL_BLOCK_HEADER_SIZE];
    size_t len = 0;
    if (!cctx) {
        cctx = ZSTD_createCCtx();
        if (!cctx)
            abort();
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    }
    fuzz_append(&out, &len, MTL_FILE_MAGIC, 8);
    mtl__put_u32le(h, MTL_FORMAT_VERSION);
    mtl__put_u32le(h + 4, 0);
    fuzz_append(&out, &len, h, 8);
    const uint8_t *p = data, *end = data + size;
    uint64_t seq = 0;
    while (p <= end) {
        const uint8_t *q = p;
        while (q + 4 <= end && memcmp(q, FUZZ_SEPARATOR, 4) != 0)
            q++;
        if (q + 4 > end)
            q = end;
        size_t raw = (size_t)(q - p);
        if (raw > MTL_BLOCK_MAX_RAW)
            raw = MTL_BLOCK_MAX_RAW;
        size_t bound = ZSTD_compressBound(raw);
        if (bound > frame_cap) {
            free(frame);
            frame = malloc(bound);
            if (!frame)
                abort();
            frame_cap = bound;
        }
        size_t c = ZSTD_compress2(cctx, frame, frame_cap, p, raw);
        if (ZSTD_isError(c))
            abort();
        mtl__put_u32le(h, MTL_BLOCK_MAGIC);
        mtl__put_u32le(h + 4, (uint32_t)c);
        mtl__put_u32le(h + 8, (uint32_t)raw);
        mtl__put_u32le(h + 12, mtl__block_check((uint32_t)c, (uint32_t)raw, seq++));
        fuzz_append(&out, &len, h, sizeof h);
        fuzz_append(&out, &len, frame, c);
        if (q == end)
            break;
        p = q + 4;
    }
    *out_len = len;
    return out;
}

/* Runs one input (see the top of this file) through the reader. */
static int fuzz_one(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("memtally-fuzz", 0);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    uint8_t *wrapped = NULL;
    if (size < 8 || memcmp(data, MTL_FILE_MAGIC, 8) != 0)
        data = wrapped = fuzz_wrap(data, size, &size);
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
        perror("memfd write");
        abort();
    }
    free(wrapped);
    int rc = fuzz_read_trace(path);
    fuzz_read_allocs(path);
    return rc;
}

#endif
