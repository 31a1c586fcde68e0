/* exact_deepbind: allocates a 777-byte block, dlopen()s the library named
 * by argv[1] with RTLD_DEEPBIND (RTLD_NOW, or RTLD_LAZY with a second
 * argument "lazy"), calls plugin_run (3 allocations, 2 frees, 4888 bytes,
 * returns a 3333-byte block), has the library free both the 777-byte block
 * and the returned one (plugin_free), and dlclose()s it.  Such a library
 * binds malloc and free inside itself to libc's, past a preloaded
 * profiler's.
 *
 * Truth (valgrind --trace-malloc=yes, glibc 2.36, name "./exact_plugin.so";
 * dlopen and dlclose allocate inside glibc as for exact_dlopen): see
 * tests/integration/test_exact_deepbind.sh.  Prints "deepbind ok". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) die("usage: exact_deepbind LIBRARY [lazy]\n");
    char *mine = malloc(777);
    if (!mine) die("malloc failed\n");
    mine[0] = 1;
    int how = argc == 3 ? RTLD_LAZY : RTLD_NOW;
    void *h = dlopen(argv[1], how | RTLD_DEEPBIND);
    if (!h) die("dlopen failed\n");
    void *(*run)(void) = (void *(*)(void))dlsym(h, "plugin_run");
    void (*pfree)(void *) = (void (*)(void *))dlsym(h, "plugin_free");
    if (!run || !pfree) die("dlsym failed\n");
    void *keep = run();
    pfree(mine);
    pfree(keep);
    dlclose(h);
    (void)!write(1, "deepbind ok\n", 12);
    return 0;
}
