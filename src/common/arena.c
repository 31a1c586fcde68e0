/* arena.c: see arena.h.  Blocks of 64 KiB (or one piece's size, when
 * larger) in a list; the newest block serves until it is full. */
#include "common/arena.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK (64u << 10)
#define ARENA_ALIGN 16u

struct mtl_arena_block {
    struct mtl_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *mtl_arena_alloc(struct mtl_arena *a, size_t size)
{
    size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size == 0)
        size = ARENA_ALIGN;
    struct mtl_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        /* A piece larger than a block gets one of its own, behind the
         * current block, which keeps serving the small ones. */
        if (size > ARENA_BLOCK && a->head) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
        a->total += sizeof *b + cap;
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

void *mtl_arena_memdup(struct mtl_arena *a, const void *p, size_t n)
{
    void *d = mtl_arena_alloc(a, n);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

char *mtl_arena_strndup(struct mtl_arena *a, const char *s, size_t n)
{
    char *d = mtl_arena_alloc(a, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *mtl_arena_strdup(struct mtl_arena *a, const char *s)
{
    return mtl_arena_strndup(a, s, strlen(s));
}

void mtl_arena_release(struct mtl_arena *a)
{
    for (struct mtl_arena_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
    a->total = 0;
}
