// golden_cxx: C++ allocations behind operator new and the standard
// containers, for the hiding of the allocator's plumbing.
//
//   make_widgets   5 x new Widget (48 bytes each), 4 deleted, 1 leaks
//   fill_vector    17 push_backs into an empty std::vector<int>: libstdc++
//                  grows the capacity 1, 2, 4, 8, 16, 32, so 6 allocations
//                  of 4, 8, 16, 32, 64, 128 bytes (252), all freed
//   make_name      a std::string of 30 characters: one allocation of 31
//                  bytes, freed
//   libstdc++ (GCC 12) allocates its emergency exception pool when it is
//   loaded, before main: one malloc(72704), never freed.
//
// Truth: 13 calls, 73227 bytes; inside main 12 calls, 523 bytes; outside
// main (the pool) 1 call, 72704 bytes; leaked 72752 bytes in 2 blocks.
// valgrind agrees (13 allocs, 73,227 bytes allocated; it frees the pool
// itself at exit, so it counts 12 frees).
#include <string>
#include <vector>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

struct Widget {
    long id;
    char tag[40];
    explicit Widget(long i) : id(i) { tag[0] = 0; }
};

static Widget *widgets[5];
static size_t sink;

NOINLINE void make_widgets()
{
    for (int i = 0; i < 5; i++)
        widgets[i] = new Widget(i); // @make_widgets
    for (int i = 0; i < 4; i++)
        delete widgets[i];
    BARRIER();
}

NOINLINE void fill_vector()
{
    std::vector<int> v;
    for (int i = 0; i < 17; i++)
        v.push_back(i); // @fill_vector
    sink += v.capacity();
    BARRIER();
}

NOINLINE void make_name()
{
    std::string s(30, 'n'); // @make_name
    sink += s.size();
    BARRIER();
}

int main()
{
    static_assert(sizeof(Widget) == 48, "Widget is 48 bytes");
    make_widgets();
    fill_vector();
    make_name();
    if (sink != 32 + 30) return 1;
    if (write(1, "cxx ok\n", 7) != 7) return 1;
    return 0;
}
