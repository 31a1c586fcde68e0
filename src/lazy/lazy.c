/*
 * lazy.c: loading a library on its first call (lazy.h).
 */
#include "lazy/lazy.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *mtl_lazy_sym(struct mtl_lazy_lib *lib, const char *name)
{
    void *h = __atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE);
    if (!h) {
        /* Two threads may both get here: dlopen counts, and returns the
         * same handle to each. */
        h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "memtally: cannot load %s (Debian: apt-get install %s): %s\n",
                    lib->soname, lib->package, dlerror());
            exit(1);
        }
        __atomic_store_n(&lib->handle, h, __ATOMIC_RELEASE);
    }
    void *f = dlsym(h, name);
    if (!f) {
        fprintf(stderr, "memtally: %s has no %s (a version other than Debian 12's?)\n",
                lib->soname, name);
        exit(1);
    }
    return f;
}
