/*
 * view.h: stacks as an analysis sees them: resolved to functions, files and
 * lines (memtally/symbols.h), with inlined frames expanded and the allocator's
 * plumbing and --hide patterns removed (docs/ANALYSIS.md, "Words").
 *
 * Every resolved frame is a location (function, file, line, module);
 * locations that name the same function share a function id, which is
 * what the tables group by.  A stack's visible frames are a list of
 * location ids, innermost first.  All is computed once per stack node and
 * kept, so the cost is per unique stack, not per event.
 */
#ifndef MTL_ANALYZE_VIEW_H
#define MTL_ANALYZE_VIEW_H

#include <stddef.h>
#include <stdint.h>

struct mtl_reader;
struct mtl_filter;
struct mtl_symbolizer_options;
struct mtl_view;

#define MTL_NO_LOCATION UINT32_MAX

struct mtl_location {
    const char *function; /* display name: demangled, or module+0xOFFSET */
    const char *file;     /* NULL when unknown */
    unsigned line;        /* 0 when unknown */
    const char *module;   /* module path, "" when none */
    int inlined;          /* inlined into the next frame */
    uint32_t function_id; /* same for every location of one function */
};

/* Opens a view on r (which keeps reading: stacks are looked up as they
 * come).  f gives --hide, --keep-alloc-frames, --inside, --not-inside; it
 * must outlive the view.  sym (NULL: the defaults) says where symbols are
 * looked for (memtally/symbols.h).  warn, if not NULL, is called once per
 * module whose symbols cannot be used.  Returns 0 or a negative MTL_E*
 * code (mtl_symbolizer_open's). */
int mtl_view_open(struct mtl_view **out, const struct mtl_reader *r,
                  const struct mtl_filter *f,
                  const struct mtl_symbolizer_options *sym,
                  void (*warn)(const char *message, void *arg), void *arg);
void mtl_view_close(struct mtl_view *v);

/* The visible frames of a stack, innermost first; *n may be 0 (a stack
 * made only of hidden frames, or the empty stack).  The array is valid
 * until the next call.  Returns 0 or a negative MTL_E* code. */
int mtl_view_frames(struct mtl_view *v, uint32_t stack, const uint32_t **locs,
                    size_t *n);

/* Every frame of a stack, hidden ones included, innermost first, with
 * whether each is hidden.  Valid until the next call. */
int mtl_view_frames_all(struct mtl_view *v, uint32_t stack, const uint32_t **locs,
                        const uint8_t **hidden, size_t *n);

/* The innermost visible frame (the site), or MTL_NO_LOCATION. */
uint32_t mtl_view_site(struct mtl_view *v, uint32_t stack);

/* 1 if the stack passes --inside and --not-inside, 0 if not, negative on
 * error.  Cached per stack. */
int mtl_view_passes(struct mtl_view *v, uint32_t stack);

/* 1 if some frame of the stack (hidden ones included) matches pattern. */
int mtl_view_stack_matches(struct mtl_view *v, uint32_t stack,
                           const char *pattern);

/* 1 if the location's function matches the pattern (docs/ANALYSIS.md:
 * the whole name, or the name cut at its first '('). */
int mtl_view_location_matches(const struct mtl_view *v, uint32_t loc,
                              const char *pattern);

const struct mtl_location *mtl_view_location(const struct mtl_view *v,
                                             uint32_t loc);
uint32_t mtl_view_function_count(const struct mtl_view *v);
/* A representative location of a function (its first seen). */
uint32_t mtl_view_function_location(const struct mtl_view *v, uint32_t fid);

#endif
