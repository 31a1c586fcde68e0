/*
 * record_writer.h: memtally record's writer.  The program it starts
 * records into a region of shared memory (common/region.h) made here; a
 * thread here runs the encoder (trace/encoder.h) over it and writes the
 * trace files.  The program holds no descriptor of ours and runs no writer
 * of ours, and whatever it appended before it died (SIGKILL included) is
 * still in the region when the thread writes the end.
 */
#ifndef MTL_CLI_RECORD_WRITER_H
#define MTL_CLI_RECORD_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/hmap.h"
#include "common/region.h"
#include "trace/encoder.h"

struct record_writer {
    struct mtl_region *r;
    int memfd;              /* for the child to inherit; closed at start */
    ino_t region_ino;       /* the region's memory file, as /proc/PID/maps shows it */
    const char *path;       /* the first trace's path */
    char followed_path[4096]; /* a followed process's first trace's path */
    int first;              /* its file, made before the program runs */
    int out;                /* the trace being written, or -1 */
    char out_path[4096];
    pid_t pid;
    pthread_t thread;
    int running;
    pthread_mutex_t mu;     /* the encoder: the thread's, or a dump's */
    struct mtl_encoder enc;
    atomic_int child_done;  /* the program has ended: write its end, stop */
    int child_status;       /* its wait status, once done */
    int status_unknown;     /* a followed process: its status was not found */
    int err;                /* errno of a failed write, 0 if none */
    int traces;             /* traces begun */
    uint64_t written;       /* bytes written to the trace files */
    uint64_t allocations;   /* recorded in all, at the end */
    uint64_t calls_records; /* CALLS records (record --calls), at the end */
    struct mtl_hmap live;   /* live blocks older than the encoder's window: address -> size */
    _Atomic uint8_t *maybe_live; /* live's filter (common/addrcount.h), or NULL */
    uint64_t live_bytes;
    int discard_events;     /* MEMTALLY_WRITER=discard: a measurement (encoder.h) */
};

/* The region, before the program starts: 0 or a negative errno. */
int record_writer_create(struct record_writer *rw);

/* The program pid runs: creates path (its first trace) and starts the
 * thread.  0, or -1 (said why). */
int record_writer_start(struct record_writer *rw, const char *path, pid_t pid);

/* A process that memtally record follows handed over its region's
 * descriptor fd (record_followers.h): maps it and starts the thread, which
 * writes the traces the process asks for.  fd is closed.  spare: an
 * encoder a finished writer kept (record_writer_finish), taken over, or
 * NULL.  0, or a negative errno when fd is no region of ours. */
int record_writer_adopt(struct record_writer *rw, int fd, pid_t pid, struct mtl_encoder *spare);

/* Whether the trace rw wrote has ended and no other is open: the process
 * exec'd a program not followed, or was stopped by `memtally ctl`. */
int record_writer_ended(struct record_writer *rw);

/* Ends the trace being written now, as `memtally ctl PID stop` does (the
 * process records no more): 0, or a negative errno when none is open. */
int record_writer_stop(struct record_writer *rw);

/* `memtally ctl PID dump FILE`: the trace so far into FILE, with an end.
 * 0 or a negative errno. */
int record_writer_dump(struct record_writer *rw, const char *path);

/* `memtally ctl PID COMMAND` for the program: every command is answered
 * here, on the region (the state word the hooks read, the trace written
 * here), so that the program runs no thread of ours for it.  line is one
 * command (common/ctlsock.h); the answer line, with its newline. */
void record_writer_control(struct record_writer *rw, char *line, char *answer, size_t cap);

/* The program has ended with status (a wait status; rw->status_unknown
 * when not known): writes what is left and the end, stops the thread,
 * and gives back its memory; its encoder, set up, goes to keep when that
 * is not NULL (for the next followed process: setting one up anew costs
 * more than the rest of a short process's trace).  0, or -1 when a trace
 * is incomplete (said why). */
int record_writer_finish(struct record_writer *rw, int status, struct mtl_encoder *keep);

#endif
