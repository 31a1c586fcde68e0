/*
 * allocframes.h: the one list of frames that are not where a user
 * allocates: the allocator and the language runtime's allocation path
 * (plumbing: never shown), and allocation wrappers and container growth
 * (their blocks go to their caller).  Used by every path that names a
 * site: the analysis view and the in-process table of mtl_profile_call.
 */
#ifndef MTL_ANALYZE_ALLOCFRAMES_H
#define MTL_ANALYZE_ALLOCFRAMES_H

enum mtl_frame_role {
    MTL_ROLE_USER = 0,      /* code the user can change: a site */
    MTL_ROLE_PLUMBING = 1,  /* the allocator and the language runtime's allocation path */
    MTL_ROLE_WRAPPER = 2,   /* allocation wrappers and container growth: blocks go to the caller */
};

/* The role of a function from its demangled display name, and that name
 * cut at its first '(' (cut may be NULL when the name has none). */
enum mtl_frame_role mtl_frame_role(const char *name, const char *cut);

/* The built-in patterns, NULL-terminated. */
extern const char *const mtl_plumbing_patterns[];
extern const char *const mtl_wrapper_patterns[];

#endif
