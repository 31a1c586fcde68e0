/*
 * format.h: constants of the trace file format, shared by the recorder
 * (src/preload) and the reader (src/trace/reader.c).  docs/FORMAT.md is the
 * specification; change both together and bump MTL_FORMAT_VERSION when a
 * reader of the old version could misread the new files.
 */
#ifndef MTL_TRACE_FORMAT_H
#define MTL_TRACE_FORMAT_H

#include <stdint.h>

#define MTL_FILE_MAGIC "MEMTALLY"   /* 8 bytes at offset 0 */
#define MTL_FORMAT_VERSION 10u      /* u32 little endian at offset 8 */
#define MTL_FORMAT_OLDEST 1u        /* the oldest version readers take */
#define MTL_FILE_HEADER_SIZE 16     /* magic, version, u32 flags (0) */

/* Every block: u32 magic, u32 compressed size, u32 raw size, u32 check of
 * the three, then the zstd frame (with its content checksum). */
#define MTL_BLOCK_MAGIC 0x4b4c424du /* "MBLK" */
#define MTL_BLOCK_HEADER_SIZE 16
#define MTL_BLOCK_MAX_RAW (8u << 20)

/* A block's payload is split into streams by the kind of field: the
 * record types and most fields in MAIN, times, sizes, stacks and pointers
 * each in their own (docs/FORMAT.md, "Streams"). */
enum mtl__stream {
    MTL_S_MAIN = 0,
    MTL_S_TIME = 1,
    MTL_S_SIZE = 2,
    MTL_S_STACK = 3,
    MTL_S_PTR = 4,
    MTL_S_PTR_MORE = 5, /* version 6 on: an address's second value */
    MTL_S_PTR_FREE = 6, /* version 7 on: a FREE's address code */
    MTL_S_RUNS = 7,     /* version 10 on: how many more ALLOCs or FREEs */
    MTL_STREAMS = 8,
};

/* The streams of a block of a given version: from version 6 an
 * address's second value (a difference, a free number far back) has a
 * stream of its own, apart from the codes, whose bytes are alike;
 * before, it followed its code in the pointer stream.  Version 7 added
 * PTR_FREE, version 10 RUNS. */
#define MTL_FORMAT_PTR_MORE_FIRST 6u
#define MTL_FORMAT_PTR_FREE_FIRST 7u
#define MTL_FORMAT_RUNS_FIRST 10u
static inline unsigned mtl__streams_of(uint32_t version)
{
    return version >= MTL_FORMAT_RUNS_FIRST       ? MTL_STREAMS
           : version >= MTL_FORMAT_PTR_FREE_FIRST ? MTL_STREAMS - 1
           : version >= MTL_FORMAT_PTR_MORE_FIRST ? MTL_STREAMS - 2
                                                  : MTL_STREAMS - 3;
}

/* The stream a FREE's address code is in: from version 7 one of its own,
 * apart from the allocations' codes, as the two are alike only within
 * their kind. */
static inline enum mtl__stream mtl__ptr_free_stream(uint32_t version)
{
    return version >= MTL_FORMAT_PTR_FREE_FIRST ? MTL_S_PTR_FREE : MTL_S_PTR;
}

/* Whether a stream holds addresses (skipped by readers that want none). */
static inline int mtl__is_ptr_stream(int stream)
{
    return stream == MTL_S_PTR || stream == MTL_S_PTR_MORE || stream == MTL_S_PTR_FREE;
}

/* The stream an address's second value is in. */
static inline enum mtl__stream mtl__ptr_more_stream(uint32_t version)
{
    return version >= MTL_FORMAT_PTR_MORE_FIRST ? MTL_S_PTR_MORE : MTL_S_PTR;
}

/* Up to version 3, pointers are coded against the last MTL_PTR_WINDOW
 * pointers; from version 4 by trace/ptrcode.h's model. */
#define MTL_PTR_WINDOW 256
#define MTL_FORMAT_WINDOW_LAST 3u

/* From version 5 the TIME stream codes runs of zero differences
 * (docs/FORMAT.md, "Times"); before, one number per record.  And an
 * allocation may name its thread's top (docs/FORMAT.md, "Addresses"). */
#define MTL_FORMAT_TIME_RUNS_FIRST 5u
#define MTL_FORMAT_TOP_FIRST 5u

/* From version 7 an allocation may name the end of one of the last
 * allocations (docs/FORMAT.md, "Addresses"). */
#define MTL_FORMAT_AFTER_FIRST 7u

/* From version 7 a block's zstd frame is compressed with the payload of
 * the block before it as its prefix (docs/FORMAT.md, "Block"). */
#define MTL_FORMAT_PREFIX_FIRST 7u

/* From version 8 a free that an allocation names by number (not by its
 * list) leaves its list (docs/FORMAT.md, "Addresses"). */
#define MTL_FORMAT_UNLIST_FIRST 8u

/* From version 9 a (thread, size class) list holds 256 frees, the 33rd on
 * named by a code of their own (docs/FORMAT.md, "Addresses"). */
#define MTL_FORMAT_DEEP_FIRST 9u

/* Record types inside a block's payload (one byte each, then fields). */
enum mtl__record {
    MTL_REC_HEADER = 0x01,        /* first record of the first block */
    MTL_REC_MODULE_LOAD = 0x02,
    MTL_REC_MODULE_UNLOAD = 0x03,
    MTL_REC_STACK_NODES = 0x04,
    MTL_REC_STRING = 0x05,
    MTL_REC_THREAD_START = 0x06,
    MTL_REC_THREAD_NAME = 0x07,
    MTL_REC_THREAD_EXIT = 0x08,
    MTL_REC_THREAD_SWITCH = 0x09,
    MTL_REC_ALLOC = 0x0a,
    MTL_REC_FREE = 0x0b,
    MTL_REC_ALLOC_EX = 0x0c,
    MTL_REC_RSS = 0x0d,
    MTL_REC_END = 0x0e,
    MTL_REC_TAG = 0x0f,         /* version 2 */
    MTL_REC_GC_HEAP = 0x10,     /* version 3 */
    MTL_REC_CALLS = 0x11,       /* version 3 */
};

/* From version 10 an ALLOC's or FREE's type byte stands for a run of
 * records of its type: the RUNS stream says how many more follow
 * (docs/FORMAT.md, "Runs").  A program allocates and frees in runs
 * whose pattern repeats: its counts compress far better than a byte a
 * record. */
static inline int mtl__is_run_record(uint32_t version, uint8_t type)
{
    return version >= MTL_FORMAT_RUNS_FIRST && (type == MTL_REC_ALLOC || type == MTL_REC_FREE);
}

/* Flags of an ALLOC_EX record. */
#define MTL_ALLOC_EX_TAG 0x1u     /* a type tag string id follows */
#define MTL_ALLOC_EX_GC 0x2u      /* a garbage collector's block (version 3) */

/* Why a trace ended (the END record). */
enum mtl__end_reason {
    MTL_END_EXIT = 0,
    MTL_END_EXEC = 1,
    MTL_END_SIGNAL = 2,
    MTL_END_STOP = 3,
};

/* The check word of a block header: it covers the sizes and the block's
 * number in the file (from 0), so that a block duplicated, dropped or
 * moved is found out. */
static inline uint32_t mtl__block_check(uint32_t csize, uint32_t rsize, uint64_t seq)
{
    uint32_t h = MTL_BLOCK_MAGIC ^ (csize * 0x9e3779b1u) ^ (rsize * 0x85ebca77u) ^
                 ((uint32_t)seq * 0xc2b2ae3du) ^ (uint32_t)(seq >> 32);
    return h ^ (h >> 15);
}

static inline void mtl__put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t mtl__get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

#endif
