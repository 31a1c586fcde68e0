/*
 * cmd_ctl.c: `memtally ctl PID COMMAND`: steers a process that runs under
 * `memtally record` through its control socket (src/preload/control.c):
 * start, pause, continue, restart, dump FILE, stop, status.
 *
 * The socket is PID.sock in $XDG_RUNTIME_DIR/memtally/ or in
 * /tmp/memtally-UID/, the same rule as the recorder's; as the program's
 * environment may differ from ours, both places are tried.  A socket is
 * used only in a directory that is ours alone, and only if the process
 * at the other end is PID, run by our user.  One line goes out, one comes
 * back: "ok [TEXT]" or "error MESSAGE".
 *
 * Also the client that `memtally top` uses (ctl_request, cli.h).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json.h"
#include "common/procstat.h"
#include "render/render.h"

static const char usage[] =
    "usage: memtally ctl [--json] PID COMMAND\n"
    "\n"
    "Steers a process that runs under `memtally record` (or `record --idle`):\n"
    "\n"
    "  start        start recording (into the trace named at start-up)\n"
    "  pause        stop recording for a while; the trace stays open\n"
    "  continue     go on recording after pause\n"
    "  restart      throw away what was recorded: the trace starts anew\n"
    "  dump FILE    write what was recorded so far to FILE, a complete trace;\n"
    "               recording goes on\n"
    "  stop         finish the trace; a later start writes a new one\n"
    "  status       the state, the trace and its counts so far\n"
    "\n"
    "  --json       status as a JSON object\n";

#define SUN_PATH_CAP sizeof(((struct sockaddr_un *)0)->sun_path)

/* The parent of process pid (from /proc), or -1. */
static pid_t parent_of(pid_t pid)
{
    uint64_t f[MTL_STAT_FIELDS + 1];
    return mtl_proc_stat(pid, f) == 0 ? (pid_t)f[4] : -1;
}

/* Whether server is pid or one of its ancestors. */
static int served_for(pid_t server, pid_t pid)
{
    for (int depth = 0; pid > 1 && depth < 256; depth++) {
        if (pid == server)
            return 1;
        pid = parent_of(pid);
    }
    return 0;
}

/* The directories where a socket may be: the rule of common/ctlsock.c
 * first (XDG_RUNTIME_DIR's), then the other, in case the program saw
 * another environment. */
static int control_dirs(char dirs[2][SUN_PATH_CAP])
{
    int n = 0;
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (xdg && xdg[0] == '/' && strlen(xdg) + 32 < SUN_PATH_CAP &&
        stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && access(xdg, W_OK | X_OK) == 0)
        snprintf(dirs[n++], SUN_PATH_CAP, "%s/memtally", xdg);
    snprintf(dirs[n++], SUN_PATH_CAP, "/tmp/memtally-%u", (unsigned)geteuid());
    return n;
}

static int private_dir(const char *dir, struct stat *st)
{
    return lstat(dir, st) == 0 && S_ISDIR(st->st_mode) && st->st_uid == geteuid() &&
           !(st->st_mode & 077);
}

/* Connects to pid's socket.  Returns the descriptor, or -1 with the reason
 * in err. */
static int connect_to(int pid, unsigned timeout_s, char *err, size_t errcap)
{
    char dirs[2][SUN_PATH_CAP];
    int ndirs = control_dirs(dirs);
    char refused[SUN_PATH_CAP] = "";
    for (int i = 0; i < ndirs; i++) {
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        struct stat st;
        int len = snprintf(addr.sun_path, sizeof addr.sun_path, "%s/%d.sock", dirs[i], pid);
        if (len < 0 || (size_t)len >= sizeof addr.sun_path)
            continue;
        if (lstat(addr.sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
            continue;
        if (!private_dir(dirs[i], &st)) {
            memcpy(refused, dirs[i], sizeof refused);
            continue;
        }
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, errcap, "socket: %s", strerror(errno));
            return -1;
        }
        struct timeval tv = { .tv_sec = timeout_s };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
            int e = errno;
            close(fd);
            if (e == ECONNREFUSED || e == ENOENT)
                continue; /* left behind by a process gone */
            snprintf(err, errcap, "%s: %s", addr.sun_path, strerror(e));
            return -1;
        }
        struct ucred cred;
        socklen_t clen = sizeof cred;
        /* Served by the process itself, or for it by the memtally record
         * that started it or follows it (an ancestor). */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
            cred.uid != geteuid() || !served_for(cred.pid, pid)) {
            close(fd);
            snprintf(err, errcap, "%s is not the socket of pid %d run by this user",
                     addr.sun_path, pid);
            return -1;
        }
        return fd;
    }
    if (*refused)
        snprintf(err, errcap,
                 "no memtally control socket for pid %d (%s is not a directory of this "
                 "user alone, so it is not used)", pid, refused);
    else
        snprintf(err, errcap,
                 "no memtally control socket for pid %d (is it running under memtally "
                 "record?)", pid);
    return -1;
}

int ctl_request(int pid, const char *command, char *answer, size_t cap,
                char *err, size_t errcap)
{
    int fd = connect_to(pid, strncmp(command, "dump ", 5) ? 10 : 120, err, errcap);
    if (fd < 0)
        return CTL_NO_SOCKET;
    size_t n = strlen(command);
    char *line = malloc(n + 2);
    if (!line) {
        close(fd);
        snprintf(err, errcap, "out of memory");
        return CTL_FAILED;
    }
    memcpy(line, command, n);
    line[n++] = '\n';
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(fd, line + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    free(line);
    if (off < n) {
        snprintf(err, errcap, "pid %d: cannot send the command: %s", pid, strerror(errno));
        close(fd);
        return CTL_FAILED;
    }
    shutdown(fd, SHUT_WR);
    /* The answer: one line, until the server closes. */
    char buf[PATH_MAX + 2048];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            snprintf(err, errcap, "pid %d: no answer: %s", pid,
                     e == EAGAIN ? "timed out" : strerror(e));
            return CTL_FAILED;
        }
        if (r == 0)
            break;
        got += (size_t)r;
        if (memchr(buf, '\n', got) || got == sizeof buf - 1)
            break;
    }
    close(fd);
    buf[got] = '\0';
    char *nl = strchr(buf, '\n');
    if (!nl) {
        snprintf(err, errcap, "pid %d closed the control connection without an answer",
                 pid);
        return CTL_FAILED;
    }
    *nl = '\0';
    if (!strcmp(buf, "ok") || !strncmp(buf, "ok ", 3)) {
        snprintf(answer, cap, "%s", buf[2] ? buf + 3 : "");
        return CTL_OK;
    }
    if (!strncmp(buf, "error ", 6)) {
        snprintf(err, errcap, "%s", buf + 6);
        return CTL_ERROR;
    }
    snprintf(err, errcap, "pid %d gave an answer not understood: %.200s", pid, buf);
    return CTL_FAILED;
}

/* Status fields are "key=value" separated by spaces; a value (a path) may
 * itself hold spaces, so a field ends only where " word=" begins, and the
 * trace's path only where one of the keys known to follow it begins. */
static int key_starts(const char *s, int in_trace)
{
    static const char *const after_trace[] = {
        "mode=", "rate=", "pid=", "events=", "allocations=", "frees=", "bytes=",
        "live_bytes=", "state=",
    };
    if (in_trace) {
        for (size_t i = 0; i < sizeof after_trace / sizeof *after_trace; i++)
            if (!strncmp(s, after_trace[i], strlen(after_trace[i])))
                return 1;
        return 0;
    }
    const char *p = s;
    while ((*p >= 'a' && *p <= 'z') || *p == '_')
        p++;
    return p > s && *p == '=';
}

size_t ctl_parse_status(char *text, struct ctl_field *f, size_t cap)
{
    size_t n = 0;
    char *s = text;
    while (*s == ' ')
        s++;
    while (*s && n < cap) {
        char *eq = strchr(s, '=');
        if (!eq)
            break;
        *eq = '\0';
        f[n].key = s;
        f[n].value = eq + 1;
        int in_trace = !strcmp(s, "trace");
        char *e = eq + 1;
        while (*e && !(*e == ' ' && key_starts(e + 1, in_trace)))
            e++;
        n++;
        if (!*e)
            break;
        *e = '\0';
        s = e + 1;
    }
    return n;
}

const char *ctl_field(const struct ctl_field *f, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(f[i].key, key))
            return f[i].value;
    return NULL;
}

static int is_number(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static void print_status(char *text, int json)
{
    struct ctl_field f[32];
    size_t n = ctl_parse_status(text, f, 32);
    if (json) {
        struct mtl_buf b = MTL_BUF_INIT;
        struct mtl_json j;
        mtl_json_init(&j, &b);
        mtl_json_begin_object(&j);
        for (size_t i = 0; i < n; i++) {
            mtl_json_key(&j, f[i].key);
            /* The path stays a string even when made of digits. */
            if (is_number(f[i].value) && strcmp(f[i].key, "trace"))
                mtl_json_uint(&j, strtoull(f[i].value, NULL, 10));
            else
                mtl_json_string(&j, f[i].value);
        }
        mtl_json_end(&j);
        if (!b.failed)
            printf("%s\n", b.data);
        mtl_buf_release(&b);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char label[40], size[32];
        snprintf(label, sizeof label, "%s:", f[i].key);
        for (char *c = label; *c; c++)
            if (*c == '_')
                *c = ' ';
        const char *v = f[i].value;
        int bytes = !strcmp(f[i].key, "bytes") || !strcmp(f[i].key, "live_bytes") ||
                    !strcmp(f[i].key, "rate");
        if (bytes && is_number(v) && strtod(v, NULL) >= 1024)
            printf("%-13s %s (%s)\n", label, v, mtl_human_bytes(size, sizeof size, strtod(v, NULL)));
        else
            printf("%-13s %s\n", label, *v ? v : "-");
    }
}

static int bad_usage(const char *fmt, const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    cli_error("ctl: %s (see memtally ctl --help)", msg);
    return 2;
}

int cmd_ctl(int argc, char **argv)
{
    const char *args[3];
    int nargs = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (a[0] == '-' && a[1] && !(nargs == 2 && !strcmp(args[1], "dump"))) {
            return bad_usage("unknown option '%s'", a);
        } else if (nargs == 3) {
            return bad_usage("unexpected argument '%s'", a);
        } else {
            args[nargs++] = a;
        }
    }
    if (nargs < 2)
        return bad_usage("%s", nargs ? "no command given" : "no pid given");
    char *end;
    errno = 0;
    long pid = strtol(args[0], &end, 10);
    if (errno || !*args[0] || *end || pid < 1 || pid > INT_MAX)
        return bad_usage("'%s' is not a pid", args[0]);
    static const char *const commands[] = {
        "start", "pause", "continue", "restart", "dump", "stop", "status",
    };
    const char *cmd = args[1];
    size_t k;
    for (k = 0; k < sizeof commands / sizeof *commands; k++)
        if (!strcmp(cmd, commands[k]))
            break;
    if (k == sizeof commands / sizeof *commands)
        return bad_usage("unknown command '%s' (start, pause, continue, restart, "
                         "dump FILE, stop, status)", cmd);
    int is_dump = !strcmp(cmd, "dump");
    if (is_dump && nargs != 3)
        return bad_usage("%s", "dump needs a FILE");
    if (!is_dump && nargs != 2)
        return bad_usage("unexpected argument '%s'", args[2]);

    /* The program's working directory may not be ours. */
    char line[PATH_MAX + 16];
    if (is_dump) {
        const char *file = args[2];
        char cwd[PATH_MAX];
        if (file[0] != '/' && !getcwd(cwd, sizeof cwd)) {
            cli_error("ctl: cannot tell the current directory: %s", strerror(errno));
            return 1;
        }
        int len = file[0] == '/' ? snprintf(line, sizeof line, "dump %s", file)
                                 : snprintf(line, sizeof line, "dump %s/%s", cwd, file);
        if (len < 0 || (size_t)len >= sizeof line || strchr(file, '\n')) {
            cli_error("ctl: %s: the file name is too long or holds a newline", file);
            return 2;
        }
    } else {
        snprintf(line, sizeof line, "%s", cmd);
    }

    char answer[PATH_MAX + 2048], err[PATH_MAX + 512];
    int rc = ctl_request((int)pid, line, answer, sizeof answer, err, sizeof err);
    if (rc != CTL_OK) {
        cli_error("%s", err);
        return 1;
    }
    if (!strcmp(cmd, "status"))
        print_status(answer, json);
    else if (*answer)
        printf("%s\n", answer);
    else if (is_dump)
        printf("pid %ld: wrote %s\n", pid, line + 5);
    else
        printf("pid %ld: %s\n", pid,
               !strcmp(cmd, "start") || !strcmp(cmd, "continue") ? "recording"
               : !strcmp(cmd, "pause") ? "paused"
               : !strcmp(cmd, "restart") ? "the trace starts anew"
               : "the trace is finished");
    return 0;
}
