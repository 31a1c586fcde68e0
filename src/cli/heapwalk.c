/*
 * heapwalk.c: the live chunks of a running process's glibc malloc, read
 * from outside (process_vm_readv), for `memtally heap` of a process that
 * is not recorded.
 *
 * glibc lays the main arena's chunks end to end from the start of the brk
 * heap ([heap] in /proc/PID/maps): each starts with the previous chunk's
 * size and its own size, whose low bits are flags; a chunk is in use when
 * the next one's PREV_INUSE bit says so; the last is the top chunk, free.
 * A block too large for the arenas is a chunk of its own mapping, the
 * IS_MMAPPED bit set in its size.  The other threads' arenas live in heaps
 * of their own, mappings aligned to HEAP_MAX (64 MiB) that start with a
 * heap_info (arena, previous heap, size) and, in an arena's first heap,
 * its malloc_state, whose size differs between glibc versions: the first
 * chunk is found as the one offset from which the chunks, each flagged
 * NON_MAIN_ARENA, run exactly to the heap's end.  Blocks freed into the
 * per-thread caches and fastbins keep the in-use bit, as for the
 * allocator they are still taken.
 *
 * The process runs on while it is read, so the walk is a best effort: it
 * stops at the first size that cannot be a chunk's, and says so.
 */
#include "cli/heapwalk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define PREV_INUSE 1u
#define IS_MMAPPED 2u
#define NON_MAIN_ARENA 4u
#define HEAP_MAX (64ull << 20)     /* glibc's HEAP_MAX_SIZE on 64-bit */
#define SIZE_MASK (~(uint64_t)7)
#define MIN_CHUNK 32u
#define WINDOW (1u << 20)          /* bytes read at a time */

static int read_at(pid_t pid, uint64_t at, void *buf, size_t n)
{
    struct iovec l = { buf, n }, r = { (void *)(uintptr_t)at, n };
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static unsigned log2_floor(uint64_t v)
{
    unsigned k = 0;
    while (v >>= 1)
        k++;
    return k;
}

/* One chunk in use: counted, and kept if among the largest. */
static void take(struct heap_walk *w, uint64_t addr, uint64_t size, int mmapped)
{
    w->chunks++;
    w->bytes += size;
    unsigned k = log2_floor(size);
    if (k < HEAP_WALK_BUCKETS) {
        w->bucket[k].count++;
        w->bucket[k].bytes += size;
    }
    size_t n = w->nlargest, at = n;
    while (at > 0 && w->largest[at - 1].size < size)
        at--;
    if (at >= w->top)
        return;
    if (n == w->top)
        n--;
    memmove(&w->largest[at + 1], &w->largest[at], (n - at) * sizeof *w->largest);
    w->largest[at] = (struct walk_chunk){ .addr = addr, .size = size, .mmapped = mmapped };
    w->nlargest = n + 1;
}

/* The main arena's chunks in [lo, hi). */
static void walk_brk(pid_t pid, uint64_t lo, uint64_t hi, struct heap_walk *w)
{
    uint8_t *buf = malloc(WINDOW + 16);
    uint64_t base = 0, filled = 0; /* buf holds [base, base + filled) */
    uint64_t c = lo;
    while (buf && c + 16 <= hi) {
        /* This chunk's header and the next one's: 16 bytes each. */
        uint64_t hdr[2], size;
        if (c < base || c + 16 > base + filled) {
            base = c;
            filled = hi - c < WINDOW + 16 ? hi - c : WINDOW + 16;
            if (read_at(pid, base, buf, filled) < 0) {
                snprintf(w->note, sizeof w->note, "the brk heap could not be read at 0x%llx",
                         (unsigned long long)c);
                break;
            }
        }
        memcpy(hdr, buf + (c - base), 16);
        size = hdr[1] & SIZE_MASK;
        if (size < MIN_CHUNK || c + size > hi || (hdr[1] & IS_MMAPPED)) {
            snprintf(w->note, sizeof w->note, "the walk stopped at 0x%llx (the heap changed "
                     "while it was read)", (unsigned long long)c);
            break;
        }
        uint64_t next = c + size, next_size;
        if (next + 16 > hi)
            break; /* c is the top chunk: free */
        if (next + 16 > base + filled) {
            if (read_at(pid, next + 8, &next_size, 8) < 0)
                break;
        } else {
            memcpy(&next_size, buf + (next + 8 - base), 8);
        }
        if (next_size & PREV_INUSE)
            take(w, c + 16, size, 0);
        c = next;
    }
    free(buf);
}

/* Whether the chunks from offset off of heap h (size bytes) run exactly to
 * its end, each but the top flagged NON_MAIN_ARENA. */
static int chain_fits(const uint8_t *h, uint64_t size, uint64_t off)
{
    uint64_t c = off;
    while (c + 16 <= size) {
        uint64_t sz;
        memcpy(&sz, h + c + 8, 8);
        uint64_t len = sz & SIZE_MASK;
        if (len < MIN_CHUNK || c + len > size)
            return 0;
        if (c + len == size)
            return 1; /* the top chunk */
        if (!(sz & NON_MAIN_ARENA))
            return 0;
        c += len;
    }
    return 0;
}

/* A thread arena's heap at [lo, hi), if it is one. */
static void walk_thread_heap(pid_t pid, uint64_t lo, uint64_t hi, struct heap_walk *w)
{
    uint64_t info[3]; /* ar_ptr, prev, size */
    if (read_at(pid, lo, info, sizeof info) < 0 || !info[0] || info[2] < 4096 ||
        info[2] > hi - lo || info[2] > HEAP_MAX)
        return;
    uint64_t size = info[2];
    uint8_t *h = malloc(size);
    if (!h || read_at(pid, lo, h, size) < 0) {
        free(h);
        return;
    }
    uint64_t off = 48; /* past heap_info, aligned */
    while (off < 8192 && off + 16 <= size && !chain_fits(h, size, off))
        off += 16;
    if (off < 8192 && off + 16 <= size) {
        w->thread_heaps++;
        for (uint64_t c = off; c + 16 <= size;) {
            uint64_t sz, next_sz;
            memcpy(&sz, h + c + 8, 8);
            uint64_t len = sz & SIZE_MASK;
            if (c + len >= size)
                break; /* the top chunk: free */
            memcpy(&next_sz, h + c + len + 8, 8);
            if (next_sz & PREV_INUSE)
                take(w, lo + c + 16, len, 0);
            c += len;
        }
    }
    free(h);
}

int heap_walk(pid_t pid, size_t top, struct heap_walk *w)
{
    memset(w, 0, sizeof *w);
    w->top = top < HEAP_WALK_TOP ? top : HEAP_WALK_TOP;
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char perms[8] = "";
        int at = 0;
        if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi, perms, &at) < 3)
            continue;
        char *name = at ? line + at : line + strlen(line);
        name[strcspn(name, "\n")] = '\0';
        if (perms[0] != 'r' || perms[1] != 'w')
            continue;
        if (!strcmp(name, "[heap]")) {
            w->brk_walked = 1;
            walk_brk(pid, lo, hi, w);
        } else if (!*name && lo % HEAP_MAX == 0) {
            walk_thread_heap(pid, lo, hi, w);
        } else if (!*name) {
            /* A chunk of its own mapping: its header at the start. */
            uint64_t hdr[2];
            if (read_at(pid, lo, hdr, sizeof hdr) == 0 && (hdr[1] & IS_MMAPPED) &&
                hdr[0] < 4096 && (hdr[1] & SIZE_MASK) + hdr[0] <= hi - lo &&
                (hdr[1] & SIZE_MASK) > (hi - lo) / 2)
                take(w, lo + hdr[0] + 16, hdr[1] & SIZE_MASK, 1);
        }
    }
    fclose(f);
    return 0;
}

void heap_walk_peek(pid_t pid, struct heap_walk *w, size_t peek)
{
    for (size_t i = 0; i < w->nlargest; i++) {
        struct walk_chunk *c = &w->largest[i];
        size_t n = peek < sizeof c->peek ? peek : sizeof c->peek;
        if (n > c->size - 16)
            n = (size_t)(c->size - 16);
        if (n && read_at(pid, c->addr, c->peek, n) == 0)
            c->npeek = n;
    }
}
