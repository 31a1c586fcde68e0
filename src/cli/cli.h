/*
 * cli.h: what the subcommands of the memtally CLI share.  Only src/cli
 * prints and exits; everything below it returns errors.
 */
#ifndef MTL_CLI_H
#define MTL_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* One subcommand: argv[0] is its name. */
struct mtl_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

int cmd_record(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_peak(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_heap(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_temporary(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_types(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_histogram(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* cmd_ctl.c: the client of a process's control socket (src/preload/
 * control.c), for `memtally ctl` and `memtally top`. */
enum { CTL_OK = 0, CTL_ERROR = 1, CTL_NO_SOCKET = 2, CTL_FAILED = 3 };

/* Sends one command line to pid and reads its answer.  CTL_OK: answer
 * holds the text after "ok" ("" when none); otherwise err holds why, one
 * line to print after "memtally: ": the process's own "error" message
 * (CTL_ERROR), no socket for pid (CTL_NO_SOCKET), or a broken exchange. */
int ctl_request(int pid, const char *command, char *answer, size_t cap,
                char *err, size_t errcap);

/* The fields of a status answer, "key=value ...", split in place. */
struct ctl_field {
    const char *key, *value;
};
size_t ctl_parse_status(char *text, struct ctl_field *f, size_t cap);
const char *ctl_field(const struct ctl_field *f, size_t n, const char *key);

/* util.c: libmemtally.so next to this executable (or MEMTALLY_LIBRARY, or
 * where `make install` puts it) into out: 0, or -1 when none is found. */
int cli_find_library(char *out, size_t cap);
/* Expands %p (pid) and %e (program's base name) of a trace name pattern. */
void cli_expand_pattern(char *out, size_t cap, const char *pattern, pid_t pid,
                        const char *program);

/* --time-resolution's value (record and attach): a time from 1 us to
 * MTL_MAX_TIME_RESOLUTION_US into *us: 0, or -1 when it is not one. */
int cli_parse_time_resolution(const char *v, uint64_t *us);

/* Prints "memtally: " and the message, one line, on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* preloadable.c: why LD_PRELOAD cannot reach program (a static binary, a
 * set-user-ID one...), or NULL when it can or cannot tell; file gets the
 * path the program resolves to. */
const char *cli_unpreloadable(const char *program, char *file, size_t cap);

#endif
