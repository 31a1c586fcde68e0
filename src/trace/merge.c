/* merge.c: see merge.h. */
#include "trace/merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hex.h"
#include "common/intern.h"
#include "memtally/errors.h"
#include "memtally/trace.h"

/* Where output module k is placed: 16 GiB apart, far below where Linux
 * maps programs and libraries (frames outside any module keep their
 * address there). */
#define MODULE_SPACING (1ull << 34)
/* An input's number goes in the bits of a block's address above these. */
#define INPUT_SHIFT 48

struct input {
    struct mtl_reader *r;
    const struct mtl_trace_info *info;
    struct mtl_event ev;     /* the next event, when has_ev */
    int has_ev, done;
    int damaged;             /* reading stopped at damage, not at its end */
    uint64_t offset_us;      /* its time 0 on the merged clock */
    uint32_t *node_map;      /* input node -> output node + 1 */
    size_t node_cap;
    uint32_t *thread_map;    /* input thread -> output thread + 1 */
    size_t thread_cap;
    uint32_t *module_map;    /* input module -> output module + 1 */
    size_t module_cap;
    uint32_t *string_map;    /* input string -> output string id */
    size_t string_cap;
    uint64_t rss;            /* its last RSS, 0 once it ended */
    uint64_t allocations;
};

struct merge {
    struct mtl_encoder *e;
    const struct mtl_merge_options *o;
    struct input *in;
    size_t n;
    struct mtl_intern modules;  /* build id (or path) -> output module */
    uint64_t *module_base;      /* output module -> its load bias */
    size_t module_base_cap;
    struct mtl_intern nodes;    /* (parent, kind, frame) -> output node - 1 */
    uint64_t *node_addr;        /* output node -> its address (0: custom) */
    size_t node_addr_cap;
    struct mtl_intern strings;  /* text -> output string id - 1 */
    uint32_t threads;
    uint32_t *thread_input;     /* output thread -> input */
    size_t thread_input_cap;
    uint64_t last_us, rss;
    struct mtl_merge_failure *why;
};

/* Notes why the merge fails (about input k); returns -1. */
static int fail(struct merge *m, enum mtl_merge_why why, size_t k, int code)
{
    m->why->why = why;
    m->why->input = k;
    m->why->code = code;
    return -1;
}

static int oom(struct merge *m)
{
    return fail(m, MTL_MERGE_NOMEM, 0, 0);
}

/* A map entry: table[i], grown (zeroed) to hold it. */
static uint32_t *slot(struct merge *m, uint32_t **table, size_t *cap, uint32_t i)
{
    if (mtl_grow_zeroed((void **)table, cap, (size_t)i + 1, sizeof **table, 64) < 0) {
        oom(m);
        return NULL;
    }
    return &(*table)[i];
}

/* ---- definitions ------------------------------------------------------------ */

static int define_module(struct merge *m, struct input *in, uint32_t index, uint64_t time_us)
{
    const struct mtl_module *mod = mtl_reader_module(in->r, index);
    if (!mod || !mod->path)
        return 0;
    /* One output module per build id, or per path without one. */
    char key[160];
    size_t klen;
    if (mod->build_id_size) {
        key[0] = 'b';
        klen = 1 + mtl_hex(key + 1, sizeof key - 1, mod->build_id, mod->build_id_size);
    } else {
        klen = (size_t)snprintf(key, sizeof key, "p%s", mod->path);
        if (klen >= sizeof key)
            klen = sizeof key - 1;
    }
    uint32_t id;
    int rc = mtl_intern_add(&m->modules, key, klen, &id);
    uint32_t *map = slot(m, &in->module_map, &in->module_cap, index);
    if (rc < 0 || !map ||
        mtl_grow_zeroed((void **)&m->module_base, &m->module_base_cap, (size_t)id + 1,
                        sizeof *m->module_base, 64) < 0)
        return oom(m);
    *map = id + 1;
    if (rc == 1) {
        struct mtl_module out = *mod;
        out.index = id;
        out.base = (uint64_t)(id + 1) * MODULE_SPACING;
        out.load_us = time_us;
        out.unload_us = 0;
        m->module_base[id] = out.base;
        /* Output modules stay loaded to the end: their places never overlap. */
        mtl_encoder_put_module(m->e, id, &out);
    }
    return 0;
}

static int map_string(struct merge *m, struct input *in, uint32_t sid, uint32_t *out)
{
    uint32_t *map = slot(m, &in->string_map, &in->string_cap, sid);
    if (!map)
        return -1;
    if (!*map) {
        const char *text = mtl_reader_string(in->r, sid);
        uint32_t id;
        int rc = mtl_intern_str(&m->strings, text ? text : "", &id);
        if (rc < 0)
            return oom(m);
        if (rc == 1)
            mtl_encoder_put_string(m->e, id + 1, text ? text : "");
        *map = id + 1;
    }
    *out = *map;
    return 0;
}

/* The output node of input node id, defined (with its parents) if new. */
static int map_node(struct merge *m, struct input *in, uint32_t id, uint32_t *out)
{
    if (id == 0) {
        *out = 0;
        return 0;
    }
    uint32_t *map = slot(m, &in->node_map, &in->node_cap, id);
    if (!map)
        return -1;
    if (*map) {
        *out = *map - 1;
        return 0;
    }
    uint32_t parent, pout;
    struct mtl_frame f;
    /* Stacks are at most a few hundred frames deep: recursion is fine. */
    if (mtl_reader_stack_node(in->r, id, &parent, &f) < 0)
        return fail(m, MTL_MERGE_DAMAGED, (size_t)(in - m->in), 0);
    if (map_node(m, in, parent, &pout) < 0)
        return -1;
    struct { uint32_t parent, custom; uint64_t value; } key = { pout, 0, 0 };
    if (f.kind == MTL_FRAME_CUSTOM) {
        uint32_t sid;
        if (map_string(m, in, f.name, &sid) < 0)
            return -1;
        key.custom = 1;
        key.value = sid;
    } else {
        uint32_t mod = f.module != UINT32_MAX && f.module < in->module_cap
                           ? in->module_map[f.module] : 0;
        const struct mtl_module *im = mod ? mtl_reader_module(in->r, f.module) : NULL;
        key.value = im ? f.addr - im->base + m->module_base[mod - 1] : f.addr;
    }
    uint32_t k;
    int rc = mtl_intern_add(&m->nodes, &key, sizeof key, &k);
    if (rc < 0 ||
        mtl_grow_zeroed((void **)&m->node_addr, &m->node_addr_cap, (size_t)k + 2,
                        sizeof *m->node_addr, 1024) < 0)
        return oom(m);
    uint32_t node = k + 1;
    if (rc == 1) {
        m->node_addr[node] = key.custom ? 0 : key.value;
        mtl_encoder_put_node(m->e, node, pout, key.custom, key.value,
                             pout ? m->node_addr[pout] : 0);
    }
    /* The map may have moved while the parents were mapped. */
    in->node_map[id] = node + 1;
    *out = node;
    return 0;
}

/* Names output thread out after input thread `thread` and its input:
 * "NAME (run K)", or "NAME (pid P)" in a tree. */
static void name_thread(struct merge *m, size_t k, uint32_t thread, uint32_t out,
                        uint64_t time_us)
{
    struct input *in = &m->in[k];
    const struct mtl_thread *th = mtl_reader_thread(in->r, thread);
    const char *base = th && th->name && *th->name ? th->name : "";
    char name[256];
    if (m->o->tree)
        snprintf(name, sizeof name, "%s%s(pid %u)", base, *base ? " " : "", in->info->pid);
    else
        snprintf(name, sizeof name, "%s%s(run %zu)", base, *base ? " " : "", k + 1);
    struct mtl_event ev = { .type = MTL_EV_THREAD_NAME, .time_us = time_us, .thread = out };
    mtl_encoder_put_event(m->e, &ev, 0, name);
}

/* The output thread of an input thread, started (and named) if new. */
static int map_thread(struct merge *m, struct input *in, size_t k, uint32_t thread,
                      uint64_t time_us, uint32_t *out)
{
    uint32_t *map = slot(m, &in->thread_map, &in->thread_cap, thread);
    if (!map)
        return -1;
    if (!*map) {
        const struct mtl_thread *th = mtl_reader_thread(in->r, thread);
        uint32_t *owner = slot(m, &m->thread_input, &m->thread_input_cap, m->threads);
        if (!owner)
            return -1;
        *owner = (uint32_t)k;
        *map = m->threads++ + 1;
        struct mtl_event ev = { .type = MTL_EV_THREAD_START, .time_us = time_us,
                                .thread = *map - 1 };
        mtl_encoder_put_event(m->e, &ev, th ? th->tid : 0, NULL);
        name_thread(m, k, thread, *map - 1, time_us);
    }
    *out = *map - 1;
    return 0;
}

/* ---- events -------------------------------------------------------------------- */

static void put_rss(struct merge *m, uint64_t time_us)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < m->n; i++)
        sum += m->in[i].rss;
    if (sum == m->rss)
        return;
    m->rss = sum;
    struct mtl_event ev = { .type = MTL_EV_RSS, .time_us = time_us, .size = sum };
    mtl_encoder_put_event(m->e, &ev, 0, NULL);
}

/* Writes input k's event ev (on the merged clock at t). */
static int put(struct merge *m, size_t k, const struct mtl_event *src, uint64_t t)
{
    struct input *in = &m->in[k];
    struct mtl_event ev = *src;
    ev.time_us = t;
    m->last_us = t;
    uint32_t thread;
    switch (src->type) {
    case MTL_EV_MODULE_LOAD:
        return define_module(m, in, src->module, t);
    case MTL_EV_MODULE_UNLOAD:
        return 0; /* output modules stay loaded (merge.h) */
    case MTL_EV_RSS:
        in->rss = src->size;
        put_rss(m, t);
        return 0;
    case MTL_EV_THREAD_START:
        return map_thread(m, in, k, src->thread, t, &thread);
    case MTL_EV_THREAD_NAME:
        if (map_thread(m, in, k, src->thread, t, &thread) < 0)
            return -1;
        name_thread(m, k, src->thread, thread, t);
        return 0;
    case MTL_EV_THREAD_EXIT:
        if (map_thread(m, in, k, src->thread, t, &thread) < 0)
            return -1;
        ev.thread = thread;
        mtl_encoder_put_event(m->e, &ev, 0, NULL);
        return 0;
    case MTL_EV_GC_HEAP:
        mtl_encoder_put_event(m->e, &ev, 0, NULL); /* per input, as it came */
        return 0;
    case MTL_EV_CALLS:
        if (map_node(m, in, src->stack, &ev.stack) < 0 ||
            map_thread(m, in, k, src->thread, t, &ev.thread) < 0)
            return -1;
        mtl_encoder_put_event(m->e, &ev, 0, NULL);
        return 0;
    case MTL_EV_TAG:
        if (src->tag && map_string(m, in, src->tag, &ev.tag) < 0)
            return -1;
        ev.ptr = src->ptr ^ ((uint64_t)k << INPUT_SHIFT);
        mtl_encoder_put_event(m->e, &ev, 0, NULL);
        return 0;
    case MTL_EV_ALLOC:
        in->allocations += src->heap != MTL_HEAP_GC; /* malloc's, as the totals */
        if (map_node(m, in, src->stack, &ev.stack) < 0 ||
            (src->tag && map_string(m, in, src->tag, &ev.tag) < 0))
            return -1;
        /* fall through */
    case MTL_EV_FREE:
        if (map_thread(m, in, k, src->thread, t, &thread) < 0)
            return -1;
        ev.thread = thread;
        ev.ptr = src->ptr ^ ((uint64_t)k << INPUT_SHIFT);
        mtl_encoder_put_event(m->e, &ev, 0, NULL);
        return 0;
    }
    return 0;
}

/* Reads input k's next event; 0 at its end (then done), -1 on damage past
 * what was read (the trace is then merged as far as it goes: truncated). */
static int advance(struct merge *m, size_t k)
{
    struct input *in = &m->in[k];
    int rc = mtl_reader_next(in->r, &in->ev);
    in->has_ev = rc > 0;
    if (rc <= 0) {
        in->done = 1;
        if (in->rss) {
            in->rss = 0;
            put_rss(m, m->last_us);
        }
    }
    if (rc < 0)
        in->damaged = 1;
    return rc < 0 ? -1 : 0;
}

/* ---- checks --------------------------------------------------------------------- */

/* The build id of the program's own module, as hex ("" when unknown),
 * from a first look at the trace's modules. */
static void program_build_id(const char *path, const char *program, char *hex, size_t cap)
{
    struct mtl_reader *r;
    hex[0] = '\0';
    if (mtl_reader_open(&r, path) < 0)
        return;
    struct mtl_event ev;
    for (int i = 0; i < 100000 && mtl_reader_next(r, &ev) > 0; i++) {
        if (ev.type != MTL_EV_MODULE_LOAD)
            continue;
        const struct mtl_module *mod = mtl_reader_module(r, ev.module);
        if (mod && mod->path && (!strcmp(mod->path, program) || !*mod->path)) {
            mtl_hex(hex, cap, mod->build_id, mod->build_id_size);
            break;
        }
    }
    mtl_reader_close(r);
}

/* What a failure of inputs 0 and k says of them. */
static void describe(struct merge *m, size_t k, const char *id0, const char *id)
{
    struct mtl_merge_failure *w = m->why;
    size_t which[2] = { 0, k };
    for (int i = 0; i < 2; i++) {
        const struct mtl_trace_info *in = m->in[which[i]].info;
        w->sampled[i] = in->mode == MTL_MODE_SAMPLED;
        w->rate[i] = in->sample_rate;
        snprintf(w->program[i], sizeof w->program[i], "%s", in->program);
    }
    snprintf(w->build_id[0], sizeof w->build_id[0], "%s", id0 ? id0 : "");
    snprintf(w->build_id[1], sizeof w->build_id[1], "%s", id ? id : "");
}

/* 0 when the inputs can be merged, else the failure (fail) saying why. */
static int check_inputs_agree(struct merge *m, const char *const *paths)
{
    const struct mtl_trace_info *a = m->in[0].info;
    char id0[130] = "", id[130] = "";
    if (!m->o->tree && !m->o->force)
        program_build_id(paths[0], a->program, id0, sizeof id0);
    for (size_t k = 1; k < m->n; k++) {
        const struct mtl_trace_info *b = m->in[k].info;
        enum mtl_merge_why why = 0;
        if (a->mode != b->mode) {
            why = MTL_MERGE_MODES;
        } else if (a->mode == MTL_MODE_SAMPLED && a->sample_rate != b->sample_rate) {
            why = MTL_MERGE_RATES;
        } else if (!m->o->tree && !m->o->force) {
            program_build_id(paths[k], b->program, id, sizeof id);
            if (*id0 && *id ? strcmp(id0, id) : strcmp(a->program, b->program))
                why = MTL_MERGE_PROGRAMS;
        }
        if (why) {
            describe(m, k, id0, id);
            return fail(m, why, k, 0);
        }
    }
    return 0;
}

/* ---- the merge -------------------------------------------------------------- */

static void release(struct merge *m)
{
    for (size_t k = 0; k < m->n; k++) {
        struct input *in = &m->in[k];
        mtl_reader_close(in->r);
        free(in->node_map);
        free(in->thread_map);
        free(in->module_map);
        free(in->string_map);
    }
    free(m->in);
    free(m->module_base);
    free(m->node_addr);
    free(m->thread_input);
    mtl_intern_release(&m->modules);
    mtl_intern_release(&m->nodes);
    mtl_intern_release(&m->strings);
}

int mtl_merge(struct mtl_encoder *e, const char *const *paths, size_t n,
              const struct mtl_merge_options *o, mtl_sink_fn sink, void *ctx,
              struct mtl_merge_stats *stats, struct mtl_merge_failure *why)
{
    struct merge m = { .e = e, .o = o, .n = n, .modules = MTL_INTERN_INIT,
                       .nodes = MTL_INTERN_INIT, .strings = MTL_INTERN_INIT, .why = why };
    _Static_assert(MTL_MERGE_MAX_INPUTS == 1u << (64 - INPUT_SHIFT), "inputs fit the bits");
    memset(why, 0, sizeof *why);
    if (n == 0)
        return fail(&m, MTL_MERGE_NO_INPUT, 0, 0);
    if (n > MTL_MERGE_MAX_INPUTS)
        return fail(&m, MTL_MERGE_TOO_MANY, 0, 0);
    if (!(m.in = calloc(n, sizeof *m.in)))
        return oom(&m);
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        int r = mtl_reader_open(&m.in[k].r, paths[k]);
        if (r < 0) {
            rc = fail(&m, MTL_MERGE_UNREADABLE, k, r == MTL_EIO ? -errno : r);
        } else {
            mtl_reader_heaps(m.in[k].r, MTL_HEAPS_ALL); /* both heaps, kept apart */
            m.in[k].info = mtl_reader_info(m.in[k].r);
        }
    }
    if (rc == 0)
        rc = check_inputs_agree(&m, paths);
    /* The merged trace's header: the first input's, but for what made it,
     * the earliest start, the deepest stacks and the coarsest times. */
    uint64_t start = UINT64_MAX;
    uint32_t depth = 0;
    uint64_t step = 1;
    int calls = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        calls |= m.in[k].info->calls_counted;
        if (m.in[k].info->start_unix_us < start)
            start = m.in[k].info->start_unix_us;
        if (m.in[k].info->max_depth > depth)
            depth = m.in[k].info->max_depth;
        if (m.in[k].info->time_resolution_us > step)
            step = m.in[k].info->time_resolution_us;
    }
    if (rc == 0) {
        struct mtl_trace_info h = *m.in[0].info;
        h.command_line = o->command_line;
        h.start_unix_us = o->tree ? start : h.start_unix_us;
        h.max_depth = depth;
        h.calls_counted = calls;
        h.time_resolution_us = step; /* the coarsest: every time is one of its steps */
        if (h.mode != MTL_MODE_SAMPLED)
            h.sample_rate = 0;
        if (mtl_encoder_begin_values(e, &h, sink, ctx) < 0)
            rc = fail(&m, MTL_MERGE_WRITE, 0, e->err);
    }
    for (size_t k = 0; k < n && rc == 0; k++)
        if (o->tree)
            m.in[k].offset_us = m.in[k].info->start_unix_us - start;
    if (rc == 0)
        for (size_t k = 0; k < n; k++)
            advance(&m, k);
    /* Tree: the input whose next event is earliest on the merged clock.
     * Runs: each input in turn, from just after the last one ended. */
    size_t cur = 0;
    while (rc == 0 && !e->failed) {
        size_t best = n;
        if (o->tree) {
            for (size_t k = 0; k < n; k++)
                if (m.in[k].has_ev &&
                    (best == n || m.in[k].ev.time_us + m.in[k].offset_us <
                                      m.in[best].ev.time_us + m.in[best].offset_us))
                    best = k;
        } else {
            while (cur < n && !m.in[cur].has_ev) {
                if (++cur < n)
                    m.in[cur].offset_us = m.last_us + 1;
            }
            best = cur;
        }
        if (best == n)
            break;
        struct input *in = &m.in[best];
        uint64_t t = in->ev.time_us + in->offset_us;
        if (t < m.last_us)
            t = m.last_us; /* modules' absolute times may lag: never back */
        rc = put(&m, best, &in->ev, t);
        if (rc == 0)
            advance(&m, best);
    }
    if (rc == 0 && !e->failed)
        mtl_encoder_end_values(e, m.last_us, MTL_END_EXIT, 0);
    if (rc == 0 && e->failed)
        rc = fail(&m, MTL_MERGE_WRITE, 0, e->err);
    if (rc == 0 && stats) {
        stats->duration_us = m.last_us;
        stats->allocations = e->allocations;
        stats->frees = e->frees;
        stats->threads = m.threads;
        stats->modules = m.modules.n;
        stats->nodes = m.nodes.n;
        stats->thread_input = m.thread_input;
        m.thread_input = NULL;
        for (size_t k = 0; k < n; k++) {
            struct mtl_merge_input_stats *s = &stats->inputs[k];
            s->path = paths[k];
            snprintf(s->program, sizeof s->program, "%s", m.in[k].info->program);
            s->allocations = m.in[k].allocations;
            s->pid = m.in[k].info->pid;
            s->offset_us = m.in[k].offset_us;
            s->truncated = m.in[k].info->truncated;
            s->damaged = m.in[k].damaged;
        }
    }
    release(&m);
    return rc;
}
