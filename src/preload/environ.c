/*
 * environ.c: the options `memtally record` left in the environment, as a
 * block after the program's own entries (common/recenv.h): read at the
 * first hook call, then taken out by our constructor, before main, so
 * that the program sees the environment it would have had without us:
 * in environ (and so main's envp, getenv, the children it starts) and in
 * /proc/self/environ.
 *
 * Taking the block out of environ moves the entries after it down in
 * place, as unsetenv does; the array's slots past the new end are left
 * NULL.  /proc/self/environ shows the bytes the kernel copied at exec, up
 * to the end it keeps for the process; the block's strings are the last
 * of them, so moving that end back to where they begin hides them
 * (prctl PR_SET_MM_MAP, which needs no privilege).  Where that fails
 * (a kernel without checkpoint/restore support, a seccomp filter), the
 * block still shows there, and only there; we say nothing, as the
 * program must not notice.
 *
 * Not done from the first hook call: that may come from inside setenv,
 * which is counting environ's entries around its allocation.
 *
 * With --follow-exec the block stays in environ; a child given an
 * environment without it (env -i, execle) gets one appended at exec.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/procstat.h"
#include "common/recenv.h"

extern char **environ;

static long block_at = -1;
static size_t block_n;

int mtl__env_find(void)
{
    block_at = mtl_env_block(environ, &block_n);
    return block_at >= 0;
}

const char *mtl__env_get(const char *name)
{
    if (block_at >= 0)
        return mtl_env_block_get(environ, block_at, block_n, name);
    return getenv(name);
}

/* Moves the end of the environment area the kernel shows back to from,
 * when the strings from there to its end are exactly the block's. */
static void hide_from_proc(char *const *block, size_t n, const char *from)
{
    uint64_t f[MTL_STAT_FIELDS + 1];
    if (mtl_proc_stat(0, f) < 0)
        return;
    uint64_t env_start = f[50], env_end = f[51], at = (uint64_t)(uintptr_t)from;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = (uint64_t)(uintptr_t)block[i];
        if (s < at || s >= env_end)
            return; /* not the kernel's copy (a setenv made it anew) */
        bytes += strlen(block[i]) + 1;
    }
    if (at <= env_start || at + bytes != env_end)
        return;
    struct prctl_mm_map m = {
        .start_code = f[26], .end_code = f[27], .start_data = f[45], .end_data = f[46],
        .start_brk = f[47], .brk = (uint64_t)syscall(SYS_brk, 0), .start_stack = f[28],
        .arg_start = f[48], .arg_end = f[49], .env_start = env_start, .env_end = at,
        .auxv = NULL, .auxv_size = 0, .exe_fd = (uint32_t)-1,
    };
    prctl(PR_SET_MM, PR_SET_MM_MAP, &m, sizeof m, 0);
}

/* Takes environ[i] out, moving the entries after it down. */
static void remove_entry(size_t i)
{
    for (; environ[i]; i++)
        environ[i] = environ[i + 1];
}

void mtl__env_drop(const char *name)
{
    size_t n = 0;
    long at = mtl_env_block(environ, &n);
    if (at < 0)
        return;
    if (!mtl_env_block_whole(environ, at, n)) {
        long i = mtl_env_last(environ, name);
        if (i >= 0)
            remove_entry((size_t)i);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        if (!mtl_env_value(environ[at + (long)i], name))
            continue;
        remove_entry((size_t)at + i);
        /* The marker counts one fewer: its digits rewritten in place
         * (never more of them than before). */
        char *v = environ[at] + strlen(MTL_ENV_MARKER) + 1;
        mtl__fmt(v, strlen(v) + 1, "%zu", n - 1);
        return;
    }
}

void mtl__env_hide(void)
{
    size_t n = 0;
    long at = mtl_env_block(environ, &n);
    block_at = -1; /* mtl__env_get reads the environment from now on */
    if (at < 0)
        return;
    if (!mtl_env_block_whole(environ, at, n)) {
        /* Reordered by a shell: each of our names' last entry goes (the
         * kernel's copy is not ours to trim then). */
        for (size_t k = 0; k < sizeof mtl_env_names / sizeof *mtl_env_names; k++) {
            long i = mtl_env_last(environ, mtl_env_names[k]);
            if (i >= 0)
                remove_entry((size_t)i);
        }
        return;
    }
    char *block[MTL_ENV_MAX_BLOCK] = { NULL };
    memcpy(block, environ + at, n * sizeof *block);
    /* The block's strings in the order the kernel laid them out. */
    const char *first = block[0];
    for (size_t i = 1; i < n; i++)
        if (block[i] < first)
            first = block[i];
    size_t i = (size_t)at;
    for (; environ[i + n]; i++)
        environ[i] = environ[i + n];
    for (size_t k = 0; k < n; k++)
        environ[i + k] = NULL;
    hide_from_proc(block, n, first);
}

/* --- --follow-exec: a child's environment ------------------------------ */

#define EXEC_STRINGS 16384

char *const *mtl__env_for_exec(char *const envp[], size_t *made_size)
{
    *made_size = 0;
    size_t n = 0;
    while (envp && envp[n])
        n++;
    size_t k;
    if (!mtl__pl.opt.follow_exec || (envp && mtl_env_block(envp, &k) >= 0))
        return envp;
    Dl_info self;
    if (!dladdr((void *)mtl__env_for_exec, &self) || !self.dli_fname)
        return envp;
    size_t size = (n + MTL_ENV_MAX_BLOCK + 1) * sizeof(char *) + EXEC_STRINGS;
    char **env = mtl__pages_alloc(size); /* zeroed: the array ends in NULL */
    if (!env)
        return envp;
    for (size_t i = 0; i < n; i++)
        env[i] = envp[i];
    long theirs = envp ? mtl_env_last(envp, MTL_ENV_PRELOAD) : -1;
    struct mtl_env_opts o = {
        .pattern = mtl__pl.opt.pattern, .depth = mtl__pl.opt.depth,
        .sample_rate = mtl__pl.opt.sample_rate, .seed = mtl__pl.opt.seed,
        .time_resolution_us = mtl__pl.opt.time_resolution_us,
        .follow_fork = mtl__pl.opt.follow_fork, .follow_exec = 1, .region_fd = -1,
        .handover = mtl__pl.opt.handover,
        .calls = mtl__calls_patterns(), .library = self.dli_fname,
        .their_preload = theirs >= 0 ? mtl_env_value(envp[theirs], MTL_ENV_PRELOAD) : NULL,
    };
    char *strings = (char *)(env + n + MTL_ENV_MAX_BLOCK + 1);
    if (!mtl_env_block_make(&o, strings, EXEC_STRINGS, env + n)) {
        mtl__pages_free(env, size); /* no room: the child goes unfollowed */
        return envp;
    }
    *made_size = size;
    return env;
}
