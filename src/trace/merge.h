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
};

struct mtl_merge_stats {
    struct mtl_merge_input_stats *inputs; /* n of them, the caller's */
    uint64_t allocations, frees, duration_us;
    uint32_t threads, modules, nodes;
    uint32_t *thread_input; /* output thread -> its input (the caller frees) */
};

/* Merges the traces at paths[0 .. n-1] into sink (the encoder e, set up,
 * writes it).  stats->inputs must hold n entries.  0, or -1 with a
 * one-line reason in err (an input that cannot be read, runs of different
 * programs without o->force, full and sampled traces, different sample
 * rates, the sink's error). */
int mtl_merge(struct mtl_encoder *e, const char *const *paths, size_t n,
              const struct mtl_merge_options *o, mtl_sink_fn sink, void *ctx,
              struct mtl_merge_stats *stats, char *err, size_t cap);

#endif
