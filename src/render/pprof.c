/*
 * pprof.c: stack figures as a gzip'd pprof profile (profile.proto), the
 * heap profile of Go, jemalloc and tcmalloc that go tool pprof, Pyroscope
 * and Parca read.
 *
 * Sample types in Go's order: alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes (pprof shows the last by
 * default, as for Go's heap profiles).  A location per frame, at the
 * address the trace holds, with its inlined functions as several lines
 * (innermost first, the function they are inlined into last); a mapping
 * per module with its build id, flagged as symbolized so that readers do
 * not look for the binaries.  Values are the figures rounded: exact counts
 * for a full trace; for a sampled one the unbiased estimates, with the
 * sampling rate as the period (readers must not scale them again).
 */
#include "render/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/grow.h"
#include "common/hex.h"
#include "common/intern.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

#define NVALUES 4

/* Every message of the profile, in arrays the pointer arrays protobuf-c
 * wants point into. */
struct pprof {
    Profile p;
    struct mtl_intern strings;   /* the string table, by index */
    struct mtl_intern functions; /* (name, file) indices -> function index */
    Function *fn;
    Function **fnp;
    size_t fn_cap;
    Mapping *map;
    Mapping **mapp;
    uint32_t *map_of_module;     /* module index -> mapping id, 0 none */
    Location *loc;
    Location **locp;
    Line *line;
    Line **linep;
    Sample *sample;
    Sample **samplep;
    uint64_t *ids;               /* the samples' location ids */
    int64_t *values;
    char **table;                /* string_table, made last */
    ValueType types[NVALUES + 1];
    ValueType *typep[NVALUES];
    int failed;
};

/* The string table index of s, added if new. */
static int64_t str_index(struct pprof *pp, const char *s)
{
    uint32_t id;
    if (mtl_intern_str(&pp->strings, s ? s : "", &id) < 0) {
        pp->failed = 1;
        return 0;
    }
    return id;
}

/* The function id of a location's function (name and file). */
static uint64_t function_id(struct pprof *pp, const struct mtl_location *w)
{
    int64_t key[2] = { str_index(pp, w->function ? w->function : "??"),
                       str_index(pp, w->file) };
    uint32_t id;
    int rc = mtl_intern_add(&pp->functions, key, sizeof key, &id);
    if (rc < 0 || (rc == 1 && mtl_grow_zeroed((void **)&pp->fn, &pp->fn_cap, id + 1,
                                              sizeof *pp->fn, 256) < 0)) {
        pp->failed = 1;
        return 1;
    }
    if (rc == 1) {
        Function *f = &pp->fn[id];
        perftools__profiles__function__init(f);
        f->id = id + 1;
        f->name = f->system_name = key[0];
        f->filename = key[1];
    }
    return id + 1;
}

/* A module's mapping: its executable segment (all of it when it has none
 * marked so), at its load address.  The file offset is the segment's
 * address rounded down to a page, which is where linkers put it. */
static void module_mapping(struct pprof *pp, Mapping *m, const struct mtl_module *mod,
                           char *hex)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int pass = 0; pass < 2 && lo == UINT64_MAX; pass++)
        for (size_t i = 0; i < mod->nsegments; i++) {
            const struct mtl_segment *s = &mod->segments[i];
            if (pass == 0 && !(s->flags & 1)) /* PF_X */
                continue;
            if (s->vaddr < lo)
                lo = s->vaddr;
            if (s->vaddr + s->memsz > hi)
                hi = s->vaddr + s->memsz;
        }
    if (lo == UINT64_MAX)
        lo = hi = 0;
    lo &= ~(uint64_t)0xfff;
    m->memory_start = mod->base + lo;
    m->memory_limit = mod->base + hi;
    m->file_offset = lo;
    m->filename = str_index(pp, mod->path);
    mtl_hex(hex, 129, mod->build_id, mod->build_id_size);
    m->build_id = str_index(pp, hex);
    m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames = 1;
}

static void gzip_into(struct mtl_buf *b, const uint8_t *data, size_t n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        b->failed = 1;
        return;
    }
    uLong bound = deflateBound(&z, (uLong)n);
    uint8_t *out = malloc(bound);
    if (!out) {
        deflateEnd(&z);
        b->failed = 1;
        return;
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)bound;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        b->failed = 1;
    else
        mtl_buf_add(b, out, z.total_out);
    deflateEnd(&z);
    free(out);
}

static void pprof_release(struct pprof *pp)
{
    mtl_intern_release(&pp->strings);
    mtl_intern_release(&pp->functions);
    free(pp->table);
    free(pp->fn);
    free(pp->fnp);
    free(pp->map);
    free(pp->mapp);
    free(pp->map_of_module);
    free(pp->loc);
    free(pp->locp);
    free(pp->line);
    free(pp->linep);
    free(pp->sample);
    free(pp->samplep);
    free(pp->ids);
    free(pp->values);
}

int mtl_render_pprof(struct mtl_buf *b, const struct mtl_stack_figures *s)
{
    struct pprof pp = { .strings = MTL_INTERN_INIT, .functions = MTL_INTERN_INIT };
    perftools__profiles__profile__init(&pp.p);
    str_index(&pp, ""); /* string 0 is always "" */
    static const char *const names[NVALUES][2] = {
        { "alloc_objects", "count" }, { "alloc_space", "bytes" },
        { "inuse_objects", "count" }, { "inuse_space", "bytes" } };
    for (int i = 0; i <= NVALUES; i++) {
        perftools__profiles__value_type__init(&pp.types[i]);
        if (i < NVALUES) {
            pp.types[i].type = str_index(&pp, names[i][0]);
            pp.types[i].unit = str_index(&pp, names[i][1]);
            pp.typep[i] = &pp.types[i];
        }
    }
    /* The period type: space/bytes, as Go's heap profiles. */
    pp.types[NVALUES].type = str_index(&pp, "space");
    pp.types[NVALUES].unit = str_index(&pp, "bytes");

    /* Frames: one location each, and a "(no stack)" location last for the
     * samples without a frame. */
    size_t nlocs = s->nframes + 1, nlines = s->nlocs + 1;
    pp.loc = calloc(nlocs, sizeof *pp.loc);
    pp.locp = calloc(nlocs, sizeof *pp.locp);
    pp.line = calloc(nlines, sizeof *pp.line);
    pp.linep = calloc(nlines, sizeof *pp.linep);
    pp.map = calloc(s->nmodules + 1, sizeof *pp.map);
    pp.mapp = calloc(s->nmodules + 1, sizeof *pp.mapp);
    pp.map_of_module = calloc(s->nmodules + 1, sizeof *pp.map_of_module);
    size_t depth_total = 0;
    for (size_t i = 0; i < s->n; i++)
        for (uint32_t f = s->figures[i].frame; f != MTL_NO_FRAME; f = s->frames[f].parent)
            depth_total++;
    pp.sample = calloc(s->n + 1, sizeof *pp.sample);
    pp.samplep = calloc(s->n + 1, sizeof *pp.samplep);
    pp.ids = calloc(depth_total + s->n + 1, sizeof *pp.ids);
    pp.values = calloc((s->n + 1) * NVALUES, sizeof *pp.values);
    if (!pp.loc || !pp.locp || !pp.line || !pp.linep || !pp.map || !pp.mapp ||
        !pp.map_of_module || !pp.sample || !pp.samplep || !pp.ids || !pp.values) {
        pprof_release(&pp);
        return -1;
    }
    char hex[129];
    size_t nmap = 0;
    for (size_t i = 0; i <= s->nframes; i++) {
        Location *l = &pp.loc[i];
        perftools__profiles__location__init(l);
        l->id = i + 1;
        pp.locp[i] = l;
        static const struct mtl_location none = { .function = "(no stack)" };
        const struct mtl_location *w = i < s->nframes ? &s->locs[s->frames[i].first] : &none;
        size_t n = i < s->nframes ? s->frames[i].nlocs : 1;
        size_t first = i < s->nframes ? s->frames[i].first : s->nlocs;
        for (size_t k = 0; k < n; k++) {
            Line *ln = &pp.line[first + k];
            perftools__profiles__line__init(ln);
            ln->function_id = function_id(&pp, &w[k]);
            ln->line = w[k].line;
            pp.linep[first + k] = ln;
        }
        l->line = &pp.linep[first];
        l->n_line = n;
        if (i == s->nframes)
            continue;
        l->address = s->frames[i].addr;
        uint32_t mod = s->frames[i].module;
        if (mod < s->nmodules && s->modules[mod].path) {
            if (!pp.map_of_module[mod]) {
                Mapping *m = &pp.map[nmap];
                perftools__profiles__mapping__init(m);
                m->id = nmap + 1;
                module_mapping(&pp, m, &s->modules[mod], hex);
                pp.mapp[nmap++] = m;
                pp.map_of_module[mod] = (uint32_t)m->id;
            }
            l->mapping_id = pp.map_of_module[mod];
        }
    }
    size_t nid = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct mtl_stack_figure *fg = &s->figures[i];
        Sample *sm = &pp.sample[i];
        perftools__profiles__sample__init(sm);
        sm->location_id = &pp.ids[nid];
        for (uint32_t f = fg->frame; f != MTL_NO_FRAME; f = s->frames[f].parent)
            pp.ids[nid++] = (uint64_t)f + 1;
        if (fg->frame == MTL_NO_FRAME)
            pp.ids[nid++] = s->nframes + 1;
        sm->n_location_id = (size_t)(&pp.ids[nid] - sm->location_id);
        int64_t *v = &pp.values[i * NVALUES];
        v[0] = llround(fg->alloc_calls);
        v[1] = llround(fg->alloc_bytes);
        v[2] = llround(fg->inuse_calls);
        v[3] = llround(fg->inuse_bytes);
        sm->value = v;
        sm->n_value = NVALUES;
        pp.samplep[i] = sm;
    }
    size_t nfn = pp.functions.n;
    pp.fnp = calloc(nfn ? nfn : 1, sizeof *pp.fnp);
    if (!pp.fnp)
        pp.failed = 1;
    for (size_t i = 0; pp.fnp && i < nfn; i++)
        pp.fnp[i] = &pp.fn[i];
    int64_t comment = str_index(&pp, s->trace.command_line && *s->trace.command_line
                                         ? s->trace.command_line : s->trace.program);
    size_t nstr = pp.strings.n;
    if (!(pp.table = calloc(nstr, sizeof *pp.table)))
        pp.failed = 1;
    for (size_t i = 0; pp.table && i < nstr; i++)
        pp.table[i] = (char *)mtl_intern_at(&pp.strings, (uint32_t)i, NULL);
    if (pp.failed) {
        pprof_release(&pp);
        return -1;
    }
    Profile *p = &pp.p;
    p->sample_type = pp.typep;
    p->n_sample_type = NVALUES;
    p->sample = pp.samplep;
    p->n_sample = s->n;
    p->mapping = pp.mapp;
    p->n_mapping = nmap;
    p->location = pp.locp;
    p->n_location = nlocs;
    p->function = pp.fnp;
    p->n_function = nfn;
    p->string_table = pp.table;
    p->n_string_table = nstr;
    p->time_nanos = (int64_t)s->trace.start_unix_us * 1000;
    p->duration_nanos = (int64_t)s->end_us * 1000;
    p->period_type = &pp.types[NVALUES];
    p->period = s->head.estimated && s->head.sample_rate ? (int64_t)s->head.sample_rate : 1;
    p->comment = &comment;
    p->n_comment = 1;
    size_t size = perftools__profiles__profile__get_packed_size(p);
    uint8_t *raw = malloc(size ? size : 1);
    int rc = -1;
    if (raw) {
        perftools__profiles__profile__pack(p, raw);
        gzip_into(b, raw, size);
        rc = b->failed ? -1 : 0;
        free(raw);
    }
    pprof_release(&pp);
    return rc;
}
