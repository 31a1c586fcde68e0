/*
 * defs.h: a trace's definitions as arrays: its stack nodes, threads,
 * modules and strings, with its header.  This is what an analysis needs
 * besides the events, wherever it comes from: the reader (mtl__reader_defs,
 * pointing into the reader's own arrays, valid until it reads on) or an
 * index (src/analyze/index.c, pointing into the mapped index file).
 */
#ifndef MTL_TRACE_DEFS_H
#define MTL_TRACE_DEFS_H

#include <math.h>
#include <stdint.h>

#include "memtally/trace.h"

struct mtl_defs {
    struct mtl_trace_info info;
    /* Stack nodes, 0 .. nnodes-1; node 0 is the root (no frame).  The
     * parent of a node has a smaller id.  frame: a native frame's return
     * address, or a custom frame's string id; module: a native frame's
     * module index, UINT32_MAX when none (and for custom frames). */
    uint32_t nnodes;
    const uint32_t *parent;
    const uint64_t *frame;
    const uint32_t *module;
    const uint8_t *custom;
    /* Threads by index, modules by index (an index never defined has a
     * NULL path), strings by id 1 .. nstrings (strings[0] unused). */
    uint32_t nthreads, nmodules, nstrings;
    const struct mtl_thread *threads;
    const struct mtl_module *modules;
    const char *const *strings;
};

static inline const struct mtl_module *mtl_defs_module(const struct mtl_defs *d,
                                                       uint32_t index)
{
    return index < d->nmodules && d->modules[index].path ? &d->modules[index] : NULL;
}

static inline const struct mtl_thread *mtl_defs_thread(const struct mtl_defs *d,
                                                       uint32_t index)
{
    return index < d->nthreads ? &d->threads[index] : NULL;
}

static inline const char *mtl_defs_string(const struct mtl_defs *d, uint32_t id)
{
    return id >= 1 && id <= d->nstrings ? d->strings[id] : NULL;
}

/* The frame of node id (0 < id < nnodes), as the reader gives it. */
static inline struct mtl_frame mtl_defs_frame(const struct mtl_defs *d, uint32_t id)
{
    struct mtl_frame f = { MTL_FRAME_NATIVE, 0, 0, UINT32_MAX };
    if (d->custom[id]) {
        f.kind = MTL_FRAME_CUSTOM;
        f.name = (uint32_t)d->frame[id];
    } else {
        f.addr = d->frame[id];
        f.module = d->module[id];
    }
    return f;
}

/* How many allocations and bytes one of size bytes stands for: 1 and size
 * in full mode; in sampled mode, where it was sampled with probability
 * p = 1 - exp(-size/rate), 1/p and size/p: each sample is unbiased on its
 * own (docs/FORMAT.md). */
static inline void mtl__weights(enum mtl_mode mode, uint64_t rate, uint64_t size,
                                double *count, double *bytes)
{
    if (mode == MTL_MODE_SAMPLED && rate && size) {
        double p = -expm1(-(double)size / (double)rate);
        *count = 1.0 / p;
        *bytes = (double)size / p;
    } else {
        *count = 1;
        *bytes = (double)size;
    }
}

/* Points d at what r has read so far.  Call again after r reads on: its
 * arrays may have moved. */
void mtl__reader_defs(const struct mtl_reader *r, struct mtl_defs *d);

#endif
