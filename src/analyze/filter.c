/* filter.c: see filter.h. */
#include "analyze/filter.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char mtl_filter_usage[] =
    "filters (a block is analysed only if it passes all):\n"
    "  --allocated-between A,B   allocated in [A, B]\n"
    "  --live-at T               allocated by T and not freed by T\n"
    "  --live-between A,B        live at some time in [A, B]\n"
    "  --freed-between A,B       freed in [A, B]\n"
    "  --never-freed             still live at the end of the trace\n"
    "  --size MIN..MAX           size in the range (4K, 1.5M...)\n"
    "  --lifetime MIN..MAX       lifetime in the range (to the end if never freed)\n"
    "  --inside NAME             a frame of its stack matches NAME (a pattern)\n"
    "  --not-inside NAME         no frame of its stack matches NAME\n"
    "  --thread TID              allocated by thread TID (or tN: thread index N)\n"
    "  --hide NAME               hide frames matching NAME (repeatable)\n"
    "  --keep-alloc-frames       show operator new, std::allocator and the like\n"
    "times are from the start of the trace: 2.5s, 300ms, 150us (bare: seconds)\n";

/* Parses a non-negative decimal number with an optional fraction, and the
 * rest of the string into *rest. */
static int parse_number(const char *s, double *v, const char **rest)
{
    char *end;
    if (!*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    *v = strtod(s, &end);
    if (errno || end == s || !isfinite(*v) || *v < 0)
        return -1;
    *rest = end;
    return 0;
}

int mtl_parse_time(const char *s, uint64_t *us)
{
    double v;
    const char *unit;
    if (parse_number(s, &v, &unit) < 0)
        return -1;
    double scale;
    if (!*unit || !strcmp(unit, "s"))
        scale = 1e6;
    else if (!strcmp(unit, "ms"))
        scale = 1e3;
    else if (!strcmp(unit, "us"))
        scale = 1;
    else
        return -1;
    if (v * scale > 1.8e19)
        return -1;
    *us = (uint64_t)llround(v * scale);
    return 0;
}

int mtl_parse_size(const char *s, uint64_t *bytes)
{
    double v;
    const char *unit;
    if (parse_number(s, &v, &unit) < 0)
        return -1;
    double scale = 1;
    if (*unit) {
        switch (*unit) {
        case 'k': case 'K': scale = 1024.0; break;
        case 'm': case 'M': scale = 1024.0 * 1024; break;
        case 'g': case 'G': scale = 1024.0 * 1024 * 1024; break;
        default: return -1;
        }
        unit++;
        if (*unit == 'i')
            unit++;
        if (*unit == 'B' || *unit == 'b')
            unit++;
        if (*unit)
            return -1;
    }
    if (v * scale > 1.8e19)
        return -1;
    *bytes = (uint64_t)llround(v * scale);
    return 0;
}

int mtl_parse_range(const char *s, int comma,
                    int (*parse)(const char *, uint64_t *), struct mtl_range *r)
{
    const char *sep = comma ? strchr(s, ',') : strstr(s, "..");
    char lo[64], hi[64];
    if (!sep)
        return -1;
    size_t n = (size_t)(sep - s);
    const char *after = sep + (comma ? 1 : 2);
    if (n >= sizeof lo || strlen(after) >= sizeof hi)
        return -1;
    memcpy(lo, s, n);
    lo[n] = '\0';
    memcpy(hi, after, strlen(after) + 1);
    r->min = 0;
    r->max = UINT64_MAX;
    if (comma && (!*lo || !*hi))
        return -1; /* A,B needs both */
    if (*lo && parse(lo, &r->min) < 0)
        return -1;
    if (*hi && parse(hi, &r->max) < 0)
        return -1;
    if (r->min > r->max)
        return -1;
    r->set = 1;
    return 0;
}

static int add_pattern(const char **list, size_t *n, const char *p)
{
    if (*n >= MTL_MAX_PATTERNS || !*p)
        return -1;
    list[(*n)++] = p;
    return 0;
}

int mtl_filter_option(struct mtl_filter *f, int argc, char **argv, int *i,
                      char *err, size_t errcap)
{
    static const char *const with_value[] = {
        "--allocated-between", "--live-at", "--live-between", "--freed-between",
        "--size", "--lifetime", "--inside", "--not-inside", "--thread", "--hide",
    };
    const char *opt = argv[*i];
    if (!strcmp(opt, "--never-freed")) {
        f->never_freed = 1;
        (*i)++;
        return 1;
    }
    if (!strcmp(opt, "--keep-alloc-frames")) {
        f->keep_alloc_frames = 1;
        (*i)++;
        return 1;
    }
    size_t k, nk = sizeof with_value / sizeof *with_value;
    const char *val = NULL;
    for (k = 0; k < nk; k++) {
        size_t len = strlen(with_value[k]);
        if (!strncmp(opt, with_value[k], len) && (opt[len] == '\0' || opt[len] == '=')) {
            val = opt[len] == '=' ? opt + len + 1 : NULL;
            break;
        }
    }
    if (k == nk)
        return 0;
    const char *name = with_value[k];
    if (!val) {
        if (*i + 1 >= argc) {
            snprintf(err, errcap, "%s needs a value", name);
            return -1;
        }
        val = argv[++*i];
    }
    (*i)++;
    int bad = 0;
    if (!strcmp(name, "--allocated-between"))
        bad = mtl_parse_range(val, 1, mtl_parse_time, &f->allocated);
    else if (!strcmp(name, "--freed-between"))
        bad = mtl_parse_range(val, 1, mtl_parse_time, &f->freed);
    else if (!strcmp(name, "--live-between"))
        bad = mtl_parse_range(val, 1, mtl_parse_time, &f->live_between);
    else if (!strcmp(name, "--live-at"))
        bad = mtl_parse_time(val, &f->live_at), f->live_at_set = 1;
    else if (!strcmp(name, "--size"))
        bad = mtl_parse_range(val, 0, mtl_parse_size, &f->size);
    else if (!strcmp(name, "--lifetime"))
        bad = mtl_parse_range(val, 0, mtl_parse_time, &f->lifetime);
    else if (!strcmp(name, "--inside"))
        bad = add_pattern(f->inside, &f->ninside, val);
    else if (!strcmp(name, "--not-inside"))
        bad = add_pattern(f->not_inside, &f->nnot_inside, val);
    else if (!strcmp(name, "--hide"))
        bad = add_pattern(f->hide, &f->nhide, val);
    else if (!strcmp(name, "--thread")) {
        const char *digits = val;
        f->thread_is_index = val[0] == 't';
        digits += f->thread_is_index;
        char *end;
        errno = 0;
        unsigned long t = strtoul(digits, &end, 10);
        bad = !*digits || *end || errno || t > UINT32_MAX ? -1 : 0;
        f->thread = (uint32_t)t;
        f->thread_set = 1;
    }
    if (bad) {
        if (!strcmp(name, "--size"))
            snprintf(err, errcap, "%s: bad size range '%s' (like 16..4K)", name, val);
        else if (!strcmp(name, "--lifetime"))
            snprintf(err, errcap, "%s: bad time range '%s' (like 1ms..2s)", name, val);
        else if (strstr(name, "between"))
            snprintf(err, errcap, "%s: bad time range '%s' (like 1.5s,3s)", name, val);
        else if (!strcmp(name, "--live-at"))
            snprintf(err, errcap, "%s: bad time '%s' (like 2.5s, 300ms, 150us)", name, val);
        else if (!strcmp(name, "--thread"))
            snprintf(err, errcap, "%s: bad thread '%s' (a thread id, or tN)", name, val);
        else
            snprintf(err, errcap, "%s: bad or too many patterns", name);
        return -1;
    }
    return 1;
}

int mtl_filter_decidable_at_alloc(const struct mtl_filter *f)
{
    return !f->live_at_set && !f->live_between.set && !f->freed.set &&
           !f->never_freed && !f->lifetime.set;
}

static int in_range(const struct mtl_range *r, uint64_t v)
{
    return !r->set || (v >= r->min && v <= r->max);
}

int mtl_filter_at_alloc(const struct mtl_filter *f, uint64_t size,
                        uint32_t tid, uint32_t thread_index, uint64_t alloc_us)
{
    if (!in_range(&f->size, size) || !in_range(&f->allocated, alloc_us))
        return 0;
    if (f->thread_set && f->thread != (f->thread_is_index ? thread_index : tid))
        return 0;
    return 1;
}

int mtl_filter_at_free(const struct mtl_filter *f, uint64_t alloc_us,
                       uint64_t free_us, uint64_t end_us)
{
    if (f->never_freed && free_us != MTL_NEVER)
        return 0;
    if (f->freed.set && (free_us == MTL_NEVER || !in_range(&f->freed, free_us)))
        return 0;
    if (f->live_at_set && !(alloc_us <= f->live_at && free_us > f->live_at))
        return 0;
    /* Live at some t in [min, max], "live at t" as for --live-at
     * (alloc <= t < free): a block freed the microsecond it was made is
     * live at no time, whatever the range. */
    if (f->live_between.set &&
        !(alloc_us <= f->live_between.max && free_us > f->live_between.min &&
          free_us > alloc_us))
        return 0;
    if (f->lifetime.set) {
        uint64_t until = free_us == MTL_NEVER ? end_us : free_us;
        uint64_t life = until > alloc_us ? until - alloc_us : 0;
        if (!in_range(&f->lifetime, life))
            return 0;
    }
    return 1;
}
