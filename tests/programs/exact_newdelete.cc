// exact_newdelete: every form of operator new and delete that C++17 code
// calls (plain, array, nothrow, aligned, sized), one failing new caught as
// std::bad_alloc (whose exception object libstdc++ mallocs: 136 bytes,
// freed), and one block left live.  Run alone, under libstdc++'s
// operators (which call malloc), and with an allocator that brings its own
// operators (LD_PRELOAD=libjemalloc.so.2): the counts must be the same.
// libstdc++ (GCC 12) allocates its emergency exception pool when loaded:
// one malloc(72704), freed at exit by __gnu_cxx::__freeres (memtally calls
// it, as valgrind does).
//
// Truth (from the code):
//   allocations 9, frees 8, bytes_allocated 73244, peak_live_bytes 72840,
//   live_bytes_at_end 4, threads 1.  Prints "newdelete ok", exits 0.
#include <new>
#include <unistd.h>

struct alignas(64) Line {
    char c[64];
};

static volatile unsigned long long huge = 1ULL << 62;

int main()
{
    int *i = new int(1);                          // 4       _Znwm
    delete i;                                     //         _ZdlPvm (sized)
    int *arr = new int[10];                       // 40      _Znam
    delete[] arr;                                 //         _ZdaPv
    char *nt = new (std::nothrow) char[100];      // 100     _ZnamRKSt9nothrow_t
    delete[] nt;
    Line *l = new Line;                           // 64      _ZnwmSt11align_val_t
    delete l;                                     //         _ZdlPvmSt11align_val_t
    Line *ls = new Line[2];                       // 128: the peak, with the pool
    delete[] ls;                                  //         _ZdaPvSt11align_val_t
    Line *lnt = new (std::nothrow) Line;          // 64      aligned nothrow
    delete lnt;
    try {
        char *no = new char[huge];                // fails: nothing recorded
        no[0] = 0;
        return 1;
    } catch (const std::bad_alloc &) {
    }
    int *kept = new int(2);                       // 4, never freed: recorded
    *kept = 3;                                    // although the new before threw
    if (write(1, "newdelete ok\n", 13) != 13)  // no stdio: no buffer
        return 1;
    return 0;
}
