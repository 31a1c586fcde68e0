/*
 * record_followers.h: memtally record writes the traces of the processes
 * it follows (--follow-fork, --follow-exec) as it writes its own child's.
 * Each such process makes a region of its own and hands it over a socket
 * (common/ctlsock.h; preload/handover.c); here a writer (record_writer.h)
 * and a control socket (record_control.h) are started for it, and its end
 * is seen through a pidfd: its trace then gets every event it appended,
 * whatever the death.  The processes run no thread and hold no descriptor
 * of ours.  memtally record exits once every one of them has ended.
 */
#ifndef MTL_CLI_RECORD_FOLLOWERS_H
#define MTL_CLI_RECORD_FOLLOWERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "trace/encoder.h"

#define RECORD_SPARE_ENCODERS 8 /* kept from ended followers for the next ones */

struct record_follower;

struct record_followers {
    int fd;                  /* the hand-over socket, or -1 */
    int wake;                /* an eventfd: memtally record's child ended */
    char path[108];          /* the socket's, for the environment */
    pthread_t thread;
    int running;
    struct record_follower *list;
    pid_t child;             /* memtally record's own child */
    atomic_int child_done;
    atomic_int interrupted;  /* stop waiting: end the traces still open */
    int child_status;
    int quiet;               /* record -q: the wait is not said */
    unsigned live;           /* followed processes not yet ended */
    unsigned traces;         /* traces begun for them, in all */
    int failed;              /* a trace is incomplete (said) */
    struct mtl_encoder spare[RECORD_SPARE_ENCODERS];
    unsigned nspare;
};

/* Listens for hand-overs: 0, or -1 after saying why (followed processes
 * then write their own traces, as a program that records by itself). */
int record_followers_start(struct record_followers *f);

/* memtally record's own child runs as pid: the programs it execs, when
 * followed, end with it (record_followers_finish), not by their pidfd. */
void record_followers_child(struct record_followers *f, pid_t pid);

/* memtally record was interrupted (SIGINT, SIGTERM...) while it waits for
 * the followed processes after its child ended: their traces end now, as
 * `memtally ctl PID stop` would end them.  Safe in a signal handler. */
void record_followers_interrupt(struct record_followers *f);

/* memtally record's child ended with wait status: waits for every
 * followed process to end (saying so after a second, unless quiet),
 * writes their ends and stops.  0, or -1 when a trace is incomplete. */
int record_followers_finish(struct record_followers *f, int status, int quiet);

#endif
