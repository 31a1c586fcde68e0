/*
 * merge.h: several traces into one (`memtally merge`), which every command,
 * the viewer and every export read as any trace.
 *
 * Runs of one program (merge): one after the other on the merged clock,
 * each input's threads its own and named with its run ("main (run 2)").
 * A process tree (tree): every input on one clock, by the wall-clock time
 * each started, threads named with their process ("main (pid 1234)"), so
 * that the live heap and the peak are those of all the processes at once.
 *
 * Stacks are unified by module and offset, not by address: a module is one
 * module of the output for each build id (or path, without one), placed at
 * an address of its own, and every frame in it is moved there from where
 * its run loaded it, so that the same code in two runs at different
 * addresses is the same frame.  Frames outside any module keep their
 * address.  Addresses of blocks are kept apart per input (the input's
 * number in bits 48 and up), so that a block of one never matches a free
 * of another.
 */
#ifndef MTL_TRACE_MERGE_H
#define MTL_TRACE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "trace/encoder.h"

struct mtl_merge_options {
    int tree;       /* a process tree, on one clock */
    int force;      /* runs of different programs, all the same */
    const char *command_line; /* the merged trace's (what made it) */
};

struct mtl_merge_input_stats {
    const char *path;
    char program[256];      /* as its header says */
    uint32_t pid;
    uint64_t offset_us;     /* where its time 0 is on the merged clock */
    uint64_t allocations;
    int truncated;          /* it was cut short: merged as far as it goes */
    int damaged;            /* it is damaged: merged as far as it reads */
};

struct mtl_merge_stats {
    struct mtl_merge_input_stats *inputs; /* n of them, the caller's */
    uint64_t allocations, frees, duration_us;
    uint32_t threads, modules, nodes;
    uint32_t *thread_input; /* output thread -> its input (the caller frees) */
};

/* Why a merge failed: what the caller words. */
enum mtl_merge_why {
    MTL_MERGE_NO_INPUT = 1,
    MTL_MERGE_TOO_MANY,     /* more than MTL_MERGE_MAX_INPUTS */
    MTL_MERGE_UNREADABLE,   /* input: code is the reader's */
    MTL_MERGE_MODES,        /* input is full and the first sampled, or the reverse */
    MTL_MERGE_RATES,        /* input is sampled at another rate than the first */
    MTL_MERGE_PROGRAMS,     /* input is of another program than the first */
    MTL_MERGE_DAMAGED,      /* input: a record refers to what it never defined */
    MTL_MERGE_WRITE,        /* the sink failed: code is the errno */
    MTL_MERGE_NOMEM,
};

#define MTL_MERGE_MAX_INPUTS (1u << 16)

struct mtl_merge_failure {
    enum mtl_merge_why why;
    size_t input;                /* the input it is about */
    int code;
    /* MODES, RATES, PROGRAMS: of the first input ([0]) and that one ([1]) */
    int sampled[2];
    uint64_t rate[2];
    char program[2][256];
    char build_id[2][130];       /* of the program's module, hex; "" when unknown */
};

/* Merges the traces at paths[0 .. n-1] into sink (the encoder e, set up,
 * writes it).  stats->inputs must hold n entries.  0, or -1 with why it
 * failed in *why (an input that cannot be read, runs of different programs
 * without o->force, full and sampled traces, different sample rates, the
 * sink's error). */
int mtl_merge(struct mtl_encoder *e, const char *const *paths, size_t n,
              const struct mtl_merge_options *o, mtl_sink_fn sink, void *ctx,
              struct mtl_merge_stats *stats, struct mtl_merge_failure *why);

#endif
