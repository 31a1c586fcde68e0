/*
 * buf.h: a growable byte buffer, for text and JSON built in memory.
 *
 *     struct mtl_buf b = MTL_BUF_INIT;
 *     mtl_buf_addf(&b, "%d blocks", n);
 *     mtl_buf_adds(&b, " live");
 *     if (b.failed) ... out of memory somewhere above
 *     fwrite(b.data, 1, b.len, stdout);
 *     mtl_buf_release(&b);
 *
 * Invariants: data[0..len) holds the bytes added; once anything was added,
 * data[len] is '\0' (so data is a C string when no NUL was added); len <
 * cap.  An allocation failure sets the sticky flag `failed` and leaves the
 * buffer as it was, so a caller can add many pieces and check once.
 */
#ifndef MTL_COMMON_BUF_H
#define MTL_COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct mtl_buf {
    char *data;
    size_t len, cap;
    int failed;
};

#define MTL_BUF_INIT { NULL, 0, 0, 0 }

/* Makes room for extra more bytes (and the NUL).  0 or MTL_ENOMEM. */
int mtl_buf_grow(struct mtl_buf *b, size_t extra);

void mtl_buf_add(struct mtl_buf *b, const void *data, size_t n);
void mtl_buf_adds(struct mtl_buf *b, const char *s);
void mtl_buf_addc(struct mtl_buf *b, char c);
void mtl_buf_addf(struct mtl_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mtl_buf_vaddf(struct mtl_buf *b, const char *fmt, va_list ap);
/* n copies of c. */
void mtl_buf_pad(struct mtl_buf *b, char c, size_t n);

/* Empties the buffer, keeping its memory (and clearing `failed`). */
void mtl_buf_reset(struct mtl_buf *b);

/* Frees the memory; b is MTL_BUF_INIT after. */
void mtl_buf_release(struct mtl_buf *b);

/* Hands the memory to the caller (who frees it) and empties b.  Returns
 * "" allocated when nothing was added, NULL on out of memory. */
char *mtl_buf_detach(struct mtl_buf *b);

#endif
