/*
 * server.c: see server.h.  libmicrohttpd parses HTTP (request lines,
 * headers, limits on their size); this file only routes.
 */
#include "view/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "view/api.h"
#include "view/mhd.h"

/* libmicrohttpd, loaded by the first mtl_view_serve. */
static const struct mtl_mhd *mhd;

struct mtl_view_server {
    struct MHD_Daemon *d;
    struct mtl_engine *e;
    int loopback;
    unsigned port;
};

struct args {
    struct mtl_view_arg a[MTL_VIEW_MAX_ARGS + 1];
    size_t n;
};

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    struct args *a = cls;
    if (a->n > MTL_VIEW_MAX_ARGS)
        return MHD_NO;
    a->a[a->n].key = key;
    a->a[a->n].value = value;
    a->n++;
    return MHD_YES;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
                               const void *data, size_t len, int cache)
{
    struct MHD_Response *r =
        mhd->create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    mhd->add_response_header(r, "Content-Type", type);
    mhd->add_response_header(r, "X-Content-Type-Options", "nosniff");
    mhd->add_response_header(r, "Cache-Control", cache ? "max-age=60" : "no-store");
    /* The page runs its own inline script and talks to this server only. */
    mhd->add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; "
                            "style-src 'unsafe-inline'; connect-src 'self'; img-src data:");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        mhd->add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ok = mhd->queue_response(c, status, r);
    mhd->destroy_response(r);
    return ok;
}

static enum MHD_Result error(struct MHD_Connection *c, unsigned status, const char *msg)
{
    char body[256];
    int n = snprintf(body, sizeof body, "{\"error\": \"%s\"}\n", msg);
    return respond(c, status, "application/json", body, (size_t)n, 0);
}

/* Whether the Host header names this machine's loopback (or is absent, as
 * in HTTP/1.0): a page of another site that resolves its own name to
 * 127.0.0.1 sends its own name. */
static int loopback_host(struct MHD_Connection *c)
{
    const char *h = mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!h)
        return 1;
    static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(names[i]);
        if (!strncasecmp(h, names[i], n) && (h[n] == '\0' || h[n] == ':'))
            return 1;
    }
    return 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version,
                              const char *upload_data, size_t *upload_data_size,
                              void **req_cls)
{
    (void)version, (void)upload_data;
    struct mtl_view_server *s = cls;
    int get = !strcmp(method, "GET"), head = !strcmp(method, "HEAD");
    if (!*req_cls) {
        /* First call, headers read: answer now, before any body. */
        static int marker;
        *req_cls = &marker;
        if (!get && !head)
            return error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD");
        if (s->loopback && !loopback_host(c))
            return error(c, MHD_HTTP_FORBIDDEN, "Host is not this machine's loopback");
        if (*upload_data_size)
            return error(c, 413, "no body is taken");
        if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
            return respond(c, MHD_HTTP_OK, "text/html; charset=utf-8", mtl_view_page,
                        mtl_view_page_len, 1);
        if (strncmp(url, "/api/", 5) != 0)
            return error(c, MHD_HTTP_NOT_FOUND, "no such page");
        struct args a = { .n = 0 };
        mhd->get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect, &a);
        if (a.n > MTL_VIEW_MAX_ARGS)
            return error(c, MHD_HTTP_BAD_REQUEST, "too many arguments");
        for (size_t i = 0; i < a.n; i++)
            if (!a.a[i].value)
                a.a[i].value = "";
        struct mtl_buf body = MTL_BUF_INIT;
        int status = mtl_view_api(s->e, url, a.a, a.n, &body);
        enum MHD_Result ok = body.data ? respond(c, (unsigned)status, "application/json",
                                              body.data, body.len, 0)
                                       : error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                               "out of memory");
        mtl_buf_release(&body);
        return ok;
    }
    /* A body after all (a GET that sends one): refused above; drop it. */
    *upload_data_size = 0;
    return MHD_YES;
}

int mtl_view_serve(struct mtl_view_server **out, struct mtl_engine *e, const char *host,
                   unsigned port, char *url, size_t url_cap, char *err, size_t err_cap)
{
    struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
    const struct sockaddr *sa;
    int ipv6 = 0;
    if (inet_pton(AF_INET, host, &v4.sin_addr) == 1) {
        sa = (const struct sockaddr *)&v4;
    } else if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1) {
        sa = (const struct sockaddr *)&v6;
        ipv6 = 1;
    } else {
        snprintf(err, err_cap, "--host %s: not an IPv4 or IPv6 address", host);
        return -1;
    }
    if (port > 65535) {
        snprintf(err, err_cap, "--port %u: not a port", port);
        return -1;
    }
    mhd = mtl_mhd_load(err, err_cap);
    if (!mhd)
        return -1;
    struct mtl_view_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_cap, "out of memory");
        return -1;
    }
    s->e = e;
    s->loopback = ipv6 ? IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr)
                       : (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
    /* One thread for every connection: requests are answered one at a
     * time, which the engine needs. */
    s->d = mhd->start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | (ipv6 ? MHD_USE_IPv6 : 0),
                            (uint16_t)port, NULL, NULL, handle, s,
                            MHD_OPTION_SOCK_ADDR, sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                            MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, err_cap, "cannot listen on %s port %u (in use, or not this machine's)",
                 host, port);
        free(s);
        return -1;
    }
    const union MHD_DaemonInfo *info = mhd->get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    snprintf(url, url_cap, ipv6 ? "http://[%s]:%u/" : "http://%s:%u/", host, s->port);
    *out = s;
    return 0;
}

void mtl_view_stop(struct mtl_view_server *s)
{
    if (!s)
        return;
    mhd->stop_daemon(s->d);
    free(s);
}
