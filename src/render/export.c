/*
 * export.c: results in the formats other tools read (`memtally export`).
 *
 * folded: one line per call path, "outermost;...;innermost VALUE", the
 * format of flamegraph.pl, inferno and speedscope's import: each node of
 * the engine's call tree gives its own value (its figure less its
 * children's), so the lines of a path's prefixes add up to the tree; or
 * each call path under the rows of an analysis (peak: the blocks live at
 * the peak, found in event order, which a time filter cannot do when
 * events share a microsecond).
 * csv: the rows of `report`, one per function, with a header line
 * (RFC 4180 quoting).
 */
#include "render/render.h"

#include <string.h>

/* A frame's name in a folded line: ';' separates frames and a line ends at
 * a newline, so those become ':' and ' '. */
static void add_folded_name(struct mtl_buf *b, const char *s)
{
    for (; *s; s++)
        mtl_buf_addc(b, *s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s);
}

static void folded_node(struct mtl_buf *b, const struct mtl_tree_node *n, int calls,
                        const struct mtl_tree_node **path, size_t depth)
{
    double self = calls ? n->calls : n->bytes;
    for (size_t i = 0; i < n->nchildren; i++)
        self -= calls ? n->children[i].calls : n->children[i].bytes;
    if (depth > 0 && self > 0.5) {
        for (size_t i = 0; i < depth; i++) {
            if (i)
                mtl_buf_addc(b, ';');
            add_folded_name(b, path[i]->where.function ? path[i]->where.function : "?");
        }
        mtl_buf_addf(b, " %.0f\n", self);
    }
    if (depth >= MTL_TREE_MAX_DEPTH)
        return;
    for (size_t i = 0; i < n->nchildren; i++) {
        path[depth] = &n->children[i];
        folded_node(b, &n->children[i], calls, path, depth + 1);
    }
}

void mtl_render_folded(struct mtl_buf *b, const struct mtl_tree *t, int calls)
{
    const struct mtl_tree_node *path[MTL_TREE_MAX_DEPTH + 1];
    folded_node(b, &t->root, calls, path, 0);
}

void mtl_render_folded_paths(struct mtl_buf *b, const struct mtl_rows *rows)
{
    for (size_t r = 0; r < rows->n; r++) {
        const struct mtl_row *row = &rows->row[r];
        for (size_t p = 0; p < row->npaths; p++) {
            const struct mtl_path *path = &row->paths[p];
            if (path->bytes < 0.5)
                continue;
            /* Innermost first in a path: written outermost first. */
            for (size_t i = path->n; i-- > 0;) {
                add_folded_name(b, path->frames[i].function ? path->frames[i].function : "?");
                if (i)
                    mtl_buf_addc(b, ';');
            }
            if (!path->n)
                mtl_buf_adds(b, "(no stack)");
            mtl_buf_addf(b, " %.0f\n", path->bytes);
        }
    }
}

static void add_csv_field(struct mtl_buf *b, const char *s)
{
    if (!s)
        s = "";
    if (!strpbrk(s, ",\"\n\r")) {
        mtl_buf_adds(b, s);
        return;
    }
    mtl_buf_addc(b, '"');
    for (; *s; s++) {
        if (*s == '"')
            mtl_buf_addc(b, '"');
        mtl_buf_addc(b, *s);
    }
    mtl_buf_addc(b, '"');
}

void mtl_render_report_csv(struct mtl_buf *b, const struct mtl_report *r)
{
    mtl_buf_adds(b, "function,file,line,module,calls,bytes,per_call,percent\n");
    for (size_t i = 0; i < r->total.n; i++) {
        const struct mtl_row *row = &r->total.row[i];
        add_csv_field(b, row->function);
        mtl_buf_addc(b, ',');
        add_csv_field(b, row->file);
        mtl_buf_addf(b, ",%u,", row->line);
        add_csv_field(b, row->module);
        mtl_buf_addf(b, ",%.0f,%.0f,%.1f,%.2f\n", row->calls, row->bytes,
                     row->calls > 0 ? row->bytes / row->calls : 0.0, row->percent);
    }
}
