/* heap.c: `memtally heap`'s text and JSON (docs/ANALYSIS.md, heap): a
 * running process's live heap, grouped, with its largest blocks and a peek
 * at their first bytes. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "render/render.h"

void mtl__render_json_sites(struct mtl_json *j, const struct mtl_rows *rows, int with_stack);

static const char *by_name(enum mtl_heap_by by)
{
    return by == MTL_HEAP_BY_TYPE     ? "type"
           : by == MTL_HEAP_BY_THREAD ? "thread"
           : by == MTL_HEAP_BY_SIZE   ? "size"
                                      : "site";
}

static void peek_hex(struct mtl_buf *b, const struct mtl_live_block *x)
{
    for (size_t i = 0; i < x->npeek; i++)
        mtl_buf_addf(b, "%s%02x", i ? " " : "", x->peek[i]);
}

static void peek_text(struct mtl_buf *b, const struct mtl_live_block *x)
{
    for (size_t i = 0; i < x->npeek; i++)
        mtl_buf_addc(b, isprint(x->peek[i]) ? (char)x->peek[i] : '.');
}

static void json_groups(struct mtl_json *j, const struct mtl_heap_snapshot *h)
{
    if (h->by == MTL_HEAP_BY_SITE) {
        mtl__render_json_sites(j, &h->rows, 0);
        return;
    }
    mtl_json_key(j, "rows");
    mtl_json_begin_array(j);
    if (h->by == MTL_HEAP_BY_SIZE) {
        for (size_t i = 0; i < h->sizes.n; i++) {
            const struct mtl_histogram_bucket *k = &h->sizes.buckets[i];
            mtl_json_begin_object(j);
            mtl_json_kv_uint(j, "min", k->min);
            mtl_json_kv_uint(j, "max", k->max);
            mtl_json_kv_number(j, "blocks", k->calls);
            mtl_json_kv_number(j, "bytes", k->bytes);
            mtl_json_end(j);
        }
    }
    for (size_t i = 0; h->by != MTL_HEAP_BY_SIZE && i < h->rows.n; i++) {
        const struct mtl_row *r = &h->rows.row[i];
        mtl_json_begin_object(j);
        if (h->by == MTL_HEAP_BY_TYPE) {
            mtl_json_kv_string(j, "type", r->type);
        } else {
            mtl_json_kv_uint(j, "tid", r->tid);
            mtl_json_kv_uint(j, "index", r->thread);
            mtl_json_kv_string(j, "name", r->thread_name ? r->thread_name : "");
        }
        mtl_json_kv_number(j, "blocks", r->calls);
        mtl_json_kv_number(j, "bytes", r->bytes);
        mtl_json_kv_fixed(j, "percent", r->percent, 4);
        mtl_json_end(j);
    }
    mtl_json_end(j);
}

static void json_largest(struct mtl_json *j, struct mtl_buf *tmp, const struct mtl_heap_snapshot *h)
{
    mtl_json_key(j, "largest");
    mtl_json_begin_array(j);
    for (size_t i = 0; i < h->nlargest; i++) {
        const struct mtl_live_block *x = &h->largest[i];
        char addr[32];
        snprintf(addr, sizeof addr, "0x%" PRIx64, x->ptr);
        mtl_json_begin_object(j);
        mtl_json_kv_string(j, "address", addr);
        mtl_json_kv_uint(j, "size", x->size);
        mtl_json_kv_uint(j, "age_us", h->at_us - x->alloc_us);
        mtl_json_kv_uint(j, "thread", x->thread);
        mtl_json_kv_uint(j, "tid", x->tid);
        mtl_json_kv_string(j, "type", x->type);
        mtl_json_key(j, "stack");
        mtl_json_begin_array(j);
        for (size_t k = 0; k < x->nframes; k++)
            mtl_render_json_frame(j, &x->frames[k]);
        mtl_json_end(j);
        tmp->len = 0;
        peek_hex(tmp, x);
        mtl_buf_addc(tmp, '\0');
        mtl_json_kv_string(j, "peek_hex", tmp->data ? tmp->data : "");
        tmp->len = 0;
        peek_text(tmp, x);
        mtl_buf_addc(tmp, '\0');
        mtl_json_kv_string(j, "peek_text", tmp->data ? tmp->data : "");
        if (x->peek_errno)
            mtl_json_kv_string(j, "peek_error", strerror(x->peek_errno));
        mtl_json_end(j);
    }
    mtl_json_end(j);
}

void mtl_render_heap(struct mtl_buf *b, const struct mtl_heap_snapshot *h, int pid,
                     const char *program, const struct mtl_render_options *ro)
{
    char x[32];
    if (ro->json) {
        struct mtl_json j;
        struct mtl_buf tmp = MTL_BUF_INIT;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &h->head);
        mtl_json_kv_uint(&j, "pid", (uint64_t)pid);
        mtl_json_kv_string(&j, "program", program);
        mtl_json_kv_bool(&j, "recorded", 1);
        mtl_json_kv_uint(&j, "at_us", h->at_us);
        mtl_json_kv_number(&j, "live_bytes", h->live_bytes);
        mtl_json_kv_number(&j, "live_blocks", h->live_blocks);
        mtl_json_kv_string(&j, "by", by_name(h->by));
        if (h->have_rss)
            mtl_json_kv_uint(&j, "rss_bytes", h->rss);
        if (h->have_malloc) {
            mtl_json_key(&j, "malloc");
            mtl_json_begin_object(&j);
            mtl_json_kv_uint(&j, "in_use_bytes", h->malloc_in_use);
            mtl_json_kv_uint(&j, "free_bytes", h->malloc_free);
            mtl_json_kv_uint(&j, "arena_bytes", h->malloc_arena);
            mtl_json_kv_uint(&j, "free_chunks", h->malloc_free_chunks);
            mtl_json_end(&j);
        }
        json_groups(&j, h);
        json_largest(&j, &tmp, h);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        mtl_buf_release(&tmp);
        return;
    }
    mtl_render_text_head(b, &h->head);
    mtl_buf_addf(b, "live heap of pid %d (%s), %.3f s into its recording: %s in %.0f blocks\n",
                 pid, program, (double)h->at_us / 1e6,
                 mtl_human_bytes(x, sizeof x, h->live_bytes), h->live_blocks);
    char y[32], z[32];
    if (h->have_malloc)
        mtl_buf_addf(b, "glibc's malloc (mallinfo2): %s in use, %s held free in %llu chunks of "
                        "the %s its arenas hold\n",
                     mtl_human_bytes(x, sizeof x, (double)h->malloc_in_use),
                     mtl_human_bytes(y, sizeof y, (double)h->malloc_free),
                     (unsigned long long)h->malloc_free_chunks,
                     mtl_human_bytes(z, sizeof z, (double)h->malloc_arena));
    if (h->have_rss)
        mtl_buf_addf(b, "resident: %s\n", mtl_human_bytes(x, sizeof x, (double)h->rss));
    mtl_buf_addc(b, '\n');
    if (h->by == MTL_HEAP_BY_SIZE) {
        mtl_buf_addf(b, "%-24s %12s %14s\n", "SIZE", "BLOCKS", "BYTES");
        for (size_t i = 0; i < h->sizes.n; i++) {
            const struct mtl_histogram_bucket *k = &h->sizes.buckets[i];
            char range[48];
            snprintf(range, sizeof range, "%" PRIu64 "..%" PRIu64, k->min, k->max);
            mtl_buf_addf(b, "%-24s %12.0f %14.0f\n", range, k->calls, k->bytes);
        }
    } else if (h->rows.n) {
        struct mtl_table_spec spec = { h->by == MTL_HEAP_BY_TYPE     ? "TYPE"
                                       : h->by == MTL_HEAP_BY_THREAD ? "THREAD"
                                                                     : "SITE",
                                       "BLOCKS", NULL, 0, 0 };
        mtl_render_table(b, &h->rows, &spec, ro->width, ro->stacks);
    }
    if (!h->nlargest)
        return;
    mtl_buf_adds(b, "\nlargest live blocks (their first bytes read after the snapshot):\n");
    for (size_t i = 0; i < h->nlargest; i++) {
        const struct mtl_live_block *l = &h->largest[i];
        mtl_buf_addf(b, "%s at 0x%" PRIx64 ", %.3f s old, thread %u (t%u)%s%s\n",
                     mtl_human_bytes(x, sizeof x, (double)l->size), l->ptr,
                     (double)(h->at_us - l->alloc_us) / 1e6, l->tid, l->thread,
                     l->type ? ", type " : "", l->type ? l->type : "");
        if (l->npeek) {
            mtl_buf_adds(b, "    ");
            peek_hex(b, l);
            mtl_buf_adds(b, "  |");
            peek_text(b, l);
            mtl_buf_adds(b, "|\n");
        } else if (l->peek_errno) {
            mtl_buf_addf(b, "    (its bytes cannot be read: %s)\n", strerror(l->peek_errno));
        }
        /* The innermost frames: enough to place it (JSON has them all). */
        for (size_t k = 0; k < l->nframes && k < 4; k++) {
            const struct mtl_location *f = &l->frames[k];
            const char *base = f->file ? strrchr(f->file, '/') : NULL;
            mtl_buf_addf(b, "    %s", f->function);
            if (f->file && f->line)
                mtl_buf_addf(b, " (%s:%u)", base ? base + 1 : f->file, f->line);
            mtl_buf_addc(b, '\n');
        }
    }
}
