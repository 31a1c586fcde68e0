/*
 * blocks.h: a trace's blocks as the reader takes them (docs/FORMAT.md):
 * each header checked, its zstd frame decompressed, its streams split, and
 * every stream but MAIN decoded from varints to numbers.  That is most of
 * the work of reading a trace, and only decompressing depends on the block
 * before (version 7 on: its payload is the prefix of the next frame), so
 * it can run on worker threads ahead of the reader, which decompress in
 * turn and decode in parallel; the reader then only walks the records in
 * order (the state carried from block to block: time, pointer window,
 * thread, definitions, is the reader's).
 */
#ifndef MTL_TRACE_BLOCKS_H
#define MTL_TRACE_BLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memtally/trace.h"
#include "trace/format.h"

struct mtl_block {
    /* 1: a block; 0: the end of the input (partial: it ends inside a
     * block, which starts at start); or a negative code for a block that
     * cannot be read or is corrupt. */
    int status;
    int partial;
    uint64_t number;           /* from 0, in file order */
    uint64_t start, end;       /* offset of its header, offset after it */
    const uint8_t *main, *main_end;   /* the MAIN stream, as bytes */
    /* Every stream as its bytes (the MAIN one too), as the file has them. */
    const uint8_t *bytes[MTL_STREAMS], *bytes_end[MTL_STREAMS];
    /* The other streams, decoded: val[s][0 .. nval[s]-1].  bad[s]: after
     * those comes a varint that does not parse.  A stream not decoded
     * (pointers not wanted) has val NULL: see mtl__block_stream. */
    const uint64_t *val[MTL_STREAMS];
    uint32_t nval[MTL_STREAMS];
    uint8_t bad[MTL_STREAMS];
    /* nval and bad are known though val is NULL: the SIZE and STACK
     * streams when summed straight from their bytes (blocksums.h). */
    uint8_t counted[MTL_STREAMS];
};

struct mtl_blocks;

/* Up to n bytes at offset off of a descriptor (pread) or of memory (when
 * mem is set): how many (fewer at the end), or -1 with errno set. */
ssize_t mtl__read_at(int fd, const uint8_t *mem, size_t mem_size, uint64_t off, void *buf,
                     size_t n);

/* Blocks from a descriptor (fd >= 0, read with pread) or from memory,
 * starting with the block at offset pos, numbered number.  0 or
 * MTL_ENOMEM. */
int mtl__blocks_open(struct mtl_blocks **out, int fd, const uint8_t *mem, size_t mem_size,
                     uint64_t pos, uint64_t number);
void mtl__blocks_close(struct mtl_blocks *b);

/* Decode ahead on this many worker threads (0: none, the default: each
 * block is decoded by mtl__blocks_next on the caller's thread).  Only a
 * whole file should be read ahead: a growing one is read as it comes.
 * Set before the first mtl__blocks_next or between two (the block handed
 * out last is then freed). */
void mtl__blocks_workers(struct mtl_blocks *b, unsigned n);

/* Whether the pointer stream is decoded (default yes); may change at any
 * time, blocks decoded before keep theirs undecoded (mtl__block_stream). */
void mtl__blocks_want_pointers(struct mtl_blocks *b, int want);

/* Whether the workers sum each block's allocations per stack as they
 * decode it (blocksums.h), with the weights of this mode and rate, from
 * now on; they then leave its SIZE and STACK streams undecoded (counted:
 * mtl__block_stream decodes them when a record needs them).  Blocks
 * decoded before are summed when asked (mtl__block_sums). */
void mtl__blocks_want_sums(struct mtl_blocks *b, enum mtl_mode mode, uint64_t rate);

/* How the trace's version codes its streams; set before the first block.
 * Version 4 on: the STACK stream holds each stack id as the difference
 * from the one before it in the block (the first from 0).  Version 5 on:
 * the TIME stream codes runs of zero differences.  Either way the numbers
 * are handed out (and summed) as what they stand for: ids, differences
 * of time one per record. */
void mtl__blocks_version(struct mtl_blocks *b, uint32_t version);

/* The next block, valid until the next call.  After an end or an error
 * the same answer comes again, except after mtl__blocks_rewind. */
int mtl__blocks_next(struct mtl_blocks *b, const struct mtl_block **out);

/* Read again from pos as block number (a block found cut while a trace is
 * still being written: it is read again once whole).  Without workers. */
void mtl__blocks_rewind(struct mtl_blocks *b, uint64_t pos, uint64_t number);

/* Decodes stream s of the current block if it was not: 0 or MTL_ENOMEM. */
int mtl__block_stream(struct mtl_blocks *b, enum mtl__stream s);

struct mtl_block_sums;
/* The per-stack sums of the current block (made now if its worker did not
 * make them), valid until the next mtl__blocks_next; NULL when there is no
 * current block. */
const struct mtl_block_sums *mtl__block_sums(struct mtl_blocks *b);

#endif
