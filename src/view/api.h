/*
 * view/api.h: the viewer's HTTP API (docs/VIEWER.md): a path and its query
 * arguments in, a status and a JSON body out.  Each answer is an analysis
 * of the engine rendered by the render layer: the viewer adds no engine
 * and no JSON writer of its own.  Answers are bounded in size whatever the
 * trace holds (rows, points, columns, tree nodes under a share).
 *
 * Not thread-safe: one request at a time (the server makes it so).
 */
#ifndef MTL_VIEW_API_H
#define MTL_VIEW_API_H

#include <stddef.h>

#include "analyze/engine.h"
#include "common/buf.h"

/* One query argument, decoded. */
struct mtl_view_arg {
    const char *key, *value;
};

#define MTL_VIEW_MAX_ARGS 64

/* Answers GET path?args: fills body (JSON, or an error object
 * {"error": "..."}) and returns the HTTP status (200, 400, 404, 500). */
int mtl_view_api(struct mtl_engine *e, const char *path, const struct mtl_view_arg *args,
                 size_t nargs, struct mtl_buf *body);

/* The data the page draws without filters, as one JSON object of the
 * answers of the API's paths ({"info": ..., "timeline": ...}), for a
 * page that runs without a server (view --html).  0 or a negative code. */
int mtl_view_snapshot(struct mtl_engine *e, struct mtl_buf *out);

#endif
