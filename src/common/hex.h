/*
 * hex.h: bytes as lowercase hex (build ids), cut to what out can hold.
 */
#ifndef MTL_COMMON_HEX_H
#define MTL_COMMON_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Writes 2 * n digits (fewer if cap is short) and a NUL; returns the
 * digits written. */
static inline size_t mtl_hex(char *out, size_t cap, const uint8_t *bytes, size_t n)
{
    static const char digit[] = "0123456789abcdef";
    size_t k = 0;
    for (size_t i = 0; i < n && k + 2 < cap; i++) {
        out[k++] = digit[bytes[i] >> 4];
        out[k++] = digit[bytes[i] & 15];
    }
    if (cap)
        out[k] = '\0';
    return k;
}

#endif
