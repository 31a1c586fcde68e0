/*
 * allocframes.c: see allocframes.h.  The lists are shell patterns matched
 * against the whole name and the name cut at its first '(' (so that a
 * template instance's return type and arguments do not get in the way).
 */
#include "analyze/allocframes.h"

#include <fnmatch.h>
#include <stddef.h>

const char *const mtl_plumbing_patterns[] = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "__libc_*alloc*",
    "operator new*", "operator delete*",
    "std::allocator<*", "std::allocator_traits<*", "std::__allocator_traits_base*",
    "__gnu_cxx::new_allocator<*", "std::__new_allocator<*",
    "__gnu_cxx::__alloc_traits<*",
    "*::_M_allocate", "*::_M_create", "*::_M_get_node", "*::_M_allocate_node",
    "*::_M_allocate_buckets", "*::_M_allocate_map",
    "std::__allocate_guarded<*", "std::__allocated_ptr<*",
    NULL,
};

const char *const mtl_wrapper_patterns[] = {
    NULL,
};

static int any(const char *const *patterns, const char *name, const char *cut)
{
    for (size_t i = 0; patterns[i]; i++)
        if (fnmatch(patterns[i], name, 0) == 0 || (cut && fnmatch(patterns[i], cut, 0) == 0))
            return 1;
    return 0;
}

enum mtl_frame_role mtl_frame_role(const char *name, const char *cut)
{
    if (any(mtl_plumbing_patterns, name, cut))
        return MTL_ROLE_PLUMBING;
    if (any(mtl_wrapper_patterns, name, cut))
        return MTL_ROLE_WRAPPER;
    return MTL_ROLE_USER;
}
