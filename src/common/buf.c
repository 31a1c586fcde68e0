/* buf.c: see buf.h. */
#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtally/errors.h"

int mtl_buf_grow(struct mtl_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    if (need < extra) {
        b->failed = 1;
        return MTL_ENOMEM;
    }
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->failed = 1;
        return MTL_ENOMEM;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

void mtl_buf_add(struct mtl_buf *b, const void *data, size_t n)
{
    if (mtl_buf_grow(b, n) < 0)
        return;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void mtl_buf_adds(struct mtl_buf *b, const char *s)
{
    mtl_buf_add(b, s, strlen(s));
}

void mtl_buf_addc(struct mtl_buf *b, char c)
{
    mtl_buf_add(b, &c, 1);
}

void mtl_buf_pad(struct mtl_buf *b, char c, size_t n)
{
    if (mtl_buf_grow(b, n) < 0)
        return;
    memset(b->data + b->len, c, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void mtl_buf_vaddf(struct mtl_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(again);
        return;
    }
    if ((size_t)n < sizeof small) {
        mtl_buf_add(b, small, (size_t)n);
    } else if (mtl_buf_grow(b, (size_t)n) == 0) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void mtl_buf_addf(struct mtl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mtl_buf_vaddf(b, fmt, ap);
    va_end(ap);
}

void mtl_buf_reset(struct mtl_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->cap)
        b->data[0] = '\0';
}

void mtl_buf_release(struct mtl_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

char *mtl_buf_detach(struct mtl_buf *b)
{
    char *d = b->data;
    int failed = b->failed;
    if (!d && !failed)
        d = calloc(1, 1);
    if (failed) {
        free(d);
        d = NULL;
    }
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
    return d;
}
