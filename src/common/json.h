/*
 * json.h: the one JSON writer.  It appends to a struct mtl_buf and keeps
 * track of commas, so a renderer says only what goes where:
 *
 *     struct mtl_json j;
 *     mtl_json_init(&j, &buf);
 *     mtl_json_begin_object(&j);
 *     mtl_json_key(&j, "calls");   mtl_json_number(&j, 12);
 *     mtl_json_key(&j, "rows");    mtl_json_begin_array(&j);  ...  mtl_json_end(&j);
 *     mtl_json_end(&j);
 *
 * The layout is one line: `{"calls": 12, "rows": [...]}`.  Strings are
 * escaped as JSON requires; bytes that are not valid UTF-8 (paths are
 * bytes) become U+FFFD, so the output always parses.  Numbers that are
 * not finite become null.
 */
#ifndef MTL_COMMON_JSON_H
#define MTL_COMMON_JSON_H

#include <stdint.h>

#include "common/buf.h"

/* The call tree nests two levels per frame, and its depth stops at
 * MTL_TREE_MAX_DEPTH (analyses.h). */
#define MTL_JSON_MAX_DEPTH 1024

struct mtl_json {
    struct mtl_buf *out;
    unsigned depth;
    uint8_t has_items[MTL_JSON_MAX_DEPTH]; /* a value was written at this depth */
    char closer[MTL_JSON_MAX_DEPTH];       /* '}' or ']' of each open level */
    int after_key;                         /* the next value follows a key */
};

void mtl_json_init(struct mtl_json *j, struct mtl_buf *out);

void mtl_json_begin_object(struct mtl_json *j);
void mtl_json_begin_array(struct mtl_json *j);
/* Closes the innermost open object or array. */
void mtl_json_end(struct mtl_json *j);

void mtl_json_key(struct mtl_json *j, const char *key);

/* s may be NULL: null. */
void mtl_json_string(struct mtl_json *j, const char *s);
void mtl_json_string_n(struct mtl_json *j, const char *s, size_t n);
void mtl_json_uint(struct mtl_json *j, uint64_t v);
void mtl_json_int(struct mtl_json *j, int64_t v);
/* A count or amount: integral values without a fraction, large
 * estimates rounded to whole numbers, others with 6 significant digits. */
void mtl_json_number(struct mtl_json *j, double v);
/* With a fixed number of decimals (percentages: 4). */
void mtl_json_fixed(struct mtl_json *j, double v, int decimals);
void mtl_json_bool(struct mtl_json *j, int v);
void mtl_json_null(struct mtl_json *j);

/* key and value in one call. */
void mtl_json_kv_string(struct mtl_json *j, const char *key, const char *s);
void mtl_json_kv_uint(struct mtl_json *j, const char *key, uint64_t v);
void mtl_json_kv_number(struct mtl_json *j, const char *key, double v);
void mtl_json_kv_fixed(struct mtl_json *j, const char *key, double v, int decimals);
void mtl_json_kv_bool(struct mtl_json *j, const char *key, int v);

#endif
