/*
 * dhat.c: stack figures as DHAT's JSON (dhatFileVersion 2, mode "heap"),
 * which valgrind's dh_view.html opens.
 *
 * A program point per call stack with what memtally knows of its blocks:
 * total bytes and blocks (tb, tbk), their lifetimes added up (tl), the
 * stack's own highest live bytes and its blocks then (mb, mbk), live at
 * the global peak (gb, gbk) and at the end (eb, ebk).  Time is in
 * microseconds ("tu": "µs", so "Mtu", a million of them, is "s"), not in
 * instructions as DHAT counts it.  Accesses are not known to memtally:
 * "bkacc" is false and rb, wb and acc are left out, as DHAT's own files
 * without access data have them.  Frames: one entry of "ftbl" per
 * function, an inlined one before the function it is inlined into, as
 * DHAT writes "0xADDR: function (file:line)", "(in module)" when the line
 * is unknown; entry 0 is "[root]".
 */
#include "render/render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/intern.h"

/* Blocks that lived this long or less are "short-lived" in dh_view; DHAT
 * counts 500 instructions, memtally microseconds. */
#define DHAT_SHORT_LIVED_US 500

static void frame_name(char *out, size_t cap, const struct mtl_stack_frame *fr,
                       const struct mtl_location *w)
{
    const char *name = w->function ? w->function : "???";
    /* A runtime's custom frame has no address. */
    int n = fr->addr ? snprintf(out, cap, "0x%llX: %s", (unsigned long long)fr->addr, name)
                     : snprintf(out, cap, "%s", name);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (w->file && w->line)
        snprintf(out + n, cap - (size_t)n, " (%s:%u)", w->file, w->line);
    else if (w->module && *w->module)
        snprintf(out + n, cap - (size_t)n, " (in %s)", w->module);
}

int mtl_render_dhat(struct mtl_buf *b, const struct mtl_stack_figures *s)
{
    struct mtl_intern ftbl = MTL_INTERN_INIT;
    uint32_t id;
    int failed = mtl_intern_str(&ftbl, "[root]", &id) < 0;
    struct mtl_json j;
    mtl_json_init(&j, b);
    mtl_json_begin_object(&j);
    mtl_json_kv_uint(&j, "dhatFileVersion", 2);
    mtl_json_kv_string(&j, "mode", "heap");
    mtl_json_kv_string(&j, "verb", "Allocated");
    mtl_json_kv_bool(&j, "bklt", 1);
    mtl_json_kv_bool(&j, "bkacc", 0);
    mtl_json_kv_string(&j, "tu", "µs");
    mtl_json_kv_string(&j, "Mtu", "s");
    mtl_json_kv_uint(&j, "tuth", DHAT_SHORT_LIVED_US);
    mtl_json_kv_string(&j, "cmd", s->trace.command_line && *s->trace.command_line
                                      ? s->trace.command_line : s->trace.program);
    mtl_json_kv_uint(&j, "pid", s->trace.pid);
    mtl_json_kv_uint(&j, "te", s->end_us);
    mtl_json_kv_uint(&j, "tg", s->peak_us);
    mtl_json_key(&j, "pps");
    mtl_json_begin_array(&j);
    char name[1024];
    for (size_t i = 0; i < s->n && !failed; i++) {
        const struct mtl_stack_figure *f = &s->figures[i];
        mtl_json_begin_object(&j);
        mtl_json_kv_number(&j, "tb", round(f->alloc_bytes));
        mtl_json_kv_number(&j, "tbk", round(f->alloc_calls));
        mtl_json_kv_number(&j, "tl", round(f->life_us));
        mtl_json_kv_number(&j, "mb", round(f->max_bytes));
        mtl_json_kv_number(&j, "mbk", round(f->max_calls));
        mtl_json_kv_number(&j, "gb", round(f->peak_bytes));
        mtl_json_kv_number(&j, "gbk", round(f->peak_calls));
        mtl_json_kv_number(&j, "eb", round(f->end_bytes));
        mtl_json_kv_number(&j, "ebk", round(f->end_calls));
        mtl_json_key(&j, "fs");
        mtl_json_begin_array(&j);
        for (uint32_t k = f->frame; k != MTL_NO_FRAME && !failed; k = s->frames[k].parent) {
            const struct mtl_stack_frame *fr = &s->frames[k];
            for (size_t l = 0; l < fr->nlocs; l++) {
                frame_name(name, sizeof name, fr, &s->locs[fr->first + l]);
                if (mtl_intern_str(&ftbl, name, &id) < 0)
                    failed = 1;
                mtl_json_uint(&j, id);
            }
        }
        if (f->frame == MTL_NO_FRAME && !failed) {
            failed = mtl_intern_str(&ftbl, "(no stack)", &id) < 0;
            mtl_json_uint(&j, id);
        }
        mtl_json_end(&j);
        mtl_json_end(&j);
    }
    mtl_json_end(&j);
    mtl_json_key(&j, "ftbl");
    mtl_json_begin_array(&j);
    for (uint32_t k = 0; k < ftbl.n; k++)
        mtl_json_string(&j, mtl_intern_at(&ftbl, k, NULL));
    mtl_json_end(&j);
    mtl_json_end(&j);
    mtl_buf_addc(b, '\n');
    mtl_intern_release(&ftbl);
    return failed ? -1 : 0;
}
