/*
 * tracefile.h: how a trace file is created, for memtally record and the
 * recorder alike: readable by its owner only (a trace holds command lines
 * and soon heap bytes), never through a symbolic link at the path's last
 * component (one planted in a shared directory would aim us at another
 * file), never over a regular file of another user; a device or a pipe is
 * written as it is.  Nothing here allocates (snprintf of %s and %d does
 * not).
 */
#ifndef MTL_COMMON_TRACEFILE_H
#define MTL_COMMON_TRACEFILE_H

#include <stddef.h>

#define MTL_TRACE_MODE 0600

/* Opens path to write a trace to, replacing what it holds: a descriptor
 * (read and write), or a negative errno: -ELOOP for a symbolic link,
 * -EPERM for another user's file. */
int mtl_trace_create(const char *path);

/* Creates path only if nothing is there (a symbolic link counts): a
 * descriptor or a negative errno (-EEXIST). */
int mtl_trace_create_new(const char *path);

/* A new trace at path: replacing it when clobber, else never overwriting
 * another trace (path, path.1, path.2, ...; a symbolic link is a name
 * taken).  The name used goes to used (not path itself).  A descriptor or
 * a negative errno. */
int mtl_trace_create_named(const char *path, int clobber, char *used, size_t cap);

/* Writes n bytes, through EINTR and short writes: 0 or a negative errno
 * (-EIO when nothing could be written). */
int mtl_write_all(int fd, const void *p, size_t n);

/* Why mtl_trace_create failed, in words. */
const char *mtl_trace_create_error(int rc);

#endif
