/*
 * view.h: stacks as an analysis sees them: resolved to functions, files and
 * lines, with inlined frames expanded, and each frame given its part
 * (docs/ANALYSIS.md, "Words"):
 *
 *   - hidden: the allocator's and the C++ runtime's plumbing, and what
 *     --hide names; never shown;
 *   - passed over: allocation wrappers (allocframes.h, --wrapper), and
 *     functions with no symbol at all that a named function of the same
 *     module calls; shown in stacks and trees, but not a site: their
 *     blocks go to the nearest caller that is neither;
 *   - the rest: code the user can change.
 *
 * --keep-alloc-frames makes every frame but --hide's a possible site.
 *
 * Every resolved frame is a location (function, file, line, module);
 * locations that name the same function share a function id, which is
 * what tables group by.  A native address is resolved once however many
 * stack nodes hold it, and a node's site is computed once however many
 * stacks share it, so the cost is per unique address and node, not per
 * stack or event: recursive code with a million unique stacks folds in
 * time proportional to its nodes.
 */
#ifndef MTL_ANALYZE_VIEW_H
#define MTL_ANALYZE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "memtally/symbols.h"

struct mtl_defs;
struct mtl_view;

#define MTL_NO_LOCATION UINT32_MAX

struct mtl_location {
    const char *function; /* display name: demangled, or module+0xOFFSET */
    const char *file;     /* NULL when unknown */
    unsigned line;        /* 0 when unknown */
    const char *module;   /* module path, "" when none */
    uint8_t inlined;      /* inlined into the next frame */
    uint8_t hidden;       /* plumbing or --hide: never shown */
    uint8_t passed;       /* a wrapper: not a site */
    uint8_t unnamed;      /* no symbol: the name is module+0xOFFSET */
    uint32_t function_id; /* same for every location of one function */
};

/* How native frames are named: resolve(arg, module, addr, &out) as
 * mtl_symbolizer_resolve does (n >= 1 entries, innermost first, or a negative
 * code).  The CLI's is libdw's; mtl_profile_call's is the process's own
 * symbol tables. */
struct mtl_view_namer {
    int (*resolve)(void *arg, uint32_t module, uint64_t addr, const struct mtl_symbol **out);
    /* Optional: the function's name from cheap tables alone (1, or 0 when
     * unknown), as mtl_symbolizer_function: a frame it names as the
     * allocator's plumbing is hidden without resolving it in full. */
    int (*name)(void *arg, uint32_t module, uint64_t addr, const char **name);
    void *arg;
};

struct mtl_view_options {
    const char *const *hide;      /* patterns: frames never shown */
    size_t nhide;
    const char *const *wrappers;  /* more allocation wrappers (--wrapper) */
    size_t nwrappers;
    int keep_alloc_frames;        /* plumbing, wrappers, unnamed: all shown */
};

/* Opens a view on the definitions d, which may grow (the view looks nodes
 * up as they come; d must stay valid, refreshed in place).  The options'
 * patterns must outlive the view.  Returns 0 or MTL_ENOMEM. */
int mtl_view_open(struct mtl_view **out, const struct mtl_defs *d,
                  const struct mtl_view_namer *namer,
                  const struct mtl_view_options *opt);
void mtl_view_close(struct mtl_view *v);

/* The visible frames of a stack (passed-over ones included, hidden ones
 * not), innermost first; *n may be 0.  The array is valid until the next
 * call of mtl_view_frames or mtl_view_frames_all.  0 or a negative code. */
int mtl_view_frames(struct mtl_view *v, uint32_t stack, const uint32_t **locs,
                    size_t *n);

/* Every frame of a stack, hidden ones included, innermost first. */
int mtl_view_frames_all(struct mtl_view *v, uint32_t stack, const uint32_t **locs,
                        size_t *n);

/* The site of a stack: its innermost frame that is neither hidden nor
 * passed over; when every visible frame is passed over, the innermost
 * visible one; MTL_NO_LOCATION when none is visible. */
uint32_t mtl_view_site(struct mtl_view *v, uint32_t stack);

/* 1 if some frame of the stack (hidden ones included) matches pattern
 * (docs/ANALYSIS.md: the whole name, or the name cut at its first '('),
 * 0 if none, negative on error. */
int mtl_view_stack_matches(struct mtl_view *v, uint32_t stack, const char *pattern);

/* 1 if the location's function matches the pattern. */
int mtl_view_location_matches(const struct mtl_view *v, uint32_t loc,
                              const char *pattern);

const struct mtl_location *mtl_view_location(const struct mtl_view *v, uint32_t loc);
uint32_t mtl_view_location_count(const struct mtl_view *v);
uint32_t mtl_view_function_count(const struct mtl_view *v);
/* The name of a function id, and a representative location (its first). */
const char *mtl_view_function_name(const struct mtl_view *v, uint32_t fid);
uint32_t mtl_view_function_location(const struct mtl_view *v, uint32_t fid);

/* The stack node's parent, for walking a stack frame by frame. */
uint32_t mtl_view_parent(const struct mtl_view *v, uint32_t node);

/* The locations of one node's frame, hidden ones included: first ..
 * first + n - 1, innermost first; for analyses that walk the tree of
 * stack nodes.  n is 0 for the root.  0 or a negative code. */
int mtl_view_node(struct mtl_view *v, uint32_t node, uint32_t *first, uint32_t *n);

#endif
