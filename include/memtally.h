/*
 * memtally.h: the in-program API of libmemtally.
 *
 * A program that links libmemtally (`pkg-config --cflags --libs memtally`)
 * can start and stop recording itself, and profile one call and get its
 * table back, as OCaml's Memtrace and Erlang's hprof allow:
 *
 *     int main(int argc, char **argv)
 *     {
 *         mtl_trace_if_requested();   // MEMTALLY=out.mtly ./prog records
 *         ...
 *     }
 *
 *     struct mtl_result *res;
 *     if (mtl_profile_call(parse_all, input, NULL, &res) == 0) {
 *         mtl_result_print(res, stdout, MTL_PRINT_ALL);
 *         mtl_result_free(res);
 *     }
 *
 * Linking the library puts its allocation hooks in front of the program's
 * allocator, but they stay idle (a load and a branch per call) until
 * recording starts.  Under `memtally record`, recording starts by itself
 * and these calls control that recording.
 *
 * Every call returns 0 or a negative errno-style code (-EINVAL, -EBUSY when
 * recording is already on, -ENOTSUP when recording is impossible here...);
 * mtl_strerror() (memtally/errors.h) names them.  All are safe from any
 * thread.
 */
#ifndef MEMTALLY_H
#define MEMTALLY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memtally/errors.h"
#include "memtally/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mtl_options {
    uint64_t sample_rate;   /* 0: record every allocation; else sample one per
                               this many bytes on average (Poisson) */
    unsigned depth;         /* frames kept per stack; 0: the default (64) */
};

/* Starts recording into the trace file path (%p becomes the pid), with opt
 * (NULL: every allocation, default depth).  -EBUSY if recording already. */
int mtl_start(const char *path, const struct mtl_options *opt);

/* Finishes the trace.  Recording may be started again after. */
int mtl_stop(void);

/* Stops recording for a while without ending the trace, and goes on. */
int mtl_pause(void);
int mtl_resume(void);

/* Throws away what was recorded so far: the trace starts anew. */
int mtl_reset(void);

/* Starts recording if the environment variable MEMTALLY names a trace file
 * (MEMTALLY_SAMPLE, if set, is the sample rate in bytes); else does
 * nothing and returns 0. */
int mtl_trace_if_requested(void);

/* 1 when recording, 0 when not (stopped or paused). */
int mtl_recording(void);

/* --- types and custom allocators ------------------------------------------ */

/* The tag of a type name, registered once (the same name gives the same
 * tag; thread-safe; callable before recording starts).  0 for an empty
 * name, when more than 4096 names are registered, or when memtally is
 * disabled.  `memtally report --by type` counts blocks by it. */
uint32_t mtl_type(const char *name);

/* Tags a block already recorded (from malloc, new, mtl_alloc) with a type,
 * for runtimes that learn an object's type after allocating it; returns
 * block.  Its figures then count under that type in every analysis. */
void *mtl_tag(void *block, uint32_t tag);

/* A block handed out by the program's own allocator (a pool, an arena, a
 * garbage collector): recorded with the caller's stack, thread and time,
 * tagged with tag (0: none), and counted in every analysis like malloc's
 * blocks.  Cheap no-ops when not recording. */
void mtl_alloc(void *p, size_t size, uint32_t tag);
/* The block at p goes back to that allocator. */
void mtl_free(void *p);
/* old became p of size bytes (old NULL: an allocation; size 0 and p NULL:
 * a free), keeping no tag. */
void mtl_realloc(void *old, void *p, size_t size);

/* A pool's own block at base (from malloc), from which the program carves
 * the objects it reports with mtl_alloc: released in the trace now (it is
 * counted once among the allocations, never in the live heap, the peak or
 * the leaks, where its objects are), and the program's later free(base) is
 * not recorded.  mtl_pool_free(base): the pool's block goes back some
 * other way than free() (forget it).  Pools are grown by registering the
 * new block; realloc of a pool's block is not supported. */
void mtl_pool(void *base, size_t size);
void mtl_pool_free(void *base);

/* heaptrack's API (heaptrack_api.h) is answered too: a program that calls
 * heaptrack_report_alloc, _realloc and _free reports to memtally
 * unchanged. */

/* Interpreter frames: a script-level function, registered once (its name
 * shows as "function (file:line)", or without what is NULL or 0), then
 * pushed when the interpreter enters it and popped when it leaves, per
 * thread.  Each allocation's stack then holds the pushed frames among the
 * native ones, where the interpreter pushed them: below the native
 * function that called mtl_frame_push, above what it called since.  Up to
 * 64 frames deep are kept.  A thread with pushed frames unwinds more
 * slowly (its native frames are walked one by one). */
uint32_t mtl_frame(const char *function, const char *file, unsigned line);
void mtl_frame_push(uint32_t frame);
void mtl_frame_pop(void);

/* A function of the program's, called in the allocating thread for each
 * allocation, free and tag recorded (ev: type MTL_EV_ALLOC, MTL_EV_FREE or
 * MTL_EV_TAG, the
 * time in us since the trace began, thread index, pointer, size, stack id
 * and type tag as the trace has them).  It may allocate: those blocks are
 * recorded but not reported to it.  NULL removes it.  Called only while
 * recording. */
void mtl_set_hook(void (*fn)(const struct mtl_event *ev, void *arg), void *arg);

/* --- profiling one call ------------------------------------------------ */

struct mtl_profile_options {
    int follow_threads;     /* also count threads that fn starts */
    unsigned timeout_ms;    /* 0: wait for fn; else stop counting after this
                               long and report what was seen (fn runs on) */
    unsigned depth;         /* frames kept per stack; 0: the default */
};

/* One row of a table: a function and what it allocated itself (its
 * site's blocks, as `memtally report` counts them).  Names come from the
 * process's own symbol tables, so there is no file or line: record a
 * trace and use `memtally report` for those. */
struct mtl_result_row {
    const char *function;   /* demangled when possible, else module+0xOFFSET */
    uint64_t calls, bytes;
    double percent;         /* of the table's bytes */
};

struct mtl_result_table {
    uint32_t tid;           /* 0 for the table of all threads */
    const char *thread_name;
    uint64_t calls, bytes;
    double percent;         /* share of all bytes */
    size_t nrows;
    const struct mtl_result_row *rows;  /* most bytes first */
};

struct mtl_result {
    int timed_out;          /* the timeout passed before fn returned */
    struct mtl_result_table total;
    size_t nthreads;
    const struct mtl_result_table *threads;
};

/* Runs fn(arg) with every allocation counted, and gives back the table of
 * what it (and, with follow_threads, the threads it started) allocated, per
 * thread and in total.  Symbols come from the running process.  -EBUSY if
 * the process is already being recorded. */
int mtl_profile_call(void (*fn)(void *), void *arg,
                     const struct mtl_profile_options *opt,
                     struct mtl_result **result);

enum mtl_print_how {
    MTL_PRINT_TOTAL = 1,    /* the table of all threads */
    MTL_PRINT_THREADS = 2,  /* one table per thread */
    MTL_PRINT_ALL = 3,
};

/* Prints a result in the layout of `memtally report`: per table a banner,
 * then FUNCTION, CALLS, BYTES, PER CALL, % and a total row. */
void mtl_result_print(const struct mtl_result *result, FILE *f, int how);

/* Releases a result; after the call result is invalid. */
void mtl_result_free(struct mtl_result *result);

/* The text of a code returned by the calls above: the same as
 * mtl_strerror(), kept for programs written against memtally 0.1. */
const char *mtl_api_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
