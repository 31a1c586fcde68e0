/*
 * debuginfod.c: asking debuginfod servers (DEBUGINFOD_URLS) for debug
 * files and executables by build id, through elfutils' libdebuginfod.
 *
 * The library is loaded with dlopen the first time a file is missing and
 * DEBUGINFOD_URLS is set, as libdw itself does: most analyses never need
 * it, it brings libcurl (whose start-up costs), and it need not be
 * installed at all.  We call it ourselves rather than let libdw's
 * dwfl_standard_find_debuginfo do it so that the search order is ours
 * (find.c) and a caller can forbid it (no_debuginfod) without touching the
 * environment.  The client takes its other settings from the environment
 * (DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT, DEBUGINFOD_PROGRESS, which
 * makes it print its progress on stderr: the user asked for that).  It
 * caches what it fetched, and what it did not find, in its cache
 * directory, so a second analysis asks no server again.
 */
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbols/internal.h"

/* The library, loaded once per process and never unloaded (libcurl does
 * not expect to be). */
static struct {
    pthread_once_t once;
    int loaded;
    __typeof__(debuginfod_begin) *begin;
    __typeof__(debuginfod_end) *end;
    __typeof__(debuginfod_find_debuginfo) *find_debuginfo;
    __typeof__(debuginfod_find_executable) *find_executable;
} lib = { PTHREAD_ONCE_INIT, 0, NULL, NULL, NULL, NULL };

struct mtl_debuginfod {
    debuginfod_client *client;
};

static void load(void)
{
    void *so = dlopen(DEBUGINFOD_SONAME, RTLD_LAZY | RTLD_LOCAL);
    if (!so)
        return;
    lib.begin = (__typeof__(lib.begin))dlsym(so, "debuginfod_begin");
    lib.end = (__typeof__(lib.end))dlsym(so, "debuginfod_end");
    lib.find_debuginfo =
        (__typeof__(lib.find_debuginfo))dlsym(so, "debuginfod_find_debuginfo");
    lib.find_executable =
        (__typeof__(lib.find_executable))dlsym(so, "debuginfod_find_executable");
    lib.loaded = lib.begin && lib.end && lib.find_debuginfo && lib.find_executable;
    if (!lib.loaded)
        dlclose(so);
}

/* The symbolizer's client, made on first use; NULL when debuginfod is not
 * to be asked (then never again for this symbolizer). */
static debuginfod_client *client(struct mtl_symbolizer *s)
{
    if (!s->use_debuginfod)
        return NULL;
    if (s->debuginfod)
        return s->debuginfod->client;
    const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
    if (urls && *urls) {
        pthread_once(&lib.once, load);
        if (lib.loaded) {
            s->debuginfod = calloc(1, sizeof *s->debuginfod);
            if (s->debuginfod)
                s->debuginfod->client = lib.begin();
            if (s->debuginfod && s->debuginfod->client)
                return s->debuginfod->client;
            free(s->debuginfod);
            s->debuginfod = NULL;
        }
    }
    s->use_debuginfod = 0;
    return NULL;
}

int mtl__debuginfod_find(struct mtl_symbolizer *s, int executable,
                         const unsigned char *build_id, size_t n, char **path)
{
    if (n == 0 || n > MTL_SYM_MAX_BUILD_ID)
        return -1;
    debuginfod_client *c = client(s);
    if (!c)
        return -1;
    *path = NULL;
    int fd = executable ? lib.find_executable(c, build_id, (int)n, path)
                        : lib.find_debuginfo(c, build_id, (int)n, path);
    if (fd >= 0 && *path)
        return fd;
    if (fd >= 0)
        close(fd);
    free(*path);
    *path = NULL;
    return -1;
}

void mtl__debuginfod_end(struct mtl_symbolizer *s)
{
    if (!s->debuginfod)
        return;
    lib.end(s->debuginfod->client);
    free(s->debuginfod);
    s->debuginfod = NULL;
}
