/*
 * filter.h: what a query selects and how it names frames: the block
 * filters shared by every analysis (docs/ANALYSIS.md, "Filters"), the
 * frame options of the view (--hide, --wrapper, --keep-alloc-frames), and
 * the parsing of the times, sizes and ranges they take.
 *
 * A filter is a conjunction of conditions on a block.  Some can be decided
 * when the block is allocated (size, thread, stack, allocation time); the
 * others need its free time (live-at, live-between, freed-between,
 * never-freed, lifetime) and are decided when it is freed or when the
 * trace ends.
 */
#ifndef MTL_ANALYZE_FILTER_H
#define MTL_ANALYZE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#define MTL_NEVER UINT64_MAX /* free time of a block never freed */
#define MTL_MAX_PATTERNS 32

struct mtl_range {
    int set;
    uint64_t min, max; /* inclusive */
};

struct mtl_filter {
    struct mtl_range allocated, freed, size, lifetime;
    int live_at_set;
    uint64_t live_at;
    struct mtl_range live_between;
    int never_freed;
    int temporary;               /* freed by the very next allocation or free
                                    (temporary's blocks; no option sets it) */
    int thread_set, thread_is_index;
    uint32_t thread;             /* kernel tid, or index when thread_is_index */
    const char *inside[MTL_MAX_PATTERNS];
    size_t ninside;
    const char *not_inside[MTL_MAX_PATTERNS];
    size_t nnot_inside;
    const char *type;            /* blocks of this type tag only (its name;
                                    "(untagged)": those without), or NULL */
    /* How frames are named (the view): not conditions on blocks. */
    const char *hide[MTL_MAX_PATTERNS];
    size_t nhide;
    const char *wrappers[MTL_MAX_PATTERNS];
    size_t nwrappers;
    int keep_alloc_frames;
};

/* Parses "2.5s", "300ms", "150us" or a bare number of seconds into
 * microseconds.  Returns 0 or -1. */
int mtl_parse_time(const char *s, uint64_t *us);

/* Parses "64", "4K", "1.5M", "2G" (powers of 1024) into bytes. */
int mtl_parse_size(const char *s, uint64_t *bytes);

/* Parses "MIN..MAX" (either side may be empty) with parse (mtl_parse_time
 * or mtl_parse_size); "A,B" when comma is set. */
int mtl_parse_range(const char *s, int comma,
                    int (*parse)(const char *, uint64_t *), struct mtl_range *r);

/* Adds a pattern to one of the filter's lists (inside, not_inside, hide,
 * wrappers); -1 when the list is full or the pattern empty. */
int mtl_filter_add_pattern(const char **list, size_t *n, const char *pattern);

/* Sets the filter or frame option name (as the analysis commands take
 * it, without "--": "size", "live-at", "inside", "hide"...) to val.
 * Returns 1, 0 when name is none of them, or -1 when val is not what it
 * takes: *why is then a message with one %s for val. */
int mtl_filter_option(struct mtl_filter *f, const char *name, const char *val,
                      const char **why);

/* 1 when every condition can be decided at allocation time. */
int mtl_filter_decidable_at_alloc(const struct mtl_filter *f);

/* 1 when some condition is on the stack (inside, not inside). */
int mtl_filter_on_stacks(const struct mtl_filter *f);

static inline int mtl_range_has(const struct mtl_range *r, uint64_t v)
{
    return !r->set || (v >= r->min && v <= r->max);
}

/* The conditions decidable at allocation, but the stack ones (those are
 * the scan's, through the view).  Inline: a scan asks it of every block. */
static inline int mtl_filter_at_alloc(const struct mtl_filter *f, uint64_t size,
                                      uint32_t tid, uint32_t thread_index,
                                      uint64_t alloc_us)
{
    if (!mtl_range_has(&f->size, size) || !mtl_range_has(&f->allocated, alloc_us))
        return 0;
    if (f->thread_set && f->thread != (f->thread_is_index ? thread_index : tid))
        return 0;
    return 1;
}

/* The conditions that need the free time: free_us is MTL_NEVER for a block
 * still live when the trace ended at end_us.  A block freed in the
 * microsecond it was allocated is live at no time. */
static inline int mtl_filter_at_free(const struct mtl_filter *f, uint64_t alloc_us,
                                     uint64_t free_us, uint64_t end_us)
{
    if (f->never_freed && free_us != MTL_NEVER)
        return 0;
    if (f->freed.set && (free_us == MTL_NEVER || !mtl_range_has(&f->freed, free_us)))
        return 0;
    if (f->live_at_set && !(alloc_us <= f->live_at && free_us > f->live_at))
        return 0;
    /* Live at some t in [min, max], "live at t" as for --live-at
     * (alloc <= t < free). */
    if (f->live_between.set &&
        !(alloc_us <= f->live_between.max && free_us > f->live_between.min &&
          free_us > alloc_us))
        return 0;
    if (f->lifetime.set) {
        uint64_t until = free_us == MTL_NEVER ? end_us : free_us;
        uint64_t life = until > alloc_us ? until - alloc_us : 0;
        if (!mtl_range_has(&f->lifetime, life))
            return 0;
    }
    return 1;
}

/* 1 when a block whose tag is named tag (NULL: untagged) passes --type. */
int mtl_filter_type_passes(const struct mtl_filter *f, const char *tag);

/* 1 when the two filters select the same blocks and name frames alike. */
int mtl_filter_same(const struct mtl_filter *a, const struct mtl_filter *b);

/* 1 when the two filters name frames alike (same view). */
int mtl_filter_same_view(const struct mtl_filter *a, const struct mtl_filter *b);

#endif
