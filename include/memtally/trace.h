/*
 * memtally/trace.h: the public reader of memtally trace files.
 *
 * A trace (docs/FORMAT.md) is a stream of events in time order: allocations,
 * frees, threads starting, being named and exiting, modules being loaded and
 * unloaded, and periodic RSS samples.  The reader decodes it one event at a
 * time, with memory that grows with the number of unique stacks, threads and
 * modules, never with the number of events.
 *
 *     struct mtl_reader *r;
 *     struct mtl_event ev;
 *     int rc = mtl_reader_open(&r, "prog.1234.mtly");
 *     if (rc < 0) { fprintf(stderr, "%s\n", mtl_strerror(rc)); return 1; }
 *     while ((rc = mtl_reader_next(r, &ev)) > 0)
 *         if (ev.type == MTL_EV_ALLOC) ...;
 *     if (rc < 0) ... the trace is corrupt: mtl_strerror(rc)
 *     if (mtl_reader_info(r)->truncated) ... the trace was cut short
 *     mtl_reader_close(r);
 *
 * Every call returns 0 (or a positive count) on success and a negative
 * MTL_E* code on failure; mtl_strerror() names it.  Pointers returned by the
 * reader stay valid until mtl_reader_close().
 */
#ifndef MEMTALLY_TRACE_H
#define MEMTALLY_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "memtally/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes and mtl_strerror(): memtally/errors.h. */

/* Stack ids: 0 is the empty stack (no frame). */
#define MTL_NO_STACK 0u

enum mtl_event_type {
    MTL_EV_ALLOC = 1,        /* ptr, size, stack, tag, weight */
    MTL_EV_FREE = 2,         /* ptr */
    MTL_EV_THREAD_START = 3, /* thread (tid and name via mtl_reader_thread) */
    MTL_EV_THREAD_NAME = 4,  /* thread: its name changed */
    MTL_EV_THREAD_EXIT = 5,  /* thread */
    MTL_EV_MODULE_LOAD = 6,  /* module */
    MTL_EV_MODULE_UNLOAD = 7,/* module */
    MTL_EV_RSS = 8,          /* size: resident set size in bytes */
    MTL_EV_TAG = 9,          /* ptr, tag: the live block at ptr has this type
                                tag from now on, as if allocated with it */
    MTL_EV_GC_HEAP = 10,     /* size: the garbage collector's heap size after
                                a collection (only when its heap is read) */
    MTL_EV_CALLS = 11,       /* thread, stack, size: thread called the function
                                that the one-frame stack names size more times
                                (record --calls; they add up) */
};

/* Which heap a block is of: malloc's (and the program's own allocators',
 * reported through the API), or a garbage collector's (Boehm GC).  A
 * reader gives the events of the heaps chosen with mtl_reader_heaps, by
 * default malloc's alone, so that the two are never summed by mistake. */
enum mtl_heap { MTL_HEAP_MALLOC = 0, MTL_HEAP_GC = 1 };
#define MTL_HEAPS_MALLOC (1u << MTL_HEAP_MALLOC)
#define MTL_HEAPS_GC (1u << MTL_HEAP_GC)
#define MTL_HEAPS_ALL (MTL_HEAPS_MALLOC | MTL_HEAPS_GC)

struct mtl_event {
    enum mtl_event_type type;
    uint64_t time_us;   /* microseconds since the start of the trace */
    uint32_t thread;    /* thread index (0, 1, ...), see mtl_reader_thread() */
    uint64_t ptr;       /* ALLOC, FREE: the block's address */
    uint64_t size;      /* ALLOC: requested bytes; RSS: bytes resident */
    uint32_t stack;     /* ALLOC: stack id, see mtl_reader_stack() */
    uint32_t tag;       /* ALLOC: type tag string id, 0 when none */
    uint32_t module;    /* MODULE_*: module index */
    uint32_t heap;      /* ALLOC, FREE: enum mtl_heap (a FREE's: as far as the
                           reader knows, with the other heap left out) */
    /* ALLOC: how many allocations and bytes this event stands for: 1 and
     * size in full mode, the unbiased estimate in sampled mode. */
    double weight_count;
    double weight_bytes;
};

enum mtl_mode { MTL_MODE_FULL = 0, MTL_MODE_SAMPLED = 1 };

struct mtl_trace_info {
    uint32_t version;        /* format version of the file */
    const char *program;     /* path of the executable */
    const char *command_line;/* argv joined with spaces */
    uint32_t pid, ppid;
    uint64_t start_unix_us;  /* wall clock at the start */
    enum mtl_mode mode;
    uint64_t sample_rate;    /* bytes, sampled mode only */
    uint32_t max_depth;      /* frames kept per stack */
    int calls_counted;       /* record --calls: CALLS events count calls */
    int attached;            /* memtally attach: begun in a running program, so
                                blocks from before it are unknown */
    uint64_t duration_us;    /* time of the last event read so far */
    int truncated;           /* 1 once the reader found the trace cut short */
    int complete;            /* 1 once the reader read the end record */
    uint64_t time_resolution_us; /* times are multiples of this: 1, or what
                                    record --time-resolution asked for */
    uint64_t other_heap_allocations; /* so far, of the heaps not read
                                        (mtl_reader_heaps) */
};

struct mtl_thread {
    uint32_t index;
    uint32_t tid;            /* the kernel's thread id */
    const char *name;        /* latest name read so far, "" when unknown */
    uint64_t start_us, exit_us; /* exit_us is 0 while running */
};

struct mtl_segment {
    uint64_t vaddr;          /* p_vaddr of a PT_LOAD segment */
    uint64_t memsz;
    uint32_t flags;          /* PF_R | PF_W | PF_X */
};

struct mtl_module {
    uint32_t index;
    const char *path;        /* "" for the main program when unknown */
    uint64_t base;           /* load bias: runtime address - p_vaddr */
    const uint8_t *build_id; /* NULL when the module has none */
    size_t build_id_size;
    const struct mtl_segment *segments;
    size_t nsegments;
    uint64_t load_us, unload_us; /* unload_us is 0 while loaded */
};

/* One frame of a stack: a machine address (a return address except for the
 * innermost frame), or a frame pushed by a runtime, named by a string id. */
enum mtl_frame_kind { MTL_FRAME_NATIVE = 0, MTL_FRAME_CUSTOM = 1 };

struct mtl_frame {
    enum mtl_frame_kind kind;
    uint64_t addr;           /* NATIVE: the address */
    uint32_t name;           /* CUSTOM: string id */
    uint32_t module;         /* NATIVE: module index, or UINT32_MAX if none */
};

struct mtl_reader;

/* Opens path and reads its header.  On success *out is a reader that
 * mtl_reader_close() releases. */
int mtl_reader_open(struct mtl_reader **out, const char *path);

/* The same on a descriptor open for reading: the reader reads it with
 * pread from offset 0 (so the descriptor's own offset is left alone and it
 * may be shared) and never closes it; it must stay open until
 * mtl_reader_close(). */
int mtl_reader_open_fd(struct mtl_reader **out, int fd);

/* The same on a trace in memory, which must stay there until
 * mtl_reader_close(). */
int mtl_reader_open_memory(struct mtl_reader **out, const void *data, size_t size);

/* Reads the next event into *ev.  Returns 1 for an event, 0 at the end of
 * the trace (check mtl_reader_info()->truncated), negative on corruption. */
int mtl_reader_next(struct mtl_reader *r, struct mtl_event *ev);

/* Follow mode, for a trace still being written (`memtally top`): at the
 * end of what is there, mtl_reader_next returns 0 without judging the
 * trace truncated, and a later call reads what was written since. */
void mtl_reader_follow(struct mtl_reader *r, int on);

/* For analyses that never match frees to allocations: ptr is left 0 in
 * every event and the pointer fields are not decoded (faster).  Set it
 * before the first mtl_reader_next. */
void mtl_reader_skip_pointers(struct mtl_reader *r, int skip);

/* The heaps whose allocations and frees mtl_reader_next gives (MTL_HEAPS_*;
 * the default is MTL_HEAPS_MALLOC): the others' are skipped as if they
 * were not there.  Set it before the first mtl_reader_next. */
void mtl_reader_heaps(struct mtl_reader *r, unsigned heaps);

/* Decodes blocks ahead on n worker threads (0, the default: none), so
 * that mtl_reader_next only walks records: a whole trace is read about
 * n times faster on n free cores.  The events and errors are the same.
 * Not for follow mode.  Set it before the first mtl_reader_next. */
void mtl_reader_threads(struct mtl_reader *r, unsigned n);

const struct mtl_trace_info *mtl_reader_info(const struct mtl_reader *r);

/* Number of whole blocks read so far: useful in messages about damage. */
uint64_t mtl_reader_blocks(const struct mtl_reader *r);

/* How far the reader is into the file, and the file's size, in bytes: for
 * progress reports. */
void mtl_reader_position(const struct mtl_reader *r, uint64_t *offset,
                         uint64_t *size);

/* Frames of a stack, innermost first, into frames[0..cap); returns the
 * stack's depth (which may exceed cap) or a negative code. */
int mtl_reader_stack(const struct mtl_reader *r, uint32_t stack,
                     struct mtl_frame *frames, size_t cap);

/* The parent of a stack (the same stack without its innermost frame) and
 * its innermost frame: for walking stacks as a tree.  Returns 0 or a
 * negative code. */
int mtl_reader_stack_node(const struct mtl_reader *r, uint32_t stack,
                          uint32_t *parent, struct mtl_frame *frame);

/* Number of stack ids defined so far (ids are 0 .. n-1). */
uint32_t mtl_reader_stack_count(const struct mtl_reader *r);

const struct mtl_thread *mtl_reader_thread(const struct mtl_reader *r,
                                           uint32_t index);
uint32_t mtl_reader_thread_count(const struct mtl_reader *r);

const struct mtl_module *mtl_reader_module(const struct mtl_reader *r,
                                           uint32_t index);
uint32_t mtl_reader_module_count(const struct mtl_reader *r);

/* A string defined in the trace (custom frame names, type tags), or NULL. */
const char *mtl_reader_string(const struct mtl_reader *r, uint32_t id);

void mtl_reader_close(struct mtl_reader *r);

#ifdef __cplusplus
}
#endif

#endif
