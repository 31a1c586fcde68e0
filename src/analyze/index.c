/*
 * index.c: building, saving, finding and mapping a trace's index (see
 * index.h; the file is specified in docs/FORMAT.md, "The index").
 *
 * Building reads the trace once, in order, and writes the index file front
 * to back as it goes, so that its memory stays bounded whatever the trace:
 *   - each allocation adds a row to the newest block chunk and enters its
 *     address in a map of live blocks; each free finds its block there;
 *   - block chunks stay in memory a while (PENDING chunks), so that most
 *     frees find their block's row there and set its lifetime; a chunk is
 *     written when PENDING newer ones have started, and the frees of its
 *     blocks that come later go to a list of late frees (sorted and written
 *     at the end; a query applies them as it decodes the chunk);
 *   - free chunks are written as they fill.
 * The file is the cache file when the cache can be written, else a memory
 * file (memfd): an index is a cache, and one that cannot be kept (a
 * read-only directory, a full disk) serves this run only.
 *
 * The cache file is named by the trace's device and inode and holds the
 * trace's size, modification time and a hash of its first 64 KiB: a trace
 * rewritten or grown since gets a new index.  It is written under a
 * temporary name and renamed, so a reader never sees half of one.  The
 * cache keeps under a size limit by removing the indexes used longest ago.
 */
#include "analyze/index.h"

#include "analyze/addrmap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/hmap.h"
#include "memtally/errors.h"

#define IX_MAGIC "MTLINDEX"
#define IX_VERSION 8u   /* 5: the type tag column; 6: late tags (TAG records);
                           7: totals of the other heap, calls counted;
                           8: the trace's time resolution */
#define IX_HEADER 4096u
#define IX_HASHED (64u << 10)   /* bytes of the trace's head in its identity */
#define PENDING 16              /* block chunks kept in memory while building */

enum ix_section {
    S_ACHUNKS, S_FCHUNKS, S_LATE, S_EVENTS, S_RSS, S_STACK_TOTALS,
    S_NODE_PARENT, S_NODE_FRAME, S_NODE_MODULE, S_NODE_CUSTOM,
    S_THREADS, S_MODULES, S_SEGMENTS, S_STRINGS, S_BLOB,
    S_COUNT
};

struct ix_section_entry {
    uint64_t offset, size;
};

/* The trace the index was made from. */
struct ix_identity {
    uint64_t dev, ino, size, mtime_ns, head_hash;
};

struct ix_achunk {
    uint64_t first;             /* its first block */
    uint32_t n, pad;
    struct mtl_ixcol col[MTL_IXA_COLUMNS];
};

struct ix_fchunk {
    uint32_t n, pad;
    struct mtl_ixcol col[MTL_IXF_COLUMNS];
};

/* A free recorded after its block's chunk was written. */
/* A block whose chunk was written before its free, or before a TAG record
 * retagged it: its lifetime and flags (0 if never freed), its tag. */
struct ix_late {
    uint64_t block, life, flags, tag;
};

struct ix_thread {
    uint32_t tid, pad;
    uint64_t start_us, exit_us, name;       /* name: offset in the blob */
};

struct ix_module {
    uint32_t present, pad;
    uint64_t base, load_us, unload_us;
    uint64_t path, build_id, build_id_size; /* offsets in the blob */
    uint64_t segments, nsegments;           /* index in S_SEGMENTS */
};

struct ix_segment {
    uint64_t vaddr, memsz, flags;
};

/* The header, at offset 0 (padded to IX_HEADER). */
struct ix_header {
    char magic[8];
    uint32_t version, header_size;
    struct ix_identity id;
    uint64_t nblocks, nfrees, nevents, nrss, nachunks, nfchunks, nlate, nstack_totals;
    uint64_t nnodes, nthreads, nmodules, nstrings;
    uint64_t end_us, trace_blocks;
    uint32_t truncated, complete;
    /* the trace's header */
    uint32_t trace_version, mode;
    uint32_t calls_counted, attached;
    uint64_t pid, ppid, start_unix_us, sample_rate, max_depth, duration_us;
    uint64_t time_resolution_us;
    uint64_t program, command_line;          /* offsets in the blob */
    struct mtl_totals totals;
    struct ix_section_entry sections[S_COUNT];
    /* mtl_checksum of this header (with check 0), then of every section
     * in order: damage is found at load.  The columns' zstd frames carry
     * their own checksums, checked when read. */
    uint64_t check;
};

struct mtl_index {
    char path[4096];            /* "" when in memory only */
    int fd;                     /* the file, for reading columns */
    const uint8_t *map;
    size_t map_size;
    const struct ix_header *h;
    struct mtl_ix_summary sum;
    const struct ix_achunk *achunks;
    const struct ix_fchunk *fchunks;
    const struct ix_late *late;
    struct mtl_trace_info info;
    struct mtl_thread *threads;
    struct mtl_module *modules;
    struct mtl_segment *segments;
    const char **strings;
    struct mtl_defs defs;
};

struct mtl_ix_cursor {
    const struct mtl_index *ix;
    ZSTD_DCtx *dctx;
    uint8_t *scratch;                          /* 16 * MTL_IX_CHUNK */
    uint8_t *frame;                            /* a column's frame, as read */
    size_t frame_cap;
    uint64_t *acol[MTL_IXA_COLUMNS], *fcol[MTL_IXF_COLUMNS];
};

/* ---- where, and which trace ------------------------------------------- */

const char *mtl_index_dir(const char *dir, char *buf, size_t cap)
{
    const char *env;
    int n;
    if (dir && *dir)
        n = snprintf(buf, cap, "%s", dir);
    else if ((env = getenv("MEMTALLY_INDEX_DIR")) && *env)
        n = snprintf(buf, cap, "%s", env);
    else if ((env = getenv("XDG_CACHE_HOME")) && *env == '/')
        n = snprintf(buf, cap, "%s/memtally", env);
    else if ((env = getenv("HOME")) && *env == '/')
        n = snprintf(buf, cap, "%s/.cache/memtally", env);
    else
        return NULL;
    return n < 0 || (size_t)n >= cap ? NULL : buf;
}

static int identity(int fd, struct ix_identity *id)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return MTL_EIO;
    memset(id, 0, sizeof *id);
    id->dev = (uint64_t)st.st_dev;
    id->ino = (uint64_t)st.st_ino;
    id->size = (uint64_t)st.st_size;
    id->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    uint8_t *head = malloc(IX_HASHED);
    if (!head)
        return MTL_ENOMEM;
    ssize_t n = pread(fd, head, IX_HASHED, 0);
    id->head_hash = n > 0 ? mtl_hash_bytes(head, (size_t)n) : 0;
    free(head);
    return 0;
}

/* 0, or -1 when the name does not fit. */
static int file_name(char *buf, size_t cap, const char *dir, const struct ix_identity *id)
{
    int n = snprintf(buf, cap, "%s/%016" PRIx64 "-%016" PRIx64 ".mtlx", dir, id->dev, id->ino);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- mapping an index --------------------------------------------------- */

static const void *section(const struct mtl_index *ix, enum ix_section s, uint64_t count,
                           size_t elem)
{
    const struct ix_section_entry *e = &ix->h->sections[s];
    if (e->offset % 8 || e->offset > ix->map_size || e->size > ix->map_size - e->offset ||
        (elem && count > e->size / elem))
        return NULL;
    return ix->map + e->offset;
}

static const char *blob_string(const struct mtl_index *ix, uint64_t off)
{
    const struct ix_section_entry *e = &ix->h->sections[S_BLOB];
    if (off >= e->size || !memchr(ix->map + e->offset + off, '\0', e->size - off))
        return NULL;
    return (const char *)ix->map + e->offset + off;
}

/* A column's frame lies inside the file, and decodes to no more than a
 * chunk. */
static int column_ok(const struct mtl_index *ix, const struct mtl_ixcol *c)
{
    if (c->width == 0)
        return 1;
    return (c->width == 1 || c->width == 2 || c->width == 4 || c->width == 8) &&
           c->offset <= ix->map_size && c->csize <= ix->map_size - c->offset;
}

/* Sets up the summary, chunks and definitions of ix->map.  MTL_ECORRUPT
 * when the file does not hold what its header says. */
static int attach(struct mtl_index *ix)
{
    if (ix->map_size < IX_HEADER)
        return MTL_ECORRUPT;
    const struct ix_header *h = ix->h = (const void *)ix->map;
    if (memcmp(h->magic, IX_MAGIC, 8) || h->version != IX_VERSION ||
        h->header_size != sizeof *h || h->nnodes == 0 || h->nnodes > UINT32_MAX ||
        h->nthreads > UINT32_MAX || h->nmodules > UINT32_MAX || h->nstrings > UINT32_MAX ||
        h->nblocks > UINT32_MAX || h->nachunks != (h->nblocks + MTL_IX_CHUNK - 1) / MTL_IX_CHUNK ||
        h->nfchunks != (h->nfrees + MTL_IX_CHUNK - 1) / MTL_IX_CHUNK ||
        h->nevents != h->nblocks + h->nfrees)
        return MTL_ECORRUPT;
    struct ix_header copy = *h;
    copy.check = 0;
    uint64_t check = mtl_checksum(&copy, sizeof copy, MTL_CHECKSUM_INIT);
    for (int k = 0; k < S_COUNT; k++) {
        const struct ix_section_entry *e = &h->sections[k];
        if (e->offset > ix->map_size || e->size > ix->map_size - e->offset)
            return MTL_ECORRUPT;
        check = mtl_checksum(ix->map + e->offset, e->size, check);
    }
    if (check != h->check)
        return MTL_ECORRUPT;
    struct mtl_ix_summary *s = &ix->sum;
    s->nblocks = h->nblocks;
    s->nfrees = h->nfrees;
    s->nevents = h->nevents;
    s->nachunks = h->nachunks;
    s->nfchunks = h->nfchunks;
    s->end_us = h->end_us;
    s->trace_blocks = h->trace_blocks;
    s->truncated = (int)h->truncated;
    s->totals = h->totals;
    s->nrss = h->nrss;
    s->nstack_totals = h->nstack_totals;
    s->events = section(ix, S_EVENTS, (h->nevents + 63) / 64, 8);
    s->rss = section(ix, S_RSS, h->nrss, sizeof *s->rss);
    s->stack_totals = section(ix, S_STACK_TOTALS, h->nstack_totals, sizeof *s->stack_totals);
    ix->achunks = section(ix, S_ACHUNKS, h->nachunks, sizeof *ix->achunks);
    ix->fchunks = section(ix, S_FCHUNKS, h->nfchunks, sizeof *ix->fchunks);
    ix->late = section(ix, S_LATE, h->nlate, sizeof *ix->late);
    struct mtl_defs *d = &ix->defs;
    d->nnodes = (uint32_t)h->nnodes;
    d->parent = section(ix, S_NODE_PARENT, h->nnodes, 4);
    d->frame = section(ix, S_NODE_FRAME, h->nnodes, 8);
    d->module = section(ix, S_NODE_MODULE, h->nnodes, 4);
    d->custom = section(ix, S_NODE_CUSTOM, h->nnodes, 1);
    const struct ix_thread *th = section(ix, S_THREADS, h->nthreads, sizeof *th);
    const struct ix_module *mo = section(ix, S_MODULES, h->nmodules, sizeof *mo);
    const struct ix_segment *sg = section(ix, S_SEGMENTS, 0, 0);
    const uint64_t *so = section(ix, S_STRINGS, h->nstrings + 1, 8);
    if (!s->events || !s->rss || !s->stack_totals || !ix->achunks || !ix->fchunks ||
        !ix->late || !d->parent || !d->frame || !d->module || !d->custom || !th || !mo ||
        !sg || !so)
        return MTL_ECORRUPT;
    /* Every chunk where it says; every id a query will trust, in range. */
    for (uint64_t c = 0; c < h->nachunks; c++) {
        const struct ix_achunk *a = &ix->achunks[c];
        if (a->first != c * MTL_IX_CHUNK || a->n == 0 || a->n > MTL_IX_CHUNK ||
            a->first + a->n > h->nblocks)
            return MTL_ECORRUPT;
        for (int k = 0; k < MTL_IXA_COLUMNS; k++)
            if (!column_ok(ix, &a->col[k]))
                return MTL_ECORRUPT;
    }
    for (uint64_t c = 0; c < h->nfchunks; c++) {
        const struct ix_fchunk *f = &ix->fchunks[c];
        if (f->n == 0 || f->n > MTL_IX_CHUNK)
            return MTL_ECORRUPT;
        for (int k = 0; k < MTL_IXF_COLUMNS; k++)
            if (!column_ok(ix, &f->col[k]))
                return MTL_ECORRUPT;
    }
    for (uint64_t i = 0; i < h->nlate; i++)
        if (ix->late[i].block >= h->nblocks || (i && ix->late[i].block <= ix->late[i - 1].block))
            return MTL_ECORRUPT;
    for (uint64_t i = 0; i < h->nstack_totals; i++)
        if (s->stack_totals[i].stack >= h->nnodes || s->stack_totals[i].thread >= h->nthreads)
            return MTL_ECORRUPT;
    for (uint32_t i = 1; i < d->nnodes; i++)
        if (d->parent[i] >= i)
            return MTL_ECORRUPT;
    uint64_t nsegs = h->sections[S_SEGMENTS].size / sizeof *sg;
    /* The definitions as the reader gives them: pointers into the map. */
    ix->threads = calloc(h->nthreads + 1, sizeof *ix->threads);
    ix->modules = calloc(h->nmodules + 1, sizeof *ix->modules);
    ix->segments = calloc(nsegs + 1, sizeof *ix->segments);
    ix->strings = calloc(h->nstrings + 1, sizeof *ix->strings);
    if (!ix->threads || !ix->modules || !ix->segments || !ix->strings)
        return MTL_ENOMEM;
    for (uint64_t i = 0; i < nsegs; i++)
        ix->segments[i] = (struct mtl_segment){ sg[i].vaddr, sg[i].memsz, (uint32_t)sg[i].flags };
    for (uint64_t i = 0; i < h->nthreads; i++) {
        const char *name = blob_string(ix, th[i].name);
        if (!name)
            return MTL_ECORRUPT;
        ix->threads[i] = (struct mtl_thread){ (uint32_t)i, th[i].tid, name, th[i].start_us,
                                              th[i].exit_us };
    }
    const struct ix_section_entry *b = &h->sections[S_BLOB];
    for (uint64_t i = 0; i < h->nmodules; i++) {
        if (!mo[i].present)
            continue;
        const char *path = blob_string(ix, mo[i].path);
        if (!path || mo[i].build_id > b->size || mo[i].build_id_size > b->size - mo[i].build_id ||
            mo[i].segments > nsegs || mo[i].nsegments > nsegs - mo[i].segments)
            return MTL_ECORRUPT;
        struct mtl_module *m = &ix->modules[i];
        m->index = (uint32_t)i;
        m->path = path;
        m->base = mo[i].base;
        m->build_id = mo[i].build_id_size ? ix->map + b->offset + mo[i].build_id : NULL;
        m->build_id_size = mo[i].build_id_size;
        m->segments = ix->segments + mo[i].segments;
        m->nsegments = mo[i].nsegments;
        m->load_us = mo[i].load_us;
        m->unload_us = mo[i].unload_us;
    }
    for (uint64_t i = 1; i <= h->nstrings; i++)
        if (!(ix->strings[i] = blob_string(ix, so[i])))
            return MTL_ECORRUPT;
    d->nthreads = (uint32_t)h->nthreads;
    d->threads = ix->threads;
    d->nmodules = (uint32_t)h->nmodules;
    d->modules = ix->modules;
    d->nstrings = (uint32_t)h->nstrings;
    d->strings = ix->strings;
    struct mtl_trace_info *in = &ix->info;
    in->version = h->trace_version;
    in->program = blob_string(ix, h->program);
    in->command_line = blob_string(ix, h->command_line);
    if (!in->program || !in->command_line)
        return MTL_ECORRUPT;
    in->pid = (uint32_t)h->pid;
    in->ppid = (uint32_t)h->ppid;
    in->start_unix_us = h->start_unix_us;
    in->mode = h->mode ? MTL_MODE_SAMPLED : MTL_MODE_FULL;
    in->sample_rate = h->sample_rate;
    in->max_depth = (uint32_t)h->max_depth;
    in->calls_counted = (int)h->calls_counted;
    in->attached = (int)h->attached;
    in->duration_us = h->duration_us;
    in->time_resolution_us = h->time_resolution_us ? h->time_resolution_us : 1;
    in->truncated = (int)h->truncated;
    in->complete = (int)h->complete;
    d->info = *in;
    return 0;
}

static void release(struct mtl_index *ix)
{
    if (ix->map)
        munmap((void *)ix->map, ix->map_size);
    if (ix->fd >= 0)
        close(ix->fd);
    free(ix->threads);
    free(ix->modules);
    free(ix->segments);
    free(ix->strings);
    free(ix);
}

/* Maps the index file open on fd; 0, or a negative code. */
static int map_file(struct mtl_index *ix, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < IX_HEADER)
        return MTL_ECORRUPT;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return MTL_ENOMEM;
    ix->map = map;
    ix->map_size = (size_t)st.st_size;
    /* Columns are read, not mapped (frame_of). */
    if ((ix->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
        return MTL_EIO;
    return 0;
}

int mtl_index_load(struct mtl_index **out, int trace_fd, const char *dir)
{
    char where[4096];
    if (!mtl_index_dir(dir, where, sizeof where))
        return MTL_ENOENT;
    struct ix_identity id;
    int rc = identity(trace_fd, &id);
    if (rc < 0)
        return rc;
    struct mtl_index *ix = calloc(1, sizeof *ix);
    if (ix)
        ix->fd = -1;
    if (!ix)
        return MTL_ENOMEM;
    int fd = file_name(ix->path, sizeof ix->path, where, &id) < 0
                 ? -1 : open(ix->path, O_RDONLY | O_CLOEXEC);
    rc = fd < 0 ? MTL_ENOENT : map_file(ix, fd);
    if (fd >= 0)
        close(fd);
    /* Another trace, or this one since rewritten, or damaged: build anew. */
    if (rc < 0 || memcmp(((const struct ix_header *)ix->map)->magic, IX_MAGIC, 8) ||
        ((const struct ix_header *)ix->map)->version != IX_VERSION ||
        memcmp(&((const struct ix_header *)ix->map)->id, &id, sizeof id) || attach(ix) < 0) {
        release(ix);
        return MTL_ENOENT;
    }
    /* Used now: evicted last.  Once an hour is enough for that, and
     * spares the disk a write at every query. */
    struct stat st;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (stat(ix->path, &st) == 0 && st.st_mtim.tv_sec + 3600 < now.tv_sec)
        utimensat(AT_FDCWD, ix->path, NULL, 0);
    *out = ix;
    return 0;
}

/* ---- reading chunks ------------------------------------------------------ */

int mtl_ix_cursor_open(struct mtl_ix_cursor **out, const struct mtl_index *ix)
{
    struct mtl_ix_cursor *cur = calloc(1, sizeof *cur);
    if (!cur)
        return MTL_ENOMEM;
    cur->ix = ix;
    cur->dctx = ZSTD_createDCtx();
    cur->scratch = malloc(16 * (size_t)MTL_IX_CHUNK);
    /* Column buffers come when a column is first decoded: a query reads
     * few of them. */
    int ok = cur->dctx && cur->scratch;
    if (!ok) {
        mtl_ix_cursor_close(cur);
        return MTL_ENOMEM;
    }
    *out = cur;
    return 0;
}

void mtl_ix_cursor_close(struct mtl_ix_cursor *cur)
{
    if (!cur)
        return;
    ZSTD_freeDCtx(cur->dctx);
    free(cur->scratch);
    free(cur->frame);
    for (int k = 0; k < MTL_IXA_COLUMNS; k++)
        free(cur->acol[k]);
    for (int k = 0; k < MTL_IXF_COLUMNS; k++)
        free(cur->fcol[k]);
    free(cur);
}

/* The zstd frame of a column, read into the cursor.  Read rather than
 * mapped: a query then holds a chunk's worth of columns per thread, not
 * every page of the index it went through (mapped pages count in its
 * memory, and the kernel maps their neighbours too). */
static const uint8_t *frame_of(struct mtl_ix_cursor *cur, const struct mtl_ixcol *c)
{
    if (!c->csize)
        return NULL;
    if (c->csize > cur->frame_cap) {
        uint8_t *p = realloc(cur->frame, c->csize);
        if (!p)
            return NULL;
        cur->frame = p;
        cur->frame_cap = c->csize;
    }
    size_t got = 0;
    while (got < c->csize) {
        ssize_t k = pread(cur->ix->fd, cur->frame + got, c->csize - got,
                          (off_t)(c->offset + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return NULL;
        got += (size_t)k;
    }
    return cur->frame;
}

/* Decodes the columns of mask among the ncols of a chunk of n rows into
 * the cursor's buffers buf (made on first use); col[k] is NULL for the
 * others. */
static int decode_columns(struct mtl_ix_cursor *cur, const struct mtl_ixcol *cols, int ncols,
                          uint32_t n, unsigned mask, uint64_t **buf, const uint64_t **col)
{
    for (int k = 0; k < ncols; k++) {
        col[k] = NULL;
        if (!(mask & 1u << k))
            continue;
        if (!buf[k] && !(buf[k] = malloc(8 * (size_t)MTL_IX_CHUNK)))
            return MTL_ENOMEM;
        const uint8_t *data = frame_of(cur, &cols[k]);
        if (cols[k].csize && !data)
            return MTL_ECORRUPT;
        int rc = mtl_ixcol_decode(&cols[k], data, n, cur->dctx, buf[k], cur->scratch);
        if (rc < 0)
            return rc;
        col[k] = buf[k];
    }
    return 0;
}

int mtl_ix_blocks(struct mtl_ix_cursor *cur, uint64_t c, unsigned mask,
                  const uint64_t *col[MTL_IXA_COLUMNS], size_t *n, uint64_t *first)
{
    const struct mtl_index *ix = cur->ix;
    if (c >= ix->sum.nachunks)
        return MTL_EINVAL;
    const struct ix_achunk *a = &ix->achunks[c];
    int rc = decode_columns(cur, a->col, MTL_IXA_COLUMNS, a->n, mask, cur->acol, col);
    if (rc < 0)
        return rc;
    /* Ids past what the definitions hold would send a query astray. */
    if (col[MTL_IXA_STACK])
        for (uint32_t i = 0; i < a->n; i++)
            if (col[MTL_IXA_STACK][i] >= ix->defs.nnodes)
                return MTL_ECORRUPT;
    if (col[MTL_IXA_THREAD])
        for (uint32_t i = 0; i < a->n; i++)
            if (col[MTL_IXA_THREAD][i] >= ix->defs.nthreads)
                return MTL_ECORRUPT;
    if (col[MTL_IXA_TAG])
        for (uint32_t i = 0; i < a->n; i++)
            if (col[MTL_IXA_TAG][i] > ix->defs.nstrings)
                return MTL_ECORRUPT;
    /* The frees and tags recorded after the chunk was written. */
    if (mask & (1u << MTL_IXA_LIFE | 1u << MTL_IXA_FLAGS | 1u << MTL_IXA_TAG) && ix->h->nlate) {
        uint64_t lo = 0, hi = ix->h->nlate;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (ix->late[mid].block < a->first)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (uint64_t i = lo; i < ix->h->nlate && ix->late[i].block < a->first + a->n; i++) {
            uint64_t at = ix->late[i].block - a->first;
            if (col[MTL_IXA_LIFE])
                cur->acol[MTL_IXA_LIFE][at] = ix->late[i].life;
            if (col[MTL_IXA_FLAGS])
                cur->acol[MTL_IXA_FLAGS][at] |= ix->late[i].flags;
            if (col[MTL_IXA_TAG]) {
                if (ix->late[i].tag > ix->defs.nstrings)
                    return MTL_ECORRUPT;
                cur->acol[MTL_IXA_TAG][at] = ix->late[i].tag;
            }
        }
    }
    *n = a->n;
    *first = a->first;
    return 0;
}

int mtl_ix_frees(struct mtl_ix_cursor *cur, uint64_t c, unsigned mask,
                 const uint64_t *col[MTL_IXF_COLUMNS], size_t *n)
{
    const struct mtl_index *ix = cur->ix;
    if (c >= ix->sum.nfchunks)
        return MTL_EINVAL;
    const struct ix_fchunk *f = &ix->fchunks[c];
    int rc = decode_columns(cur, f->col, MTL_IXF_COLUMNS, f->n, mask, cur->fcol, col);
    if (rc < 0)
        return rc;
    if (col[MTL_IXF_BLOCK])
        for (uint32_t i = 0; i < f->n; i++)
            if (col[MTL_IXF_BLOCK][i] >= ix->sum.nblocks)
                return MTL_ECORRUPT;
    *n = f->n;
    return 0;
}

/* ---- building ------------------------------------------------------------ */

/* The file being written, front to back, through a buffer. */
struct out {
    int fd;
    uint64_t at;               /* bytes written so far */
    uint8_t *buf;
    size_t len, cap;
    int failed;
};

static int out_flush(struct out *o)
{
    size_t done = 0;
    while (done < o->len && !o->failed) {
        ssize_t k = write(o->fd, o->buf + done, o->len - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            o->failed = 1;
        else
            done += (size_t)k;
    }
    o->len = 0;
    return o->failed ? MTL_EIO : 0;
}

/* Appends n bytes; their offset in the file goes to *where if set. */
static int out_put(struct out *o, const void *p, size_t n, uint64_t *where)
{
    if (where)
        *where = o->at;
    o->at += n;
    if (o->len + n > o->cap && out_flush(o) < 0)
        return MTL_EIO;
    if (n > o->cap) {
        o->len = 0;
        size_t done = 0;
        while (done < n) {
            ssize_t k = write(o->fd, (const uint8_t *)p + done, n - done);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                return o->failed = 1, MTL_EIO;
            done += (size_t)k;
        }
        return 0;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    return 0;
}

/* Pads the file to a multiple of 8 bytes (sections are 8-aligned). */
static int out_align(struct out *o)
{
    static const uint8_t zero[8];
    return o->at % 8 ? out_put(o, zero, 8 - o->at % 8, NULL) : 0;
}

/* A chunk of blocks being filled, or waiting for its blocks' frees. */
struct pending {
    uint64_t first;
    uint32_t n;
    uint64_t *col[MTL_IXA_COLUMNS];
};

struct build {
    const struct mtl_trace_info *in;
    struct out out;
    ZSTD_CCtx *cctx;
    uint8_t *scratch, *frame;      /* 16 * MTL_IX_CHUNK, and a frame's bound */
    size_t frame_cap;
    struct pending pend[PENDING];
    uint64_t written;              /* block chunks written so far */
    uint64_t nblocks, nfrees, nevents;
    uint64_t *fcol[MTL_IXF_COLUMNS];
    uint32_t nfree_rows;
    struct mtl_buf achunks, fchunks, late, events, rss;
    uint64_t word;                 /* event bits not yet in events */
    struct mtl_addrmap live;       /* address -> slot in lives */
    struct mtl_buf lives;          /* struct live, by slot */
    uint64_t free_head;            /* a free slot of lives, or UINT64_MAX;
                                      each free slot links the next */
    uint64_t last_alloc;           /* the block of the last event, or UINT64_MAX */
    struct mtl_totals_acc totals;
    struct mtl_stackagg stacks;    /* per (thread, stack) */
};

static struct pending *pending_of(struct build *b, uint64_t block)
{
    uint64_t c = block / MTL_IX_CHUNK;
    return c >= b->written ? &b->pend[c % PENDING] : NULL;
}

static int write_column(struct build *b, struct mtl_ixcol *c, const uint64_t *v, size_t n,
                        enum mtl_ixcol_code code)
{
    int rc = mtl_ixcol_encode(c, v, n, code, b->cctx, b->frame, b->frame_cap, b->scratch);
    if (rc == 0 && c->csize)
        rc = out_put(&b->out, b->frame, c->csize, &c->offset);
    return rc;
}

/* Writes the oldest pending chunk. */
static int write_blocks(struct build *b)
{
    struct pending *p = &b->pend[b->written % PENDING];
    struct ix_achunk a = { .first = p->first, .n = p->n };
    for (int k = 0; k < MTL_IXA_COLUMNS; k++) {
        /* Allocation times grow slowly: their differences are tiny. */
        int rc = write_column(b, &a.col[k], p->col[k], p->n,
                              k == MTL_IXA_TIME ? MTL_IXCOL_DELTA : MTL_IXCOL_PLAIN);
        if (rc < 0)
            return rc;
    }
    mtl_buf_add(&b->achunks, &a, sizeof a);
    b->written++;
    p->n = 0;
    return b->achunks.failed ? MTL_ENOMEM : 0;
}

static int write_frees(struct build *b)
{
    struct ix_fchunk f = { .n = b->nfree_rows };
    for (int k = 0; k < MTL_IXF_COLUMNS; k++) {
        /* Free times grow; the blocks freed one after the other are
         * mostly allocated one after the other too. */
        int rc = write_column(b, &f.col[k], b->fcol[k], b->nfree_rows,
                              k == MTL_IXF_SIZE ? MTL_IXCOL_PLAIN : MTL_IXCOL_DELTA);
        if (rc < 0)
            return rc;
    }
    mtl_buf_add(&b->fchunks, &f, sizeof f);
    b->nfree_rows = 0;
    return b->fchunks.failed ? MTL_ENOMEM : 0;
}

static int put_event(struct build *b, int alloc)
{
    if (alloc)
        b->word |= 1ull << (b->nevents % 64);
    if (++b->nevents % 64 == 0) {
        mtl_buf_add(&b->events, &b->word, 8);
        b->word = 0;
    }
    return b->events.failed ? MTL_ENOMEM : 0;
}

/* The row of block j, wherever it is. */
struct row {
    uint64_t alloc_us, size, stack, thread, tag;
};

/* Block j ends at t.  flags: MTL_IX_TEMPORARY, MTL_IX_FREE_LOST. */
static int end_block(struct build *b, uint64_t j, uint64_t t, unsigned flags,
                     const struct row *r)
{
    uint64_t life = t - r->alloc_us + 1;
    struct pending *p = pending_of(b, j);
    if (p) {
        p->col[MTL_IXA_LIFE][j - p->first] = life;
        p->col[MTL_IXA_FLAGS][j - p->first] |= flags;
    } else {
        struct ix_late late = { j, life, flags, r->tag };
        mtl_buf_add(&b->late, &late, sizeof late);
    }
    b->fcol[MTL_IXF_BLOCK][b->nfree_rows] = j;
    b->fcol[MTL_IXF_TIME][b->nfree_rows] = t;
    b->fcol[MTL_IXF_SIZE][b->nfree_rows] = r->size;
    b->nfrees++;
    int rc = ++b->nfree_rows == MTL_IX_CHUNK ? write_frees(b) : 0;
    return rc < 0 ? rc : b->late.failed ? MTL_ENOMEM : put_event(b, 0);
}

/* A live block's row: its address's map entry holds its number, and the
 * fields it needs later (at its free) are kept beside it. */
struct live {
    uint64_t block, alloc_us, size;
    uint32_t stack, thread;
    uint32_t tag;          /* as the last TAG record made it */
    uint32_t retagged;     /* a TAG record came after its chunk was written */
};

/* A free slot of b->lives for a new live block. */
static int take_slot(struct build *b, uint32_t *slot)
{
    struct live *ls = (struct live *)b->lives.data;
    if (b->free_head != UINT64_MAX) {
        *slot = (uint32_t)b->free_head;
        b->free_head = ls[*slot].alloc_us; /* free slots link the next */
        return 0;
    }
    struct live none = { 0 };
    mtl_buf_add(&b->lives, &none, sizeof none);
    if (b->lives.failed || b->lives.len / sizeof none > UINT32_MAX - 1)
        return MTL_ENOMEM;
    *slot = (uint32_t)(b->lives.len / sizeof none - 1);
    return 0;
}

static void give_slot(struct build *b, uint32_t slot)
{
    struct live *l = (struct live *)b->lives.data + slot;
    l->block = UINT64_MAX;
    l->alloc_us = b->free_head;
    b->free_head = slot;
}

/* The live block in slot ends at t: a free (flags) or, when lost, the
 * allocation of its address again. */
static int end_live(struct build *b, uint32_t slot, uint64_t t, unsigned flags,
                    const struct mtl_event *ev)
{
    struct live *l = (struct live *)b->lives.data + slot;
    struct row r = { l->alloc_us, l->size, l->stack, l->thread, l->tag };
    int rc = end_block(b, l->block, t, flags, &r);
    if (rc < 0)
        return rc;
    struct mtl_block k = { 0 };
    k.size = l->size;
    k.stack = l->stack;
    k.thread = l->thread;
    k.free_lost = (flags & MTL_IX_FREE_LOST) != 0;
    mtl__weights(b->in->mode, b->in->sample_rate, l->size, &k.weight_count, &k.weight_bytes);
    give_slot(b, slot);
    struct mtl_event fev = { .type = MTL_EV_FREE, .time_us = t, .thread = ev->thread };
    return mtl_totals_event(&b->totals, &fev, &k);
}

static int on_event(struct build *b, const struct mtl_event *ev)
{
    int rc;
    if (ev->type == MTL_EV_ALLOC) {
        uint32_t slot, old;
        if ((rc = take_slot(b, &slot)) < 0)
            return rc;
        int replaced = mtl_addrmap_put(&b->live, ev->ptr, slot, &old);
        if (replaced < 0)
            return replaced;
        /* Its address was live: that block's free was lost (recording was
         * paused), and it ends here. */
        if (replaced && (rc = end_live(b, old, ev->time_us, MTL_IX_FREE_LOST, ev)) < 0)
            return rc;
        uint64_t j = b->nblocks++;
        uint64_t c = j / MTL_IX_CHUNK;
        if (c >= b->written + PENDING && (rc = write_blocks(b)) < 0)
            return rc;
        struct pending *p = &b->pend[c % PENDING];
        if (j % MTL_IX_CHUNK == 0) {
            p->first = j;
            p->n = 0;
        }
        uint32_t at = p->n++;
        p->col[MTL_IXA_TIME][at] = ev->time_us;
        p->col[MTL_IXA_LIFE][at] = 0;
        p->col[MTL_IXA_SIZE][at] = ev->size;
        p->col[MTL_IXA_STACK][at] = ev->stack;
        p->col[MTL_IXA_THREAD][at] = ev->thread;
        p->col[MTL_IXA_FLAGS][at] = 0;
        p->col[MTL_IXA_TAG][at] = ev->tag;
        struct live *l = (struct live *)b->lives.data + slot;
        *l = (struct live){ j, ev->time_us, ev->size, ev->stack, ev->thread, ev->tag, 0 };
        if ((rc = put_event(b, 1)) < 0)
            return rc;
        if ((rc = mtl_stackagg_add(&b->stacks, ev->thread, ev->stack, ev->weight_count,
                                   ev->weight_bytes, 0)) < 0)
            return rc;
        b->last_alloc = j;
        struct mtl_block k = { 0 };
        k.size = ev->size;
        k.stack = ev->stack;
        k.thread = ev->thread;
        k.tag = ev->tag;
        k.weight_count = ev->weight_count;
        k.weight_bytes = ev->weight_bytes;
        return mtl_totals_event(&b->totals, ev, &k);
    }
    if (ev->type == MTL_EV_FREE) {
        uint64_t last = b->last_alloc;
        uint32_t slot;
        b->last_alloc = UINT64_MAX;
        if (!mtl_addrmap_take(&b->live, ev->ptr, &slot))
            return mtl_totals_event(&b->totals, ev, NULL); /* from before the trace */
        const struct live *l = (const struct live *)b->lives.data + slot;
        return end_live(b, slot, ev->time_us, l->block == last ? MTL_IX_TEMPORARY : 0, ev);
    }
    if (ev->type == MTL_EV_TAG) {
        /* A live block gets a new tag: in its row if not written yet, else
         * in a late entry (at its free, or at the end). */
        uint32_t slot, old;
        if (!mtl_addrmap_take(&b->live, ev->ptr, &slot))
            return 0; /* no such block: from before the trace */
        if (mtl_addrmap_put(&b->live, ev->ptr, slot, &old) < 0)
            return MTL_ENOMEM;
        struct live *l = (struct live *)b->lives.data + slot;
        struct pending *p = pending_of(b, l->block);
        l->tag = ev->tag;
        if (p)
            p->col[MTL_IXA_TAG][l->block - p->first] = ev->tag;
        else
            l->retagged = 1;
        return 0;
    }
    if (ev->type == MTL_EV_RSS) {
        struct mtl_ix_rss r = { ev->time_us, ev->size };
        mtl_buf_add(&b->rss, &r, sizeof r);
        if (b->rss.failed)
            return MTL_ENOMEM;
    }
    return mtl_totals_event(&b->totals, ev, NULL);
}

static int by_block(const void *pa, const void *pb)
{
    const struct ix_late *a = pa, *b = pb;
    return a->block < b->block ? -1 : a->block > b->block;
}

static uint64_t blob_put(struct mtl_buf *blob, const void *p, size_t n, int nul)
{
    uint64_t off = blob->len;
    mtl_buf_add(blob, p, n);
    if (nul)
        mtl_buf_addc(blob, '\0');
    return off;
}

/* Appends a section and notes where it is in the header. */
static int put_section(struct build *b, struct ix_header *h, enum ix_section s,
                       const void *p, size_t n)
{
    int rc = out_align(&b->out);
    if (rc == 0)
        rc = out_put(&b->out, p, n, &h->sections[s].offset);
    h->sections[s].size = n;
    return rc;
}

/* Everything after the chunks, then the header at the front. */
/* Blocks still live at the end that a TAG record retagged after their
 * chunk was written: a late entry each (never freed: no lifetime). */
static int late_tags(struct build *b)
{
    const struct live *ls = (const struct live *)b->lives.data;
    size_t n = b->lives.len / sizeof *ls;
    for (size_t i = 0; i < n; i++)
        if (ls[i].block != UINT64_MAX && ls[i].retagged) {
            struct ix_late late = { ls[i].block, 0, 0, ls[i].tag };
            mtl_buf_add(&b->late, &late, sizeof late);
        }
    return b->late.failed ? MTL_ENOMEM : 0;
}

static int finish(struct build *b, const struct mtl_reader *r, const struct ix_identity *id)
{
    int lrc = late_tags(b);
    if (lrc < 0)
        return lrc;
    struct mtl_defs d;
    mtl__reader_defs(r, &d);
    struct ix_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, IX_MAGIC, 8);
    h.version = IX_VERSION;
    h.header_size = sizeof h;
    h.id = *id;
    h.nblocks = b->nblocks;
    h.nfrees = b->nfrees;
    h.nevents = b->nevents;
    h.nrss = b->rss.len / sizeof(struct mtl_ix_rss);
    h.nachunks = b->achunks.len / sizeof(struct ix_achunk);
    h.nfchunks = b->fchunks.len / sizeof(struct ix_fchunk);
    h.nlate = b->late.len / sizeof(struct ix_late);
    h.nstack_totals = b->stacks.n;
    h.nnodes = d.nnodes;
    h.nthreads = d.nthreads;
    h.nmodules = d.nmodules;
    h.nstrings = d.nstrings;
    h.end_us = d.info.duration_us;
    h.trace_blocks = mtl_reader_blocks(r);
    h.truncated = (uint32_t)d.info.truncated;
    h.complete = (uint32_t)d.info.complete;
    h.trace_version = d.info.version;
    h.mode = d.info.mode;
    h.pid = d.info.pid;
    h.ppid = d.info.ppid;
    h.start_unix_us = d.info.start_unix_us;
    h.sample_rate = d.info.sample_rate;
    h.max_depth = d.info.max_depth;
    h.calls_counted = (uint32_t)d.info.calls_counted;
    h.attached = (uint32_t)d.info.attached;
    h.duration_us = d.info.duration_us;
    h.time_resolution_us = d.info.time_resolution_us;
    h.totals = b->totals.t;
    h.totals.other_heap_allocations = d.info.other_heap_allocations;
    h.totals.duration_us = d.info.duration_us;

    /* The definitions, their strings in one blob. */
    struct mtl_buf blob = MTL_BUF_INIT, threads = MTL_BUF_INIT, modules = MTL_BUF_INIT,
                   segments = MTL_BUF_INIT, strings = MTL_BUF_INIT, totals = MTL_BUF_INIT;
    mtl_buf_addc(&blob, '\0'); /* offset 0: "" */
    h.program = blob_put(&blob, d.info.program, strlen(d.info.program), 1);
    h.command_line = blob_put(&blob, d.info.command_line, strlen(d.info.command_line), 1);
    for (uint32_t i = 0; i < d.nthreads; i++) {
        const struct mtl_thread *t = &d.threads[i];
        const char *name = t->name ? t->name : "";
        struct ix_thread it = { t->tid, 0, t->start_us, t->exit_us,
                                blob_put(&blob, name, strlen(name), 1) };
        mtl_buf_add(&threads, &it, sizeof it);
    }
    uint64_t nseg = 0;
    for (uint32_t i = 0; i < d.nmodules; i++) {
        const struct mtl_module *m = &d.modules[i];
        struct ix_module im = { 0 };
        if (m->path) {
            im.present = 1;
            im.base = m->base;
            im.load_us = m->load_us;
            im.unload_us = m->unload_us;
            im.path = blob_put(&blob, m->path, strlen(m->path), 1);
            im.build_id = blob_put(&blob, m->build_id ? (const void *)m->build_id : "",
                                   m->build_id_size, 0);
            im.build_id_size = m->build_id_size;
            im.segments = nseg;
            im.nsegments = m->nsegments;
            for (size_t s = 0; s < m->nsegments; s++, nseg++) {
                struct ix_segment sg = { m->segments[s].vaddr, m->segments[s].memsz,
                                         m->segments[s].flags };
                mtl_buf_add(&segments, &sg, sizeof sg);
            }
        }
        mtl_buf_add(&modules, &im, sizeof im);
    }
    uint64_t zero = 0;
    mtl_buf_add(&strings, &zero, 8);
    for (uint32_t i = 1; i <= d.nstrings; i++) {
        uint64_t off = blob_put(&blob, d.strings[i], strlen(d.strings[i]), 1);
        mtl_buf_add(&strings, &off, 8);
    }
    for (size_t i = 0; i < b->stacks.n; i++) {
        const struct mtl_stackagg_entry *e = &b->stacks.e[i];
        struct mtl_ix_stack_total t = { e->thread, e->stack, e->calls, e->bytes };
        mtl_buf_add(&totals, &t, sizeof t);
    }
    if (b->nevents % 64)
        mtl_buf_add(&b->events, &b->word, 8);
    if (h.nlate) /* late.data is NULL when there are none: qsort(NULL, 0) is undefined */
        qsort(b->late.data, h.nlate, sizeof(struct ix_late), by_block);
    int rc = blob.failed || threads.failed || modules.failed || segments.failed ||
             strings.failed || totals.failed || b->events.failed ? MTL_ENOMEM : 0;
    struct { enum ix_section s; const void *p; size_t n; } parts[] = {
        { S_ACHUNKS, b->achunks.data, b->achunks.len },
        { S_FCHUNKS, b->fchunks.data, b->fchunks.len },
        { S_LATE, b->late.data, b->late.len },
        { S_EVENTS, b->events.data, b->events.len },
        { S_RSS, b->rss.data, b->rss.len },
        { S_STACK_TOTALS, totals.data, totals.len },
        { S_NODE_PARENT, d.parent, (size_t)d.nnodes * 4 },
        { S_NODE_FRAME, d.frame, (size_t)d.nnodes * 8 },
        { S_NODE_MODULE, d.module, (size_t)d.nnodes * 4 },
        { S_NODE_CUSTOM, d.custom, (size_t)d.nnodes },
        { S_THREADS, threads.data, threads.len },
        { S_MODULES, modules.data, modules.len },
        { S_SEGMENTS, segments.data, segments.len },
        { S_STRINGS, strings.data, strings.len },
        { S_BLOB, blob.data, blob.len },
    };
    for (size_t i = 0; rc == 0 && i < sizeof parts / sizeof *parts; i++)
        rc = put_section(b, &h, parts[i].s, parts[i].n ? parts[i].p : "", parts[i].n);
    h.check = mtl_checksum(&h, sizeof h, MTL_CHECKSUM_INIT);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) /* in section order */
        h.check = mtl_checksum(parts[i].n ? parts[i].p : "", parts[i].n, h.check);
    if (rc == 0)
        rc = out_flush(&b->out);
    uint8_t head[IX_HEADER];
    memset(head, 0, sizeof head);
    memcpy(head, &h, sizeof h);
    if (rc == 0 && pwrite(b->out.fd, head, sizeof head, 0) != (ssize_t)sizeof head)
        rc = MTL_EIO;
    mtl_buf_release(&blob);
    mtl_buf_release(&threads);
    mtl_buf_release(&modules);
    mtl_buf_release(&segments);
    mtl_buf_release(&strings);
    mtl_buf_release(&totals);
    return rc;
}

/* Makes dir and its missing parents, private (an index holds paths and
 * command lines).  0 or -1. */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n >= sizeof path)
        return -1;
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* The cache's size limit: MEMTALLY_INDEX_MAX bytes (K, M, G suffixes),
 * 8 GiB by default. */
static uint64_t cache_limit(void)
{
    const char *env = getenv("MEMTALLY_INDEX_MAX");
    uint64_t limit = 8ull << 30;
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        uint64_t scale = *end == 'K' ? 1u << 10 : *end == 'M' ? 1u << 20
                       : *end == 'G' ? 1u << 30 : 1;
        if (end != env)
            limit = (uint64_t)v * scale;
    }
    return limit;
}

/* The files of the cache: indexes, and the symbolizer's decompressed debug
 * files in debug/ (src/symbols/debugcache.c). */
struct cached {
    char name[160];             /* relative to the cache directory */
    uint64_t size;
    int64_t used;               /* modification time: loading touches it */
};

/* Adds the files of dir/sub (sub "" for dir) ending in suffix to *ents,
 * and their sizes to *total, but for keep. */
static void list_cached(int dir, const char *sub, const char *suffix, const char *keep,
                        struct cached **ents, size_t *n, size_t *cap, uint64_t *total)
{
    int fd = *sub ? openat(dir, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t slen = strlen(suffix);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        struct stat st;
        if (len <= slen || strcmp(de->d_name + len - slen, suffix) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        *total += (uint64_t)st.st_size;
        if (!*sub && !strcmp(de->d_name, keep))
            continue;
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 64;
            struct cached *e = realloc(*ents, c * sizeof *e);
            if (!e)
                break;
            *ents = e;
            *cap = c;
        }
        struct cached *e = &(*ents)[*n];
        int w = snprintf(e->name, sizeof e->name, "%s%s%s", sub, *sub ? "/" : "", de->d_name);
        if (w < 0 || (size_t)w >= sizeof e->name)
            continue;
        (*n)++;
        e->size = (uint64_t)st.st_size;
        e->used = (int64_t)st.st_mtim.tv_sec;
    }
    closedir(d);
}

/* Keeps the cache under its limit: the files used longest ago go first,
 * never the index just written (keep). */
static void evict(const char *dir, const char *keep)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct cached *ents = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    list_cached(fd, "", ".mtlx", keep, &ents, &n, &cap, &total);
    list_cached(fd, "debug", ".debug", keep, &ents, &n, &cap, &total);
    uint64_t limit = cache_limit();
    while (total > limit && n) {
        size_t oldest = 0;
        for (size_t i = 1; i < n; i++)
            if (ents[i].used < ents[oldest].used)
                oldest = i;
        if (unlinkat(fd, ents[oldest].name, 0) == 0)
            total -= ents[oldest].size;
        ents[oldest] = ents[--n];
    }
    free(ents);
    close(fd);
}

static void build_release(struct build *b)
{
    ZSTD_freeCCtx(b->cctx);
    free(b->scratch);
    free(b->frame);
    free(b->out.buf);
    for (int i = 0; i < PENDING; i++)
        for (int k = 0; k < MTL_IXA_COLUMNS; k++)
            free(b->pend[i].col[k]);
    for (int k = 0; k < MTL_IXF_COLUMNS; k++)
        free(b->fcol[k]);
    mtl_buf_release(&b->achunks);
    mtl_buf_release(&b->fchunks);
    mtl_buf_release(&b->late);
    mtl_buf_release(&b->events);
    mtl_buf_release(&b->rss);
    mtl_buf_release(&b->lives);
    mtl_addrmap_release(&b->live);
    mtl_totals_acc_release(&b->totals);
    mtl_stackagg_release(&b->stacks);
}

static int build_init(struct build *b, const struct mtl_trace_info *in)
{
    memset(b, 0, sizeof *b);
    b->in = in;
    b->last_alloc = b->free_head = UINT64_MAX;
    b->totals = (struct mtl_totals_acc)MTL_TOTALS_ACC_INIT;
    b->stacks = (struct mtl_stackagg)MTL_STACKAGG_INIT(1);
    b->live = (struct mtl_addrmap)MTL_ADDRMAP_INIT;
    b->cctx = ZSTD_createCCtx();
    b->scratch = malloc(16 * (size_t)MTL_IX_CHUNK);
    b->frame_cap = mtl_ixcol_bound(MTL_IX_CHUNK);
    b->frame = malloc(b->frame_cap);
    b->out.cap = 1u << 20;
    b->out.buf = malloc(b->out.cap);
    int ok = b->cctx && b->scratch && b->frame && b->out.buf;
    /* Pending chunks' columns are allocated as they are first needed: a
     * small trace uses one. */
    for (int k = 0; ok && k < MTL_IXF_COLUMNS; k++)
        ok = (b->fcol[k] = malloc(8 * (size_t)MTL_IX_CHUNK)) != NULL;
    return ok ? 0 : MTL_ENOMEM;
}

static int pending_columns(struct build *b)
{
    struct pending *p = &b->pend[(b->nblocks / MTL_IX_CHUNK) % PENDING];
    for (int k = 0; k < MTL_IXA_COLUMNS; k++)
        if (!p->col[k] && !(p->col[k] = malloc(8 * (size_t)MTL_IX_CHUNK)))
            return MTL_ENOMEM;
    return 0;
}

/* Opens the file to build into: a temporary name in the cache (tmp), else
 * a memory file.  Returns the descriptor or -1. */
static int open_output(const char *dir, const struct ix_identity *id, char *path,
                       size_t cap, char *tmp, size_t tcap)
{
    path[0] = tmp[0] = '\0';
    if (dir && make_dirs(dir) == 0 && file_name(path, cap, dir, id) == 0 &&
        snprintf(tmp, tcap, "%s.XXXXXX", path) < (int)tcap) {
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd >= 0)
            return fd;
    }
    path[0] = tmp[0] = '\0';
    return memfd_create("memtally-index", MFD_CLOEXEC);
}

int mtl_index_build(struct mtl_index **out, struct mtl_reader *r, int trace_fd,
                    const char *dir, void (*progress)(void *arg, double done), void *arg)
{
    struct ix_identity id;
    int rc = identity(trace_fd, &id);
    if (rc < 0)
        return rc;
    struct mtl_index *ix = calloc(1, sizeof *ix);
    if (ix)
        ix->fd = -1;
    struct build b;
    if (!ix)
        return MTL_ENOMEM;
    if ((rc = build_init(&b, mtl_reader_info(r))) < 0) {
        build_release(&b);
        free(ix);
        return rc;
    }
    char where[4096], tmp[4200];
    const char *cache = mtl_index_dir(dir, where, sizeof where);
    b.out.fd = open_output(cache, &id, ix->path, sizeof ix->path, tmp, sizeof tmp);
    if (b.out.fd < 0)
        rc = MTL_EIO;
    /* The header goes in front at the end; its room first. */
    static const uint8_t room[IX_HEADER];
    if (rc == 0)
        rc = out_put(&b.out, room, sizeof room, NULL);
    struct mtl_event ev;
    uint64_t n = 0, next = 0;
    while (rc == 0 && (rc = mtl_reader_next(r, &ev)) > 0) {
        if (ev.type == MTL_EV_ALLOC && b.nblocks % MTL_IX_CHUNK == 0 &&
            (rc = pending_columns(&b)) < 0)
            break;
        if ((rc = on_event(&b, &ev)) < 0)
            break;
        if (progress && ++n % 65536 == 0) {
            uint64_t at, size;
            mtl_reader_position(r, &at, &size);
            if (size && at >= next) {
                progress(arg, (double)at / (double)size);
                next = at + size / 100;
            }
        }
    }
    if (rc == 0 && b.nblocks > UINT32_MAX)
        rc = MTL_ENOMEM; /* block numbers are 32 bits in the free chunks' rows */
    while (rc == 0 && b.written * MTL_IX_CHUNK < b.nblocks)
        rc = write_blocks(&b);
    if (rc == 0 && b.nfree_rows)
        rc = write_frees(&b);
    if (rc == 0)
        rc = finish(&b, r, &id);
    /* A disk that fails (full, say) fails the build: the caller reads the
     * trace itself instead. */
    if (rc == 0 && tmp[0] && rename(tmp, ix->path) < 0) {
        unlink(tmp);
        rc = MTL_EIO;
    }
    if (rc == 0) {
        rc = map_file(ix, b.out.fd);
        if (rc == 0)
            rc = attach(ix);
    }
    if (rc == 0 && ix->path[0]) {
        const char *base = strrchr(ix->path, '/');
        evict(cache, base ? base + 1 : ix->path);
    }
    if (b.out.fd >= 0)
        close(b.out.fd);
    if (rc < 0 && tmp[0])
        unlink(tmp);
    build_release(&b);
    if (rc < 0) {
        release(ix);
        return rc;
    }
    *out = ix;
    return 0;
}

const struct mtl_ix_summary *mtl_index_summary(const struct mtl_index *ix)
{
    return &ix->sum;
}

void mtl_index_defs(const struct mtl_index *ix, struct mtl_defs *d)
{
    *d = ix->defs;
}

const char *mtl_index_path(const struct mtl_index *ix)
{
    return ix->path;
}

uint64_t mtl_index_size(const struct mtl_index *ix)
{
    return ix->map_size;
}

void mtl_index_discard(struct mtl_index *ix)
{
    if (ix && ix->path[0])
        unlink(ix->path);
}

void mtl_index_close(struct mtl_index *ix)
{
    if (ix)
        release(ix);
}
