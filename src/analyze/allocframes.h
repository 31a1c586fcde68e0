/*
 * allocframes.h: the one list of frames that are not sites (docs/ANALYSIS.md,
 * "Allocation wrappers"), shared by every path that names a site: the
 * analysis commands' view of stacks and mtl_profile_call in the recorder.
 *
 * A site is the innermost frame of a block's stack that is code the user can
 * change.  Below it, a stack holds two kinds of frames that are not:
 *
 *   plumbing  the allocator and the language runtime's allocation path
 *             (malloc, operator new, std::allocator, Rust's __rust_alloc);
 *   wrapper   functions that allocate on behalf of their caller: allocation
 *             wrappers (xmalloc, g_malloc, sqlite3Malloc, PyMem_Malloc,
 *             strdup) and containers that grow (every frame of the C++
 *             standard library, glib's GString and GHashTable).
 *
 * Blocks pass through both to the caller.  Which frames are which is decided
 * by the function's name alone, as the symbolizer shows it, once per name.
 */
#ifndef MTL_ANALYZE_ALLOCFRAMES_H
#define MTL_ANALYZE_ALLOCFRAMES_H

enum mtl_frame_role {
    MTL_ROLE_USER = 0,      /* code the user can change: a site */
    MTL_ROLE_PLUMBING = 1,  /* the allocator and the language runtime's allocation path */
    MTL_ROLE_WRAPPER = 2,   /* allocation wrappers and container growth: blocks go to the caller */
};

/* The role of a function from its demangled display name as memtally's
 * symbolizer gives it (C++ template instances start with their return type:
 * "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)"),
 * and that name cut at its first '(' (cut may be NULL when the name has
 * none).
 *
 * The patterns are matched against the function's qualified name: the name
 * without the return type a template instance starts with, without its
 * parameters and what follows them, without glibc's "__GI_" prefix and
 * without a compiler's clone suffix (".part.0", ".isra.0", ".constprop.0",
 * ".cold"); and, when that name ends with template arguments, also
 * against it without them ("std::make_shared<Foo>" -> "std::make_shared").
 * When both a plumbing and a wrapper pattern match, the role is plumbing.
 * Any string is accepted (custom frame names, "module+0xOFFSET"); it is
 * read, never kept.  Thread-safe; no allocation. */
enum mtl_frame_role mtl_frame_role(const char *name, const char *cut);

/* The built-in patterns (shell patterns, as docs/ANALYSIS.md "Times, sizes,
 * patterns"), NULL-terminated, for documentation and `--help`. */
extern const char *const mtl_plumbing_patterns[];
extern const char *const mtl_wrapper_patterns[];

#endif
