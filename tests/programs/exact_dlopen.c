/* exact_dlopen: dlopen()s the library named by argv[1] (the test builds it
 * from exact_plugin.c.in and passes "./exact_plugin.so"), calls plugin_run
 * (3 allocations, 2 frees, 4888 bytes, returns a 3333-byte block), dlclose()s
 * it, then frees the returned block; with a second argument, that many
 * times over (test_exact_dlopen_loop).
 *
 * dlopen and dlclose allocate inside glibc; the truth for those is valgrind's
 * count (glibc 2.36, valgrind --trace-malloc=yes, name "./exact_plugin.so"):
 * 7 allocations (18, 1242, 146 by realloc(NULL), 56, 72, 8, 2304 bytes; 3846
 * in all), then 1 free (the 8) during dlopen; dlclose frees all but the
 * 2304-byte block.  Three of the sizes grow with the name's length; none
 * changed with the directory or with more libraries preloaded.
 * The peak comes right after plugin_run's malloc(3333): 3838 + 4888 = 8726.
 *
 * Truth (valgrind; massif gives the same peak):
 *   allocations 10, frees 9, bytes_allocated 8734, peak_live_bytes 8726,
 *   live_bytes_at_end 2304, threads 1.  Prints "dlopen ok", exits 0.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) die("usage: exact_dlopen LIBRARY [TIMES]\n");
    int times = argc == 3 ? atoi(argv[2]) : 1;
    for (int i = 0; i < times; i++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) die("dlopen failed\n");
        void *(*run)(void) = (void *(*)(void))dlsym(h, "plugin_run");
        if (!run) die("dlsym failed\n");
        void *keep = run();
        if (!keep) die("plugin_run failed\n");
        if (dlclose(h)) die("dlclose failed\n");
        free(keep);
    }
    (void)!write(1, "dlopen ok\n", 10);
    return 0;
}
