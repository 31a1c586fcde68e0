/*
 * writer.c: the background thread that turns per-thread event chunks into
 * the trace file (docs/FORMAT.md).
 *
 * Every MTL_ROUND_MS, or sooner when chunks fill up, a round:
 *   1. collect every thread's chunk (events.c) and note the cutoff time;
 *   2. write the definitions made since the last round: modules, then new
 *      stack nodes, so that every record refers only to what came before;
 *   3. merge the chunks by timestamp and encode the events older than the
 *      cutoff as varint records with deltas (time, pointer); younger ones
 *      stay for the next round;
 *   4. when the block holds MTL_BLOCK_TARGET bytes or has waited
 *      MTL_BLOCK_MAX_AGE_MS, compress it into one zstd frame with a
 *      checksum and write(2) it, header first: a self-delimiting block.
 *
 * A block's fields go to separate streams by kind (times, sizes, stacks,
 * pointers, the rest: docs/FORMAT.md), each contiguous in the payload, so
 * that zstd sees runs of like values; pointers are coded against a window
 * of the last MTL_PTR_WINDOW ones, as a block is most often freed soon
 * after it was allocated or allocated where one was just freed.
 *
 * Only this thread (or a finishing thread, under wmu) writes the file.  It
 * marks itself as inside memtally, so zstd's own allocations pass straight
 * through the hooks unrecorded.
 */
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "common/ring.h"
#include "common/tracefile.h"
#include "common/varint.h"
#include "trace/format.h"

#define MTL_BLOCK_TARGET (1u << 20)
#define MTL_BLOCK_MAX_AGE_MS 250
#define MTL_RING_BLOCK_AGE_MS MTL_ROUND_MS
#define STREAM_CAP (MTL_BLOCK_TARGET + (64u << 10))
#define RAW_CAP (MTL_STREAMS * STREAM_CAP + 64)
#define MAX_RUNS (MTL_CHUNK_BUDGET + 16)
#define WINDOW_INDEX_BITS 10 /* hash slots that find a pointer in the window */
#define WINDOW_INDEX (1u << WINDOW_INDEX_BITS)

int mtl__writer_running;

static struct {
    pthread_mutex_t wmu;       /* one round at a time */
    pthread_mutex_t wake_mu;
    pthread_cond_t wake;
    int woken;
    pthread_t thread;
    atomic_int finish_reason;  /* -1, or the END reason requested */
    int finish_detail;
    atomic_int done;           /* the END record is written */
    ZSTD_CCtx *zc;
    uint8_t *stream[MTL_STREAMS]; /* the block being filled, by stream */
    size_t used[MTL_STREAMS];
    size_t total;              /* bytes in all streams */
    uint8_t *raw;              /* the streams put together */
    uint8_t *out;              /* their compressed form */
    size_t out_cap;
    uint64_t block_started_ns;
    struct mtl__chunk **runs;  /* chunks with unwritten events */
    size_t nruns;
    /* encoder state, carried from block to block */
    uint64_t last_us, last_ptr;
    uint64_t ptr_seq;          /* pointers coded so far */
    struct { uint64_t ptr, seq; } seen[WINDOW_INDEX]; /* where each was last */
    uint32_t cur_thread;
    uint64_t last_rss;
    dev_t dev;                 /* the trace file's identity, to notice */
    ino_t ino;                 /* the program closing our descriptor */
    unsigned rounds;
    uint64_t block_seq;        /* the next block's number in the file */
    struct mtl__counts counts;
    int failed;                /* a write failed: recording stopped */
    struct mtl_ring *ring;     /* the trace goes to memtally record through it */
} w = {
    .wmu = PTHREAD_MUTEX_INITIALIZER,
    .wake_mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .finish_reason = -1,
};

/* --- where the bytes go ------------------------------------------------ */

/* A trace is open: a file, or memtally record's ring. */
static int trace_open(void)
{
    return mtl__pl.fd >= 0 || w.ring;
}

/* Into the ring: waits while it is full and memtally record is there to
 * empty it (its heartbeat fresh); 0, or -EPIPE when it is gone. */
static int ring_write(const void *p, size_t n)
{
    for (;;) {
        if (atomic_load(&w.ring->gone))
            return -EPIPE;
        if (mtl_ring_room(w.ring, n)) {
            mtl_ring_put(w.ring, p, n);
            return 0;
        }
        uint64_t beat = atomic_load(&w.ring->beat);
        if (beat && mtl__monotonic_ns() - beat > 10ull * 1000000000ull) {
            atomic_store(&w.ring->gone, 1);
            return -EPIPE;
        }
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

/* Bytes of the trace, to where it goes; 0 or a negative errno. */
static int sink_write(const void *p, size_t n)
{
    return w.ring ? ring_write(p, n) : mtl__write_all(mtl__pl.fd, p, n);
}

/* --- blocks ------------------------------------------------------------ */

static void flush_block(void)
{
    if (w.total == 0 || w.failed)
        return;
    /* The payload: the stream lengths, then the streams. */
    uint8_t *p = mtl__put_varint(w.raw, MTL_STREAMS);
    for (int i = 0; i < MTL_STREAMS; i++)
        p = mtl__put_varint(p, w.used[i]);
    for (int i = 0; i < MTL_STREAMS; i++) {
        memcpy(p, w.stream[i], w.used[i]);
        p += w.used[i];
        w.used[i] = 0;
    }
    size_t raw = (size_t)(p - w.raw);
    w.total = 0;
    size_t c = ZSTD_compress2(w.zc, w.out + MTL_BLOCK_HEADER_SIZE,
                              w.out_cap - MTL_BLOCK_HEADER_SIZE, w.raw, raw);
    if (ZSTD_isError(c)) {
        mtl__say("cannot compress a trace block: %s; recording stopped",
                 ZSTD_getErrorName(c));
        w.failed = 1;
        return;
    }
    struct stat st;
    if (!w.ring && (fstat(mtl__pl.fd, &st) < 0 || st.st_dev != w.dev || st.st_ino != w.ino)) {
        mtl__say("the program closed the trace file's descriptor; recording stopped");
        w.failed = 1;
        return;
    }
    mtl__put_u32le(w.out, MTL_BLOCK_MAGIC);
    mtl__put_u32le(w.out + 4, (uint32_t)c);
    mtl__put_u32le(w.out + 8, (uint32_t)raw);
    mtl__put_u32le(w.out + 12, mtl__block_check((uint32_t)c, (uint32_t)raw, w.block_seq));
    int rc = sink_write(w.out, MTL_BLOCK_HEADER_SIZE + c);
    w.block_seq++;
    if (rc < 0) {
        /* memtally record says why, for the ring: it writes the file. */
        if (!w.ring)
            mtl__say("cannot write %s: %s; recording stopped", mtl__pl.opt.output,
                     strerror(-rc));
        w.failed = 1;
    }
}

/* Makes room for n more bytes in every stream, flushing the block if need
 * be. */
static inline void reserve(size_t n)
{
    for (int i = 0; i < MTL_STREAMS; i++)
        if (w.used[i] + n > STREAM_CAP) {
            flush_block();
            return;
        }
}

static inline void put_byte(int stream, uint8_t b)
{
    w.stream[stream][w.used[stream]++] = b;
    w.total++;
}

static inline void put_var(int stream, uint64_t v)
{
    uint8_t *p = w.stream[stream] + w.used[stream];
    size_t n = (size_t)(mtl__put_varint(p, v) - p);
    w.used[stream] += n;
    w.total += n;
}

/* Room in the main stream for a definition writer (modules, stacks). */
static uint8_t *main_room(size_t *cap)
{
    *cap = STREAM_CAP - w.used[MTL_S_MAIN];
    return w.stream[MTL_S_MAIN] + w.used[MTL_S_MAIN];
}

static void main_advance(size_t n)
{
    w.used[MTL_S_MAIN] += n;
    w.total += n;
}

static void put_str(int stream, const char *str, size_t n)
{
    put_var(stream, n);
    memcpy(w.stream[stream] + w.used[stream], str, n);
    w.used[stream] += n;
    w.total += n;
}

/* --- the header -------------------------------------------------------- */

enum { HK_PROGRAM = 1, HK_CMDLINE, HK_PID, HK_PPID, HK_START_UNIX_US, HK_MODE,
       HK_SAMPLE_RATE, HK_MAX_DEPTH };

static void hdr_int(unsigned key, uint64_t v)
{
    put_var(MTL_S_MAIN, key);
    put_var(MTL_S_MAIN, 0);
    put_var(MTL_S_MAIN, v);
}

static void hdr_str(unsigned key, const char *str, size_t n)
{
    put_var(MTL_S_MAIN, key);
    put_var(MTL_S_MAIN, 1);
    put_str(MTL_S_MAIN, str, n);
}

static void write_header_record(void)
{
    char exe[4096], cmd[8192];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    size_t clen = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while (clen < sizeof cmd &&
               (r = read(fd, cmd + clen, sizeof cmd - clen)) > 0)
            clen += (size_t)r;
        close(fd);
    }
    while (clen > 0 && cmd[clen - 1] == '\0')
        clen--;
    for (size_t i = 0; i < clen; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    struct timeval tv;
    gettimeofday(&tv, NULL);

    reserve(sizeof exe + sizeof cmd + 128);
    put_byte(MTL_S_MAIN, MTL_REC_HEADER);
    put_var(MTL_S_MAIN, 8);
    hdr_str(HK_PROGRAM, exe, strlen(exe));
    hdr_str(HK_CMDLINE, cmd, clen);
    hdr_int(HK_PID, (uint64_t)getpid());
    hdr_int(HK_PPID, (uint64_t)getppid());
    hdr_int(HK_START_UNIX_US, (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec);
    hdr_int(HK_MODE, mtl__pl.opt.sample_rate ? 1 : 0);
    hdr_int(HK_SAMPLE_RATE, mtl__pl.opt.sample_rate);
    hdr_int(HK_MAX_DEPTH, mtl__pl.opt.depth);
}

/* --- opening ----------------------------------------------------------- */

/* Expands %p (pid) and %e (executable name) of the pattern into out. */
void mtl__expand_pattern(char *out, size_t cap, const char *pattern)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    size_t o = 0;
    for (const char *s = pattern; *s && o + 1 < cap; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            o += mtl__fmt(out + o, cap - o, "%d", (int)getpid());
            s++;
        } else if (s[0] == '%' && s[1] == 'e') {
            o += mtl__fmt(out + o, cap - o, "%s", base);
            s++;
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
}

/* Opens path for a new trace: replacing it when clobber, else never
 * overwriting another trace (path.1, path.2, ...).  Sets opt.output to the
 * name used.  Returns a descriptor or a negative errno. */
static int open_output(const char *path, int clobber)
{
    char base[sizeof mtl__pl.opt.output];
    mtl__fmt(base, sizeof base, "%s", path);
    if (clobber) {
        mtl__fmt(mtl__pl.opt.output, sizeof mtl__pl.opt.output, "%s", base);
        return mtl_trace_create(base);
    }
    for (int i = 0; i < 1000; i++) {
        if (i == 0)
            mtl__fmt(mtl__pl.opt.output, sizeof mtl__pl.opt.output, "%s", base);
        else
            mtl__fmt(mtl__pl.opt.output, sizeof mtl__pl.opt.output, "%s.%d",
                     base, i);
        /* A symbolic link is an existing name, never followed. */
        int fd = mtl_trace_create_new(mtl__pl.opt.output);
        if (fd != -EEXIST)
            return fd;
    }
    return -EEXIST;
}

/* Where a new trace goes: memtally record's ring for the trace it asked
 * for (a process's first: the one at the path it chose, which it has
 * created and writes), else a file of our own. */
static int open_sink(const char *path, int clobber)
{
    if (mtl__pl.ring) {
        w.ring = mtl__pl.ring;
        mtl__pl.ring = NULL; /* once */
        mtl__fmt(mtl__pl.opt.output, sizeof mtl__pl.opt.output, "%s", path);
        return 0;
    }
    int fd = open_output(path, clobber);
    if (fd < 0) {
        mtl__say("cannot create trace %s: %s; the program runs unprofiled", path,
                 mtl_trace_create_error(fd));
        return fd;
    }
    /* A high descriptor number, out of the way of programs that expect
     * the lowest free one (dup2 onto 0-2, "close everything above 3"). */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    struct stat st;
    if (fstat(fd, &st) == 0) {
        w.dev = st.st_dev;
        w.ino = st.st_ino;
    }
    mtl__pl.fd = fd;
    return 0;
}

static int start_file(const char *path, int clobber)
{
    int rc = open_sink(path, clobber);
    if (rc < 0)
        return rc;
    uint8_t hdr[MTL_FILE_HEADER_SIZE] = {0};
    memcpy(hdr, MTL_FILE_MAGIC, 8);
    mtl__put_u32le(hdr + 8, MTL_FORMAT_VERSION);
    if (sink_write(hdr, sizeof hdr) < 0)
        return -1;
    memset(w.used, 0, sizeof w.used);
    w.total = 0;
    w.block_seq = 0;
    memset(w.seen, 0, sizeof w.seen);
    w.ptr_seq = 0;
    w.last_us = w.last_ptr = 0;
    w.cur_thread = UINT32_MAX;
    w.last_rss = 0;
    memset(&w.counts, 0, sizeof w.counts);
    w.failed = 0;
    w.block_started_ns = mtl__now_ns();
    write_header_record();
    flush_block();
    return w.failed ? -EIO : 0;
}

/* The trace is over: its file closed, or the ring told. */
static void close_sink(void)
{
    if (w.ring) {
        atomic_store(&w.ring->ended, 1);
        w.ring = NULL;
    }
    if (mtl__pl.fd >= 0)
        close(mtl__pl.fd);
    mtl__pl.fd = -1;
}

/* The buffers and the compressor, once per process. */
static int setup(void)
{
    if (w.zc)
        return 0;
    for (int i = 0; i < MTL_STREAMS; i++)
        if (!w.stream[i] && !(w.stream[i] = mtl__pages_alloc(STREAM_CAP)))
            return -1;
    w.raw = mtl__pages_alloc(RAW_CAP);
    w.out_cap = ZSTD_compressBound(RAW_CAP) + MTL_BLOCK_HEADER_SIZE;
    w.out = mtl__pages_alloc(w.out_cap);
    w.runs = mtl__pages_alloc(MAX_RUNS * sizeof *w.runs);
    if (!w.raw || !w.out || !w.runs)
        return -1;
    mtl__tls.in_hook++;
    w.zc = ZSTD_createCCtx();
    if (w.zc) {
        ZSTD_CCtx_setParameter(w.zc, ZSTD_c_compressionLevel, 3);
        ZSTD_CCtx_setParameter(w.zc, ZSTD_c_checksumFlag, 1);
    }
    mtl__tls.in_hook--;
    return w.zc ? 0 : -1;
}

int mtl__writer_begin(const char *path, int clobber, int start_thread)
{
    if (setup() < 0)
        return -ENOMEM;
    /* Whatever the last trace left behind belongs to it. */
    for (size_t r = 0; r < w.nruns; r++)
        mtl__chunk_release(w.runs[r]);
    w.nruns = 0;
    atomic_store(&w.finish_reason, -1);
    atomic_store(&w.done, 0);
    w.woken = 0;
    mtl__modules_rewind();
    mtl__stacks_rewind();
    int rc = start_file(path, clobber);
    if (rc < 0)
        return rc;
    if (start_thread && mtl__writer_start() < 0) {
        close_sink();
        return -EAGAIN;
    }
    return 0;
}

/* --- encoding events --------------------------------------------------- */

static inline void put_dt(uint64_t t_ns)
{
    uint64_t us = t_ns / 1000;
    /* Events arrive in time order; a stamp from before the last one can
     * only be a thread-exit name refresh racing a round: clamp it. */
    uint64_t dt = us > w.last_us ? us - w.last_us : 0;
    if (us > w.last_us)
        w.last_us = us;
    put_var(MTL_S_TIME, dt);
}

/* A pointer: k + 1 if it is the k-th newest of the window (the last
 * MTL_PTR_WINDOW pointers), else 0 and its difference from the previous
 * pointer.  A small hash of when each pointer was last coded finds it
 * without keeping the window itself; a pointer whose slot another took is
 * coded as a difference, which reads back the same. */
static inline void put_ptr(uint64_t ptr)
{
    size_t slot = (size_t)((ptr * 0x9e3779b97f4a7c15ull) >> (64 - WINDOW_INDEX_BITS));
    uint64_t k = w.ptr_seq - w.seen[slot].seq;
    if (w.seen[slot].ptr == ptr && w.seen[slot].seq && k < MTL_PTR_WINDOW) {
        put_var(MTL_S_PTR, k + 1);
    } else {
        put_var(MTL_S_PTR, 0);
        put_var(MTL_S_PTR, mtl__zigzag((int64_t)(ptr - w.last_ptr)));
    }
    w.ptr_seq++;
    w.seen[slot].ptr = ptr;
    w.seen[slot].seq = w.ptr_seq;
    w.last_ptr = ptr;
}

static void encode(const struct mtl__ev *e)
{
    reserve(64);
    unsigned type = MTL__EV_TYPE(e);
    uint64_t t = MTL__EV_TIME(e);
    if ((type == MTL__EV_ALLOC || type == MTL__EV_FREE) &&
        e->thread != w.cur_thread) {
        put_byte(MTL_S_MAIN, MTL_REC_THREAD_SWITCH);
        put_var(MTL_S_MAIN, e->thread);
        w.cur_thread = e->thread;
    }
    switch (type) {
    case MTL__EV_ALLOC:
        w.counts.allocations++;
        w.counts.bytes += e->b;
        put_byte(MTL_S_MAIN, MTL_REC_ALLOC);
        put_dt(t);
        put_var(MTL_S_SIZE, e->b);
        put_var(MTL_S_STACK, e->stack);
        put_ptr(e->a);
        break;
    case MTL__EV_FREE:
        w.counts.frees++;
        put_byte(MTL_S_MAIN, MTL_REC_FREE);
        put_dt(t);
        put_ptr(e->a);
        break;
    case MTL__EV_THREAD_START:
        put_byte(MTL_S_MAIN, MTL_REC_THREAD_START);
        put_dt(t);
        put_var(MTL_S_MAIN, e->thread);
        put_var(MTL_S_MAIN, e->a);
        break;
    case MTL__EV_THREAD_NAME: {
        char name[17];
        memcpy(name, &e->a, 8);
        memcpy(name + 8, &e->b, 8);
        name[16] = '\0';
        put_byte(MTL_S_MAIN, MTL_REC_THREAD_NAME);
        put_dt(t);
        put_var(MTL_S_MAIN, e->thread);
        put_str(MTL_S_MAIN, name, strlen(name));
        break;
    }
    case MTL__EV_THREAD_EXIT:
        put_byte(MTL_S_MAIN, MTL_REC_THREAD_EXIT);
        put_dt(t);
        put_var(MTL_S_MAIN, e->thread);
        break;
    }
}

/* --- merging ----------------------------------------------------------- */

static inline uint64_t run_time(size_t r)
{
    const struct mtl__chunk *c = w.runs[r];
    return MTL__EV_TIME(&c->ev[c->pos]);
}

/* A binary min-heap of run indices by their next event's time. */
static void sift_down(size_t *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && run_time(heap[l]) < run_time(heap[m]))
            m = l;
        if (l + 1 < n && run_time(heap[l + 1]) < run_time(heap[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static void merge_runs(uint64_t cutoff)
{
    static size_t heap[MAX_RUNS];
    size_t n = 0;
    for (size_t r = 0; r < w.nruns; r++)
        if (w.runs[r]->pos < w.runs[r]->n && run_time(r) < cutoff)
            heap[n++] = r;
    for (size_t i = n; i-- > 0;)
        sift_down(heap, n, i);
    while (n > 0) {
        struct mtl__chunk *c = w.runs[heap[0]];
        encode(&c->ev[c->pos]);
        c->pos++;
        if (c->pos >= c->n || run_time(heap[0]) >= cutoff)
            heap[0] = heap[--n];
        sift_down(heap, n, 0);
    }
    /* Chunks written out go back to the pool; the rest wait. */
    size_t keep = 0;
    for (size_t r = 0; r < w.nruns; r++) {
        if (w.runs[r]->pos >= w.runs[r]->n)
            mtl__chunk_release(w.runs[r]);
        else
            w.runs[keep++] = w.runs[r];
    }
    w.nruns = keep;
}

/* --- rounds ------------------------------------------------------------ */

static void write_modules(uint64_t unloads_before)
{
    int more;
    size_t cap;
    do {
        reserve(STREAM_CAP / 2);
        uint8_t *p = main_room(&cap);
        main_advance(mtl__modules_emit(p, cap, unloads_before, &more));
        if (more)
            flush_block();
    } while (more && !w.failed);
}

/* A reader names a stack node's module by the modules loaded when the
 * node is defined: loads first, then the nodes, then the unloads, so that
 * a library loaded, used and closed within one round (a dlopen loop) has
 * its nodes defined while it is loaded.  Only unloads from before the
 * nodes were taken: a node made before a later unload is in them. */
static void write_definitions(void)
{
    int more;
    size_t cap;
    write_modules(0);
    uint64_t nodes_taken = mtl__now_ns();
    do {
        reserve(STREAM_CAP / 2);
        uint8_t *p = main_room(&cap);
        main_advance(mtl__stacks_emit(p, cap, &more));
        if (more)
            flush_block();
    } while (more && !w.failed);
    write_modules(nodes_taken);
}

static void sample_rss(uint64_t t_ns)
{
    char buf[128];
    /* Opened each time: a descriptor kept open could be closed by the
     * program (daemons close them all) and its number reused. */
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    /* statm: size resident shared ... in pages */
    const char *s = strchr(buf, ' ');
    if (!s)
        return;
    uint64_t pages = 0;
    for (s++; *s >= '0' && *s <= '9'; s++)
        pages = pages * 10 + (uint64_t)(*s - '0');
    uint64_t rss = pages * (uint64_t)sysconf(_SC_PAGESIZE);
    if (rss == w.last_rss)
        return;
    w.last_rss = rss;
    reserve(32);
    put_byte(MTL_S_MAIN, MTL_REC_RSS);
    put_dt(t_ns);
    put_var(MTL_S_MAIN, rss);
}

static void write_end(uint64_t now, unsigned reason, int detail)
{
    reserve(32);
    put_byte(MTL_S_MAIN, MTL_REC_END);
    put_dt(now);
    put_var(MTL_S_MAIN, reason);
    put_var(MTL_S_MAIN, (uint64_t)detail);
    flush_block();
}

/* One round; with wmu held.  final: write every event and the END record;
 * trylock_spins: see mtl__collect. */
static void round_locked(int final, unsigned trylock_spins)
{
    if (w.failed || atomic_load(&w.done))
        return;
    uint64_t cutoff = mtl__collect(w.runs, &w.nruns, MAX_RUNS, trylock_spins);
    if (final)
        cutoff = UINT64_MAX;
    /* After collecting: an object loaded before any collected event used
     * its addresses is then in the map (see modules.c). */
    if (mtl__modules_changed())
        mtl__modules_rescan();
    write_definitions();
    merge_runs(cutoff);
    uint64_t now = mtl__now_ns();
    sample_rss(final ? now : cutoff);
    if (w.ring) /* for memtally record: was anything allocated at all? */
        atomic_store(&w.ring->allocations, w.counts.allocations);
    if (final) {
        write_end(now, (unsigned)atomic_load(&w.finish_reason), w.finish_detail);
        atomic_store(&w.done, 1);
        return;
    }
    /* Through the ring, a block that has waited a round goes: what reached
     * the ring survives any death of the program (SIGKILL included). */
    uint64_t max_age_ms = w.ring ? MTL_RING_BLOCK_AGE_MS : MTL_BLOCK_MAX_AGE_MS;
    if (w.total >= MTL_BLOCK_TARGET || now - w.block_started_ns >= max_age_ms * 1000000ull) {
        flush_block();
        w.block_started_ns = now;
    }
    if (w.failed)
        mtl__stop_recording(NULL, 0);
}

static void *writer_main(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    mtl__tls.in_hook = 1; /* nothing this thread allocates is the program's */
    mtl__tls.writer = 1;
    for (;;) {
        pthread_mutex_lock(&w.wake_mu);
        if (!w.woken && atomic_load(&w.finish_reason) < 0) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += MTL_ROUND_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w.wake, &w.wake_mu, &until);
        }
        w.woken = 0;
        pthread_mutex_unlock(&w.wake_mu);

        int finish = atomic_load(&w.finish_reason) >= 0;
        if (finish || ++w.rounds % (1000 / MTL_ROUND_MS) == 0)
            mtl__refresh_thread_names();
        pthread_mutex_lock(&w.wmu);
        round_locked(finish, finish ? 200000 : 0);
        pthread_mutex_unlock(&w.wmu);
        if (finish || w.failed)
            break;
    }
    return NULL;
}

int mtl__writer_start(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    mtl__tls.in_hook++;
    int rc = pthread_create(&w.thread, &attr, writer_main, NULL);
    mtl__tls.in_hook--;
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return -1;
    mtl__writer_running = 1;
    return 0;
}

/* Never blocks, so that a signal handler may call it: if another thread
 * holds wake_mu it is waking the writer already, and the writer wakes by
 * itself every MTL_ROUND_MS anyway. */
void mtl__writer_wake(void)
{
    if (pthread_mutex_trylock(&w.wake_mu) != 0)
        return;
    w.woken = 1;
    pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.wake_mu);
}

void mtl__writer_counts(struct mtl__counts *c)
{
    /* Read without the lock: a status line may be a round behind. */
    *c = w.counts;
}

int mtl__writer_dump(const char *path)
{
    int rc = 0, out = -1, src = -1;
    pthread_mutex_lock(&w.wmu);
    if (atomic_load(&w.done) || !trace_open()) {
        rc = -EINVAL;
        goto out;
    }
    if ((out = mtl_trace_create(path)) < 0) {
        rc = out;
        goto out;
    }
    round_locked(0, 0);
    flush_block();
    /* The trace so far: in the file, once memtally record has emptied the
     * ring into it. */
    src = mtl__pl.fd;
    if (w.ring) {
        for (int ms = 0; ms < 10000 && !atomic_load(&w.ring->gone) &&
                         atomic_load(&w.ring->tail) != atomic_load(&w.ring->head); ms++) {
            struct timespec one = { 0, 1000000 };
            nanosleep(&one, NULL);
        }
        if ((src = open(mtl__pl.opt.output, O_RDONLY | O_CLOEXEC)) < 0) {
            rc = -errno;
            goto out;
        }
    }
    /* ...block for block... */
    char buf[65536];
    off_t at = 0;
    for (;;) {
        ssize_t n = pread(src, buf, sizeof buf, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out;
        }
        if (n == 0)
            break;
        if ((rc = mtl__write_all(out, buf, (size_t)n)) < 0)
            goto out;
        at += n;
    }
    /* ...and an END block of its own, written to the copy only: the
     * decoder state of the original goes on as if it never was. */
    uint64_t last_us = w.last_us, block_seq = w.block_seq;
    int fd = mtl__pl.fd;
    struct mtl_ring *ring = w.ring;
    w.ring = NULL;
    reserve(32);
    put_byte(MTL_S_MAIN, MTL_REC_END);
    put_dt(mtl__now_ns());
    put_var(MTL_S_MAIN, MTL_END_STOP);
    put_var(MTL_S_MAIN, 0);
    mtl__pl.fd = out;
    struct stat st;
    dev_t dev = w.dev;
    ino_t ino = w.ino;
    if (fstat(out, &st) == 0) {
        w.dev = st.st_dev;
        w.ino = st.st_ino;
    }
    flush_block();
    mtl__pl.fd = fd;
    w.ring = ring;
    w.dev = dev;
    w.ino = ino;
    w.last_us = last_us;
    w.block_seq = block_seq;
    if (w.failed)
        rc = -EIO;
out:
    pthread_mutex_unlock(&w.wmu);
    if (src >= 0 && src != mtl__pl.fd)
        close(src);
    if (out >= 0 && close(out) < 0 && rc == 0)
        rc = -errno;
    return rc;
}

void mtl__writer_exec_begin(void)
{
    pthread_mutex_lock(&w.wmu);
    if (atomic_load(&w.done) || !trace_open())
        return;
    /* Everything up to now, then END: the trace is whole if exec works.
     * wmu stays held so that the writer adds nothing after END. */
    round_locked(0, 0);
    round_locked(0, 0);
    write_end(mtl__now_ns(), MTL_END_EXEC, 0);
}

void mtl__writer_exec_end(void)
{
    pthread_mutex_unlock(&w.wmu);
}

void mtl__writer_finish(int reason, int detail, unsigned timeout_ms)
{
    int expected = -1;
    if (!atomic_compare_exchange_strong(&w.finish_reason, &expected, reason))
        goto wait; /* someone else is finishing: wait for them */
    w.finish_detail = detail;
    if (mtl__writer_running && !pthread_equal(pthread_self(), w.thread)) {
        mtl__writer_wake();
        goto wait;
    }
    /* No writer thread (it failed to start, or we are early): finish here,
     * unless we are in a signal handler, where zstd may not allocate. */
    if (reason != MTL_END_SIGNAL) {
        mtl__tls.in_hook++;
        pthread_mutex_lock(&w.wmu);
        round_locked(1, 200000);
        pthread_mutex_unlock(&w.wmu);
        mtl__tls.in_hook--;
    }
wait:
    for (unsigned ms = 0; !atomic_load(&w.done) && ms < timeout_ms; ms++) {
        struct timespec one = {0, 1000000};
        nanosleep(&one, NULL);
    }
    if (atomic_load(&w.done) && mtl__writer_running && reason != MTL_END_SIGNAL &&
        !pthread_equal(pthread_self(), w.thread)) {
        pthread_join(w.thread, NULL);
        mtl__writer_running = 0;
    }
    if (atomic_load(&w.done))
        close_sink();
}

/* Child of fork that records on: a new trace that repeats the definitions
 * the parent had written to its own, and a writer thread of its own. */
void mtl__writer_after_fork_child(void)
{
    pthread_mutex_init(&w.wmu, NULL);
    pthread_mutex_init(&w.wake_mu, NULL);
    pthread_cond_init(&w.wake, NULL);
    mtl__writer_running = 0;
    /* The parent's trace, ring or file, is the parent's. */
    w.ring = NULL;
    mtl__pl.ring = NULL;
    if (mtl__pl.fd >= 0)
        close(mtl__pl.fd);
    mtl__pl.fd = -1;
    char path[sizeof mtl__pl.opt.output];
    mtl__expand_pattern(path, sizeof path, mtl__pl.opt.pattern);
    if (mtl__writer_begin(path, 0, 1) < 0)
        mtl__stop_recording(NULL, 0);
}
