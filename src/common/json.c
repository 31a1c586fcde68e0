/* json.c: see json.h. */
#include "common/json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

void mtl_json_init(struct mtl_json *j, struct mtl_buf *out)
{
    memset(j, 0, sizeof *j);
    j->out = out;
}

/* Before any value: the comma that separates it from the one before. */
static void value_start(struct mtl_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->has_items[j->depth])
        mtl_buf_add(j->out, ", ", 2);
    j->has_items[j->depth] = 1;
}

static void open_level(struct mtl_json *j, char open, char close)
{
    value_start(j);
    mtl_buf_addc(j->out, open);
    assert(j->depth + 1 < MTL_JSON_MAX_DEPTH);
    j->depth++;
    j->has_items[j->depth] = 0;
    j->closer[j->depth] = close;
}

void mtl_json_begin_object(struct mtl_json *j)
{
    open_level(j, '{', '}');
}

void mtl_json_begin_array(struct mtl_json *j)
{
    open_level(j, '[', ']');
}

void mtl_json_end(struct mtl_json *j)
{
    assert(j->depth > 0 && !j->after_key);
    mtl_buf_addc(j->out, j->closer[j->depth]);
    j->depth--;
}

/* The length of the UTF-8 sequence at s (at most n bytes), or 0 when it
 * is not a valid one (overlong, surrogate, beyond U+10FFFF, cut). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

static void put_string(struct mtl_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    mtl_buf_addc(b, '"');
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t len = c >= 0x20 && c != '"' && c != '\\' ? utf8_len(p + i, n - i) : 0;
        if (len) {
            i += len;
            run += len;
            continue;
        }
        mtl_buf_add(b, p + i - run, run);
        run = 0;
        if (c == '"' || c == '\\') {
            mtl_buf_addc(b, '\\');
            mtl_buf_addc(b, (char)c);
        } else if (c == '\n') {
            mtl_buf_add(b, "\\n", 2);
        } else if (c == '\t') {
            mtl_buf_add(b, "\\t", 2);
        } else if (c < 0x20) {
            mtl_buf_addf(b, "\\u%04x", c);
        } else {
            mtl_buf_add(b, "\\ufffd", 6); /* not UTF-8 */
        }
        i++;
    }
    mtl_buf_add(b, p + n - run, run);
    mtl_buf_addc(b, '"');
}

void mtl_json_key(struct mtl_json *j, const char *key)
{
    assert(j->depth > 0 && j->closer[j->depth] == '}' && !j->after_key);
    value_start(j);
    put_string(j->out, key, strlen(key));
    mtl_buf_add(j->out, ": ", 2);
    j->after_key = 1;
}

void mtl_json_string_n(struct mtl_json *j, const char *s, size_t n)
{
    value_start(j);
    put_string(j->out, s, n);
}

void mtl_json_string(struct mtl_json *j, const char *s)
{
    if (!s) {
        mtl_json_null(j);
        return;
    }
    mtl_json_string_n(j, s, strlen(s));
}

void mtl_json_uint(struct mtl_json *j, uint64_t v)
{
    value_start(j);
    mtl_buf_addf(j->out, "%" PRIu64, v);
}

void mtl_json_int(struct mtl_json *j, int64_t v)
{
    value_start(j);
    mtl_buf_addf(j->out, "%" PRId64, v);
}

void mtl_json_number(struct mtl_json *j, double v)
{
    if (!isfinite(v)) {
        mtl_json_null(j);
        return;
    }
    value_start(j);
    if ((v == floor(v) && fabs(v) < 9e15) || fabs(v) >= 1e5)
        mtl_buf_addf(j->out, "%.0f", v); /* an estimate this large: whole */
    else
        mtl_buf_addf(j->out, "%.6g", v);
}

void mtl_json_fixed(struct mtl_json *j, double v, int decimals)
{
    if (!isfinite(v)) {
        mtl_json_null(j);
        return;
    }
    value_start(j);
    mtl_buf_addf(j->out, "%.*f", decimals, v);
}

void mtl_json_bool(struct mtl_json *j, int v)
{
    value_start(j);
    mtl_buf_adds(j->out, v ? "true" : "false");
}

void mtl_json_null(struct mtl_json *j)
{
    value_start(j);
    mtl_buf_adds(j->out, "null");
}

void mtl_json_kv_string(struct mtl_json *j, const char *key, const char *s)
{
    mtl_json_key(j, key);
    mtl_json_string(j, s);
}

void mtl_json_kv_uint(struct mtl_json *j, const char *key, uint64_t v)
{
    mtl_json_key(j, key);
    mtl_json_uint(j, v);
}

void mtl_json_kv_number(struct mtl_json *j, const char *key, double v)
{
    mtl_json_key(j, key);
    mtl_json_number(j, v);
}

void mtl_json_kv_fixed(struct mtl_json *j, const char *key, double v, int decimals)
{
    mtl_json_key(j, key);
    mtl_json_fixed(j, v, decimals);
}

void mtl_json_kv_bool(struct mtl_json *j, const char *key, int v)
{
    mtl_json_key(j, key);
    mtl_json_bool(j, v);
}
