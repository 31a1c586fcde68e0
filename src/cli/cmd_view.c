/*
 * cmd_view.c: `memtally view TRACE`: the viewer (docs/VIEWER.md): indexes
 * the trace, serves its page and API on loopback until Ctrl-C; or, with
 * --html OUT, writes the page with the unfiltered views built in, one file
 * that needs no server.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/analysis.h"
#include "cli/cli.h"
#include "memtally/errors.h"
#include "view/api.h"
#include "view/server.h"

extern char **environ;

static const char usage[] =
    "usage: memtally view [options] TRACE\n"
    "\n"
    "Explores the trace in a web browser: memory over time, a flame graph of\n"
    "allocation sites or of calls from main, a table of functions with their\n"
    "callers and callees, lifetimes, every filter.  Serves the page on\n"
    "127.0.0.1 (the address is printed) until Ctrl-C.\n"
    "\n"
    "  --port N                   listen on port N (default: a free one)\n"
    "  --host ADDR                listen on ADDR (default 127.0.0.1)\n"
    "  --open                     open the page in the desktop's browser\n"
    "  --html OUT                 write the page, with its data, to OUT instead\n"
    "                             of serving it (no server needed to open it)\n";

struct view_opts {
    const char *host, *html;
    size_t port;
    int open, port_set;
};

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
    struct view_opts *o = ctx;
    if (!strcmp(argv[*i], "--open")) {
        o->open = 1;
        (*i)++;
        return 1;
    }
    static const char *const names[] = { "--port", "--host", "--html" };
    const char *val;
    size_t k;
    int rc = option_value("view", argc, argv, i, names, 3, &k, &val);
    if (rc <= 0)
        return rc;
    if (k == 0) {
        if (parse_count("view", "--port", val, 0, &o->port) < 0)
            return -1;
        if (o->port > 65535) {
            cli_error("view: --port takes a port number (0 to 65535)");
            return -1;
        }
        o->port_set = 1;
    } else if (k == 1) {
        o->host = val;
    } else {
        o->html = val;
    }
    return 1;
}

/* The page with the data built in: its JSON goes where the page says,
 * with "</" written "<\/" so that no string in it ends the script. */
static int write_html(const char *out, const struct mtl_buf *data)
{
    static const char marker[] = "<!--MEMTALLY-DATA-->";
    const char *page = (const char *)mtl_view_page;
    const char *at = memmem(page, mtl_view_page_len, marker, sizeof marker - 1);
    if (!at) {
        cli_error("view: the built-in page has no place for data");
        return 1;
    }
    FILE *f = fopen(out, "w");
    if (!f) {
        cli_error("view: %s: cannot write it: %s", out, strerror(errno));
        return 1;
    }
    fwrite(page, 1, (size_t)(at - page), f);
    fputs("<script>window.MEMTALLY_DATA = ", f);
    for (size_t i = 0; i < data->len; i++) {
        if (data->data[i] == '<' && i + 1 < data->len && data->data[i + 1] == '/')
            fputs("<\\", f);
        else
            fputc(data->data[i], f);
    }
    fputs(";</script>", f);
    size_t rest = mtl_view_page_len - (size_t)(at - page) - (sizeof marker - 1);
    fwrite(at + sizeof marker - 1, 1, rest, f);
    if (fclose(f) != 0) {
        cli_error("view: %s: cannot write it: %s", out, strerror(errno));
        return 1;
    }
    return 0;
}

/* Starts the desktop's browser on url, when there is a desktop. */
static void open_browser(const char *url)
{
    const char *d = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");
    if ((!d || !*d) && (!w || !*w)) {
        cli_error("view: no desktop here (DISPLAY is not set): open %s yourself", url);
        return;
    }
    char *argv[] = { "xdg-open", (char *)url, NULL };
    pid_t pid;
    if (posix_spawnp(&pid, "xdg-open", NULL, NULL, argv, environ) != 0)
        cli_error("view: cannot run xdg-open: open %s yourself", url);
}

int cmd_view(int argc, char **argv)
{
    struct analysis a = { 0 };
    struct view_opts o = { .host = "127.0.0.1" };
    int code;
    if (analysis_parse(&a, argc, argv, usage, CLI_WHOLE_TRACE | CLI_SYMBOLS, parse_opt, &o,
                       &code))
        return code;
    if (a.json) {
        cli_error("view: no --json: the page's API answers JSON (docs/VIEWER.md)");
        return 2;
    }
    if (o.html && (o.open || o.port_set || strcmp(o.host, "127.0.0.1"))) {
        cli_error("view: --html writes a file: --port, --host and --open are for serving");
        return 2;
    }
    a.eopt.digest = 1; /* every view of a filter comes one after another */
    struct mtl_engine *e = analysis_open(&a, a.path);
    if (!e)
        return 1;
    /* Every answer of the page comes from the index: build it first. */
    const char *ipath;
    uint64_t isize;
    /* (Only malloc's heap is indexed: the collector's is read as it is.) */
    int rc = a.eopt.index == MTL_INDEX_OFF || mtl_engine_heaps(e) != MTL_HEAPS_MALLOC
                 ? 0
                 : mtl_engine_index(e, &ipath, &isize);
    if (analysis_done(&a, e, rc)) {
        mtl_engine_close(e);
        return 1;
    }
    int bad = 0;
    if (o.html) {
        struct mtl_buf data = MTL_BUF_INIT;
        rc = mtl_view_snapshot(e, &data);
        bad = analysis_done(&a, e, rc);
        if (!bad && !data.data) {
            cli_error("view: out of memory");
            bad = 1;
        }
        if (!bad && !(bad = write_html(o.html, &data)))
            printf("memtally: wrote %s: open it in a browser\n", o.html);
        mtl_buf_release(&data);
        mtl_engine_close(e);
        return bad;
    }
    /* Ctrl-C and kill end the serving, here, not in a handler. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* the server's thread inherits it */
    struct mtl_view_server *s;
    char url[128], err[256];
    if (mtl_view_serve(&s, e, o.host, (unsigned)o.port, url, sizeof url, err, sizeof err) < 0) {
        cli_error("view: %s", err);
        mtl_engine_close(e);
        return 1;
    }
    printf("memtally: viewing %s at %s (Ctrl-C to stop)\n", a.path, url);
    fflush(stdout);
    if (o.open)
        open_browser(url);
    int sig;
    sigwait(&stop, &sig);
    mtl_view_stop(s);
    mtl_engine_close(e);
    return 0;
}
