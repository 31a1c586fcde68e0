/* filter.c: see filter.h. */
#include "analyze/filter.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    *us = (uint64_t)round(v * scale);
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
    *bytes = (uint64_t)round(v * scale);
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

int mtl_filter_add_pattern(const char **list, size_t *n, const char *pattern)
{
    if (*n >= MTL_MAX_PATTERNS || !*pattern)
        return -1;
    list[(*n)++] = pattern;
    return 0;
}

int mtl_filter_decidable_at_alloc(const struct mtl_filter *f)
{
    /* --type too: a TAG record may give a block its tag after its
     * allocation, so its tag is known at its fate. */
    return !f->live_at_set && !f->live_between.set && !f->freed.set &&
           !f->never_freed && !f->lifetime.set && !f->temporary && !f->type;
}

int mtl_filter_on_stacks(const struct mtl_filter *f)
{
    return f->ninside || f->nnot_inside;
}

static int same_patterns(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]))
            return 0;
    return 1;
}

static int same_range(const struct mtl_range *a, const struct mtl_range *b)
{
    return a->set == b->set && (!a->set || (a->min == b->min && a->max == b->max));
}

int mtl_filter_same(const struct mtl_filter *a, const struct mtl_filter *b)
{
    return same_range(&a->allocated, &b->allocated) && same_range(&a->freed, &b->freed) &&
           same_range(&a->size, &b->size) && same_range(&a->lifetime, &b->lifetime) &&
           same_range(&a->live_between, &b->live_between) &&
           a->live_at_set == b->live_at_set && (!a->live_at_set || a->live_at == b->live_at) &&
           a->never_freed == b->never_freed && a->temporary == b->temporary &&
           a->thread_set == b->thread_set &&
           (!a->thread_set ||
            (a->thread == b->thread && a->thread_is_index == b->thread_is_index)) &&
           same_patterns(a->inside, a->ninside, b->inside, b->ninside) &&
           same_patterns(a->not_inside, a->nnot_inside, b->not_inside, b->nnot_inside) &&
           !a->type == !b->type && (!a->type || !strcmp(a->type, b->type)) &&
           mtl_filter_same_view(a, b);
}

int mtl_filter_type_passes(const struct mtl_filter *f, const char *tag)
{
    if (!f->type)
        return 1;
    return tag ? strcmp(f->type, tag) == 0 : strcmp(f->type, "(untagged)") == 0;
}

int mtl_filter_same_view(const struct mtl_filter *a, const struct mtl_filter *b)
{
    return a->keep_alloc_frames == b->keep_alloc_frames &&
           same_patterns(a->hide, a->nhide, b->hide, b->nhide) &&
           same_patterns(a->wrappers, a->nwrappers, b->wrappers, b->nwrappers);
}

/* The options, in the order of the switch below. */
static const char *const option_names[] = {
    "allocated-between", "live-at", "live-between", "freed-between", "size",
    "lifetime", "inside", "not-inside", "thread", "hide", "wrapper", "type",
};

int mtl_filter_option(struct mtl_filter *f, const char *name, const char *val,
                      const char **why)
{
    size_t k = 0, n = sizeof option_names / sizeof *option_names;
    while (k < n && strcmp(name, option_names[k]) != 0)
        k++;
    if (k == n)
        return 0;
    int bad = 0;
    switch (k) {
    case 0: bad = mtl_parse_range(val, 1, mtl_parse_time, &f->allocated); break;
    case 1: bad = mtl_parse_time(val, &f->live_at); f->live_at_set = 1; break;
    case 2: bad = mtl_parse_range(val, 1, mtl_parse_time, &f->live_between); break;
    case 3: bad = mtl_parse_range(val, 1, mtl_parse_time, &f->freed); break;
    case 4: bad = mtl_parse_range(val, 0, mtl_parse_size, &f->size); break;
    case 5: bad = mtl_parse_range(val, 0, mtl_parse_time, &f->lifetime); break;
    case 6: bad = mtl_filter_add_pattern(f->inside, &f->ninside, val); break;
    case 7: bad = mtl_filter_add_pattern(f->not_inside, &f->nnot_inside, val); break;
    case 8: {
        const char *digits = val + (val[0] == 't');
        char *end;
        errno = 0;
        unsigned long t = strtoul(digits, &end, 10);
        bad = !*digits || *end || errno || t > UINT32_MAX || *digits == '-' ? -1 : 0;
        f->thread_is_index = val[0] == 't';
        f->thread = (uint32_t)t;
        f->thread_set = 1;
        break;
    }
    case 9: bad = mtl_filter_add_pattern(f->hide, &f->nhide, val); break;
    case 10: bad = mtl_filter_add_pattern(f->wrappers, &f->nwrappers, val); break;
    case 11: bad = !*val; f->type = val; break;
    }
    if (!bad)
        return 1;
    static const char *const whys[] = {
        "bad time range '%s' (like 1.5s,3s)", "bad time '%s' (like 2.5s, 300ms, 150us)",
        "bad time range '%s' (like 1.5s,3s)", "bad time range '%s' (like 1.5s,3s)",
        "bad size range '%s' (like 16..4K)", "bad time range '%s' (like 1ms..2s)",
        NULL, NULL, "bad thread '%s' (a thread id, or tN)", NULL, NULL,
        "an empty type name",
    };
    *why = k < sizeof whys / sizeof *whys && whys[k] ? whys[k]
                                                     : "an empty pattern, or more than 32";
    return -1;
}
