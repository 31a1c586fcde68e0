/*
 * heapwalk.h: the chunks glibc's malloc has in use in a running process,
 * read from outside: the main arena's brk heap walked chunk by chunk, and
 * the chunks of their own mapping (heapwalk.c has how, and what it misses).
 */
#ifndef MTL_CLI_HEAPWALK_H
#define MTL_CLI_HEAPWALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HEAP_WALK_BUCKETS 48
#define HEAP_WALK_TOP 64

struct walk_chunk {
    uint64_t addr, size;         /* the block's address (after the header), the chunk's size */
    int mmapped;                 /* a chunk of its own mapping */
    uint8_t peek[256];
    size_t npeek;
};

struct heap_walk {
    uint64_t chunks, bytes;      /* in use */
    struct { uint64_t count, bytes; } bucket[HEAP_WALK_BUCKETS]; /* by size, 2^k .. 2^(k+1)-1 */
    struct walk_chunk largest[HEAP_WALK_TOP]; /* largest first */
    size_t nlargest, top;
    int brk_walked;              /* the process has a brk heap, and it was walked */
    unsigned thread_heaps;       /* heaps of other threads' arenas walked */
    char note[160];              /* why the walk stopped early, or "" */
};

/* Walks pid's heap, keeping its top largest chunks.  0, or -1 when its
 * maps cannot be read. */
int heap_walk(pid_t pid, size_t top, struct heap_walk *w);

/* The first peek bytes of each of the largest chunks. */
void heap_walk_peek(pid_t pid, struct heap_walk *w, size_t peek);

#endif
