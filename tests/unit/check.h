/* check.h: the few assertions the unit tests need.  A failed CHECK prints
 * where and exits 1; a test exits 0 when all held. */
#ifndef MTL_TEST_CHECK_H
#define MTL_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int checks_run;

#define CHECK(cond)                                                          \
    do {                                                                     \
        checks_run++;                                                        \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        checks_run++;                                                        \
        unsigned long long va_ = (unsigned long long)(a);                    \
        unsigned long long vb_ = (unsigned long long)(b);                    \
        if (va_ != vb_) {                                                    \
            fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n",        \
                    __FILE__, __LINE__, #a, #b, va_, vb_);                   \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* The next of a fixed pseudo-random sequence (xorshift64) from *state,
 * not 0: a test's random inputs, the same on every run. */
static inline uint64_t check_xorshift(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

#define CHECKS_DONE()                                                        \
    do {                                                                     \
        printf("%d checks passed\n", checks_run);                            \
        return 0;                                                            \
    } while (0)

#endif
