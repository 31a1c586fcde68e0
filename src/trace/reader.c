/*
 * reader.c: the public trace reader (include/memtally/trace.h).
 *
 * Reads a trace block by block (docs/FORMAT.md): blocks.c checks each
 * block header, decompresses its zstd frame (whose checksum catches damage)
 * and decodes its side streams to numbers, on worker threads when asked
 * (mtl_reader_threads); here the records are decoded one at a time, in
 * order, with the state that runs from block to block.  Definitions (stack
 * nodes, modules, threads, strings) are kept; events are handed out and
 * forgotten, so memory grows with unique stacks, never with events.
 *
 * A file that ends inside a block, or before the END record, is truncated:
 * everything before is returned and info.truncated is set.  Anything that
 * cannot be a valid trace is MTL_ECORRUPT; nothing here trusts a size read
 * from the file without checking it against what is left.
 */
#include "memtally/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hmap.h"
#include "common/varint.h"
#include "trace/allocs.h"
#include "trace/blocks.h"
#include "trace/blocksums.h"
#include "trace/defs.h"
#include "trace/format.h"
#include "trace/ptrcode.h"

#define MAX_THREADS (1u << 22)
#define MAX_MODULES (1u << 16)
#define MAX_STRINGS (1u << 24)
#define MAX_NODES (1u << 28)

struct module_range {
    uint64_t start, end; /* [start, end) in the address space */
    uint32_t module;
};

struct mtl_reader {
    /* the input: a descriptor read with pread (closed at the end when
     * own_fd), or memory; pos is where the next block starts */
    int fd, own_fd;
    const uint8_t *mem;
    size_t mem_size;
    uint64_t pos;
    struct mtl_trace_info info;
    char *program, *command_line;
    struct mtl_blocks *src;
    unsigned workers;       /* mtl_reader_threads, started at the second block */
    /* the current block: what is left of its MAIN stream, and how many of
     * each other stream's numbers are used */
    const struct mtl_block *blk;
    const uint8_t *sp, *se;
    uint32_t vi[MTL_STREAMS];
    uint64_t run_left;      /* version 10: records of the open run to come, */
    uint8_t run_type;       /* their type (docs/FORMAT.md, "Runs"), and */
    uint8_t run_next;       /* whether a run of the other type follows */
    uint64_t blocks;
    uint64_t seq;           /* allocations and frees so far */
    int at_eof;
    int follow;             /* a trace still being written: wait, don't judge */
    int no_pointers;        /* pointers are not wanted: their stream is skipped */
    int sums_taken;         /* the current block's sums were handed out */
    int sums_wanted;        /* the workers were asked for them */
    /* heaps (mtl_reader_heaps): the ones whose events are given; the live
     * blocks of the collector's heap (address -> 1), to tell whose a free
     * is once one was seen; and the allocations of the current block left
     * out, to take out of its sums */
    unsigned heaps;
    int gc_seen;
    struct mtl_hmap gc_live;
    struct skipped { uint32_t stack; double count, bytes; } *skipped;
    size_t nskipped, skipped_cap;
    struct mtl_sums_buf kept;   /* a block's sums less those */
    struct mtl_hmap kept_at;    /* stack -> entry of kept */

    /* decoder state */
    uint64_t last_us, last_ptr;
    uint64_t window[MTL_PTR_WINDOW];
    unsigned window_head;
    struct mtl_ptrcode *pc;  /* version 4 on: the addresses' model, once needed */
    uint32_t cur_thread;

    /* stacks: node 0 is the root */
    uint32_t *parent;
    uint64_t *frame;   /* addr, or string id for custom frames */
    uint8_t *custom;
    uint32_t *node_module;
    uint32_t nnodes, nodes_cap;

    struct mtl_thread *threads;
    uint32_t nthreads, threads_cap;

    struct mtl_module *modules;
    uint32_t nmodules;
    struct module_range *ranges; /* of loaded modules, sorted by start */
    uint32_t nranges;

    char **strings;
    uint32_t nstrings;
};

static int from_errno(int e)
{
    switch (e) {
    case ENOENT: case ENOTDIR: return MTL_ENOENT;
    case EACCES: case EPERM: return MTL_EACCES;
    case ENOMEM: return MTL_ENOMEM;
    case EISDIR: return MTL_EINVAL;
    default: return MTL_EIO;
    }
}

/* Up to n bytes at offset off of the input (blocks.c reads the same). */
static ssize_t read_at(const struct mtl_reader *r, uint64_t off, void *buf, size_t n)
{
    return mtl__read_at(r->fd, r->mem, r->mem_size, off, buf, n);
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (!p)
        return MTL_ENOMEM;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *arr = p;
    *cap = n;
    return 0;
}

/* Loads the next block.  Returns 1, 0 at the end (truncated is set when the
 * input stops inside a block; a followed trace reads that block again next
 * time), or a negative code. */
static int next_block(struct mtl_reader *r)
{
    const struct mtl_block *b;
    if (r->workers && r->blocks > 0 && !r->follow) {
        mtl__blocks_workers(r->src, r->workers);
        r->workers = 0;
    }
    int rc = mtl__blocks_next(r->src, &b);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        if (r->follow) /* what is not there yet may come */
            mtl__blocks_rewind(r->src, b->start, b->number);
        else if (b->partial)
            r->info.truncated = 1;
        return 0;
    }
    r->blk = b;
    r->sums_taken = 0;
    r->sp = b->main;
    r->se = b->main_end;
    memset(r->vi, 0, sizeof r->vi);
    r->run_left = r->run_next = 0; /* a run ends with its block */
    r->pos = b->end;
    r->blocks++;
    return 1;
}

/* Whether every number of the block's side streams was used, as the
 * records say they must be. */
static int block_used_up(struct mtl_reader *r)
{
    for (int i = 1; i < MTL_STREAMS; i++) {
        if (mtl__is_ptr_stream(i) && r->no_pointers)
            continue;
        if (!r->blk->val[i] && !r->blk->counted[i] && mtl__block_stream(r->src, i) < 0)
            return MTL_ENOMEM;
        if (r->vi[i] != r->blk->nval[i] || r->blk->bad[i])
            return 0;
    }
    return 1;
}

/* Reads a varint from the MAIN stream, or returns MTL_ECORRUPT. */
#define GET(v)                                                               \
    do {                                                                     \
        if (mtl__get_varint(&r->sp, r->se, &(v)) < 0)                        \
            return MTL_ECORRUPT;                                             \
    } while (0)

/* Takes the next number of another stream, or returns MTL_ECORRUPT. */
#define GETS(stream, v)                                                      \
    do {                                                                     \
        if (r->vi[stream] >= r->blk->nval[stream])                           \
            return MTL_ECORRUPT;                                             \
        (v) = r->blk->val[stream][r->vi[stream]++];                          \
    } while (0)

/* Whether the block has records left: in MAIN, or of an open run. */
static inline int more_records(const struct mtl_reader *r)
{
    return r->sp < r->se || r->run_left;
}

/* The next record's type: the open run's, else MAIN's next byte. */
static inline uint8_t peek_type(const struct mtl_reader *r)
{
    return r->run_left ? r->run_type : *r->sp;
}

/* Opens a run of type from RUNS' next value: how many more records
 * than the first (taken: read already), and whether one of the other
 * type follows.  0, or MTL_ECORRUPT. */
static int open_run(struct mtl_reader *r, uint8_t type, int taken)
{
    uint64_t v;
    GETS(MTL_S_RUNS, v);
    r->run_type = type;
    r->run_left = (v >> 1) + !taken;
    r->run_next = v & 1;
    return 0;
}

static inline uint8_t other_run_type(uint8_t type)
{
    return type == MTL_REC_ALLOC ? MTL_REC_FREE : MTL_REC_ALLOC;
}

/* Takes the record of type peek_type gave: one of the open run's, else
 * MAIN's byte, which opens a run when its type has them (version 10).
 * A run that ends may open the next.  0, or MTL_ECORRUPT. */
static inline int take_type(struct mtl_reader *r, uint8_t type)
{
    if (r->run_left) {
        r->run_left--;
    } else {
        r->sp++;
        if (!mtl__is_run_record(r->info.version, type))
            return 0;
        if (open_run(r, type, 1) < 0)
            return MTL_ECORRUPT;
    }
    return !r->run_left && r->run_next ? open_run(r, other_run_type(type), 0) : 0;
}

static int get_bytes(struct mtl_reader *r, const uint8_t **s, size_t *n)
{
    uint64_t len;
    GET(len);
    if (len > (uint64_t)(r->se - r->sp))
        return MTL_ECORRUPT;
    *s = r->sp;
    *n = (size_t)len;
    r->sp += len;
    return 0;
}

/* The pointer streams, decoded if the block was read without them. */
static int need_pointers(struct mtl_reader *r)
{
    /* pointers wanted after the block was decoded */
    for (int i = 1; i < MTL_STREAMS; i++)
        if (mtl__is_ptr_stream(i) && !r->blk->val[i] && mtl__block_stream(r->src, i) < 0)
            return MTL_ENOMEM;
    return 0;
}

/* A pointer of version 3 and before, coded against the window
 * (docs/FORMAT.md). */
static int get_window_ptr(struct mtl_reader *r, uint64_t *ptr)
{
    uint64_t k, d;
    GETS(MTL_S_PTR, k);
    if (k > MTL_PTR_WINDOW)
        return MTL_ECORRUPT;
    if (k) {
        *ptr = r->window[(r->window_head - (unsigned)(k - 1)) % MTL_PTR_WINDOW];
    } else {
        GETS(MTL_S_PTR, d);
        *ptr = r->last_ptr + (uint64_t)mtl__unzigzag(d);
    }
    r->window_head = (r->window_head + 1) % MTL_PTR_WINDOW;
    r->window[r->window_head] = *ptr;
    r->last_ptr = *ptr;
    return 0;
}

/* The address of an ALLOC (of size bytes), a FREE or a TAG record, as the
 * file's version codes it; 0 when pointers are skipped. */
enum ptr_of { PTR_ALLOC, PTR_FREE, PTR_TAG };

static int get_ptr(struct mtl_reader *r, enum ptr_of of, uint64_t size, uint64_t *ptr)
{
    int rc;
    uint64_t v0, v1 = 0;
    *ptr = 0;
    if (r->no_pointers)
        return 0;
    if ((rc = need_pointers(r)) < 0)
        return rc;
    if (r->info.version <= MTL_FORMAT_WINDOW_LAST)
        return get_window_ptr(r, ptr);
    if (!r->pc && !(r->pc = mtl__pc_new(0, r->info.version)))
        return MTL_ENOMEM;
    GETS(of == PTR_FREE ? mtl__ptr_free_stream(r->info.version) : MTL_S_PTR, v0);
    if (of == PTR_TAG) {
        *ptr = mtl__pc_get_tag(r->pc, v0);
        return 0;
    }
    if (of == PTR_ALLOC ? mtl__pc_alloc_two(v0) : mtl__pc_free_two(v0))
        GETS(mtl__ptr_more_stream(r->info.version), v1);
    rc = of == PTR_ALLOC ? mtl__pc_get_alloc(r->pc, r->cur_thread, size, v0, v1, ptr)
                         : mtl__pc_get_free(r->pc, r->cur_thread, v0, v1, ptr);
    return rc < 0 ? MTL_ECORRUPT : 0;
}

/* Decodes the SIZE and STACK streams of the block, when it was summed
 * (blocksums.h) and a record needs them after all.  0 or MTL_ENOMEM. */
static int need_sizes(struct mtl_reader *r)
{
    if (r->blk->val[MTL_S_SIZE] && r->blk->val[MTL_S_STACK])
        return 0;
    if (mtl__block_stream(r->src, MTL_S_SIZE) < 0 ||
        mtl__block_stream(r->src, MTL_S_STACK) < 0)
        return MTL_ENOMEM;
    return 0;
}

static char *dup_bytes(const uint8_t *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int read_header(struct mtl_reader *r)
{
    uint64_t nfields;
    GET(nfields);
    for (uint64_t i = 0; i < nfields; i++) {
        uint64_t key, kind, v = 0;
        const uint8_t *s = NULL;
        size_t n = 0;
        GET(key);
        GET(kind);
        if (kind == 0) {
            GET(v);
        } else if (kind == 1) {
            int rc = get_bytes(r, &s, &n);
            if (rc < 0)
                return rc;
        } else {
            return MTL_ECORRUPT;
        }
        /* Keys this version knows have a known kind. */
        if (key >= 1 && key <= 8 && (int)kind != (key <= 2))
            return MTL_ECORRUPT;
        switch (key) {
        case 1: free(r->program); r->program = dup_bytes(s, n); break;
        case 2: free(r->command_line); r->command_line = dup_bytes(s, n); break;
        case 3: r->info.pid = (uint32_t)v; break;
        case 4: r->info.ppid = (uint32_t)v; break;
        case 5: r->info.start_unix_us = v; break;
        case 6: r->info.mode = v ? MTL_MODE_SAMPLED : MTL_MODE_FULL; break;
        case 7: r->info.sample_rate = v; break;
        case 8: r->info.max_depth = (uint32_t)v; break;
        case 9: r->info.calls_counted = v != 0; break;
        case 10: r->info.attached = v != 0; break;
        case 11: r->info.time_resolution_us = v ? v : 1; break;
        default: break; /* a newer writer's field: skip */
        }
    }
    r->info.program = r->program ? r->program : "";
    r->info.command_line = r->command_line ? r->command_line : "";
    return 0;
}

static int cmp_range(const void *a, const void *b)
{
    const struct module_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int rebuild_ranges(struct mtl_reader *r)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nmodules; i++)
        if (r->modules[i].path && !r->modules[i].unload_us)
            n += (uint32_t)r->modules[i].nsegments;
    struct module_range *g = realloc(r->ranges, (n ? n : 1) * sizeof *g);
    if (!g)
        return MTL_ENOMEM;
    r->ranges = g;
    n = 0;
    for (uint32_t i = 0; i < r->nmodules; i++) {
        const struct mtl_module *m = &r->modules[i];
        if (!m->path || m->unload_us)
            continue;
        for (size_t s = 0; s < m->nsegments; s++) {
            g[n].start = m->base + m->segments[s].vaddr;
            g[n].end = g[n].start + m->segments[s].memsz;
            g[n].module = i;
            n++;
        }
    }
    qsort(g, n, sizeof *g, cmp_range);
    r->nranges = n;
    return 0;
}

static uint32_t module_of(const struct mtl_reader *r, uint64_t addr)
{
    uint32_t lo = 0, hi = r->nranges;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->ranges[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && addr < r->ranges[lo - 1].end)
        return r->ranges[lo - 1].module;
    return UINT32_MAX;
}

static int read_module(struct mtl_reader *r, struct mtl_event *ev)
{
    uint64_t index, t, base, nseg;
    const uint8_t *s, *bid;
    size_t slen, blen;
    int rc;
    GET(index);
    GET(t);
    GET(base);
    if ((rc = get_bytes(r, &s, &slen)) < 0 || (rc = get_bytes(r, &bid, &blen)) < 0)
        return rc;
    GET(nseg);
    if (index >= MAX_MODULES || nseg > 64)
        return MTL_ECORRUPT;
    if (index >= r->nmodules) {
        struct mtl_module *m = realloc(r->modules, (index + 1) * sizeof *m);
        if (!m)
            return MTL_ENOMEM;
        memset(m + r->nmodules, 0, (index + 1 - r->nmodules) * sizeof *m);
        r->modules = m;
        r->nmodules = (uint32_t)index + 1;
    }
    struct mtl_module *m = &r->modules[index];
    if (m->path)
        return MTL_ECORRUPT; /* defined twice */
    struct mtl_segment *seg = calloc(nseg ? nseg : 1, sizeof *seg);
    if (!seg)
        return MTL_ENOMEM;
    for (uint64_t i = 0; i < nseg; i++) {
        uint64_t flags;
        if (mtl__get_varint(&r->sp, r->se, &seg[i].vaddr) < 0 ||
            mtl__get_varint(&r->sp, r->se, &seg[i].memsz) < 0 ||
            mtl__get_varint(&r->sp, r->se, &flags) < 0) {
            free(seg);
            return MTL_ECORRUPT;
        }
        seg[i].flags = (uint32_t)flags;
    }
    char *path = dup_bytes(s, slen);
    uint8_t *b = blen ? malloc(blen) : NULL;
    if (!path || (blen && !b)) {
        free(seg);
        free(path);
        free(b);
        return MTL_ENOMEM;
    }
    if (blen)
        memcpy(b, bid, blen);
    m->index = (uint32_t)index;
    m->path = path;
    m->base = base;
    m->build_id = b;
    m->build_id_size = blen;
    m->segments = seg;
    m->nsegments = nseg;
    m->load_us = t;
    ev->type = MTL_EV_MODULE_LOAD;
    ev->time_us = t;
    ev->module = (uint32_t)index;
    return rebuild_ranges(r);
}

static int read_stack_nodes(struct mtl_reader *r)
{
    uint64_t first, count;
    GET(first);
    GET(count);
    /* Each node takes at least two bytes: a count beyond what is left is
     * a lie, caught before it costs memory. */
    if (first != r->nnodes || count > MAX_NODES - r->nnodes ||
        count > (uint64_t)(r->se - r->sp) / 2)
        return MTL_ECORRUPT;
    uint32_t need = r->nnodes + (uint32_t)count;
    uint32_t cap = r->nodes_cap;
    if (grow((void **)&r->parent, &cap, need, sizeof *r->parent) < 0)
        return MTL_ENOMEM;
    cap = r->nodes_cap;
    if (grow((void **)&r->frame, &cap, need, sizeof *r->frame) < 0)
        return MTL_ENOMEM;
    cap = r->nodes_cap;
    if (grow((void **)&r->custom, &cap, need, sizeof *r->custom) < 0)
        return MTL_ENOMEM;
    cap = r->nodes_cap;
    if (grow((void **)&r->node_module, &cap, need, sizeof *r->node_module) < 0)
        return MTL_ENOMEM;
    r->nodes_cap = cap;
    for (uint32_t id = r->nnodes; id < need; id++) {
        uint64_t dparent, word;
        GET(dparent);
        GET(word);
        if (dparent == 0 || dparent > id)
            return MTL_ECORRUPT;
        uint32_t parent = id - (uint32_t)dparent;
        r->parent[id] = parent;
        if (word & 1) {
            r->custom[id] = 1;
            r->frame[id] = word >> 1;
            r->node_module[id] = UINT32_MAX;
        } else {
            uint64_t paddr = (parent && !r->custom[parent]) ? r->frame[parent] : 0;
            r->custom[id] = 0;
            r->frame[id] = paddr + (uint64_t)mtl__unzigzag(word >> 1);
            /* Native frames are return addresses: the call is just before. */
            r->node_module[id] = module_of(r, r->frame[id] - 1);
        }
        r->nnodes = id + 1;
    }
    return 0;
}

static int thread_slot(struct mtl_reader *r, uint64_t index)
{
    /* Indices may skip (threads of an earlier trace of the process), but
     * not by much: a wild one is damage, not a million threads. */
    if (index >= MAX_THREADS || index > (uint64_t)r->nthreads + 4096)
        return MTL_ECORRUPT;
    if (index >= r->nthreads) {
        if (grow((void **)&r->threads, &r->threads_cap, (uint32_t)index + 1,
                 sizeof *r->threads) < 0)
            return MTL_ENOMEM;
        for (uint32_t i = r->nthreads; i <= index; i++) {
            r->threads[i].index = i;
            if (!r->threads[i].name)
                r->threads[i].name = "";
        }
        r->nthreads = (uint32_t)index + 1;
    }
    return 0;
}

/* A thread's name is owned by the reader exactly when it is not empty
 * (the empty name is a static ""). */
static int set_thread_name(struct mtl_reader *r, uint32_t index,
                           const uint8_t *s, size_t n)
{
    char *name = n ? dup_bytes(s, n) : NULL;
    if (n && !name)
        return MTL_ENOMEM;
    struct mtl_thread *t = &r->threads[index];
    if (t->name && *t->name)
        free((char *)t->name);
    t->name = name && *name ? name : "";
    if (name && !*name)
        free(name); /* a name of NUL bytes */
    return 0;
}

static int advance_time(struct mtl_reader *r, struct mtl_event *ev)
{
    uint64_t dt;
    GETS(MTL_S_TIME, dt);
    r->last_us += dt;
    ev->time_us = r->last_us;
    if (r->last_us > r->info.duration_us)
        r->info.duration_us = r->last_us;
    return 0;
}

/* Decodes one record; returns 1 when it filled *ev, 0 for a definition. */
/* An allocation of a heap not read: nothing is given of it, but a block's
 * sums (made from its streams alone) count it, so it is noted for
 * taking out of them. */
static int skip_alloc(struct mtl_reader *r, uint32_t stack, uint64_t size)
{
    r->info.other_heap_allocations++;
    if (!r->sums_wanted)
        return 0;
    if (r->nskipped == r->skipped_cap) {
        size_t cap = r->skipped_cap ? 2 * r->skipped_cap : 64;
        struct skipped *p = realloc(r->skipped, cap * sizeof *p);
        if (!p)
            return MTL_ENOMEM;
        r->skipped = p;
        r->skipped_cap = cap;
    }
    struct skipped *k = &r->skipped[r->nskipped++];
    k->stack = stack;
    mtl__weights(r->info.mode, r->info.sample_rate, size, &k->count, &k->bytes);
    return 0;
}

/* A block's sums less the allocations skipped in it: a copy in r. */
static int sums_less_skipped(struct mtl_reader *r, const struct mtl_block_sums *s,
                             const struct mtl_block_sums **out)
{
    struct mtl_sums_buf *k = &r->kept;
    if (s->n > k->cap) {
        uint32_t *st = realloc(k->stack, s->n * sizeof *st);
        if (st)
            k->stack = st;
        double *c = st ? realloc(k->calls, s->n * sizeof *c) : NULL;
        if (c)
            k->calls = c;
        double *b = c ? realloc(k->bytes, s->n * sizeof *b) : NULL;
        if (!b)
            return MTL_ENOMEM;
        k->bytes = b;
        k->cap = s->n;
    }
    memcpy(k->stack, s->stack, s->n * sizeof *k->stack);
    memcpy(k->calls, s->calls, s->n * sizeof *k->calls);
    memcpy(k->bytes, s->bytes, s->n * sizeof *k->bytes);
    mtl_hmap_clear(&r->kept_at);
    for (size_t i = 0; i < s->n; i++)
        if (mtl_hmap_put(&r->kept_at, s->stack[i], i, NULL) < 0)
            return MTL_ENOMEM;
    for (size_t i = 0; i < r->nskipped; i++) {
        uint64_t at;
        if (!mtl_hmap_get(&r->kept_at, r->skipped[i].stack, &at))
            return MTL_ECORRUPT; /* the streams and the records disagree */
        k->calls[at] -= r->skipped[i].count;
        k->bytes[at] -= r->skipped[i].bytes;
    }
    k->out = *s;
    k->out.stack = k->stack;
    k->out.calls = k->calls;
    k->out.bytes = k->bytes;
    k->out.allocs -= r->nskipped;
    r->nskipped = 0;
    *out = &k->out;
    return 0;
}

static int read_record(struct mtl_reader *r, struct mtl_event *ev)
{
    uint8_t type = peek_type(r);
    uint64_t v, v2;
    int rc = take_type(r, type);
    if (rc < 0)
        return rc;
    /* The hot records fill every field themselves; the rest start clean. */
    if (type != MTL_REC_ALLOC && type != MTL_REC_FREE)
        memset(ev, 0, sizeof *ev);
    if (type != MTL_REC_END && r->info.complete)
        r->info.complete = 0; /* records after END: exec failed, went on */
    switch (type) {
    case MTL_REC_HEADER:
        return MTL_ECORRUPT; /* only the first record, read by open */
    case MTL_REC_MODULE_LOAD:
        return (rc = read_module(r, ev)) < 0 ? rc : 1;
    case MTL_REC_MODULE_UNLOAD:
        GET(v);
        GET(v2);
        if (v >= r->nmodules || !r->modules[v].path)
            return MTL_ECORRUPT;
        r->modules[v].unload_us = v2 ? v2 : 1;
        ev->type = MTL_EV_MODULE_UNLOAD;
        ev->time_us = v2;
        ev->module = (uint32_t)v;
        return (rc = rebuild_ranges(r)) < 0 ? rc : 1;
    case MTL_REC_STACK_NODES:
        return read_stack_nodes(r);
    case MTL_REC_STRING: {
        const uint8_t *s;
        size_t n;
        GET(v);
        if ((rc = get_bytes(r, &s, &n)) < 0)
            return rc;
        if (v != r->nstrings + 1 || v >= MAX_STRINGS)
            return MTL_ECORRUPT;
        char **a = realloc(r->strings, (r->nstrings + 2) * sizeof *a);
        if (!a)
            return MTL_ENOMEM;
        r->strings = a;
        if (!(a[v] = dup_bytes(s, n)))
            return MTL_ENOMEM;
        a[0] = NULL;
        r->nstrings++;
        return 0;
    }
    case MTL_REC_THREAD_START:
        if ((rc = advance_time(r, ev)) < 0)
            return rc;
        GET(v);
        GET(v2);
        if ((rc = thread_slot(r, v)) < 0)
            return rc;
        r->threads[v].tid = (uint32_t)v2;
        r->threads[v].start_us = ev->time_us;
        ev->type = MTL_EV_THREAD_START;
        ev->thread = (uint32_t)v;
        return 1;
    case MTL_REC_THREAD_NAME: {
        const uint8_t *s;
        size_t n;
        if ((rc = advance_time(r, ev)) < 0)
            return rc;
        GET(v);
        if ((rc = get_bytes(r, &s, &n)) < 0 || (rc = thread_slot(r, v)) < 0 ||
            (rc = set_thread_name(r, (uint32_t)v, s, n)) < 0)
            return rc;
        ev->type = MTL_EV_THREAD_NAME;
        ev->thread = (uint32_t)v;
        return 1;
    }
    case MTL_REC_THREAD_EXIT:
        if ((rc = advance_time(r, ev)) < 0)
            return rc;
        GET(v);
        if ((rc = thread_slot(r, v)) < 0)
            return rc;
        r->threads[v].exit_us = ev->time_us ? ev->time_us : 1;
        ev->type = MTL_EV_THREAD_EXIT;
        ev->thread = (uint32_t)v;
        return 1;
    case MTL_REC_THREAD_SWITCH:
        GET(v);
        if ((rc = thread_slot(r, v)) < 0)
            return rc;
        r->cur_thread = (uint32_t)v;
        return 0;
    case MTL_REC_ALLOC:
    case MTL_REC_ALLOC_EX: {
        uint64_t size, stack, ptr, flags = 0, tag = 0;
        if ((rc = advance_time(r, ev)) < 0 || (rc = need_sizes(r)) < 0)
            return rc;
        GETS(MTL_S_SIZE, size);
        GETS(MTL_S_STACK, stack);
        if ((rc = get_ptr(r, PTR_ALLOC, size, &ptr)) < 0)
            return rc;
        if (type == MTL_REC_ALLOC_EX) {
            GET(flags);
            if (flags & ~(uint64_t)(MTL_ALLOC_EX_TAG | MTL_ALLOC_EX_GC) ||
                ((flags & MTL_ALLOC_EX_GC) && r->info.version < 3))
                return MTL_ECORRUPT;
            if (flags & MTL_ALLOC_EX_TAG)
                GET(tag);
        }
        if (stack >= r->nnodes || tag > r->nstrings)
            return MTL_ECORRUPT;
        ev->heap = flags & MTL_ALLOC_EX_GC ? MTL_HEAP_GC : MTL_HEAP_MALLOC;
        if (ev->heap == MTL_HEAP_GC) {
            r->gc_seen = 1;
            if (!r->no_pointers && mtl_hmap_put(&r->gc_live, ptr, 1, NULL) < 0)
                return MTL_ENOMEM;
        }
        if (!(r->heaps & (1u << ev->heap)))
            return skip_alloc(r, (uint32_t)stack, size);
        ev->type = MTL_EV_ALLOC;
        ev->thread = r->cur_thread;
        ev->ptr = ptr;
        ev->size = size;
        ev->stack = (uint32_t)stack;
        ev->tag = (uint32_t)tag;
        ev->module = 0;
        mtl__weights(r->info.mode, r->info.sample_rate, size, &ev->weight_count,
                     &ev->weight_bytes);
        return 1;
    }
    case MTL_REC_FREE:
        if ((rc = advance_time(r, ev)) < 0 || (rc = get_ptr(r, PTR_FREE, 0, &ev->ptr)) < 0)
            return rc;
        ev->heap = r->gc_seen && mtl_hmap_take(&r->gc_live, ev->ptr, NULL) ? MTL_HEAP_GC
                                                                          : MTL_HEAP_MALLOC;
        if (!(r->heaps & (1u << ev->heap)))
            return 0;
        ev->type = MTL_EV_FREE;
        ev->thread = r->cur_thread;
        ev->size = 0;
        ev->stack = ev->tag = ev->module = 0;
        ev->weight_count = ev->weight_bytes = 0;
        return 1;
    case MTL_REC_TAG:
        if (r->info.version < 2)
            return MTL_ECORRUPT; /* not a record of version 1 */
        if ((rc = advance_time(r, ev)) < 0 || (rc = get_ptr(r, PTR_TAG, 0, &ev->ptr)) < 0)
            return rc;
        GET(v);
        if (v >= MAX_STRINGS)
            return MTL_ECORRUPT;
        ev->type = MTL_EV_TAG;
        ev->thread = r->cur_thread;
        ev->tag = (uint32_t)v;
        return 1;
    case MTL_REC_GC_HEAP:
        if (r->info.version < 3)
            return MTL_ECORRUPT; /* not a record before version 3 */
        if ((rc = advance_time(r, ev)) < 0)
            return rc;
        GET(v);
        if (!(r->heaps & MTL_HEAPS_GC))
            return 0;
        ev->type = MTL_EV_GC_HEAP;
        ev->size = v;
        return 1;
    case MTL_REC_CALLS: {
        uint64_t stack;
        if (r->info.version < 3)
            return MTL_ECORRUPT; /* not a record before version 3 */
        if ((rc = advance_time(r, ev)) < 0)
            return rc;
        GET(v);
        GET(stack);
        GET(v2);
        if ((rc = thread_slot(r, v)) < 0)
            return rc;
        if (stack >= r->nnodes)
            return MTL_ECORRUPT;
        ev->type = MTL_EV_CALLS;
        ev->thread = (uint32_t)v;
        ev->stack = (uint32_t)stack;
        ev->size = v2;
        return 1;
    }
    case MTL_REC_RSS:
        if ((rc = advance_time(r, ev)) < 0)
            return rc;
        GET(v);
        ev->type = MTL_EV_RSS;
        ev->size = v;
        return 1;
    case MTL_REC_END: {
        struct mtl_event ignored;
        if ((rc = advance_time(r, &ignored)) < 0)
            return rc;
        GET(v);
        GET(v2);
        r->info.complete = 1;
        return 0;
    }
    default:
        return MTL_ECORRUPT;
    }
}

/* Done with the current block: checks that its streams were used up and
 * loads the next.  1, 0 at the end (for now, when followed), or a negative
 * code. */
static int advance_block(struct mtl_reader *r)
{
    if (r->blk) {
        int used = block_used_up(r);
        if (used <= 0)
            return used < 0 ? used : MTL_ECORRUPT; /* fields no record used */
        r->blk = NULL;
    }
    if (r->at_eof)
        return 0;
    int rc = next_block(r);
    if (rc != 0)
        return rc;
    if (r->follow)
        return 0; /* more may come: call again later */
    r->at_eof = 1;
    if (!r->info.complete)
        r->info.truncated = 1;
    return 0;
}

int mtl_reader_next(struct mtl_reader *r, struct mtl_event *ev)
{
    for (;;) {
        while (more_records(r)) {
            int rc = read_record(r, ev);
            if (rc != 0) {
                if (rc > 0 && (ev->type == MTL_EV_ALLOC || ev->type == MTL_EV_FREE))
                    r->seq++;
                return rc;
            }
        }
        int rc = advance_block(r);
        if (rc <= 0)
            return rc;
    }
}

/* The same records as read_record decodes, ALLOC and FREE without an
 * event in between. */
int mtl__reader_allocs(struct mtl_reader *r, struct mtl_allocs *out)
{
    out->n = 0;
    for (;;) {
        while (more_records(r) && out->n < MTL_ALLOCS_BATCH) {
            uint8_t type = peek_type(r);
            uint64_t dt, size, stack, ptr;
            int rc;
            if (type == MTL_REC_ALLOC && (r->heaps & MTL_HEAPS_MALLOC)) {
                if ((rc = take_type(r, type)) < 0 || (rc = need_sizes(r)) < 0)
                    return rc;
                GETS(MTL_S_TIME, dt);
                GETS(MTL_S_SIZE, size);
                GETS(MTL_S_STACK, stack);
                if ((rc = get_ptr(r, PTR_ALLOC, size, &ptr)) < 0)
                    return rc;
                if (stack >= r->nnodes)
                    return MTL_ECORRUPT;
                r->last_us += dt;
                r->info.complete = 0; /* as for any record but END */
                size_t i = out->n++;
                out->seq[i] = r->seq++;
                out->time_us[i] = r->last_us;
                out->size[i] = size;
                out->stack[i] = (uint32_t)stack;
                out->thread[i] = r->cur_thread;
                out->tag[i] = 0;
            } else if (type == MTL_REC_FREE && !r->gc_seen) {
                if ((rc = take_type(r, type)) < 0)
                    return rc;
                GETS(MTL_S_TIME, dt);
                if ((rc = get_ptr(r, PTR_FREE, 0, &ptr)) < 0)
                    return rc;
                r->last_us += dt;
                r->info.complete = 0;
                r->seq++;
            } else {
                struct mtl_event ev;
                /* read_record keeps the longest time: bring it up to date */
                if (r->last_us > r->info.duration_us)
                    r->info.duration_us = r->last_us;
                if ((rc = read_record(r, &ev)) < 0)
                    return rc;
                if (rc > 0 && ev.type == MTL_EV_FREE)
                    r->seq++;
                if (rc > 0 && ev.type == MTL_EV_ALLOC) {
                    size_t i = out->n++;
                    out->seq[i] = r->seq++;
                    out->time_us[i] = ev.time_us;
                    out->size[i] = ev.size;
                    out->stack[i] = ev.stack;
                    out->thread[i] = ev.thread;
                    out->tag[i] = ev.tag;
                }
            }
        }
        if (r->last_us > r->info.duration_us)
            r->info.duration_us = r->last_us;
        if (out->n == MTL_ALLOCS_BATCH)
            return 1;
        int rc = advance_block(r);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return out->n > 0;
    }
}

/* Walks the rest of the current block as mtl__reader_allocs does, but
 * takes nothing of its allocations (their sizes and stacks are summed
 * apart): only the times, for the state, and the other records.  The hot
 * loop keeps its state in locals (a call would make the compiler reload
 * it from r each time); pointers must not be wanted. */
static int walk_rest(struct mtl_reader *r)
{
    const uint8_t *sp = r->sp, *se = r->se;
    const uint64_t *time = r->blk->val[MTL_S_TIME];
    uint32_t ti = r->vi[MTL_S_TIME], tn = r->blk->nval[MTL_S_TIME], allocs = 0;
    uint64_t last = r->last_us, seq = r->seq;
    int runs = r->info.version >= MTL_FORMAT_RUNS_FIRST, rc = 0;
    while (sp < se || r->run_left) {
        uint8_t type = r->run_left ? r->run_type : *sp;
        if (type == MTL_REC_ALLOC || type == MTL_REC_FREE) {
            /* a record, or all of its run at once, then the next run */
            uint64_t n = r->run_left;
            if (!n) {
                sp++; /* MAIN's byte: the first, and maybe the run's */
                if (runs && (rc = open_run(r, type, 1)) < 0)
                    break;
                n = 1 + r->run_left;
            }
            r->run_left = 0;
            if (n > tn - ti) {
                rc = MTL_ECORRUPT;
                break;
            }
            for (uint32_t end = ti + (uint32_t)n; ti < end; ti++)
                last += time[ti];
            allocs += type == MTL_REC_ALLOC ? (uint32_t)n : 0;
            seq += n;
            if (r->run_next && (rc = open_run(r, other_run_type(type), 0)) < 0)
                break;
            continue;
        }
        struct mtl_event ev;
        if (seq != r->seq)
            r->info.complete = 0; /* as for any record but END */
        r->sp = sp;
        r->vi[MTL_S_TIME] = ti;
        r->vi[MTL_S_SIZE] += allocs; /* block_used_up checks the counts */
        r->vi[MTL_S_STACK] += allocs;
        allocs = 0;
        r->last_us = last;
        if (last > r->info.duration_us)
            r->info.duration_us = last;
        if ((rc = read_record(r, &ev)) < 0)
            return rc;
        if (rc > 0 && ev.type == MTL_EV_ALLOC)
            seq++; /* an ALLOC_EX: in the sums too */
        rc = 0;
        r->seq = seq;
        sp = r->sp;
        ti = r->vi[MTL_S_TIME];
        last = r->last_us;
    }
    if (seq != r->seq)
        r->info.complete = 0;
    r->sp = sp;
    r->vi[MTL_S_TIME] = ti;
    r->vi[MTL_S_SIZE] += allocs;
    r->vi[MTL_S_STACK] += allocs;
    r->last_us = last;
    r->seq = seq;
    if (last > r->info.duration_us)
        r->info.duration_us = last;
    return rc;
}

int mtl__reader_alloc_sums(struct mtl_reader *r, const struct mtl_block_sums **out)
{
    if (!r->no_pointers || !(r->heaps & MTL_HEAPS_MALLOC))
        return MTL_EINVAL; /* the walk skips them, and sums ALLOC records */
    if (!r->sums_wanted) {
        mtl__blocks_want_sums(r->src, r->info.mode, r->info.sample_rate);
        r->sums_wanted = 1;
    }
    for (;;) {
        if (r->blk && !r->sums_taken) {
            int rc = walk_rest(r);
            if (rc < 0)
                return rc;
            if ((rc = block_used_up(r)) <= 0)
                return rc < 0 ? rc : MTL_ECORRUPT;
            const struct mtl_block_sums *s = mtl__block_sums(r->src);
            if (!s || s->status <= 0)
                return s && s->status < 0 ? s->status : MTL_ECORRUPT;
            /* Each stack was defined before its allocations, so by the
             * end of their block: a weaker check than the record's own,
             * for damaged traces only. */
            if (s->n && s->max_stack >= r->nnodes)
                return MTL_ECORRUPT;
            r->sums_taken = 1;
            *out = s;
            if (r->nskipped && (rc = sums_less_skipped(r, s, out)) < 0)
                return rc;
            return 1;
        }
        int rc = advance_block(r);
        if (rc <= 0)
            return rc;
    }
}

/* Reads the file header and the HEADER record of the input set up in r;
 * on failure closes r. */
static int open_common(struct mtl_reader *r, struct mtl_reader **out)
{
    uint8_t h[MTL_FILE_HEADER_SIZE];
    ssize_t n = read_at(r, 0, h, sizeof h);
    int rc = 0;
    if (n < 0)
        rc = from_errno(errno);
    else if (n < 8 || memcmp(h, MTL_FILE_MAGIC, 8) != 0)
        rc = MTL_ENOTTRACE;
    else if (n < (ssize_t)sizeof h)
        rc = MTL_ECORRUPT;
    else if (mtl__get_u32le(h + 8) < MTL_FORMAT_OLDEST ||
             mtl__get_u32le(h + 8) > MTL_FORMAT_VERSION)
        rc = MTL_EVERSION;
    else if (mtl__get_u32le(h + 12) != 0)
        rc = MTL_ECORRUPT; /* no flags are defined in this version */
    if (rc < 0) {
        mtl_reader_close(r);
        return rc;
    }
    r->pos = MTL_FILE_HEADER_SIZE;
    r->heaps = MTL_HEAPS_MALLOC;
    r->gc_live = (struct mtl_hmap)MTL_HMAP_INIT;
    r->kept_at = (struct mtl_hmap)MTL_HMAP_INIT;
    r->info.version = mtl__get_u32le(h + 8);
    r->info.program = r->info.command_line = "";
    r->info.time_resolution_us = 1;
    r->nnodes = 1;
    uint32_t cap = 0;
    if (mtl__blocks_open(&r->src, r->mem ? -1 : r->fd, r->mem, r->mem_size, r->pos, 0) < 0 ||
        grow((void **)&r->parent, &cap, 1024, sizeof *r->parent) < 0 ||
        (cap = 0, grow((void **)&r->frame, &cap, 1024, sizeof *r->frame) < 0) ||
        (cap = 0, grow((void **)&r->custom, &cap, 1024, sizeof *r->custom) < 0) ||
        (cap = 0, grow((void **)&r->node_module, &cap, 1024, sizeof *r->node_module) < 0)) {
        mtl_reader_close(r);
        return MTL_ENOMEM;
    }
    r->nodes_cap = cap;
    r->node_module[0] = UINT32_MAX;
    mtl__blocks_version(r->src, r->info.version);
    /* The header record opens the first block. */
    rc = next_block(r);
    if (rc == 0)
        rc = MTL_ECORRUPT; /* not even the header: nothing to read */
    if (rc > 0 && (r->sp >= r->se || *r->sp != MTL_REC_HEADER))
        rc = MTL_ECORRUPT;
    if (rc > 0) {
        r->sp++;
        rc = read_header(r);
    }
    if (rc < 0) {
        mtl_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int mtl_reader_open(struct mtl_reader **out, const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return from_errno(errno);
    if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return S_ISDIR(st.st_mode) ? MTL_EINVAL : MTL_EIO;
    }
    struct mtl_reader *r = calloc(1, sizeof *r);
    if (!r) {
        close(fd);
        return MTL_ENOMEM;
    }
    r->fd = fd;
    r->own_fd = 1;
    return open_common(r, out);
}

int mtl_reader_open_fd(struct mtl_reader **out, int fd)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return MTL_EINVAL;
    if (S_ISDIR(st.st_mode))
        return MTL_EINVAL;
    struct mtl_reader *r = calloc(1, sizeof *r);
    if (!r)
        return MTL_ENOMEM;
    r->fd = fd;
    return open_common(r, out);
}

int mtl_reader_open_memory(struct mtl_reader **out, const void *data, size_t size)
{
    if (!data && size)
        return MTL_EINVAL;
    struct mtl_reader *r = calloc(1, sizeof *r);
    if (!r)
        return MTL_ENOMEM;
    r->fd = -1;
    r->mem = data ? data : (const uint8_t *)"";
    r->mem_size = size;
    return open_common(r, out);
}

void mtl_reader_follow(struct mtl_reader *r, int on)
{
    r->follow = on;
}

void mtl_reader_skip_pointers(struct mtl_reader *r, int skip)
{
    r->no_pointers = skip;
    mtl__blocks_want_pointers(r->src, !skip);
}

void mtl_reader_heaps(struct mtl_reader *r, unsigned heaps)
{
    r->heaps = heaps & MTL_HEAPS_ALL;
}

unsigned mtl__reader_heaps(const struct mtl_reader *r)
{
    return r->heaps;
}

void mtl_reader_threads(struct mtl_reader *r, unsigned n)
{
    r->workers = n;
}

const struct mtl_trace_info *mtl_reader_info(const struct mtl_reader *r)
{
    return &r->info;
}

uint64_t mtl_reader_blocks(const struct mtl_reader *r)
{
    return r->blocks;
}

void mtl_reader_position(const struct mtl_reader *r, uint64_t *offset,
                         uint64_t *size)
{
    struct stat st;
    *offset = r->pos;
    if (r->mem)
        *size = r->mem_size;
    else
        *size = fstat(r->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void fill_frame(const struct mtl_reader *r, uint32_t id,
                       struct mtl_frame *f)
{
    memset(f, 0, sizeof *f);
    if (r->custom[id]) {
        f->kind = MTL_FRAME_CUSTOM;
        f->name = (uint32_t)r->frame[id];
        f->module = UINT32_MAX;
    } else {
        f->kind = MTL_FRAME_NATIVE;
        f->addr = r->frame[id];
        f->module = r->node_module[id];
    }
}

int mtl_reader_stack(const struct mtl_reader *r, uint32_t stack,
                     struct mtl_frame *frames, size_t cap)
{
    if (stack >= r->nnodes)
        return MTL_EINVAL;
    int depth = 0;
    for (uint32_t id = stack; id != 0; id = r->parent[id]) {
        if ((size_t)depth < cap)
            fill_frame(r, id, &frames[depth]);
        depth++;
    }
    return depth;
}

int mtl_reader_stack_node(const struct mtl_reader *r, uint32_t stack,
                          uint32_t *parent, struct mtl_frame *frame)
{
    if (stack == 0 || stack >= r->nnodes)
        return MTL_EINVAL;
    *parent = r->parent[stack];
    fill_frame(r, stack, frame);
    return 0;
}

uint32_t mtl_reader_stack_count(const struct mtl_reader *r)
{
    return r->nnodes;
}

const struct mtl_thread *mtl_reader_thread(const struct mtl_reader *r,
                                           uint32_t index)
{
    return index < r->nthreads ? &r->threads[index] : NULL;
}

uint32_t mtl_reader_thread_count(const struct mtl_reader *r)
{
    return r->nthreads;
}

const struct mtl_module *mtl_reader_module(const struct mtl_reader *r,
                                           uint32_t index)
{
    return index < r->nmodules && r->modules[index].path ? &r->modules[index] : NULL;
}

uint32_t mtl_reader_module_count(const struct mtl_reader *r)
{
    return r->nmodules;
}

const char *mtl_reader_string(const struct mtl_reader *r, uint32_t id)
{
    return id >= 1 && id <= r->nstrings ? r->strings[id] : NULL;
}

void mtl_reader_close(struct mtl_reader *r)
{
    if (!r)
        return;
    if (r->own_fd && r->fd >= 0)
        close(r->fd);
    mtl__blocks_close(r->src);
    free(r->program);
    free(r->command_line);
    free(r->parent);
    free(r->frame);
    free(r->custom);
    free(r->node_module);
    for (uint32_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].name && *r->threads[i].name)
            free((char *)r->threads[i].name);
    free(r->threads);
    for (uint32_t i = 0; i < r->nmodules; i++) {
        free((char *)r->modules[i].path);
        free((void *)r->modules[i].build_id);
        free((void *)r->modules[i].segments);
    }
    free(r->modules);
    free(r->ranges);
    mtl_hmap_release(&r->gc_live);
    mtl_hmap_release(&r->kept_at);
    mtl__pc_free(r->pc);
    free(r->skipped);
    free(r->kept.stack);
    free(r->kept.calls);
    free(r->kept.bytes);
    for (uint32_t i = 1; i <= r->nstrings; i++)
        free(r->strings[i]);
    free(r->strings);
    free(r);
}

void mtl__reader_defs(const struct mtl_reader *r, struct mtl_defs *d)
{
    d->info = r->info;
    d->nnodes = r->nnodes;
    d->parent = r->parent;
    d->frame = r->frame;
    d->module = r->node_module;
    d->custom = r->custom;
    d->nthreads = r->nthreads;
    d->threads = r->threads;
    d->nmodules = r->nmodules;
    d->modules = r->modules;
    d->nstrings = r->nstrings;
    d->strings = (const char *const *)r->strings;
}
