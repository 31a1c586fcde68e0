/* stacks.c: the target stacks' text and JSON (docs/ANALYSIS.md, stacks). */
#include <string.h>

#include "render/render.h"

void mtl_render_stacks(struct mtl_buf *b, const struct mtl_stacks *s,
                       const struct mtl_stacks_options *o,
                       const struct mtl_render_options *ro)
{
    char size[32];
    if (ro->json) {
        struct mtl_json j;
        mtl_json_init(&j, b);
        mtl_json_begin_object(&j);
        mtl_render_json_head(&j, &s->head);
        if (o->target_type)
            mtl_json_kv_string(&j, "target_type", o->target_type);
        else
            mtl_json_kv_string(&j, "target", o->target);
        mtl_json_kv_uint(&j, "depth", o->depth);
        mtl_json_kv_number(&j, "blocks", s->blocks);
        mtl_json_key(&j, "rows");
        mtl_json_begin_array(&j);
        for (size_t g = 0; g < s->ngroups; g++) {
            const struct mtl_stack_group *gr = &s->groups[g];
            mtl_json_begin_object(&j);
            mtl_json_kv_number(&j, "count", gr->count);
            mtl_json_kv_number(&j, "bytes", gr->bytes);
            mtl_json_kv_fixed(&j, "percent", gr->percent, 4);
            mtl_json_key(&j, "frames");
            mtl_json_begin_array(&j);
            for (size_t k = 0; k < gr->n; k++)
                mtl_render_json_frame(&j, &gr->frames[k]);
            mtl_json_end(&j);
            mtl_json_end(&j);
        }
        mtl_json_end(&j);
        mtl_json_end(&j);
        mtl_buf_addc(b, '\n');
        return;
    }
    mtl_render_text_head(b, &s->head);
    if (o->target_type)
        mtl_buf_addf(b, "%.0f blocks (%s) of type '%s'; stacks cut to %zu frames from the site\n",
                     s->blocks, mtl_human_bytes(size, sizeof size, s->bytes), o->target_type,
                     o->depth);
    else
        mtl_buf_addf(b, "%.0f blocks (%s) allocated in functions matching '%s'; stacks cut to "
                        "%zu frames\n",
                     s->blocks, mtl_human_bytes(size, sizeof size, s->bytes), o->target, o->depth);
    for (size_t g = 0; g < s->ngroups; g++) {
        const struct mtl_stack_group *gr = &s->groups[g];
        mtl_buf_addf(b, "\n%.0f blocks (%.2f%%), %s\n", gr->count, gr->percent,
                     mtl_human_bytes(size, sizeof size, gr->bytes));
        for (size_t k = 0; k < gr->n; k++) {
            const struct mtl_location *l = &gr->frames[k];
            const char *base = l->file ? strrchr(l->file, '/') : NULL;
            base = base ? base + 1 : l->file;
            mtl_buf_addf(b, "    #%zu %s", k, l->function);
            if (base && l->line)
                mtl_buf_addf(b, " (%s:%u)", base, l->line);
            else if (base)
                mtl_buf_addf(b, " (%s)", base);
            mtl_buf_addf(b, "%s\n", l->inlined ? " [inlined]" : "");
        }
    }
    if (!s->ngroups)
        mtl_buf_addf(b, "no stack %s '%s'%s\n", o->target_type ? "creates a" : "reaches",
                     o->target_type ? o->target_type : o->target,
                     s->nreaching ? " often enough (--min-count)" : "");
}
