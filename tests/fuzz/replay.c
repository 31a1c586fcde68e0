/*
 * replay.c: runs inputs through the same reader checks as the fuzzer
 * (fuzz_common.h), without libFuzzer, so that any compiler with ASan and
 * UBSan can run them.
 *
 *   replay FILE...                   each file as one input (fuzzer crashes,
 *                                    tests/fuzz/crashes/)
 *   replay -m N [-o CURRENT] TRACE...   N deterministic mutations of the
 *                                    traces, taken in turn; each input is
 *                                    first written to CURRENT (if given), so
 *                                    that a crash leaves its reproducer
 *   replay -u TRACE OUT              writes TRACE in the payload form (a seed
 *                                    for the fuzzer's corpus)
 *
 * Mutations alternate between the file itself (bytes flipped, set, cut,
 * deleted, duplicated, u32 fields set to extreme values) and its payload
 * form, which fuzz_one() compresses back into valid blocks, so that the
 * damage reaches the record decoder.  The generator is splitmix64 seeded by
 * the mutation's number: the same N mutations on every run.  Prints how many
 * mutations the reader rejected, read as truncated and read as complete, and
 * exits 0 unless a sanitizer or a check aborts.
 */
#include "fuzz_common.h"

#include <errno.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
/* A leak is found after the input that caused it, while that input is
 * still in CURRENT: not at exit, when any of them could have. */
static void leak_check(void)
{
    if (__lsan_do_recoverable_leak_check()) {
        fprintf(stderr, "replay: the reader leaked memory on the last input\n");
        abort();
    }
}
#else
static void leak_check(void) {}
#endif

struct buf {
    uint8_t *p;
    size_t n;
};

static uint64_t rng;

static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

static struct buf load(const char *path)
{
    struct buf b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    uint8_t chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
        fuzz_append(&b.p, &b.n, chunk, k);
    fclose(f);
    return b;
}

/* The payload form of a trace file: its blocks decompressed, separated. */
static struct buf unpack(struct buf file, const char *name)
{
    struct buf out = {NULL, 0};
    size_t off = MTL_FILE_HEADER_SIZE, prev_len = 0;
    /* From version 7 each block's prefix is the payload of the one before. */
    int chained = file.n >= MTL_FILE_HEADER_SIZE &&
                  mtl__get_u32le(file.p + 8) >= MTL_FORMAT_PREFIX_FIRST;
    uint8_t *raw = malloc(MTL_BLOCK_MAX_RAW), *prev = malloc(MTL_BLOCK_MAX_RAW);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (!raw || !prev || !dctx)
        abort();
    while (off + MTL_BLOCK_HEADER_SIZE <= file.n) {
        uint32_t csize = mtl__get_u32le(file.p + off + 4);
        if (off + MTL_BLOCK_HEADER_SIZE + csize > file.n)
            break;
        if (chained && prev_len)
            ZSTD_DCtx_refPrefix(dctx, prev, prev_len);
        size_t got = ZSTD_decompressDCtx(dctx, raw, MTL_BLOCK_MAX_RAW,
                                         file.p + off + MTL_BLOCK_HEADER_SIZE, csize);
        if (ZSTD_isError(got)) {
            fprintf(stderr, "replay: %s: block at %zu does not decompress\n", name, off);
            exit(2);
        }
        if (out.n)
            fuzz_append(&out.p, &out.n, FUZZ_SEPARATOR, 4);
        fuzz_append(&out.p, &out.n, raw, got);
        memcpy(prev, raw, got);
        prev_len = got;
        off += MTL_BLOCK_HEADER_SIZE + csize;
    }
    ZSTD_freeDCtx(dctx);
    free(prev);
    free(raw);
    if (!out.n) {
        fprintf(stderr, "replay: %s: no whole block\n", name);
        exit(2);
    }
    return out;
}

static void mutate_once(struct buf *b)
{
    static const uint32_t extreme[] = {0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff,
                                       0x80000000u, 0xffffffffu, MTL_BLOCK_MAX_RAW,
                                       MTL_BLOCK_MAX_RAW + 1};
    size_t at = below(b->n), len;
    switch (below(9)) {
    case 0: /* flip a bit */
        if (b->n)
            b->p[at] ^= (uint8_t)(1u << below(8));
        break;
    case 1: /* set a byte */
        if (b->n)
            b->p[at] = (uint8_t)next();
        break;
    case 2: /* a little-endian u32 to an extreme value */
        if (b->n >= 4) {
            at = below(b->n - 3);
            mtl__put_u32le(b->p + at, extreme[below(sizeof extreme / sizeof *extreme)]);
        }
        break;
    case 3: /* a long varint: 0xff bytes */
        len = 1 + below(10);
        for (size_t i = 0; i < len && at + i < b->n; i++)
            b->p[at + i] = 0xff;
        break;
    case 4: /* cut */
        b->n = at;
        break;
    case 5: /* delete a range */
        len = below(b->n - at < 64 ? b->n - at + 1 : 64);
        memmove(b->p + at, b->p + at + len, b->n - at - len);
        b->n -= len;
        break;
    case 6: { /* duplicate a range in place */
        len = below(b->n - at < 256 ? b->n - at + 1 : 256);
        uint8_t *c = realloc(b->p, b->n + len + 1);
        if (!c)
            abort();
        b->p = c;
        memmove(c + at + len, c + at, b->n - at);
        b->n += len;
        break;
    }
    case 7: { /* insert random bytes */
        len = 1 + below(16);
        uint8_t *c = realloc(b->p, b->n + len + 1);
        if (!c)
            abort();
        b->p = c;
        memmove(c + at + len, c + at, b->n - at);
        for (size_t i = 0; i < len; i++)
            c[at + i] = (uint8_t)next();
        b->n += len;
        break;
    }
    default: /* overwrite a range with random bytes */
        len = 1 + below(32);
        for (size_t i = 0; i < len && at + i < b->n; i++)
            b->p[at + i] = (uint8_t)next();
        break;
    }
}

static void save(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "replay: cannot write %s\n", path);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    long count = -1;
    const char *current = NULL;
    int i = 1;
    if (argc == 4 && strcmp(argv[1], "-u") == 0) {
        struct buf t = load(argv[2]);
        struct buf u = unpack(t, argv[2]);
        save(argv[3], u.p, u.n);
        free(t.p);
        free(u.p);
        return 0;
    }
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
            count = atol(argv[++i]);
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            current = argv[++i];
        else
            break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: replay FILE... | replay -m N [-o CURRENT] TRACE... | replay -u TRACE OUT\n");
        return 2;
    }
    if (count < 0) {
        for (; i < argc; i++) {
            struct buf b = load(argv[i]);
            int rc = fuzz_one(b.p, b.n);
            printf("%s: %s\n", argv[i], rc < 0 ? mtl_strerror(rc) : "read to the end");
            fflush(stdout);
            free(b.p);
            leak_check();
        }
        return 0;
    }
    int ntraces = argc - i;
    struct buf *files = calloc((size_t)ntraces, sizeof *files);
    struct buf *payloads = calloc((size_t)ntraces, sizeof *payloads);
    if (!files || !payloads)
        abort();
    for (int k = 0; k < ntraces; k++) {
        files[k] = load(argv[i + k]);
        payloads[k] = unpack(files[k], argv[i + k]);
        /* The seeds themselves must read cleanly. */
        if (fuzz_one(files[k].p, files[k].n) < 0 || fuzz_one(payloads[k].p, payloads[k].n) < 0) {
            fprintf(stderr, "replay: %s does not read cleanly\n", argv[i + k]);
            return 2;
        }
    }
    unsigned long errors = 0, truncated = 0, complete = 0;
    for (long m = 0; m < count; m++) {
        rng = (uint64_t)m * 0x2545f4914f6cdd1dull + 1;
        int k = (int)(m / 2 % ntraces);
        const struct buf *src = (m & 1) ? &payloads[k] : &files[k];
        struct buf b = {malloc(src->n + 1), src->n};
        if (!b.p)
            abort();
        memcpy(b.p, src->p, src->n);
        int edits = 1 + (int)below(4);
        for (int e = 0; e < edits; e++)
            mutate_once(&b);
        /* A file mutation that lost the magic would be read as payloads. */
        if (!(m & 1) && b.n >= 8 && memcmp(b.p, MTL_FILE_MAGIC, 8) != 0 && below(2))
            memcpy(b.p, MTL_FILE_MAGIC, 8);
        if (current)
            save(current, b.p, b.n);
        int rc = fuzz_one(b.p, b.n);
        leak_check();
        if (rc < 0)
            errors++;
        else if (fuzz_last_truncated)
            truncated++;
        else
            complete++;
        free(b.p);
    }
    for (int k = 0; k < ntraces; k++) {
        free(files[k].p);
        free(payloads[k].p);
    }
    free(files);
    free(payloads);
    printf("%ld mutations: %lu errors, %lu truncated, %lu complete\n", count, errors,
           truncated, complete);
    return 0;
}
