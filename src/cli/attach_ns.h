/*
 * attach_ns.h: memtally attach to a process in another mount namespace (a
 * container), where our files are not where we see them: the library and
 * the libraries it needs beyond libc are copied into a directory of the
 * process's own /tmp (through /proc/PID/root), loaded from there, and the
 * trace is written there and brought back (attach_ns.c).
 */
#ifndef MTL_CLI_ATTACH_NS_H
#define MTL_CLI_ATTACH_NS_H

#include <limits.h>
#include <stddef.h>

#define NS_MAX_LIBS 8

struct ns_stage {
    int dirfd, tmpfd;                  /* the directory and its /tmp, as we reach them */
    char outside[PATH_MAX];            /* /proc/PID/root/tmp/memtally-attach-... */
    char inside[PATH_MAX];             /* /tmp/memtally-attach-...: the process's view */
    char load[NS_MAX_LIBS][PATH_MAX];  /* to dlopen, in order (the process's view) */
    char file[NS_MAX_LIBS][64];        /* their names in the directory */
    size_t nload;
};

/* Copies lib and what it needs into pid's /tmp.  0, or -1 with why. */
int ns_stage(long pid, const char *lib, struct ns_stage *s, char *why, size_t cap);
/* The trace written there (name in the directory) to out.  0, or -1. */
int ns_collect(struct ns_stage *s, const char *name, const char *out, char *why, size_t cap);
/* Removes the directory and what is in it. */
void ns_cleanup(struct ns_stage *s);

#endif
