/*
 * hooks.c: the entry points that LD_PRELOAD puts in front of the program's
 * allocator: the malloc family, and the few calls after which the trace
 * must catch up (dlclose, the exec family, _exit).  C++'s operators are in
 * newdelete.c.
 *
 * The real functions come from dlsym(RTLD_NEXT), so a program that brings
 * its own allocator (jemalloc, tcmalloc) keeps it.  dlsym itself may call
 * malloc or calloc before we know where they are: those few calls are
 * served from a static bootstrap arena, and freeing such a block is a
 * no-op.
 *
 * Every hook follows one pattern: if this thread is already inside
 * memtally (tls.in_hook), or memtally is not recording, call the real
 * function and nothing else.  Otherwise mark the thread, call the real
 * function, record, restore errno, unmark.  A free is recorded before the
 * block goes back to the allocator, an allocation after it came out (see
 * events.c for why the order matters).
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define HOOK_INLINE static inline __attribute__((always_inline))

static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    int (*dlclose)(void *);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                       const posix_spawnattr_t *, char *const[], char *const[]);
    int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
    void (*exit_)(int);
    void (*Exit_)(int);
    atomic_int resolved;
} real;

/* --- bootstrap --------------------------------------------------------- */

#define BOOT_SIZE (256u << 10)
static _Alignas(64) char boot[BOOT_SIZE];
static atomic_size_t boot_used;
static atomic_int resolving;

static void *boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    size_t need = size + align;
    size_t at = atomic_fetch_add(&boot_used, need);
    if (at + need > BOOT_SIZE)
        return NULL;
    uintptr_t p = ((uintptr_t)boot + at + align - 1) & ~(uintptr_t)(align - 1);
    return (void *)p;
}

static inline int is_boot(const void *p)
{
    return (uintptr_t)p - (uintptr_t)boot < BOOT_SIZE; /* one test, on free's fast path */
}

static void *sym(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
    if (atomic_exchange(&resolving, 1))
        return; /* dlsym calling back into us: served by boot_alloc */
    real.malloc = sym("malloc");
    real.free = sym("free");
    real.calloc = sym("calloc");
    real.realloc = sym("realloc");
    real.reallocarray = sym("reallocarray");
    real.posix_memalign = sym("posix_memalign");
    real.aligned_alloc = sym("aligned_alloc");
    real.memalign = sym("memalign");
    real.valloc = sym("valloc");
    real.pvalloc = sym("pvalloc");
    real.dlclose = sym("dlclose");
    real.execve = sym("execve");
    real.execvpe = sym("execvpe");
    real.fexecve = sym("fexecve");
    real.posix_spawn = sym("posix_spawn");
    real.posix_spawnp = sym("posix_spawnp");
    real.exit_ = sym("_exit");
    real.Exit_ = sym("_Exit");
    mtl__real_dlopen = sym("dlopen"); /* redirect.c */
    mtl__unwindfds_resolve();
    atomic_store(&real.resolved, 1);
    atomic_store(&resolving, 0);
}

/* Set once the real functions are resolved and initialising has begun:
 * it implies real.resolved, so the hooks' fast paths test it alone. */
static atomic_int init_started;

static inline int started(void)
{
    return atomic_load_explicit(&init_started, memory_order_acquire);
}

/* The slow path of every hook: resolve and initialise on first use. */
void mtl__hooks_first_use(void)
{
    if (!atomic_load(&real.resolved))
        resolve();
    if (!started() && atomic_load(&real.resolved)) {
        atomic_store_explicit(&init_started, 1, memory_order_release);
        mtl__init();
    }
}

HOOK_INLINE int recording(struct mtl__tls *tls)
{
    if (MTL_UNLIKELY(!started()))
        mtl__hooks_first_use();
    return !tls->in_hook &&
           atomic_load_explicit(mtl__pl.state, memory_order_relaxed) ==
               MTL_RECORDING;
}

/* --- recording --------------------------------------------------------- */

/* Whether to record this allocation, asked before it is made: recording,
 * and in sampled mode, only when the countdown reaches its point, so that
 * an unsampled call costs a subtraction and a branch and nothing else. */
HOOK_INLINE int wanted(struct mtl__tls *tls, size_t size)
{
    if (!recording(tls)) {
        /* Sampled mode: the fast path passes a call only while the
         * countdown lasts, so it goes on here too (or every call would
         * come to the slow path while paused). */
        if (mtl__pl.opt.sample_rate)
            (void)mtl__sample_hit(tls, size);
        return 0;
    }
    return !mtl__pl.opt.sample_rate || mtl__sample_hit(tls, size);
}

/* skip: frames of memtally between the hook and the program, besides the
 * hook's own.  Inlined into the hook, whose frame (with a frame pointer,
 * as taking its address gives it one) is the program's caller's: the walk
 * begins at the program's frame (mtl__capture_stack_at). */
HOOK_INLINE void note_alloc_skip(struct mtl__tls *tls, void *p, size_t size, unsigned skip)
{
    if (mtl__pl.opt.sample_rate && mtl__sampled_add((uint64_t)(uintptr_t)p) < 0)
        return;
    int saved = errno;
    struct mtl_tstate *ts = mtl__thread_state();
    if (ts) {
        uint32_t stack = mtl__capture_stack_at(mtl__tls.slot, __builtin_frame_address(0), skip);
        mtl__record_alloc((uint64_t)(uintptr_t)p, size, stack);
    }
    tls->last_alloc = p;
    errno = saved;
}

HOOK_INLINE void note_alloc(struct mtl__tls *tls, void *p, size_t size)
{
    note_alloc_skip(tls, p, size, 0);
}

/* Whether to record the free of p: recording, and in sampled mode only if
 * p may have been sampled (the filter rules out most others with one
 * load). */
HOOK_INLINE int free_wanted(struct mtl__tls *tls, void *p)
{
    return recording(tls) &&
           (!mtl__pl.opt.sample_rate || mtl__sampled_maybe((uint64_t)(uintptr_t)p));
}

/* With in_hook set: records the free of p (in sampled mode, if p was). */
HOOK_INLINE void note_free(void *p)
{
    int saved = errno;
    if (!mtl__pl.opt.sample_rate || mtl__sampled_take((uint64_t)(uintptr_t)p))
        mtl__record_free((uint64_t)(uintptr_t)p);
    errno = saved;
}

/* The fast path of malloc and free, with no call in it, so that the
 * compiler makes the hook a jump to the allocator without saving a
 * register: 1 when the call goes straight through, 0 for the slow path,
 * which decides it all again.
 *
 * In sampled mode an allocation short of the countdown's point passes on
 * the countdown alone, whatever the state: it would not be recorded
 * recording or not, inside memtally or not (memtally's own few calls then
 * count down too).  The countdown is never negative, and 0 until a
 * thread's first slow call draws it.  sample_rate changes only while
 * nothing is recorded (mtl_start): a countdown left from a sampled trace
 * is not looked at in full mode. */
HOOK_INLINE int alloc_passes(struct mtl__tls *tls, size_t size)
{
    if (MTL_LIKELY(mtl__pl.opt.sample_rate)) {
        uint64_t left = (uint64_t)tls->sample_left;
        if (MTL_UNLIKELY(size >= left))
            return 0;
        tls->sample_left = (int64_t)(left - size);
        return 1;
    }
    if (MTL_UNLIKELY(!started()))
        return 0;
    return tls->in_hook ||
           atomic_load_explicit(mtl__pl.state, memory_order_relaxed) != MTL_RECORDING;
}

/* realloc's: as an allocation's, and the old block (if any) surely not
 * sampled, nor one of the bootstrap arena's. */
HOOK_INLINE int realloc_passes(struct mtl__tls *tls, void *p, size_t size)
{
    if (p && (is_boot(p) || (mtl__pl.opt.sample_rate &&
                             mtl__sampled_maybe((uint64_t)(uintptr_t)p))))
        return 0;
    return alloc_passes(tls, size);
}

/* In sampled mode a free passes when its block is surely not sampled
 * (the filter), whatever the state, as nothing else would be done with it
 * (a pool's block and a bootstrap block excepted). */
HOOK_INLINE int free_passes(struct mtl__tls *tls, void *p)
{
    if (MTL_UNLIKELY(is_boot(p) || atomic_load_explicit(&mtl__pools, memory_order_relaxed)))
        return 0;
    if (MTL_LIKELY(mtl__pl.opt.sample_rate))
        return !mtl__sampled_maybe((uint64_t)(uintptr_t)p);
    if (MTL_UNLIKELY(!started()))
        return 0;
    return tls->in_hook ||
           atomic_load_explicit(mtl__pl.state, memory_order_relaxed) != MTL_RECORDING;
}

static __attribute__((noinline)) void *malloc_slow(size_t size)
{
    if (MTL_UNLIKELY(!atomic_load_explicit(&real.resolved, memory_order_relaxed))) {
        if (atomic_load(&resolving))
            return boot_alloc(size, 16);
        mtl__hooks_first_use();
        if (!real.malloc)
            return boot_alloc(size, 16);
    }
    struct mtl__tls *tls = &mtl__tls;
    if (!wanted(tls, size))
        return real.malloc(size);
    tls->in_hook = 1;
    void *p = real.malloc(size);
    if (p)
        note_alloc(tls, p, size);
    tls->in_hook = 0;
    return p;
}

EXPORT void *malloc(size_t size)
{
    if (MTL_LIKELY(alloc_passes(&mtl__tls, size)))
        return real.malloc(size);
    return malloc_slow(size);
}

static __attribute__((noinline)) void *calloc_slow(size_t n, size_t size)
{
    if (MTL_UNLIKELY(!atomic_load_explicit(&real.resolved, memory_order_relaxed))) {
        if (atomic_load(&resolving)) {
            size_t total;
            if (__builtin_mul_overflow(n, size, &total))
                return NULL;
            return boot_alloc(total, 16); /* static: already zero */
        }
        mtl__hooks_first_use();
    }
    struct mtl__tls *tls = &mtl__tls;
    size_t total;
    if (__builtin_mul_overflow(n, size, &total) || !wanted(tls, total))
        return real.calloc(n, size);
    tls->in_hook = 1;
    void *p = real.calloc(n, size);
    if (p)
        note_alloc(tls, p, total);
    tls->in_hook = 0;
    return p;
}

EXPORT void *calloc(size_t n, size_t size)
{
    size_t total;
    if (MTL_LIKELY(!__builtin_mul_overflow(n, size, &total) && alloc_passes(&mtl__tls, total)))
        return real.calloc(n, size);
    return calloc_slow(n, size);
}

static __attribute__((noinline)) void free_slow(void *p)
{
    if (is_boot(p))
        return;
    if (MTL_UNLIKELY(!atomic_load_explicit(&real.resolved, memory_order_relaxed)))
        mtl__hooks_first_use();
    struct mtl__tls *tls = &mtl__tls;
    /* A pool's block (mtl_pool) was released in the trace already. */
    if (!free_wanted(tls, p) ||
        (MTL_UNLIKELY(atomic_load_explicit(&mtl__pools, memory_order_relaxed)) &&
         mtl__pool_take((uint64_t)(uintptr_t)p))) {
        real.free(p);
        return;
    }
    tls->in_hook = 1;
    note_free(p);
    real.free(p);
    tls->in_hook = 0;
}

EXPORT void free(void *p)
{
    if (!p)
        return;
    if (MTL_LIKELY(free_passes(&mtl__tls, p))) {
        real.free(p);
        return;
    }
    free_slow(p);
}

/* realloc and reallocarray: the free of the old block is stamped before
 * the allocator can hand it to another thread, and written only if the
 * call succeeded (or freed, for size 0). */
HOOK_INLINE void *realloc_common(void *p, size_t size, size_t nmemb, int array)
{
    struct mtl__tls *tls = &mtl__tls;
    if (!recording(tls))
        return array ? real.reallocarray(p, nmemb, size) : real.realloc(p, size);
    size_t total = size;
    if (array && __builtin_mul_overflow(nmemb, size, &total))
        return real.reallocarray(p, nmemb, size); /* fails: counts nothing */
    /* Sampled mode: neither an old block that may have been sampled nor a
     * new one that is: nothing to do but count down. */
    int hit = 0;
    if (mtl__pl.opt.sample_rate && !(p && mtl__sampled_maybe((uint64_t)(uintptr_t)p)) &&
        !(hit = mtl__sample_hit(tls, total)))
        return array ? real.reallocarray(p, nmemb, size) : real.realloc(p, size);
    tls->in_hook = 1;
    /* In sampled mode only a sampled old block has a free to record; it
     * leaves the sampled set before the allocator can hand it out again. */
    int sampled = mtl__pl.opt.sample_rate != 0;
    int old_known = p && (!sampled || mtl__sampled_take((uint64_t)(uintptr_t)p));
    uint64_t t_free = old_known ? mtl__begin_pending() : 0;
    void *q = array ? real.reallocarray(p, nmemb, size) : real.realloc(p, size);
    int saved = errno;
    int freed = old_known && (q != NULL || total == 0);
    if (sampled && old_known && !freed)
        mtl__sampled_add((uint64_t)(uintptr_t)p); /* it failed: p lives on */
    if (sampled && !hit && q && total)
        hit = mtl__sample_hit(tls, total);
    int new_known = q && (!sampled || (hit && mtl__sampled_add((uint64_t)(uintptr_t)q) == 0));
    struct mtl_tstate *ts = mtl__thread_state();
    uint32_t stack = (new_known && ts)
                         ? mtl__capture_stack_at(mtl__tls.slot, __builtin_frame_address(0), 0)
                         : 0;
    if (old_known)
        mtl__end_pending_realloc(t_free, (uint64_t)(uintptr_t)p, freed,
                                 new_known ? (uint64_t)(uintptr_t)q : 0, total, stack);
    else if (new_known)
        mtl__record_alloc((uint64_t)(uintptr_t)q, total, stack);
    errno = saved;
    tls->in_hook = 0;
    return q;
}

static void *realloc_boot(void *p, size_t size)
{
    /* A bootstrap block: copy what it can hold into a real one. */
    void *q = malloc(size);
    if (q) {
        size_t room = (size_t)(boot + BOOT_SIZE - (char *)p);
        memcpy(q, p, size < room ? size : room);
    }
    return q;
}

static __attribute__((noinline)) void *realloc_slow(void *p, size_t size)
{
    if (MTL_UNLIKELY(!atomic_load_explicit(&real.resolved, memory_order_relaxed))) {
        if (atomic_load(&resolving)) {
            void *q = boot_alloc(size, 16);
            if (q && p)
                memcpy(q, p, size); /* boot blocks are contiguous: safe */
            return q;
        }
        mtl__hooks_first_use();
    }
    if (is_boot(p))
        return realloc_boot(p, size);
    return realloc_common(p, size, 1, 0);
}

EXPORT void *realloc(void *p, size_t size)
{
    if (MTL_LIKELY(realloc_passes(&mtl__tls, p, size)))
        return real.realloc(p, size);
    return realloc_slow(p, size);
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    if (MTL_UNLIKELY(!atomic_load_explicit(&real.resolved, memory_order_relaxed)))
        mtl__hooks_first_use();
    if (!real.reallocarray) {
        size_t total;
        if (__builtin_mul_overflow(nmemb, size, &total)) {
            errno = ENOMEM;
            return NULL;
        }
        return realloc(p, total);
    }
    if (is_boot(p)) {
        size_t total;
        if (__builtin_mul_overflow(nmemb, size, &total)) {
            errno = ENOMEM;
            return NULL;
        }
        return realloc_boot(p, total);
    }
    return realloc_common(p, size, nmemb, 1);
}

/* The aligned family: the same pattern, the requested size recorded. */
#define ALIGNED_HOOK(call, size)                                            \
    struct mtl__tls *tls = &mtl__tls;                                       \
    if (!wanted(tls, size))                                                 \
        return call;                                                        \
    tls->in_hook = 1;                                                       \
    void *p = call;                                                         \
    if (p)                                                                  \
        note_alloc(tls, p, size);                                           \
    tls->in_hook = 0;                                                       \
    return p

static inline void ensure_resolved(void)
{
    if (MTL_UNLIKELY(!atomic_load_explicit(&real.resolved, memory_order_relaxed)))
        mtl__hooks_first_use();
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (atomic_load(&resolving))
        return boot_alloc(size, align);
    ensure_resolved();
    ALIGNED_HOOK(real.memalign(align, size), size);
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    ensure_resolved();
    ALIGNED_HOOK(real.aligned_alloc(align, size), size);
}

EXPORT void *valloc(size_t size)
{
    ensure_resolved();
    ALIGNED_HOOK(real.valloc(size), size);
}

EXPORT void *pvalloc(size_t size)
{
    ensure_resolved();
    ALIGNED_HOOK(real.pvalloc(size), size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    ensure_resolved();
    struct mtl__tls *tls = &mtl__tls;
    if (!wanted(tls, size))
        return real.posix_memalign(out, align, size);
    tls->in_hook = 1;
    int rc = real.posix_memalign(out, align, size);
    if (rc == 0)
        note_alloc(tls, *out, size);
    tls->in_hook = 0;
    return rc;
}

/* --- for the hooks of other files (newdelete.c) ------------------------ */

int mtl__hook_wanted(size_t size)
{
    ensure_resolved();
    return wanted(&mtl__tls, size);
}

__attribute__((noinline)) void mtl__hook_allocated(void *p, size_t size)
{
    note_alloc_skip(&mtl__tls, p, size, 1); /* this function, then the hook */
}

void mtl__hook_freeing(void *p)
{
    ensure_resolved();
    struct mtl__tls *tls = &mtl__tls;
    if (!free_wanted(tls, p))
        return;
    tls->in_hook = 1;
    note_free(p);
    tls->in_hook = 0;
}

/* --- calls after which the trace must catch up ------------------------- */

EXPORT int dlclose(void *handle)
{
    ensure_resolved();
    int recording_now = atomic_load(mtl__pl.state) == MTL_RECORDING;
    /* Know the object before it goes, and that it went after. */
    if (recording_now)
        mtl__modules_rescan();
    int rc = real.dlclose(handle);
    if (recording_now) {
        int saved = errno;
        mtl__modules_rescan();
        errno = saved;
    }
    return rc;
}

/* The environment a child gets: with --follow-exec, one that keeps it
 * followed (environ.c).  In a vfork child the pages it takes are the
 * parent's too: they stay mapped there (only when the block had to be
 * appended). */
static char *const *exec_environment(char *const envp[], size_t *made)
{
    int st = atomic_load(mtl__pl.state);
    *made = 0;
    if (st != MTL_RECORDING && st != MTL_PAUSED)
        return envp;
    mtl__tls.in_hook++;
    char *const *env = mtl__env_for_exec(envp, made);
    mtl__tls.in_hook--;
    return env;
}

/* Before the process image is replaced: finish the trace; if exec fails,
 * recording goes on in a continuation of the same file. */
extern void mtl__before_exec(void) MTL_HIDDEN;
extern void mtl__after_failed_exec(void) MTL_HIDDEN;

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    ensure_resolved();
    size_t made;
    char *const *env = exec_environment(envp, &made);
    mtl__before_exec();
    int rc = real.execve(path, argv, env);
    int saved = errno;
    mtl__after_failed_exec();
    if (made)
        mtl__pages_free((void *)env, made);
    errno = saved;
    return rc;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    ensure_resolved();
    size_t made;
    char *const *env = exec_environment(envp, &made);
    mtl__before_exec();
    int rc = real.execvpe(file, argv, env);
    int saved = errno;
    mtl__after_failed_exec();
    if (made)
        mtl__pages_free((void *)env, made);
    errno = saved;
    return rc;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    ensure_resolved();
    size_t made;
    char *const *env = exec_environment(envp, &made);
    mtl__before_exec();
    int rc = real.fexecve(fd, argv, env);
    int saved = errno;
    mtl__after_failed_exec();
    if (made)
        mtl__pages_free((void *)env, made);
    errno = saved;
    return rc;
}

/* posix_spawn: the child runs another program at once; with --follow-exec
 * it must find our block in the environment it is given. */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    ensure_resolved();
    size_t made;
    char *const *env = exec_environment(envp, &made);
    int rc = real.posix_spawn(pid, path, fa, attr, argv, env);
    if (made)
        mtl__pages_free((void *)env, made);
    return rc;
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    ensure_resolved();
    size_t made;
    char *const *env = exec_environment(envp, &made);
    int rc = real.posix_spawnp(pid, file, fa, attr, argv, env);
    if (made)
        mtl__pages_free((void *)env, made);
    return rc;
}

extern char **environ;

EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* execl, execlp, execle: their argument lists are copied to the stack. */
#define MAX_EXECL_ARGS 4096
#define COLLECT_ARGS(first, argv, ap, nargs)                                 \
    do {                                                                     \
        argv[0] = (char *)(first);                                           \
        nargs = 1;                                                           \
        while (argv[nargs - 1] && nargs < MAX_EXECL_ARGS)                    \
            argv[nargs++] = va_arg(ap, char *);                              \
        if (argv[nargs - 1]) {                                               \
            va_end(ap);                                                      \
            errno = E2BIG;                                                   \
            return -1;                                                       \
        }                                                                    \
    } while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
    char *argv[MAX_EXECL_ARGS];
    size_t n;
    va_list ap;
    va_start(ap, arg);
    COLLECT_ARGS(arg, argv, ap, n);
    va_end(ap);
    return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    char *argv[MAX_EXECL_ARGS];
    size_t n;
    va_list ap;
    va_start(ap, arg);
    COLLECT_ARGS(arg, argv, ap, n);
    va_end(ap);
    return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    char *argv[MAX_EXECL_ARGS];
    size_t n;
    va_list ap;
    va_start(ap, arg);
    COLLECT_ARGS(arg, argv, ap, n);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

/* _exit skips atexit and destructors: finish the trace first. */
extern void mtl__before_exit_now(void) MTL_HIDDEN;

EXPORT void _exit(int status)
{
    ensure_resolved();
    mtl__before_exit_now();
    real.exit_(status);
    __builtin_unreachable();
}

EXPORT void _Exit(int status)
{
    ensure_resolved();
    mtl__before_exit_now();
    real.Exit_(status);
    __builtin_unreachable();
}
