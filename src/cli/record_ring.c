/*
 * record_ring.c: memtally record's side of the ring (common/ring.h): the
 * recorder in the program puts the trace's bytes in shared memory, and a
 * thread here writes them to the file, which memtally record created.  So
 * the program holds no descriptor of ours, and what reached the ring is
 * written whatever becomes of the program; a write error (a full disk) is
 * seen here, said once, and makes the recorder stop instead of waiting.
 */

#include "cli/record_ring.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/tracefile.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int record_ring_create(struct record_ring *rr)
{
    memset(rr, 0, sizeof *rr);
    rr->memfd = rr->out = -1;
    /* Not close-on-exec: the program inherits it, maps it, closes it. */
    int fd = memfd_create("memtally-ring", 0);
    if (fd < 0)
        return -errno;
    void *p = MAP_FAILED;
    if (ftruncate(fd, MTL_RING_SIZE) == 0)
        p = mmap(NULL, MTL_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return -e;
    }
    rr->r = p;
    mtl_ring_init(rr->r);
    atomic_store(&rr->r->beat, now_ns());
    rr->memfd = fd;
    return 0;
}

/* Writes what the ring holds; 0, or -1 once a write failed. */
static int drain(struct record_ring *rr)
{
    const uint8_t *a, *b;
    size_t na, nb;
    size_t n = mtl_ring_peek(rr->r, &a, &na, &b, &nb);
    if (!n || rr->err)
        return rr->err ? -1 : 0;
    const uint8_t *piece[2] = { a, b };
    size_t len[2] = { na, nb };
    for (int i = 0; i < 2; i++) {
        while (len[i] > 0) {
            ssize_t w = write(rr->out, piece[i], len[i]);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rr->err = w < 0 ? errno : EIO;
                atomic_store(&rr->r->gone, 1); /* the recorder stops, and never waits */
                cli_error("record: cannot write %s: %s; the trace is incomplete", rr->path,
                          strerror(rr->err));
                return -1;
            }
            piece[i] += w;
            len[i] -= (size_t)w;
        }
    }
    rr->written += n;
    mtl_ring_take(rr->r, n);
    return 0;
}

static void *writer(void *arg)
{
    struct record_ring *rr = arg;
    for (;;) {
        atomic_store(&rr->r->beat, now_ns());
        int done = atomic_load(&rr->child_done); /* before the last look */
        uint64_t before = rr->written;
        if (drain(rr) < 0)
            break;
        if (done && rr->written == before)
            break;
        if (rr->written == before) {
            struct timespec ms = { 0, 2000000 };
            nanosleep(&ms, NULL);
        }
    }
    return NULL;
}

int record_ring_start(struct record_ring *rr, const char *path)
{
    close(rr->memfd);
    rr->memfd = -1;
    rr->path = path;
    rr->out = mtl_trace_create(path);
    if (rr->out < 0) {
        cli_error("record: cannot create trace %s: %s", path, mtl_trace_create_error(rr->out));
        rr->err = -rr->out;
        atomic_store(&rr->r->gone, 1);
        return -1;
    }
    if (pthread_create(&rr->thread, NULL, writer, rr) != 0) {
        atomic_store(&rr->r->gone, 1);
        rr->err = EAGAIN;
        return -1;
    }
    rr->running = 1;
    return 0;
}

int record_ring_finish(struct record_ring *rr)
{
    if (rr->running) {
        atomic_store(&rr->child_done, 1);
        pthread_join(rr->thread, NULL);
        rr->running = 0;
    }
    int attached = rr->r && atomic_load(&rr->r->attached);
    if (rr->r)
        rr->allocations = atomic_load(&rr->r->allocations);
    if (rr->out >= 0) {
        if (close(rr->out) < 0 && !rr->err) {
            rr->err = errno;
            cli_error("record: cannot write %s: %s; the trace is incomplete", rr->path,
                      strerror(rr->err));
        }
        rr->out = -1;
        /* The recorder never came (the library was not loaded, or
         * disabled): no trace, as if the file had never been made. */
        if (!attached && !rr->written && rr->path)
            unlink(rr->path);
    }
    if (rr->r)
        munmap(rr->r, MTL_RING_SIZE);
    rr->r = NULL;
    return rr->err ? -1 : 0;
}
