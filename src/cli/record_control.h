/*
 * record_control.h: memtally record serves the control socket of the
 * program it started (common/ctlsock.h); the writer answers each command
 * on the region it shares with the program (record_writer.h), so that the
 * program holds no socket and runs no thread of ours.
 */
#ifndef MTL_CLI_RECORD_CONTROL_H
#define MTL_CLI_RECORD_CONTROL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "cli/record_writer.h"

struct record_control {
    struct record_writer *rw; /* answers every command */
    int fd;                 /* the listening socket */
    int wake;               /* an eventfd: stop now */
    char path[108];
    ino_t ino;              /* the socket file's: a later one of the pid stays */
    pthread_t thread;
    int running;
    atomic_int stop;
};

/* Listens for the program pid (unless MEMTALLY_CONTROL is "0"); 0, or -1
 * after saying why (the program then has no live control). */
int record_control_start(struct record_control *rc, struct record_writer *rw, pid_t pid);

/* The program has ended: stops serving and removes the socket, unless a
 * later one took its name (the program exec'd another, which memtally
 * record follows: record_followers.h). */
void record_control_stop(struct record_control *rc);

#endif
