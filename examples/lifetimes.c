/*
 * lifetimes.c: an example analysis written against the public reader
 * (include/memtally/trace.h), after the object-lifetime analysis in the
 * Memtrace announcement: how long do blocks live, and does that depend on
 * when they were allocated?
 *
 *   lifetimes TRACE          a table: lifetime class x phase of the run
 *   lifetimes --csv TRACE    one line per block: alloc_us,lifetime_us,size
 *                            (lifetime -1: still live at the end), to plot
 *
 * Build: cc -Iinclude lifetimes.c build/libmemtally-trace.a -lzstd
 * (`make` builds it as build/examples/lifetimes).
 *
 * It follows live blocks in a small hash map of its own, keyed by address:
 * an allocation inserts, a free removes and reports the lifetime.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtally/trace.h"

struct block {
    uint64_t ptr, time_us, size;
};

struct blockmap {
    struct block *slot; /* ptr 0 = empty */
    size_t cap, count;
};

static size_t hash_ptr(uint64_t p, size_t mask)
{
    p ^= p >> 29;
    p *= 0xbf58476d1ce4e5b9ull;
    return (size_t)(p ^ (p >> 32)) & mask;
}

static int map_put(struct blockmap *m, struct block b)
{
    if ((m->count + 1) * 2 > m->cap) {
        struct blockmap g = { calloc(m->cap ? m->cap * 2 : 4096, sizeof *g.slot),
                              m->cap ? m->cap * 2 : 4096, 0 };
        if (!g.slot)
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slot[i].ptr)
                map_put(&g, m->slot[i]);
        free(m->slot);
        *m = g;
    }
    size_t i = hash_ptr(b.ptr, m->cap - 1);
    while (m->slot[i].ptr && m->slot[i].ptr != b.ptr)
        i = (i + 1) & (m->cap - 1);
    if (!m->slot[i].ptr)
        m->count++;
    m->slot[i] = b;
    return 0;
}

/* Removes ptr; returns 1 with its block in *out if it was live. */
static int map_take(struct blockmap *m, uint64_t ptr, struct block *out)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1, i = hash_ptr(ptr, mask);
    while (m->slot[i].ptr != ptr) {
        if (!m->slot[i].ptr)
            return 0;
        i = (i + 1) & mask;
    }
    *out = m->slot[i];
    m->slot[i].ptr = 0;
    m->count--;
    /* Re-insert the rest of the cluster so that lookups stay correct. */
    for (i = (i + 1) & mask; m->slot[i].ptr; i = (i + 1) & mask) {
        struct block b = m->slot[i];
        m->slot[i].ptr = 0;
        m->count--;
        map_put(m, b);
    }
    return 1;
}

#define CLASSES 9   /* <1us, <10us, ... <10s, >=10s */
#define PHASES 4    /* quarters of the run */

static int lifetime_class(uint64_t us)
{
    int c = 0;
    for (uint64_t limit = 1; c < CLASSES - 1 && us >= limit; limit *= 10)
        c++;
    return c;
}

static const char *const class_name[CLASSES + 1] = {
    "< 1 us", "< 10 us", "< 100 us", "< 1 ms", "< 10 ms", "< 100 ms", "< 1 s",
    "< 10 s", ">= 10 s", "never freed",
};

int main(int argc, char **argv)
{
    int csv = argc == 3 && strcmp(argv[1], "--csv") == 0;
    if (argc != 2 + csv) {
        fprintf(stderr, "usage: lifetimes [--csv] TRACE\n");
        return 2;
    }
    const char *path = argv[1 + csv];
    struct mtl_reader *r;
    int rc = mtl_reader_open(&r, path);
    if (rc < 0) {
        fprintf(stderr, "lifetimes: %s: %s\n", path, mtl_strerror(rc));
        return 1;
    }
    /* The phases need the run's duration: one pass to learn it, a second
     * to tabulate. */
    struct mtl_event ev;
    while ((rc = mtl_reader_next(r, &ev)) > 0)
        ;
    uint64_t duration = mtl_reader_info(r)->duration_us + 1;
    mtl_reader_close(r);
    if (rc < 0 || (rc = mtl_reader_open(&r, path)) < 0) {
        fprintf(stderr, "lifetimes: %s: %s\n", path, mtl_strerror(rc));
        return 1;
    }

    uint64_t count[CLASSES + 1][PHASES] = {{0}}, bytes[CLASSES + 1][PHASES] = {{0}};
    struct blockmap live = {0};
    if (csv)
        printf("alloc_us,lifetime_us,size\n");
    while ((rc = mtl_reader_next(r, &ev)) > 0) {
        if (ev.type == MTL_EV_ALLOC) {
            struct block b = { ev.ptr ? ev.ptr : 1, ev.time_us, ev.size };
            if (map_put(&live, b) < 0) {
                fprintf(stderr, "lifetimes: out of memory\n");
                return 1;
            }
        } else if (ev.type == MTL_EV_FREE) {
            struct block b;
            if (!map_take(&live, ev.ptr ? ev.ptr : 1, &b))
                continue; /* allocated before the trace began */
            uint64_t life = ev.time_us - b.time_us;
            int phase = (int)(b.time_us * PHASES / duration);
            int c = lifetime_class(life);
            count[c][phase]++;
            bytes[c][phase] += b.size;
            if (csv)
                printf("%llu,%llu,%llu\n", (unsigned long long)b.time_us,
                       (unsigned long long)life, (unsigned long long)b.size);
        }
    }
    if (rc < 0) {
        fprintf(stderr, "lifetimes: %s: %s\n", path, mtl_strerror(rc));
        return 1;
    }
    for (size_t i = 0; i < live.cap; i++) {
        const struct block *b = &live.slot[i];
        if (!b->ptr)
            continue;
        int phase = (int)(b->time_us * PHASES / duration);
        count[CLASSES][phase]++;
        bytes[CLASSES][phase] += b->size;
        if (csv)
            printf("%llu,-1,%llu\n", (unsigned long long)b->time_us,
                   (unsigned long long)b->size);
    }
    if (!csv) {
        printf("blocks by lifetime (rows) and by when they were allocated "
               "(columns: quarters of the %.3f s run)\n\n", (double)duration / 1e6);
        printf("%-12s %12s %12s %12s %12s %14s\n", "lifetime", "1st", "2nd",
               "3rd", "4th", "bytes");
        for (int c = 0; c <= CLASSES; c++) {
            uint64_t total = 0;
            for (int p = 0; p < PHASES; p++)
                total += bytes[c][p];
            printf("%-12s %12llu %12llu %12llu %12llu %14llu\n", class_name[c],
                   (unsigned long long)count[c][0], (unsigned long long)count[c][1],
                   (unsigned long long)count[c][2], (unsigned long long)count[c][3],
                   (unsigned long long)total);
        }
    }
    if (mtl_reader_info(r)->truncated)
        fprintf(stderr, "lifetimes: %s was cut short; this is what it holds\n", path);
    free(live.slot);
    mtl_reader_close(r);
    return 0;
}
