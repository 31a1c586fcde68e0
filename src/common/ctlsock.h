/*
 * ctlsock.h: the control socket through which `memtally ctl` and `memtally
 * top` steer a recording, for its three users: the recorder in a program
 * (preload/control.c), memtally record, which serves it for the program it
 * started (cli/record_control.c), and the client (cli/cmd_ctl.c).
 *
 * Where: PID.sock in $XDG_RUNTIME_DIR/memtally/ when XDG_RUNTIME_DIR names
 * a usable directory, else in /tmp/memtally-UID/.  The directory is made
 * with mode 0700 and used only if lstat says it is a real directory (no
 * symlink), owned by our effective user, with no permission for group or
 * others.  Each client's credentials are checked as well.
 *
 * Protocol: the client sends one line ("start", "pause", "continue",
 * "restart", "dump PATH", "stop", "status"); the answer is one line, "ok"
 * (for status "ok " and the status fields) or "error MESSAGE".
 *
 * Nothing here allocates: the recorder calls it inside the program.
 */
#ifndef MTL_COMMON_CTLSOCK_H
#define MTL_COMMON_CTLSOCK_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MTL_CTL_LINE (PATH_MAX + 64)      /* a command line, at most */
#define MTL_CTL_ANSWER (PATH_MAX + 1024)  /* an answer, at most */
#define MTL_CTL_TIMEOUT_MS 1000           /* to send a line, to take an answer */

/* What `status` answers, for both that answer it: the recorder of a
 * process that records by itself, and memtally record for the program it
 * runs.  The line: "state=S trace=PATH mode=full|sampled rate=N pid=N
 * events=N allocations=N frees=N bytes=N" and, when known, " live_bytes=N". */
struct mtl_ctl_status {
    int state;               /* enum mtl_rec_state (common/region.h) */
    const char *trace;       /* the trace's path ("" when off) */
    uint64_t sample_rate;    /* 0: full mode */
    int pid;
    uint64_t allocations, frees, bytes;
    int have_live;
    uint64_t live_bytes;
};
size_t mtl_ctl_format_status(char *buf, size_t cap, const struct mtl_ctl_status *s);

/* A failed command's reason in the client's words ("start: already
 * recording"), from the command and its negative errno. */
const char *mtl_ctl_why(const char *cmd, int rc);

/* The directory the socket of a process of this user lives in. */
void mtl_ctl_dir(char *out, size_t cap);

/* Makes the directory, checks that it is ours alone, and listens on
 * PID.sock there (close-on-exec, non-blocking; an older file of that name
 * is removed first).  The descriptor, with the socket's path in path; or
 * a negative errno, with what went wrong in why ("... cannot be made"). */
int mtl_ctl_listen(pid_t pid, char *path, size_t cap, char *why, size_t why_cap);

/* The socket on which memtally record takes the regions of the processes
 * it follows (--follow-fork, --follow-exec), so that it writes their
 * traces as it does its own child's (preload/handover.c sends,
 * cli/record_followers.c takes): PID.rec beside the control sockets, PID
 * memtally record's own, a SOCK_SEQPACKET socket.  A process sends one
 * message, MTL_HANDOVER_MAGIC (four bytes) with its region's descriptor
 * (SCM_RIGHTS); the answer is one byte, MTL_HANDOVER_TAKEN when memtally
 * record writes its traces from then on. */
#define MTL_HANDOVER_MAGIC 0x4d544c48u /* "MTLH" */
#define MTL_HANDOVER_TAKEN 1
#define MTL_HANDOVER_WAIT_MS 5000      /* how long a process waits for the answer */
int mtl_handover_listen(pid_t pid, char *path, size_t cap, char *why, size_t why_cap);

/* Whether the peer of a connection is our own user. */
int mtl_ctl_peer_ok(int fd);

/* Reads one line (without its newline or trailing blanks) within
 * timeout_ms: its length, or a negative errno (-ETIMEDOUT, -E2BIG...). */
int mtl_ctl_read_line(int fd, char *buf, size_t cap, int timeout_ms);

/* Writes n bytes within timeout_ms, as far as it can. */
void mtl_ctl_write(int fd, const char *buf, size_t n, int timeout_ms);

#endif
