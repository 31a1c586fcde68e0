/* stream_sizes: how many bytes each stream of a trace takes, each
 * compressed on its own per block (at the writer's base zstd level), to see
 * what a trace's size is made of (docs/PERFORMANCE.md, trace size).
 *   stream_sizes TRACE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

#include "common/varint.h"
#include "trace/blocks.h"
#include "trace/encoder.h"
#include "trace/format.h"

static const char *const names[MTL_STREAMS] = { "records (main)", "times", "sizes", "stacks",
                                                "addresses", "addresses' 2nd", "frees' addresses" };

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stream_sizes TRACE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct mtl_blocks *b;
    uint8_t head[MTL_FILE_HEADER_SIZE];
    if (fd < 0 || pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        mtl__blocks_open(&b, fd, NULL, 0, MTL_FILE_HEADER_SIZE, 0) < 0) {
        fprintf(stderr, "stream_sizes: cannot read %s\n", argv[1]);
        return 1;
    }
    mtl__blocks_version(b, mtl__get_u32le(head + 8)); /* its streams */
    uint64_t raw[MTL_STREAMS] = { 0 }, packed[MTL_STREAMS] = { 0 }, blocks = 0;
    size_t cap = MTL_BLOCK_MAX_RAW; /* a stream is smaller */
    uint8_t *out = malloc(ZSTD_compressBound(cap));
    const struct mtl_block *k;
    int rc;
    while ((rc = mtl__blocks_next(b, &k)) > 0) {
        blocks++;
        for (int s = 0; s < MTL_STREAMS; s++) {
            size_t n = (size_t)(k->bytes_end[s] - k->bytes[s]);
            if (!n)
                continue; /* a stream the trace's version has not */
            raw[s] += n;
            packed[s] += ZSTD_compress(out, ZSTD_compressBound(cap), k->bytes[s], n,
                                       MTL_ENC_ZSTD_LEVEL);
        }
    }
    if (rc < 0) {
        fprintf(stderr, "stream_sizes: %s is damaged after %llu blocks\n", argv[1],
                (unsigned long long)blocks);
        return 1;
    }
    uint64_t total = 0;
    for (int s = 0; s < MTL_STREAMS; s++)
        total += packed[s];
    printf("%-16s %12s %12s %7s\n", "STREAM", "RAW", "COMPRESSED", "SHARE");
    for (int s = 0; s < MTL_STREAMS; s++)
        printf("%-16s %12llu %12llu %6.1f%%\n", names[s], (unsigned long long)raw[s],
               (unsigned long long)packed[s], total ? 100.0 * (double)packed[s] / (double)total : 0);
    printf("%-16s %12s %12llu   (%llu blocks)\n", "total", "", (unsigned long long)total,
           (unsigned long long)blocks);
    mtl__blocks_close(b);
    return 0;
}
