/* record_writer.c: see record_writer.h. */
#include "cli/record_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/addrcount.h"
#include "common/ctlsock.h"
#include "common/tracefile.h"

#define ROUND_MS 20
#define BLOCK_AGE_MS 250 /* blocks reach the file within a quarter second */
#define BUSY_SPINS MTL_ENC_BUSY_SPINS /* then the round is skipped: see encoder.h */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A writer with no region, file or trace yet. */
static void writer_init(struct record_writer *rw)
{
    memset(rw, 0, sizeof *rw);
    rw->memfd = rw->first = rw->out = -1;
    rw->live = (struct mtl_hmap)MTL_HMAP_INIT;
    pthread_mutex_init(&rw->mu, NULL);
    const char *w = getenv("MEMTALLY_WRITER");
    rw->discard_events = w && !strcmp(w, "discard");
}

int record_writer_create(struct record_writer *rw)
{
    writer_init(rw);
    /* Not close-on-exec: the program inherits it, maps it, closes it. */
    int fd = memfd_create("memtally-region", 0);
    if (fd < 0)
        return -errno;
    size_t size = mtl_region_size();
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)size) == 0)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return -e;
    }
    rw->r = mtl_region_init(p);
    atomic_store(&rw->r->beat, now_ns());
    rw->memfd = fd;
    struct stat st;
    if (fstat(fd, &st) == 0)
        rw->region_ino = st.st_ino;
    return 0;
}

/* --- the sink ------------------------------------------------------------ */

static int sink(void *ctx, const void *p, size_t n)
{
    struct record_writer *rw = ctx;
    int rc = mtl_write_all(rw->out, p, n);
    if (rc < 0) {
        if (!rw->err) {
            rw->err = -rc;
            cli_error("record: cannot write %s: %s; the trace is incomplete", rw->out_path,
                      strerror(-rc));
        }
        atomic_store(&rw->r->gone, 1); /* the recorder stops, and never waits */
        return rc;
    }
    rw->written += n;
    return 0;
}

/* --- beginning and ending traces ----------------------------------------- */

/* A path the program gave: its /proc/self is the program's. */
static void program_path(const struct record_writer *rw, const char *path, char *out, size_t cap)
{
    if (!strncmp(path, "/proc/self/", 11))
        snprintf(out, cap, "/proc/%d/%s", (int)rw->pid, path + 11);
    else
        snprintf(out, cap, "%s", path);
}

/* Opens the file of a new trace: the one made before the program ran, for
 * its first; else path (clobber), or path, path.1, ... never overwriting. */
static int open_trace(struct record_writer *rw, const char *path, int clobber, char *used,
                      size_t cap)
{
    if (rw->first >= 0 && !strcmp(path, rw->path)) {
        int fd = rw->first;
        rw->first = -1;
        snprintf(used, cap, "%s", path);
        return fd;
    }
    return mtl_trace_create_named(path, clobber, used, cap);
}

static void close_trace(struct record_writer *rw)
{
    if (rw->out >= 0 && close(rw->out) < 0 && !rw->err) {
        rw->err = errno;
        cli_error("record: cannot write %s: %s; the trace is incomplete", rw->out_path,
                  strerror(rw->err));
    }
    rw->out = -1;
    rw->allocations += rw->enc.allocations;
    rw->calls_records += rw->enc.calls_records;
    atomic_store(&rw->r->done, 1);
}

/* rw->live's filter (common/addrcount.h).  Every allocation asks whether
 * its address holds an older block whose free was never seen; most are at
 * no such address, and a byte near the last one's (allocations come in
 * runs of addresses) costs less than a probe of the map, a cache miss
 * each (a quarter of memtally record's time on binary trees, whose
 * long-lived tree is 262,143 blocks older than the window).  Without its
 * megabyte, every address may. */
#define MAYBE_BITS 20

static _Atomic uint8_t *maybe_slot(struct record_writer *rw, uint64_t ptr)
{
    return rw->maybe_live ? &rw->maybe_live[mtl_addrcount_slot(ptr, MAYBE_BITS)] : NULL;
}

static int live_take(struct record_writer *rw, uint64_t ptr, uint64_t *size)
{
    _Atomic uint8_t *c = maybe_slot(rw, ptr);
    if (!rw->live.count || (c && !mtl_addrcount_maybe(c)) || !mtl_hmap_take(&rw->live, ptr, size))
        return 0;
    if (c)
        mtl_addrcount_remove(c);
    return 1;
}

static void live_put(struct record_writer *rw, uint64_t ptr, uint64_t size)
{
    uint64_t old;
    int rc = mtl_hmap_put(&rw->live, ptr, size, &old);
    _Atomic uint8_t *c = maybe_slot(rw, ptr);
    if (rc == 1)
        rw->live_bytes -= old;
    else if (rc == 0 && c)
        mtl_addrcount_add(c);
}

/* The live bytes of the trace being written, for `status` (top): the
 * encoder knows the sizes of the last allocations' blocks
 * (trace/ptrcode.h), rw->live those of older ones still live. */
static void observe(void *ctx, enum mtl_seen seen, uint64_t ptr, uint64_t size)
{
    struct record_writer *rw = ctx;
    uint64_t old;
    switch (seen) {
    case MTL_SEEN_ALLOC:
        if (live_take(rw, ptr, &old))
            rw->live_bytes -= old; /* a free we never saw */
        rw->live_bytes += size;
        break;
    case MTL_SEEN_GONE:
        rw->live_bytes -= size;
        break;
    case MTL_SEEN_LEFT:
        live_put(rw, ptr, size);
        break;
    case MTL_SEEN_FREE_OLD:
        if (live_take(rw, ptr, &old))
            rw->live_bytes -= old;
        break;
    }
}

/* A new trace at the program's path given (clobber: replace the file,
 * else path.1...); the region says the rest (its info, its clock). */
static int begin_trace(struct record_writer *rw, const char *given, int clobber)
{
    char path[4096], used[4096];
    struct mtl_region *r = rw->r;
    program_path(rw, given, path, sizeof path);
    if (rw->out >= 0)
        close_trace(rw); /* a trace the program did not end: it is over */
    int fd = open_trace(rw, path, clobber, used, sizeof used);
    if (fd < 0) {
        cli_error("record: cannot create trace %s: %s", path, mtl_trace_create_error(fd));
        return fd;
    }
    if (mtl_encoder_setup(&rw->enc) < 0) {
        close(fd);
        return -ENOMEM;
    }
    rw->out = fd;
    snprintf(rw->out_path, sizeof rw->out_path, "%s", used);
    atomic_store(&r->done, 0);
    atomic_store(&r->end_ns, 0);
    int rc = mtl_encoder_begin(&rw->enc, r, rw->pid, sink, rw);
    if (rc < 0)
        return rc;
    mtl_hmap_clear(&rw->live);
    if (rw->maybe_live)
        memset((void *)rw->maybe_live, 0, (size_t)1 << MAYBE_BITS);
    else
        rw->maybe_live = calloc((size_t)1 << MAYBE_BITS, 1);
    rw->live_bytes = 0;
    atomic_store(&r->live_bytes, 0);
    rw->enc.observe = observe;
    rw->enc.observe_ctx = rw;
    rw->enc.skip_when_busy = 1;
    rw->enc.discard_events = rw->discard_events;
    atomic_store(&r->live_known, 1);
    mtl_encoder_refresh_names(&rw->enc);
    rw->traces++;
    if (!rw->path) { /* a followed process's: later traces go beside it */
        snprintf(rw->followed_path, sizeof rw->followed_path, "%s", used);
        rw->path = rw->followed_path;
    }
    /* The name used goes back, as the program's own writer would set it. */
    if (strcmp(path, given) == 0)
        snprintf(r->req_path, sizeof r->req_path, "%s", used);
    return 0;
}

static void end_trace(struct record_writer *rw, unsigned reason, int detail, int dead)
{
    if (rw->out < 0)
        return;
    rw->enc.owner_dead = dead;
    uint64_t until = atomic_load(&rw->r->end_ns);
    /* Every event up to the end: wait for a lock held by a live program,
     * never for one held by a dead program. */
    while (mtl_encoder_round(&rw->enc, !until, until ? until : UINT64_MAX, BUSY_SPINS, 0)) {
        if (atomic_load(&rw->child_done) || kill(rw->pid, 0) < 0)
            rw->enc.owner_dead = 1;
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    mtl_encoder_end(&rw->enc, reason, detail);
    close_trace(rw);
}

static void answer_request(struct record_writer *rw)
{
    struct mtl_region *r = rw->r;
    uint32_t seq = atomic_load(&r->req_seq);
    if (seq == atomic_load(&r->ack_seq))
        return;
    int rc = 0;
    if (r->req_kind == MTL_REQ_BEGIN)
        rc = begin_trace(rw, r->req_path, r->req_clobber);
    else if (r->req_kind == MTL_REQ_END)
        end_trace(rw, MTL_END_STOP, 0, 0);
    else
        rc = -EINVAL;
    r->ack_rc = rc;
    mtl_region_answer(r, seq);
}

/* Whether the process still maps our region (an exec unmaps everything;
 * the new program, followed, maps a region of its own: the memory file's
 * inode tells them apart). */
static int still_mapped(const struct record_writer *rw)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)rw->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        unsigned long ino = 0;
        found = strstr(buf, "memtally-region") && sscanf(buf, "%*s %*s %*s %*s %lu", &ino) == 1 &&
                ino == (unsigned long)rw->region_ino;
    }
    fclose(f);
    return found;
}

/* --- the thread ------------------------------------------------------------ */

static void *writer(void *arg)
{
    struct record_writer *rw = arg;
    struct mtl_region *r = rw->r;
    /* The encoder's buffers and zstd's context now, while the program
     * starts: its first request (begin the trace) waits for the answer.
     * A failure here is begin_trace's to report. */
    pthread_mutex_lock(&rw->mu);
    (void)mtl_encoder_setup(&rw->enc);
    pthread_mutex_unlock(&rw->mu);
    for (unsigned round = 0;; round++) {
        atomic_store(&r->beat, now_ns());
        uint32_t wakes = mtl_region_wakes(r); /* before done: the end's wake */
        int done = atomic_load(&rw->child_done); /* before the last look */
        pthread_mutex_lock(&rw->mu);
        answer_request(rw);
        if (rw->out >= 0 && done) {
            int st = rw->child_status, by_signal = WIFSIGNALED(st);
            int reason = atomic_load(&r->end_reason);
            if (by_signal)
                end_trace(rw, MTL_END_SIGNAL, WTERMSIG(st), 1);
            else if (reason < 0 && rw->status_unknown)
                end_trace(rw, MTL_END_SIGNAL, 0, 1); /* no exit: a signal we cannot name */
            else
                end_trace(rw, reason >= 0 ? (unsigned)reason : MTL_END_EXIT, 0, 1);
        } else if (rw->out >= 0 && atomic_load(&r->exec_ns) && !still_mapped(rw)) {
            /* The program is another now: what it did until the exec. */
            end_trace(rw, MTL_END_EXEC, 0, 1);
        } else if (rw->out >= 0) {
            if (round % (1000 / ROUND_MS) == 0)
                mtl_encoder_refresh_names(&rw->enc);
            mtl_encoder_round(&rw->enc, 0, UINT64_MAX, BUSY_SPINS, BLOCK_AGE_MS);
            atomic_store(&r->live_bytes, rw->live_bytes);
        }
        pthread_mutex_unlock(&rw->mu);
        if (done)
            break;
        mtl_region_sleep(r, wakes, ROUND_MS);
    }
    atomic_store(&r->gone, 1);
    return NULL;
}

int record_writer_start(struct record_writer *rw, const char *path, pid_t pid)
{
    close(rw->memfd);
    rw->memfd = -1;
    rw->path = path;
    rw->pid = pid;
    /* Made now, so that a path we cannot write is said before the
     * program has run for nothing. */
    rw->first = mtl_trace_create(path);
    if (rw->first < 0) {
        cli_error("record: cannot create trace %s: %s", path, mtl_trace_create_error(rw->first));
        rw->err = -rw->first;
        atomic_store(&rw->r->gone, 1);
        return -1;
    }
    if (pthread_create(&rw->thread, NULL, writer, rw) != 0) {
        atomic_store(&rw->r->gone, 1);
        rw->err = EAGAIN;
        return -1;
    }
    rw->running = 1;
    return 0;
}

int record_writer_adopt(struct record_writer *rw, int fd, pid_t pid, struct mtl_encoder *spare)
{
    writer_init(rw);
    if (spare)
        rw->enc = *spare;
    size_t size = mtl_region_size();
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size == size)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        mtl_encoder_release(&rw->enc);
        return -(e ? e : EINVAL);
    }
    struct mtl_region *r = p;
    if (r->magic != MTL_REGION_MAGIC || r->size != size) {
        munmap(p, size);
        mtl_encoder_release(&rw->enc);
        return -EINVAL;
    }
    rw->r = r;
    rw->region_ino = st.st_ino;
    rw->pid = pid;
    atomic_store(&r->beat, now_ns());
    if (pthread_create(&rw->thread, NULL, writer, rw) != 0) {
        munmap(p, size);
        rw->r = NULL;
        mtl_encoder_release(&rw->enc);
        return -EAGAIN;
    }
    rw->running = 1;
    return 0;
}

int record_writer_ended(struct record_writer *rw)
{
    pthread_mutex_lock(&rw->mu);
    int ended = rw->traces > 0 && rw->out < 0;
    pthread_mutex_unlock(&rw->mu);
    return ended;
}

/* --- memtally ctl ------------------------------------------------------------ */

/* With mu held: dump, as below. */
static int dump_locked(struct record_writer *rw, const char *path)
{
    int rc = -EINVAL;
    if (rw->out >= 0 && !rw->enc.ended) {
        int out = mtl_trace_create(path);
        int src = out >= 0 ? open(rw->out_path, O_RDONLY | O_CLOEXEC) : -1;
        if (out < 0)
            rc = out;
        else if (src < 0)
            rc = -errno;
        else
            rc = mtl_encoder_dump(&rw->enc, src, out);
        if (src >= 0)
            close(src);
        if (out >= 0 && close(out) < 0 && rc == 0)
            rc = -errno;
    }
    return rc;
}

int record_writer_dump(struct record_writer *rw, const char *path)
{
    pthread_mutex_lock(&rw->mu);
    int rc = dump_locked(rw, path);
    pthread_mutex_unlock(&rw->mu);
    return rc;
}

/* With mu held: a trace begun here (ctl start after stop, restart), as the
 * recorder's own begin would: its clock, its threads said again. */
static int begin_here(struct record_writer *rw, const char *path, int clobber)
{
    struct mtl_region *r = rw->r;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    r->info.start_unix_us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000;
    if (mtl_region_begin_trace(r, now_ns(), BUSY_SPINS) < 0)
        return -EBUSY; /* the program holds its pool's lock: try again */
    return begin_trace(rw, path, clobber);
}

/* With mu held: the trace ends now (ctl stop). */
static int stop_here(struct record_writer *rw)
{
    struct mtl_region *r = rw->r;
    int st = atomic_load(&r->state);
    if ((st != MTL_RECORDING && st != MTL_PAUSED) || rw->out < 0)
        return -EINVAL;
    atomic_store(&r->state, MTL_OFF);
    atomic_store(&r->end_ns, mtl_encoder_now(&rw->enc));
    end_trace(rw, MTL_END_STOP, 0, 0);
    return 0;
}

int record_writer_stop(struct record_writer *rw)
{
    pthread_mutex_lock(&rw->mu);
    int rc = stop_here(rw);
    pthread_mutex_unlock(&rw->mu);
    return rc;
}

static int start_here(struct record_writer *rw)
{
    struct mtl_region *r = rw->r;
    int st = atomic_load(&r->state);
    if (st == MTL_RECORDING)
        return -EBUSY;
    if (st == MTL_PAUSED) {
        atomic_compare_exchange_strong(&r->state, &st, MTL_RECORDING);
        return 0;
    }
    /* A new trace beside the first (path.1...), as the recorder names them. */
    int rc = begin_here(rw, rw->path, rw->traces == 0);
    if (rc == 0)
        atomic_store(&r->state, MTL_RECORDING);
    return rc;
}

static int restart_here(struct record_writer *rw)
{
    char path[sizeof rw->out_path];
    int st = atomic_load(&rw->r->state);
    snprintf(path, sizeof path, "%s", rw->out_path);
    int rc = stop_here(rw);
    if (rc == 0 && (rc = begin_here(rw, path, 1)) == 0)
        atomic_store(&rw->r->state, st); /* the same file, from its first byte */
    return rc;
}

static int cas_state(struct record_writer *rw, int from, int to)
{
    return atomic_compare_exchange_strong(&rw->r->state, &from, to) ? 0 : -EINVAL;
}

void record_writer_control(struct record_writer *rw, char *line, char *answer, size_t cap)
{
    struct mtl_region *r = rw->r;
    pthread_mutex_lock(&rw->mu);
    int rc;
    const char *cmd = line;
    if (!atomic_load(&r->ctl_live) || atomic_load(&rw->child_done)) {
        snprintf(answer, cap, "error the program is not recording now (it is ending, "
                              "or ran another program)\n");
        goto out;
    }
    if (!strcmp(line, "status")) {
        int st = atomic_load(&r->state);
        struct mtl_ctl_status s = {
            .state = st, .trace = st == MTL_OFF ? "" : rw->out_path,
            .sample_rate = r->info.sample_rate, .pid = (int)rw->pid,
            .allocations = atomic_load(&r->allocations), .frees = atomic_load(&r->frees),
            .bytes = atomic_load(&r->bytes), .have_live = 1, .live_bytes = rw->live_bytes,
        };
        char status[MTL_CTL_ANSWER];
        mtl_ctl_format_status(status, sizeof status, &s);
        for (char *c = status; *c; c++) /* one line, whatever a path holds */
            if (*c == '\n' || *c == '\r')
                *c = '?';
        snprintf(answer, cap, "ok %s\n", status);
        goto out;
    } else if (!strcmp(line, "start")) {
        rc = start_here(rw);
    } else if (!strcmp(line, "pause")) {
        rc = cas_state(rw, MTL_RECORDING, MTL_PAUSED);
    } else if (!strcmp(line, "continue")) {
        rc = cas_state(rw, MTL_PAUSED, MTL_RECORDING);
    } else if (!strcmp(line, "restart")) {
        rc = restart_here(rw);
    } else if (!strcmp(line, "stop")) {
        rc = stop_here(rw);
    } else if (!strncmp(line, "dump ", 5) && line[5]) {
        line[4] = '\0';
        rc = dump_locked(rw, line + 5);
    } else {
        snprintf(answer, cap, "error unknown command (start, pause, continue, restart, "
                              "dump PATH, stop, status)\n");
        goto out;
    }
    if (rc == 0)
        snprintf(answer, cap, "ok\n");
    else
        snprintf(answer, cap, "error %s: %s\n", cmd, mtl_ctl_why(cmd, rc));
out:
    pthread_mutex_unlock(&rw->mu);
}

int record_writer_finish(struct record_writer *rw, int status, struct mtl_encoder *keep)
{
    rw->child_status = status;
    if (rw->running) {
        atomic_store(&rw->child_done, 1);
        mtl_region_wake(rw->r);
        pthread_join(rw->thread, NULL);
        rw->running = 0;
    }
    if (rw->first >= 0) {
        /* The recorder never came (the library was not loaded, or
         * disabled): no trace, as if the file had never been made. */
        close(rw->first);
        rw->first = -1;
        if (!rw->traces && rw->path)
            unlink(rw->path);
    }
    if (keep && rw->enc.zc) {
        /* Nothing of this region's stays with it: another may be mapped
         * at the same address. */
        *keep = rw->enc;
        keep->r = NULL;
        keep->nruns = 0;
        keep->observe = NULL;
    } else {
        mtl_encoder_release(&rw->enc);
    }
    memset(&rw->enc, 0, sizeof rw->enc);
    mtl_hmap_release(&rw->live);
    free((void *)rw->maybe_live);
    rw->maybe_live = NULL;
    if (rw->r)
        munmap(rw->r, rw->r->size);
    rw->r = NULL;
    return rw->err ? -1 : 0;
}
