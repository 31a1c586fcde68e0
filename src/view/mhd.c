/*
 * mhd.c: loading libmicrohttpd with dlopen (view/mhd.h says why).
 */
#include "view/mhd.h"

#include <dlfcn.h>
#include <stdio.h>

/* Debian 12's soname; the ABI of libmicrohttpd 0.9.x. */
#define MHD_LIBRARY "libmicrohttpd.so.12"

const struct mtl_mhd *mtl_mhd_load(char *err, size_t cap)
{
    static struct mtl_mhd m;
    static int loaded;
    if (loaded)
        return &m;
    void *lib = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(err, cap, "cannot load %s (Debian: apt-get install libmicrohttpd12): %s",
                 MHD_LIBRARY, dlerror());
        return NULL;
    }
    struct {
        const char *name;
        void **slot;
    } want[] = {
        { "MHD_start_daemon", (void **)&m.start_daemon },
        { "MHD_stop_daemon", (void **)&m.stop_daemon },
        { "MHD_get_daemon_info", (void **)&m.get_daemon_info },
        { "MHD_create_response_from_buffer", (void **)&m.create_response_from_buffer },
        { "MHD_add_response_header", (void **)&m.add_response_header },
        { "MHD_queue_response", (void **)&m.queue_response },
        { "MHD_destroy_response", (void **)&m.destroy_response },
        { "MHD_get_connection_values", (void **)&m.get_connection_values },
        { "MHD_lookup_connection_value", (void **)&m.lookup_connection_value },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        *want[i].slot = dlsym(lib, want[i].name);
        if (!*want[i].slot) {
            snprintf(err, cap, "%s has no %s", MHD_LIBRARY, want[i].name);
            dlclose(lib);
            return NULL;
        }
    }
    loaded = 1;
    return &m;
}
