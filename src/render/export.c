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
 * (RFC 4180 quoting).  speedscope: its JSON file format, one "sampled"
 * profile per thread, a sample per call path weighted by its bytes.
 * massif: valgrind massif's file, which ms_print and massif-visualizer
 * read: snapshots of the live heap over time, some detailed, the peak's
 * with its sites.
 */
#include "render/render.h"

#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"

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

/* --- speedscope ------------------------------------------------------------ */

/* The frames met so far, each once: speedscope's shared frame table. */
struct frame_table {
    struct mtl_hmap index;                /* hash of the location -> index + 1 */
    const struct mtl_location **frames;
    size_t n, cap;
    int failed;
};

static uint64_t location_hash(const struct mtl_location *w)
{
    uint64_t h = mtl_hash_bytes(w->function ? w->function : "?",
                                strlen(w->function ? w->function : "?"));
    if (w->file)
        h ^= mtl_hash_bytes(w->file, strlen(w->file)) * 0x9e3779b97f4a7c15ull;
    return h ^ ((uint64_t)w->line << 1) ^ 1; /* never 0 */
}

/* The index of w's frame, added if new (two locations of equal hash are
 * taken as one: 2^-64 odds a pair). */
static size_t frame_index(struct frame_table *ft, const struct mtl_location *w)
{
    uint64_t h = location_hash(w), v;
    if (mtl_hmap_get(&ft->index, h, &v))
        return (size_t)v - 1;
    if (ft->n == ft->cap) {
        size_t cap = ft->cap ? ft->cap * 2 : 256;
        const struct mtl_location **f = realloc(ft->frames, cap * sizeof *f);
        if (!f) {
            ft->failed = 1;
            return 0;
        }
        ft->frames = f;
        ft->cap = cap;
    }
    ft->frames[ft->n] = w;
    if (mtl_hmap_put(&ft->index, h, ft->n + 1, NULL) < 0)
        ft->failed = 1;
    return ft->n++;
}

/* One sample per node with a figure of its own: the path's frame indices
 * from the root, and the node's own bytes as its weight. */
static void speedscope_samples(struct mtl_json *j, struct frame_table *ft,
                               const struct mtl_tree_node *n, size_t *path, size_t depth,
                               int weights)
{
    double self = n->bytes;
    for (size_t i = 0; i < n->nchildren; i++)
        self -= n->children[i].bytes;
    if (depth > 0 && self > 0.5) {
        if (weights) {
            mtl_json_number(j, self);
        } else {
            mtl_json_begin_array(j);
            for (size_t i = 0; i < depth; i++)
                mtl_json_uint(j, path[i]);
            mtl_json_end(j);
        }
    }
    if (depth >= MTL_TREE_MAX_DEPTH)
        return;
    for (size_t i = 0; i < n->nchildren; i++) {
        path[depth] = frame_index(ft, &n->children[i].where);
        speedscope_samples(j, ft, &n->children[i], path, depth + 1, weights);
    }
}

int mtl_render_speedscope(struct mtl_buf *b, const char *name,
                          const struct mtl_speedscope_profile *p, size_t n)
{
    struct frame_table ft = { .index = MTL_HMAP_INIT };
    size_t path[MTL_TREE_MAX_DEPTH + 1];
    struct mtl_json j;
    mtl_json_init(&j, b);
    mtl_json_begin_object(&j);
    mtl_json_kv_string(&j, "$schema", "https://www.speedscope.app/file-format-schema.json");
    mtl_json_kv_string(&j, "exporter", "memtally");
    mtl_json_kv_string(&j, "name", name);
    mtl_json_kv_uint(&j, "activeProfileIndex", 0);
    mtl_json_key(&j, "profiles");
    mtl_json_begin_array(&j);
    for (size_t i = 0; i < n; i++) {
        mtl_json_begin_object(&j);
        mtl_json_kv_string(&j, "type", "sampled");
        mtl_json_kv_string(&j, "name", p[i].name);
        mtl_json_kv_string(&j, "unit", "bytes");
        mtl_json_kv_uint(&j, "startValue", 0);
        mtl_json_kv_number(&j, "endValue", p[i].tree->root.bytes);
        mtl_json_key(&j, "samples");
        mtl_json_begin_array(&j);
        speedscope_samples(&j, &ft, &p[i].tree->root, path, 0, 0);
        mtl_json_end(&j);
        mtl_json_key(&j, "weights");
        mtl_json_begin_array(&j);
        speedscope_samples(&j, &ft, &p[i].tree->root, path, 0, 1);
        mtl_json_end(&j);
        mtl_json_end(&j);
    }
    mtl_json_end(&j);
    mtl_json_key(&j, "shared");
    mtl_json_begin_object(&j);
    mtl_json_key(&j, "frames");
    mtl_json_begin_array(&j);
    for (size_t i = 0; i < ft.n; i++) {
        const struct mtl_location *w = ft.frames[i];
        mtl_json_begin_object(&j);
        mtl_json_kv_string(&j, "name", w->function ? w->function : "?");
        if (w->file)
            mtl_json_kv_string(&j, "file", w->file);
        if (w->line)
            mtl_json_kv_uint(&j, "line", w->line);
        mtl_json_end(&j);
    }
    mtl_json_end(&j);
    mtl_json_end(&j);
    mtl_json_end(&j);
    mtl_buf_addc(b, '\n');
    int failed = ft.failed;
    free(ft.frames);
    mtl_hmap_release(&ft.index);
    return failed ? -1 : 0;
}

/* --- massif ------------------------------------------------------------------ */

#define MASSIF_ROOT "(heap allocation functions) malloc/new/new[], --alloc-fns, etc."

static void massif_location(struct mtl_buf *b, const struct mtl_location *w)
{
    mtl_buf_adds(b, w->function ? w->function : "???");
    if (w->file)
        mtl_buf_addf(b, " (%s:%u)", w->file, w->line);
}

/* A node of a tree from the sites through their callers, as massif nests
 * them: one space of indentation a level. */
static void massif_node(struct mtl_buf *b, const struct mtl_tree_node *n, size_t depth)
{
    mtl_buf_pad(b, ' ', depth);
    mtl_buf_addf(b, "n%zu: %.0f ", n->nchildren, n->bytes);
    if (depth == 0)
        mtl_buf_adds(b, MASSIF_ROOT);
    else if (n->merged)
        mtl_buf_addf(b, "in %zu places, all below massif's threshold (1.00%%)", n->merged);
    else
        massif_location(b, &n->where);
    mtl_buf_addc(b, '\n');
    for (size_t i = 0; i < n->nchildren; i++)
        massif_node(b, &n->children[i], depth + 1);
}

void mtl_render_massif(struct mtl_buf *b, const char *cmd,
                       const struct mtl_massif_snapshot *s, size_t n)
{
    mtl_buf_adds(b, "desc: memtally export --format massif\n");
    mtl_buf_addf(b, "cmd: %s\ntime_unit: ms\n", cmd && *cmd ? cmd : "(unknown)");
    for (size_t i = 0; i < n; i++) {
        mtl_buf_addf(b, "#-----------\nsnapshot=%zu\n#-----------\n", i);
        mtl_buf_addf(b, "time=%llu\nmem_heap_B=%.0f\nmem_heap_extra_B=0\nmem_stacks_B=0\n",
                     (unsigned long long)(s[i].time_us / 1000), s[i].heap);
        if (s[i].peak_rows) {
            /* The peak: its sites, exact in event order. */
            const struct mtl_rows *rows = s[i].peak_rows;
            mtl_buf_addf(b, "heap_tree=peak\nn%zu: %.0f " MASSIF_ROOT "\n", rows->n, s[i].heap);
            for (size_t r = 0; r < rows->n; r++) {
                struct mtl_location w = { .function = rows->row[r].function,
                                          .file = rows->row[r].file,
                                          .line = rows->row[r].line };
                mtl_buf_addf(b, " n0: %.0f ", rows->row[r].bytes);
                massif_location(b, &w);
                mtl_buf_addc(b, '\n');
            }
        } else if (s[i].tree) {
            mtl_buf_adds(b, "heap_tree=detailed\n");
            massif_node(b, &s[i].tree->root, 0);
        } else {
            mtl_buf_adds(b, "heap_tree=empty\n");
        }
    }
}
