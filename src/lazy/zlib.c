/*
 * zlib.c: zlib's functions (memtally export --format pprof gzips), loaded on first use (lazy.h).
 */
#pragma GCC visibility push(hidden)
#include <zlib.h>
#include "lazy/lazy.h"

static struct mtl_lazy_lib lib_z = {"libz.so.1", "zlib1g", 0};

MTL_LAZY(lib_z, int, deflateInit2_,
         (z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy,
          const char *version, int stream_size),
         (strm, level, method, windowBits, memLevel, strategy, version, stream_size))
MTL_LAZY(lib_z, int, deflate, (z_streamp strm, int flush), (strm, flush))
MTL_LAZY(lib_z, uLong, deflateBound, (z_streamp strm, uLong sourceLen), (strm, sourceLen))
MTL_LAZY(lib_z, int, deflateEnd, (z_streamp strm), (strm))
