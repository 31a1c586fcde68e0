/*
 * memtally/errors.h: the error codes of every memtally library call, in one
 * table.
 *
 * Calls return 0 (or a count) on success and a negative code on failure:
 * the reader and the analysis return the MTL_E* codes below; the
 * in-program API (memtally.h) returns negative errno values (-EBUSY,
 * -EINVAL...).  mtl_strerror() names both kinds.
 */
#ifndef MEMTALLY_ERRORS_H
#define MEMTALLY_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

#define MTL_ERRNO_MAP(X)                                                     \
    X(IO, "input/output error")                                              \
    X(NOMEM, "out of memory")                                                \
    X(NOTTRACE, "not a memtally trace")                                      \
    X(VERSION, "unsupported trace version")                                  \
    X(CORRUPT, "corrupt trace")                                              \
    X(INVAL, "invalid argument")                                             \
    X(NOENT, "no such file or directory")                                    \
    X(ACCES, "permission denied")                                            \
    X(STOPPED, "stopped by the caller")                                      \
    X(BADINDEX, "the trace's index is damaged: it was removed, run again")

enum {
    MTL_E_FIRST_ = -1000,
#define MTL_ERR_ENUM_(name, text) MTL_E##name,
    MTL_ERRNO_MAP(MTL_ERR_ENUM_)
#undef MTL_ERR_ENUM_
    MTL_E_LAST_
};

/* The text of an error code returned by any mtl_ call: an MTL_E* code, or
 * a negative errno value of the in-program API. */
const char *mtl_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
