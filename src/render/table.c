/*
 * table.c: what every renderer shares: the one table layout, banners,
 * notes, and the JSON of locations and frames.
 *
 * The layout: a name column as wide as its widest entry (cut with "..."
 * beyond the width asked for), then right-aligned figures: TEMPORARY 12,
 * CALLS (or BLOCKS) 12, BYTES 14, PER CALL 10, % 7.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render.h"

const char *mtl_human_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    double neg = bytes < 0 ? -1 : 1;
    bytes *= neg;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%.0f B", neg * bytes);
    else
        snprintf(buf, cap, "%.1f %s", neg * bytes, unit[u]);
    return buf;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *mtl_render_row_label(const struct mtl_row *row, char *buf, size_t cap)
{
    char tmp[64];
    const char *name = mtl_row_name(row, tmp, sizeof tmp);
    if (row->function && row->file && row->line)
        snprintf(buf, cap, "%s (%s:%u)", name, base_name(row->file), row->line);
    else if (row->function && row->file)
        snprintf(buf, cap, "%s (%s)", name, base_name(row->file));
    else
        snprintf(buf, cap, "%s", name);
    return buf;
}

/* A location as one line: "function (file.c:12) [inlined]". */
static void location_text(struct mtl_buf *b, const struct mtl_location *l)
{
    mtl_buf_adds(b, l->function);
    if (l->file && l->line)
        mtl_buf_addf(b, " (%s:%u)", base_name(l->file), l->line);
    else if (l->file)
        mtl_buf_addf(b, " (%s)", base_name(l->file));
    if (l->inlined)
        mtl_buf_adds(b, " [inlined]");
}

/* Appends s in a column of width w (left-aligned), cut with "..." when
 * longer. */
static void name_cell(struct mtl_buf *b, const char *s, size_t w)
{
    size_t len = strlen(s);
    if (len > w && w > 3) {
        mtl_buf_add(b, s, w - 3);
        mtl_buf_adds(b, "...");
        return;
    }
    mtl_buf_adds(b, s);
    if (len < w)
        mtl_buf_pad(b, ' ', w - len);
}

static void figures(struct mtl_buf *b, const struct mtl_table_spec *spec, double extra,
                    double calls, double bytes, double percent)
{
    if (spec->extra)
        mtl_buf_addf(b, " %12.0f", extra);
    mtl_buf_addf(b, " %12.0f %14.0f", calls, bytes);
    if (spec->per_call)
        mtl_buf_addf(b, " %10.0f", calls > 0 ? bytes / calls : 0);
    mtl_buf_addf(b, " %7.2f\n", percent);
}

static void paths_text(struct mtl_buf *b, const struct mtl_row *row, size_t stacks)
{
    char size[32];
    for (size_t p = 0; p < row->npaths && p < stacks; p++) {
        const struct mtl_path *path = &row->paths[p];
        mtl_buf_addf(b, "    %.0f call%s, %s, from:\n", path->calls, path->calls == 1 ? "" : "s",
                     mtl_human_bytes(size, sizeof size, path->bytes));
        for (size_t k = 0; k < path->n; k++) {
            mtl_buf_addf(b, "      #%zu ", k);
            location_text(b, &path->frames[k]);
            mtl_buf_addc(b, '\n');
        }
    }
}

void mtl_render_table(struct mtl_buf *b, const struct mtl_rows *rows,
                      const struct mtl_table_spec *spec, size_t width, size_t stacks)
{
    char label[1024];
    size_t w = strlen(spec->key);
    for (size_t i = 0; i < rows->n; i++) {
        size_t len = strlen(mtl_render_row_label(&rows->row[i], label, sizeof label));
        if (len > w)
            w = len;
    }
    if (spec->total && w < 5)
        w = 5;
    if (width && w > width)
        w = width > 8 ? width : 8;
    name_cell(b, spec->key, w);
    if (spec->extra)
        mtl_buf_addf(b, " %12s", spec->extra);
    mtl_buf_addf(b, " %12s %14s", spec->calls, "BYTES");
    if (spec->per_call)
        mtl_buf_addf(b, " %10s", "PER CALL");
    mtl_buf_addf(b, " %7s\n", "%");
    for (size_t i = 0; i < rows->n; i++) {
        const struct mtl_row *row = &rows->row[i];
        name_cell(b, mtl_render_row_label(row, label, sizeof label), w);
        figures(b, spec, row->extra, row->calls, row->bytes, row->percent);
        paths_text(b, row, stacks);
    }
    if (rows->cut)
        mtl_buf_addf(b, "... %zu more\n", rows->cut);
    if (spec->total) {
        name_cell(b, "total", w);
        figures(b, spec, rows->extra, rows->calls, rows->bytes, rows->bytes > 0 ? 100.0 : 0.0);
    }
}

void mtl_render_banner(struct mtl_buf *b, const char *title, double percent,
                       double bytes, double calls)
{
    mtl_buf_addf(b, "== %s: %.2f%% of all bytes, %.0f bytes in %.0f calls ==\n", title,
                 percent, bytes, calls);
}

void mtl_render_text_head(struct mtl_buf *b, const struct mtl_result_head *h)
{
    char rate[32];
    if (h->estimated)
        mtl_buf_addf(b, "(a sampled trace, one sample per %s on average: calls and bytes "
                        "are estimates)\n\n",
                     mtl_human_bytes(rate, sizeof rate, (double)h->sample_rate));
    if (h->attached)
        mtl_buf_adds(b, "(recorded from an attach to the running program: what it held before "
                        "is not in the trace;\n memtally heap PID shows it while it runs)\n\n");
}

void mtl_render_skipped(struct mtl_buf *b, const struct mtl_rows *rows)
{
    if (!rows->nskipped)
        return;
    char size[32];
    mtl_buf_adds(b, "\nsites are the callers of allocation wrappers and of functions with "
                    "no symbol, passed over:\n");
    size_t n = rows->nskipped < 5 ? rows->nskipped : 5;
    for (size_t i = 0; i < n; i++)
        mtl_buf_addf(b, "  %s (%s in %.0f call%s)\n", rows->skipped[i].function,
                     mtl_human_bytes(size, sizeof size, rows->skipped[i].bytes),
                     rows->skipped[i].calls, rows->skipped[i].calls == 1 ? "" : "s");
    if (rows->nskipped > n)
        mtl_buf_addf(b, "  ... %zu more\n", rows->nskipped - n);
    mtl_buf_adds(b, "(--keep-alloc-frames shows them as sites)\n");
}

void mtl_render_json_skipped(struct mtl_json *j, const struct mtl_rows *rows)
{
    mtl_json_key(j, "skipped");
    mtl_json_begin_array(j);
    for (size_t i = 0; i < rows->nskipped; i++) {
        mtl_json_begin_object(j);
        mtl_json_kv_string(j, "function", rows->skipped[i].function);
        mtl_json_kv_number(j, "calls", rows->skipped[i].calls);
        mtl_json_kv_number(j, "bytes", rows->skipped[i].bytes);
        mtl_json_end(j);
    }
    mtl_json_end(j);
}

void mtl_render_json_location(struct mtl_json *j, const struct mtl_row *row)
{
    mtl_json_kv_string(j, "function", row->function);
    mtl_json_kv_string(j, "file", row->file);
    mtl_json_key(j, "line");
    if (row->line)
        mtl_json_uint(j, row->line);
    else
        mtl_json_null(j);
}

void mtl_render_json_frame(struct mtl_json *j, const struct mtl_location *l)
{
    mtl_json_begin_object(j);
    mtl_json_kv_string(j, "function", l->function);
    mtl_json_kv_string(j, "file", l->file);
    mtl_json_key(j, "line");
    if (l->line)
        mtl_json_uint(j, l->line);
    else
        mtl_json_null(j);
    mtl_json_kv_string(j, "module", l->module);
    mtl_json_kv_bool(j, "inlined", l->inlined);
    mtl_json_end(j);
}

void mtl_render_json_head(struct mtl_json *j, const struct mtl_result_head *h)
{
    if (h->attached)
        mtl_json_kv_bool(j, "attached", 1);
    if (!h->estimated)
        return;
    mtl_json_kv_bool(j, "estimated", 1);
    mtl_json_kv_uint(j, "sample_rate", h->sample_rate);
}
