/* heaptrack_compat: a program instrumented for heaptrack with the API of
 * heaptrack_api.h (its weak symbols heaptrack_malloc, _realloc and _free,
 * called through its report macros, declared here as that header does),
 * not linked with memtally: under memtally record its reports count.
 *
 *   report_objects  50 objects of 32 bytes from a static arena
 *   main            10 of them reallocated to 64 bytes, 20 others freed
 *
 * Truth: 60 allocations (50 + 10 reallocations), 2240 bytes (1600 + 640),
 * 30 frees; live at the end 30 objects, 1280 bytes (20 of 32, 10 of 64).
 * Run without memtally: nothing is reported, the program runs the same.
 * Prints "heaptrack api ok".
 */
#include <stddef.h>
#include <stdio.h>

__attribute__((weak)) void heaptrack_malloc(void *ptr, size_t size);
__attribute__((weak)) void heaptrack_realloc(void *ptr_in, size_t size, void *ptr_out);
__attribute__((weak)) void heaptrack_free(void *ptr);
#define heaptrack_report_alloc(ptr, size) if (heaptrack_malloc) heaptrack_malloc(ptr, size)
#define heaptrack_report_realloc(in, size, out) if (heaptrack_realloc) heaptrack_realloc(in, size, out)
#define heaptrack_report_free(ptr) if (heaptrack_free) heaptrack_free(ptr)

static char arena[1 << 16];
static size_t used;
static void *objs[50];

static void *take(size_t n)
{
    void *p = arena + used;
    used += n;
    return p;
}

__attribute__((noinline)) static void report_objects(void)
{
    for (int i = 0; i < 50; i++) {
        objs[i] = take(32);
        heaptrack_report_alloc(objs[i], 32);
    }
}

int main(void)
{
    report_objects();
    for (int i = 0; i < 10; i++) {
        void *bigger = take(64);
        heaptrack_report_realloc(objs[i], 64, bigger);
        objs[i] = bigger;
    }
    for (int i = 10; i < 30; i++)
        heaptrack_report_free(objs[i]);
    puts("heaptrack api ok");
    return 0;
}
