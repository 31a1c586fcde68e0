/*
 * inject.h: calling functions inside a running process, for memtally
 * attach (inject.c has how).  One thread is stopped at a moment it is
 * clear of the allocator; calls run on it one after the other; release
 * lets it go as it was.
 */
#ifndef MTL_CLI_INJECT_H
#define MTL_CLI_INJECT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define INJECT_MAX_RANGES 64

struct inject {
    pid_t pid, tid;              /* the process, the thread calls run on */
    int seized;
    struct user_regs_struct saved;
    size_t scratch;              /* bytes put below its stack so far */
    char libc[PATH_MAX];         /* libc's file, and where it is loaded */
    uint64_t libc_base;
    uint64_t range[INJECT_MAX_RANGES][2]; /* the allocator's code: not stopped in */
    size_t nranges;
    uint64_t stopped_ns, stopped_total_ns; /* how long the thread was held */
    char why[512];               /* what went wrong, for "memtally: attach: ..." */
};

/* The state letter of thread tid of pid (/proc/PID/task/TID/stat: R, S,
 * T for stopped, Z...), or 0 when it cannot be read. */
char inject_task_state(pid_t pid, pid_t tid);
/* Stops a thread of pid clear of the allocator.  0, or -1 with why. */
int inject_stop(struct inject *in, pid_t pid);
/* Copies n bytes below the thread's stack: their address, or 0. */
uint64_t inject_put(struct inject *in, const void *data, size_t n);
/* Calls fn(a0, a1) on the thread: its result in *ret.  0, or -1. */
int inject_call(struct inject *in, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t *ret);
/* A function's address in the process: libc's, or of the loaded object
 * mapped from path (as the process sees it), whose symbols are read from
 * file (as we see it: the same file); 0 when not found. */
uint64_t inject_libc_symbol(struct inject *in, const char *name);
uint64_t inject_object_symbol(struct inject *in, const char *path, const char *file,
                              const char *name);
/* n bytes of the process at at: 0, or -1. */
int inject_read(struct inject *in, uint64_t at, void *buf, size_t n);
/* A NUL-terminated string of the process. */
int inject_read_string(struct inject *in, uint64_t at, char *out, size_t cap);
/* Lets the thread go, its registers as they were. */
void inject_release(struct inject *in);

#endif
