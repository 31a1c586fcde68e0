/* tree.c: the call tree's text and JSON (docs/ANALYSIS.md, tree). */
#include <string.h>

#include "render/render.h"

static const char *root_name(const struct mtl_tree_options *o)
{
    return o->callers ? o->callers : o->callees ? o->callees : "(all)";
}

static void node_text(struct mtl_buf *b, const struct mtl_tree_node *n, int depth,
                      const struct mtl_tree_options *o)
{
    char size[32];
    mtl_buf_addf(b, "%7.2f%% %10s %10.0f  ", n->percent,
                 mtl_human_bytes(size, sizeof size, n->bytes), n->calls);
    mtl_buf_pad(b, ' ', (size_t)depth * 2);
    if (depth == 0) {
        mtl_buf_addf(b, "%s%s\n", o->callers ? "callers of " : o->callees ? "callees of " : "",
                     root_name(o));
    } else {
        const char *base = n->where.file ? strrchr(n->where.file, '/') : NULL;
        base = base ? base + 1 : n->where.file;
        mtl_buf_adds(b, n->where.function);
        if (n->merged)
            mtl_buf_addf(b, " %zu function%s, each under the threshold", n->merged,
                         n->merged == 1 ? "" : "s");
        if (base)
            mtl_buf_addf(b, " (%s)", base);
        mtl_buf_addc(b, '\n');
    }
    for (size_t i = 0; i < n->nchildren; i++)
        node_text(b, &n->children[i], depth + 1, o);
}

static void node_json(struct mtl_json *j, const struct mtl_tree_node *n, int root,
                      const struct mtl_tree_options *o)
{
    mtl_json_begin_object(j);
    mtl_json_kv_string(j, "function", root ? root_name(o) : n->where.function);
    mtl_json_kv_string(j, "file", root ? NULL : n->where.file);
    mtl_json_kv_string(j, "line", NULL);
    mtl_json_kv_number(j, "calls", n->calls);
    mtl_json_kv_number(j, "bytes", n->bytes);
    mtl_json_kv_fixed(j, "percent", n->percent, 4);
    if (n->merged)
        mtl_json_kv_uint(j, "merged", n->merged);
    mtl_json_key(j, "children");
    mtl_json_begin_array(j);
    for (size_t i = 0; i < n->nchildren; i++)
        node_json(j, &n->children[i], 0, o);
    mtl_json_end(j);
    mtl_json_end(j);
}

void mtl_render_tree(struct mtl_buf *b, const struct mtl_tree *t,
                     const struct mtl_tree_options *o,
                     const struct mtl_render_options *ro)
{
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &t->head);
        mtl_json_key(&j, "root");
        node_json(&j, &t->root, 1, o);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    mtl_render_text_head(b, &t->head);
    mtl_buf_addf(b, "%8s %10s %10s  %s\n", "%", "BYTES", "CALLS", "FUNCTION");
    node_text(b, &t->root, 0, o);
}
