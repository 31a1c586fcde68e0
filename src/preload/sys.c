/*
 * sys.c: the few system services the recorder needs, each safe inside a
 * malloc hook: no allocation, no stdio, no lock shared with the allocator.
 * Messages are formatted into a stack buffer and written with write(2), as
 * mimalloc does for the same reason.
 */
#include "preload/preload.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/tracefile.h"

uint64_t mtl__monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void mtl__set_start(uint64_t ns)
{
    mtl__pl.start_ns = ns;
    if (mtl__pl.region)
        atomic_store(&mtl__pl.region->start_ns, ns);
}

void *mtl__pages_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

#define HUGE_PAGE (2u << 20)

/* A table probed at random places, such as the stacks' index: in huge
 * pages where the system gives them on request (transparent huge pages,
 * "madvise"), so that a probe does not also miss in the TLB. */
void *mtl__pages_alloc_random(size_t size)
{
    void *p = mtl__pages_alloc(size);
    if (p && size >= HUGE_PAGE)
        madvise(p, size, MADV_HUGEPAGE);
    return p;
}

/* An array reserved large and filled from its start as it grows, such as
 * the known stacks by id: its first 2 MiB in small pages, as a small
 * program fills no more; the rest in huge pages where the system gives
 * them on request, one fault for 512 small ones (binary trees' program
 * took 13,000 faults fewer, a new stack 5% less time: docs/PERFORMANCE.md). */
void *mtl__pages_alloc_growing(size_t size)
{
    uint8_t *p = mtl__pages_alloc(size);
    if (p && size > 2 * HUGE_PAGE)
        madvise(p + HUGE_PAGE, size - HUGE_PAGE, MADV_HUGEPAGE);
    return p;
}

void mtl__pages_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

size_t mtl__fmt(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* vsnprintf does not allocate for the plain conversions used here
     * (%s %d %u %llu %x %zu). */
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

void mtl__say(const char *fmt, ...)
{
    char buf[512];
    int saved = errno;
    size_t n = mtl__fmt(buf, sizeof buf, "%s", "memtally: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += (size_t)m < sizeof buf - n - 1 ? (size_t)m : sizeof buf - n - 2;
    buf[n++] = '\n';
    mtl_write_all(2, buf, n);
    errno = saved;
}

void mtl__mutex_atfork(pthread_mutex_t *mu, int phase)
{
    if (phase == 0)
        pthread_mutex_lock(mu);
    else if (phase == 1)
        pthread_mutex_unlock(mu);
    else
        pthread_mutex_init(mu, NULL);
}

int mtl__gettid(void)
{
    return (int)syscall(SYS_gettid);
}
