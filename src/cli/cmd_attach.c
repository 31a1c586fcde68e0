/*
 * cmd_attach.c: `memtally attach PID`: records a process that was not
 * started under memtally, from now until Ctrl-C, --duration, `memtally ctl
 * PID stop` or its exit.  memtally loads libmemtally.so into it and starts
 * a trace there (inject.c, src/preload/attach.c); the process writes the
 * trace itself, serves `memtally ctl`, `top` and `heap` as a process that
 * records by itself does, and at the stop puts its own bindings back.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>

#include "analyze/filter.h"
#include "cli/attach_ns.h"
#include "cli/cli.h"
#include "cli/inject.h"
#include "common/recenv.h"

static const char usage_text[] =
    "usage: memtally attach [options] PID\n"
    "\n"
    "Records running process PID (not started under memtally) from now on,\n"
    "until Ctrl-C, --duration, `memtally ctl PID stop` or its exit; then it\n"
    "runs on as before.  The process writes the trace itself.\n"
    "\n"
    "  -o, --output FILE   trace path; %p becomes the pid, %e the program name\n"
    "                      (default: %e.%p.mtly here)\n"
    "  --sample[=BYTES]    sampled mode (default 512K): cheap for production\n"
    "  --depth N           frames kept per stack (1-256, default 64)\n"
    "  --time-resolution T times in steps of T (like 10ms; default 1us): a\n"
    "                      smaller trace, with times that much coarser\n"
    "  --duration TIME     stop after TIME (like 30s, 500ms)\n"
    "  -q, --quiet         say nothing but errors\n";

static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
    (void)sig;
    stop_asked = 1;
}

struct attach_opts {
    const char *output;
    uint64_t sample, duration_us, time_resolution_us;
    long depth;
    int quiet;
    long pid;
};

static int parse(int argc, char **argv, struct attach_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--depth") ||
                   !strcmp(a, "--duration") || !strcmp(a, "--time-resolution")) {
            if (++i >= argc) {
                cli_error("attach: %s needs a value", a);
                return 2;
            }
            v = argv[i];
        } else if (!strncmp(a, "--output=", 9) || !strncmp(a, "--depth=", 8) ||
                   !strncmp(a, "--duration=", 11) || !strncmp(a, "--time-resolution=", 18)) {
            v = strchr(a, '=') + 1;
        }
        char *end;
        if (a[1] == 'o' || !strncmp(a, "--output", 8)) {
            o->output = v;
        } else if (!strncmp(a, "--depth", 7)) {
            o->depth = strtol(v, &end, 10);
            if (*end || o->depth < 1 || o->depth > 256) {
                cli_error("attach: --depth takes a number from 1 to 256");
                return 2;
            }
        } else if (!strncmp(a, "--time-resolution", 17)) {
            if (cli_parse_time_resolution(v, &o->time_resolution_us) < 0) {
                cli_error("attach: --time-resolution takes a time from 1us to 1s (like 10ms)");
                return 2;
            }
        } else if (!strncmp(a, "--duration", 10)) {
            if (mtl_parse_time(v, &o->duration_us) < 0 || !o->duration_us) {
                cli_error("attach: --duration takes a time (like 30s or 500ms)");
                return 2;
            }
        } else if (!strcmp(a, "--sample") || !strncmp(a, "--sample=", 9)) {
            o->sample = 512 * 1024;
            if (a[8] == '=' && (mtl_parse_size(a + 9, &o->sample) < 0 || !o->sample)) {
                cli_error("attach: --sample= takes a size in bytes (like 512K)");
                return 2;
            }
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (a[0] == '-') {
            cli_error("attach: unknown option '%s' (see memtally attach --help)", a);
            return 2;
        } else if (!o->pid) {
            o->pid = strtol(a, &end, 10);
            if (*end || o->pid <= 0 || o->pid > INT32_MAX) {
                cli_error("attach: '%s' is not a process id", a);
                return 2;
            }
        } else {
            cli_error("attach: unexpected argument '%s'", a);
            return 2;
        }
    }
    if (!o->pid) {
        cli_error("attach: no process id (memtally attach PID)");
        return 2;
    }
    return -1;
}

/* Whether pid sees the files we see: the same mount namespace. */
static int same_mounts(long pid)
{
    char theirs[64];
    struct stat a, b;
    snprintf(theirs, sizeof theirs, "/proc/%ld/ns/mnt", pid);
    if (stat("/proc/self/ns/mnt", &a) < 0 || stat(theirs, &b) < 0)
        return 1; /* cannot tell: try */
    return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* What is loaded into the process: the files to dlopen in order, the last
 * libmemtally.so, as the process sees them, and libmemtally.so as we see
 * it (for its symbols). */
struct to_load {
    const char *const *paths;
    size_t n;
    const char *file;
};

/* dlopen of one file in the process: 0, or -1 with in->why. */
static int load_one(struct inject *in, uint64_t dlopen_at, const char *path)
{
    uint64_t path_at = inject_put(in, path, strlen(path) + 1), ret = 0;
    if (!path_at || inject_call(in, dlopen_at, path_at, RTLD_NOW | RTLD_LOCAL, &ret) < 0)
        return -1;
    if (ret)
        return 0;
    char why[512] = "";
    uint64_t dlerror_at = inject_libc_symbol(in, "dlerror"), msg = 0;
    if (dlerror_at && inject_call(in, dlerror_at, 0, 0, &msg) == 0 && msg)
        inject_read_string(in, msg, why, sizeof why);
    snprintf(in->why, sizeof in->why, "pid %d could not load %.200s: %.200s", (int)in->pid, path,
             *why ? why : "dlopen failed");
    return -1;
}

/* Loads the library into pid and begins the trace at trace (the
 * process's path).  0, or 1 after saying why. */
static int load_and_begin(const struct attach_opts *o, const struct to_load *l, const char *trace,
                          double *paused_ms)
{
    struct inject in;
    uint64_t ret = 0;
    int bad = 1;
    if (inject_stop(&in, (pid_t)o->pid) < 0)
        goto out;
    uint64_t dlopen_at = inject_libc_symbol(&in, "dlopen");
    if (!dlopen_at)
        dlopen_at = inject_libc_symbol(&in, "__libc_dlopen_mode");
    if (!dlopen_at) {
        snprintf(in.why, sizeof in.why, "pid %ld: no dlopen in its libc (%.300s)", o->pid,
                 in.libc);
        goto out;
    }
    for (size_t i = 0; i < l->n; i++)
        if (load_one(&in, dlopen_at, l->paths[i]) < 0)
            goto out;
    const char *lib = l->paths[l->n - 1];
    uint64_t begin_at = inject_object_symbol(&in, lib, l->file, "mtl_attach_begin");
    char options[2 * PATH_MAX + 64];
    snprintf(options, sizeof options, "%.*s\n%llu\n%ld\n%llu", PATH_MAX, trace,
             (unsigned long long)o->sample, o->depth, (unsigned long long)o->time_resolution_us);
    uint64_t options_at = inject_put(&in, options, strlen(options) + 1);
    if (!begin_at || !options_at) {
        if (!begin_at)
            snprintf(in.why, sizeof in.why, "%.300s has no mtl_attach_begin in pid %ld", lib,
                     o->pid);
        goto out;
    }
    if (inject_call(&in, begin_at, options_at, 0, &ret) < 0)
        goto out;
    int rc = (int)(uint32_t)ret;
    if (rc < 0) {
        snprintf(in.why, sizeof in.why, "pid %ld could not begin a trace at %.300s: %s", o->pid,
                 trace, rc == -EBUSY ? "it records already" : strerror(-rc));
        goto out;
    }
    bad = 0;
out:
    inject_release(&in);
    *paused_ms = (double)in.stopped_total_ns / 1e6;
    if (bad)
        cli_error("attach: %s", in.why);
    return bad;
}

/* A stop where the control socket cannot be reached (another namespace):
 * mtl_stop called in the process.  0, or -1 after saying why. */
static int stop_inside(long pid, const struct to_load *l)
{
    struct inject in;
    uint64_t ret;
    int bad = inject_stop(&in, (pid_t)pid) < 0;
    uint64_t stop_at = bad ? 0 : inject_object_symbol(&in, l->paths[l->n - 1], l->file, "mtl_stop");
    if (!bad && !stop_at)
        snprintf(in.why, sizeof in.why, "no mtl_stop in pid %ld", pid);
    bad = bad || !stop_at || inject_call(&in, stop_at, 0, 0, &ret) < 0;
    inject_release(&in);
    if (bad)
        cli_error("attach: %s", in.why);
    return bad ? -1 : 0;
}

int cmd_attach(int argc, char **argv)
{
    struct attach_opts o = { .depth = 64, .time_resolution_us = 1 };
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    char proc[64], exe[PATH_MAX];
    snprintf(proc, sizeof proc, "/proc/%ld/exe", o.pid);
    struct stat st;
    snprintf(exe, sizeof exe, "/proc/%ld", o.pid);
    if (stat(exe, &st) < 0) {
        cli_error("attach: no process %ld", o.pid);
        return 1;
    }
    ssize_t n = readlink(proc, exe, sizeof exe - 1);
    if (n <= 0 && (errno == EACCES || errno == EPERM)) {
        cli_error("attach: not permitted to trace pid %ld: it is another user's (root or "
                  "CAP_SYS_PTRACE can; kernel.yama.ptrace_scope may forbid it too)", o.pid);
        return 1;
    }
    if (n <= 0) {
        cli_error("attach: cannot see pid %ld's program: %s", o.pid, strerror(errno));
        return 1;
    }
    exe[n] = '\0';
    /* A stopped process could not answer the stop: it would record on,
     * unattended, once continued. */
    if (inject_task_state((pid_t)o.pid, (pid_t)o.pid) == 'T') {
        cli_error("attach: pid %ld is stopped (SIGSTOP or job control): continue it first "
                  "(kill -CONT %ld)", o.pid, o.pid);
        return 1;
    }
    int foreign = !same_mounts(o.pid);
    char answer[PATH_MAX + 2048], err[PATH_MAX + 512];
    if (!foreign &&
        ctl_request((int)o.pid, "status", answer, sizeof answer, err, sizeof err) == CTL_OK) {
        cli_error("attach: pid %ld is recorded already (memtally ctl %ld status)", o.pid, o.pid);
        return 1;
    }
    char lib[PATH_MAX], real[PATH_MAX];
    if (cli_find_library(lib, sizeof lib) < 0 || !realpath(lib, real)) {
        cli_error("attach: cannot find libmemtally.so beside the memtally executable (set "
                  "MEMTALLY_LIBRARY to its path)");
        return 1;
    }
    char name[PATH_MAX], trace[2 * PATH_MAX + 8], cwd[PATH_MAX];
    cli_expand_pattern(name, sizeof name, o.output ? o.output : MTL_TRACE_PATTERN, (pid_t)o.pid,
                       exe);
    if (name[0] != '/' && !getcwd(cwd, sizeof cwd)) {
        cli_error("attach: cannot tell the current directory: %s", strerror(errno));
        return 1;
    }
    if (name[0] == '/')
        snprintf(trace, sizeof trace, "%s", name);
    else
        snprintf(trace, sizeof trace, "%s/%s", cwd, name);

    /* In another mount namespace (a container), the library and the trace
     * go through a directory of the process's own /tmp. */
    struct ns_stage ns = { .dirfd = -1, .tmpfd = -1 };
    const char *own[1] = { real };
    const char *staged[NS_MAX_LIBS];
    struct to_load l = { own, 1, real };
    char inside_trace[PATH_MAX + 16];
    if (foreign) {
        char why[PATH_MAX + 256];
        if (ns_stage(o.pid, real, &ns, why, sizeof why) < 0) {
            cli_error("attach: pid %ld runs in another mount namespace: %s", o.pid, why);
            ns_cleanup(&ns);
            return 1;
        }
        for (size_t i = 0; i < ns.nload; i++)
            staged[i] = ns.load[i];
        l.paths = staged;
        l.n = ns.nload;
        snprintf(inside_trace, sizeof inside_trace, "%s/trace.mtly", ns.inside);
    }
    double paused_ms;
    if (load_and_begin(&o, &l, foreign ? inside_trace : trace, &paused_ms)) {
        ns_cleanup(&ns);
        return 1;
    }
    if (!o.quiet)
        fprintf(stderr, "memtally: attached to pid %ld (%s), which was held %.1f ms; recording "
                        "into %s until %s\n", o.pid, exe, paused_ms, trace,
                o.duration_us ? "the duration is over" : "Ctrl-C");

    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *how = NULL;
    for (unsigned tick = 0; !how; tick++) {
        struct timespec tenth = { 0, 100000000 };
        nanosleep(&tenth, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t us = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000u +
                      (uint64_t)((now.tv_nsec - t0.tv_nsec) / 1000);
        if (kill((pid_t)o.pid, 0) < 0 && errno == ESRCH)
            how = "the process ended";
        else if (stop_asked || (o.duration_us && us >= o.duration_us))
            how = "stop";
        else if (tick % 5 == 4 && !foreign) {
            /* Stopped by someone else: the recorder's socket is gone with
             * the trace (or says off). */
            int asked = ctl_request((int)o.pid, "status", answer, sizeof answer, err, sizeof err);
            if (asked == CTL_NO_SOCKET || (asked == CTL_OK && !strncmp(answer, "state=off", 9)))
                how = "stopped through memtally ctl";
        }
    }
    if (!strcmp(how, "stop")) {
        rc = foreign ? (stop_inside(o.pid, &l) == 0 ? CTL_OK : CTL_FAILED)
                     : ctl_request((int)o.pid, "stop", answer, sizeof answer, err, sizeof err);
        /* No answer (the process was stopped meanwhile, say): the stop is
         * called inside it as the start was. */
        if (rc == CTL_FAILED && !foreign && kill((pid_t)o.pid, 0) == 0 &&
            stop_inside(o.pid, &l) == 0)
            rc = CTL_OK;
        if (rc != CTL_OK) {
            if (kill((pid_t)o.pid, 0) < 0 && errno == ESRCH) {
                how = "the process ended";
            } else {
                if (!foreign)
                    cli_error("attach: %s", err);
                ns_cleanup(&ns);
                return 1;
            }
        }
    }
    if (foreign) {
        char why[PATH_MAX + 256];
        int lost = ns_collect(&ns, "trace.mtly", trace, why, sizeof why) < 0;
        ns_cleanup(&ns);
        if (lost) {
            cli_error("attach: %s", why);
            return 1;
        }
    }
    if (!o.quiet && !strcmp(how, "stop"))
        fprintf(stderr, "memtally: detached from pid %ld; wrote %s\n", o.pid, trace);
    else if (!o.quiet)
        fprintf(stderr, "memtally: pid %ld: %s; its trace is %s\n", o.pid, how, trace);
    return 0;
}
