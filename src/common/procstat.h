/*
 * procstat.h: the fields of /proc/PID/stat, by their number in proc(5)
 * (1 = pid; 3, the state, as the code of its letter).  For the recorder in
 * a program (it reads into a buffer on the stack: nothing allocates) and
 * for memtally record and memtally ctl.
 */
#ifndef MTL_COMMON_PROCSTAT_H
#define MTL_COMMON_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

#define MTL_STAT_FIELDS 52 /* up to exit_code */

/* Fills f[1..MTL_STAT_FIELDS] (those the kernel gives; the others 0) for
 * process pid, or this process when pid is 0: 0, or -1 when it cannot be
 * read. */
int mtl_proc_stat(pid_t pid, uint64_t f[MTL_STAT_FIELDS + 1]);

#endif
