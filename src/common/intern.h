/*
 * intern.h: interning byte strings as dense ids (0, 1, 2...), for keys
 * made of text (function names, files) or of small arrays (a cut stack).
 * Each distinct key is copied once into the table's arena.
 *
 *     struct mtl_intern t = MTL_INTERN_INIT;
 *     uint32_t id;
 *     if (mtl_intern_str(&t, name, &id) < 0) ... out of memory
 *     const char *same = mtl_intern_at(&t, id, NULL);
 *     mtl_intern_release(&t);
 */
#ifndef MTL_COMMON_INTERN_H
#define MTL_COMMON_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"

struct mtl_intern_item {
    const void *data;
    uint32_t len;
    uint64_t hash;
};

struct mtl_intern {
    struct mtl_arena arena;
    struct mtl_intern_item *items;  /* by id */
    uint32_t n, items_cap;
    uint32_t *slots;                /* id + 1, 0 = empty */
    size_t nslots;
};

#define MTL_INTERN_INIT { MTL_ARENA_INIT, NULL, 0, 0, NULL, 0 }
#define MTL_INTERN_NONE UINT32_MAX

/* The id of the len bytes at data, made if new.  Returns 1 when new, 0
 * when known, MTL_ENOMEM.  The copy kept is followed by a NUL. */
int mtl_intern_add(struct mtl_intern *t, const void *data, size_t len, uint32_t *id);

/* The same for a C string (its bytes, without the NUL). */
int mtl_intern_str(struct mtl_intern *t, const char *s, uint32_t *id);

/* The id of the bytes, or MTL_INTERN_NONE. */
uint32_t mtl_intern_find(const struct mtl_intern *t, const void *data, size_t len);

/* The bytes of id (NUL-terminated) and their length. */
const void *mtl_intern_at(const struct mtl_intern *t, uint32_t id, size_t *len);

void mtl_intern_release(struct mtl_intern *t);

#endif
