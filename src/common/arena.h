/*
 * arena.h: memory handed out in pieces and released all at once, for
 * things that live as long as their owner (symbol names, interned keys).
 *
 *     struct mtl_arena a = MTL_ARENA_INIT;
 *     char *s = mtl_arena_strdup(&a, name);   NULL on out of memory
 *     ...
 *     mtl_arena_release(&a);                  every piece is invalid after
 */
#ifndef MTL_COMMON_ARENA_H
#define MTL_COMMON_ARENA_H

#include <stddef.h>

struct mtl_arena_block;

struct mtl_arena {
    struct mtl_arena_block *head;
    size_t total;              /* bytes taken from malloc */
};

#define MTL_ARENA_INIT { NULL, 0 }

/* size bytes aligned for any type, or NULL on out of memory. */
void *mtl_arena_alloc(struct mtl_arena *a, size_t size);
void *mtl_arena_memdup(struct mtl_arena *a, const void *p, size_t n);
char *mtl_arena_strdup(struct mtl_arena *a, const char *s);
char *mtl_arena_strndup(struct mtl_arena *a, const char *s, size_t n);

void mtl_arena_release(struct mtl_arena *a);

#endif
