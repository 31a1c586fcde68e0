/*
 * interpose.c: the floor of any preloaded allocation profiler.  Preloaded
 * (LD_PRELOAD), it stands in front of the malloc family as memtally's
 * hooks do and forwards every call to glibc's own functions, doing
 * nothing else: what it costs over the program alone is the price of
 * being called instead of glibc (a jump through the PLT to us, one more
 * to glibc), which memtally's sampled mode pays too.  bench/sampling.sh
 * runs it beside sampled mode.
 *
 * glibc's __libc_* entry points need no dlsym, so nothing here can be
 * called back before it is ready.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t size)
{
    return __libc_malloc(size);
}

EXPORT void free(void *p)
{
    __libc_free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
    return __libc_calloc(n, size);
}

EXPORT void *realloc(void *p, size_t size)
{
    return __libc_realloc(p, size);
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, total);
}

EXPORT void *memalign(size_t align, size_t size)
{
    return __libc_memalign(align, size);
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    return __libc_memalign(align, size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    int saved = errno;
    void *p = __libc_memalign(align, size);
    errno = saved; /* posix_memalign leaves errno alone */
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

EXPORT void *valloc(size_t size)
{
    return __libc_valloc(size);
}

EXPORT void *pvalloc(size_t size)
{
    return __libc_pvalloc(size);
}
