/*
 * view/server.h: the viewer's web server (libmicrohttpd): the page, built
 * into the binary, and the API (api.h), on one thread, so the engine sees
 * one request at a time.
 *
 * It serves GET and HEAD of its own paths only; anything else gets a 4xx
 * and the server goes on.  Bound to loopback, it also refuses requests
 * whose Host is not a loopback name (a web page elsewhere cannot reach it
 * through DNS rebinding).
 */
#ifndef MTL_VIEW_SERVER_H
#define MTL_VIEW_SERVER_H

#include <stddef.h>

#include "analyze/engine.h"

struct mtl_view_server;

/* Starts serving e on host (an IPv4 or IPv6 address) and port (0: a free
 * one); *url gets the page's address.  0, or -1 with why in err. */
int mtl_view_serve(struct mtl_view_server **out, struct mtl_engine *e, const char *host,
                   unsigned port, char *url, size_t url_cap, char *err, size_t err_cap);

/* Stops serving (waits for the request under way). */
void mtl_view_stop(struct mtl_view_server *s);

/* The page, as built into the binary (view_page.c, generated from
 * src/view/page.html). */
extern const unsigned char mtl_view_page[];
extern const size_t mtl_view_page_len;

#endif
