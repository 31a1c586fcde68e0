/* stream_sizes: how many bytes each stream of a trace takes, each
 * compressed on its own per block (at the writer's zstd level), to see
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
                                                "addresses" };

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stream_sizes TRACE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct mtl_blocks *b;
    if (fd < 0 || mtl__blocks_open(&b, fd, NULL, 0, MTL_FILE_HEADER_SIZE, 0) < 0) {
        fprintf(stderr, "stream_sizes: cannot read %s\n", argv[1]);
        return 1;
    }
    uint64_t raw[MTL_STREAMS] = { 0 }, packed[MTL_STREAMS] = { 0 }, blocks = 0;
    size_t cap = 64u << 20; /* a block's streams are smaller */
    uint8_t *buf = malloc(cap), *out = malloc(ZSTD_compressBound(cap));
    const struct mtl_block *k;
    int rc;
    while ((rc = mtl__blocks_next(b, &k)) > 0) {
        blocks++;
        for (int s = 0; s < MTL_STREAMS; s++) {
            size_t n = 0;
            if (s == MTL_S_MAIN) {
                n = (size_t)(k->main_end - k->main);
                if (n > cap)
                    n = cap;
                for (size_t i = 0; i < n; i++)
                    buf[i] = k->main[i];
            } else {
                if (mtl__block_stream(b, s) < 0)
                    continue;
                for (uint32_t i = 0; i < k->nval[s] && n + 10 <= cap; i++)
                    n = (size_t)(mtl__put_varint(buf + n, k->val[s][i]) - buf);
            }
            raw[s] += n;
            packed[s] += ZSTD_compress(out, ZSTD_compressBound(cap), buf, n, MTL_ENC_ZSTD_LEVEL);
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
