/*
 * recenv.h: how `memtally record` hands its options to the recorder inside
 * the program, written once for both sides (src/cli/cmd_record.c writes,
 * src/preload/environ.c reads).
 *
 * The options travel as environment entries appended after all of the
 * program's own, in one block that starts with a marker counting them:
 *
 *     ...the program's environment, unchanged...
 *     MEMTALLY_RECORD=6
 *     MEMTALLY_OUTPUT=/tmp/prog.123.mtly
 *     ...
 *     LD_PRELOAD=/usr/lib/memtally/libmemtally.so:/the/user's/own.so
 *
 * ld.so takes the last LD_PRELOAD it sees, so the user's own entry stays
 * where it was, untouched.  The recorder reads the block, then takes it
 * out of the environment (and out of /proc/self/environ) before main: the
 * program sees exactly the environment it would have had without us.
 * Nothing here allocates: the recorder reads it inside malloc.
 */
#ifndef MTL_COMMON_RECENV_H
#define MTL_COMMON_RECENV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MTL_ENV_MARKER      "MEMTALLY_RECORD"     /* =N, the block's entries */
#define MTL_ENV_OUTPUT      "MEMTALLY_OUTPUT"     /* the trace of this process */
#define MTL_ENV_OUTPUT_PID  "MEMTALLY_OUTPUT_PID" /* ...if its pid is this */
#define MTL_ENV_PATTERN     "MEMTALLY_PATTERN"    /* the traces of the others */
#define MTL_ENV_DEPTH       "MEMTALLY_DEPTH"
#define MTL_ENV_SAMPLE_RATE "MEMTALLY_SAMPLE_RATE"
#define MTL_ENV_SEED        "MEMTALLY_SEED"
#define MTL_ENV_TIME_RESOLUTION "MEMTALLY_TIME_RESOLUTION" /* us, when over 1 */
#define MTL_MAX_TIME_RESOLUTION_US 1000000u  /* record --time-resolution: 1 s */
#define MTL_ENV_IDLE        "MEMTALLY_IDLE"
#define MTL_ENV_FOLLOW_FORK "MEMTALLY_FOLLOW_FORK"
#define MTL_ENV_FOLLOW_EXEC "MEMTALLY_FOLLOW_EXEC"
#define MTL_ENV_CALLS       "MEMTALLY_CALLS"      /* record --calls: the patterns,
                                                   each +GLOB or -GLOB, split
                                                   by MTL_CALLS_SEP */
#define MTL_CALLS_SEP '\x1e'
#define MTL_ENV_PRELOAD     "LD_PRELOAD"
#define MTL_ENV_REGION      "MEMTALLY_REGION"     /* descriptor of the region
                                                   (common/region.h) for the
                                                   process of OUTPUT_PID */
#define MTL_ENV_HANDOVER    "MEMTALLY_HANDOVER"   /* memtally record's socket for
                                                   the regions of the processes
                                                   it follows (common/ctlsock.h) */

/* Every name a block may hold, the marker first. */
static const char *const mtl_env_names[] = {
    MTL_ENV_MARKER, MTL_ENV_OUTPUT, MTL_ENV_OUTPUT_PID, MTL_ENV_PATTERN, MTL_ENV_DEPTH,
    MTL_ENV_SAMPLE_RATE, MTL_ENV_SEED, MTL_ENV_TIME_RESOLUTION, MTL_ENV_IDLE, MTL_ENV_FOLLOW_FORK,
    MTL_ENV_FOLLOW_EXEC, MTL_ENV_REGION, MTL_ENV_HANDOVER, MTL_ENV_CALLS, MTL_ENV_PRELOAD,
};

/* The default path of a trace: %e the program's name, %p its pid. */
#define MTL_TRACE_PATTERN "%e.%p.mtly"

/* Entries in a block at most: the marker, every name above once. */
#define MTL_ENV_MAX_BLOCK 16

/* What a block says; fields 0 or NULL are left out (pattern, depth and
 * library never are). */
struct mtl_env_opts {
    const char *output;          /* the trace of the process of output_pid */
    long output_pid;
    const char *pattern;
    unsigned long long depth, sample_rate, seed;
    unsigned long long time_resolution_us; /* 0 or 1: every microsecond */
    int idle, follow_fork, follow_exec;
    int region_fd;                 /* -1: none */
    const char *handover;        /* memtally record's socket, or NULL */
    const char *calls;           /* record --calls: its patterns ("" for all) */
    const char *library;         /* libmemtally.so, first in LD_PRELOAD */
    const char *their_preload;   /* the LD_PRELOAD it goes before, or NULL */
};

/* Makes a block in buf (cap bytes): its entries' addresses into entries,
 * the marker first, LD_PRELOAD last; how many, or 0 when buf is too
 * small.  For memtally record and for a followed exec alike. */
size_t mtl_env_block_make(const struct mtl_env_opts *o, char *buf, size_t cap,
                          char *entries[MTL_ENV_MAX_BLOCK]);

/* A time resolution as the recorder takes it, from 1 us to the most. */
static inline uint32_t mtl_time_resolution(long long us)
{
    return (uint32_t)(us < 1 ? 1 : us > MTL_MAX_TIME_RESOLUTION_US ? MTL_MAX_TIME_RESOLUTION_US : us);
}

/* If entry e is NAME=..., its value; else NULL. */
static inline const char *mtl_env_value(const char *e, const char *name)
{
    size_t n = strlen(name);
    return strncmp(e, name, n) == 0 && e[n] == '=' ? e + n + 1 : NULL;
}

/* Where the block lies in env (NULL-terminated): its first entry's index,
 * with its length in *n; -1 when there is none.  The last well-formed
 * marker counts (a memtally run under another). */
static inline long mtl_env_block(char *const *env, size_t *n)
{
    long at = -1;
    size_t total = 0;
    while (env && env[total])
        total++;
    for (size_t i = 0; i < total; i++) {
        const char *v = mtl_env_value(env[i], MTL_ENV_MARKER);
        if (!v || *v < '1' || *v > '9' || (v[1] && (v[1] < '0' || v[1] > '9' || v[2])))
            continue;
        size_t k = (size_t)(*v - '0');
        if (v[1])
            k = k * 10 + (size_t)(v[1] - '0');
        if (k <= MTL_ENV_MAX_BLOCK && i + k <= total) {
            at = (long)i;
            *n = k;
        }
    }
    return at;
}

/* Whether entry e is NAME=... for one of the block's names. */
static inline int mtl_env_ours(const char *e)
{
    for (size_t i = 0; i < sizeof mtl_env_names / sizeof *mtl_env_names; i++)
        if (mtl_env_value(e, mtl_env_names[i]))
            return 1;
    return 0;
}

/* Whether env[at .. at + n) is the block as memtally record wrote it.  A
 * shell that passes its variables on to a child (with --follow-exec) may
 * reorder them: the block's entries are then found by name. */
static inline int mtl_env_block_whole(char *const *env, long at, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!mtl_env_ours(env[at + (long)i]))
            return 0;
    return 1;
}

/* The index of the last entry NAME=... in env, or -1. */
static inline long mtl_env_last(char *const *env, const char *name)
{
    long found = -1;
    for (long i = 0; env && env[i]; i++)
        if (mtl_env_value(env[i], name))
            found = i;
    return found;
}

/* The value of name in the block env[at .. at + n), or when the block is
 * not whole, of its last entry in env; NULL when there is none. */
static inline const char *mtl_env_block_get(char *const *env, long at, size_t n,
                                            const char *name)
{
    if (at < 0)
        return NULL;
    if (!mtl_env_block_whole(env, at, n)) {
        long i = mtl_env_last(env, name);
        return i >= 0 ? mtl_env_value(env[i], name) : NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *v = mtl_env_value(env[at + (long)i], name);
        if (v)
            return v;
    }
    return NULL;
}

#endif
