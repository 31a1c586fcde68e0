// exact_ctor_cxx: allocations before main from a C++ global object's
// constructor and from an __attribute__((constructor)) function, plus the
// emergency exception pool that libstdc++ (GCC 12) allocates when it is
// loaded: one malloc(72704), freed at exit by __gnu_cxx::__freeres, which
// memtally calls at exit as valgrind does.
//
// Truth (from the code; valgrind agrees):
//   allocations 4, frees 3, bytes_allocated 72908, peak_live_bytes 72844,
//   live_bytes_at_end 64, threads 1.  Prints "ctor cxx ok", exits 0.
#include <cstdlib>
#include <unistd.h>

struct Holder {
    char *buf;
    Holder() : buf(new char[100]) {}        // before main: live pool + 100
};
static Holder holder;
static void *early;

__attribute__((constructor)) static void before_main()
{
    early = std::malloc(40);                // before main: live pool + 40
}

int main()
{
    // here: pool 72704 + 100 + 40 = 72844 live, the peak
    if (!holder.buf || !early) return 1;
    delete[] holder.buf;                    // live 72744
    holder.buf = nullptr;
    std::free(early);                       // live 72704
    long *keep = new long[8];               // 64 bytes: live 72768
    keep[7] = 7;
    if (write(1, "ctor cxx ok\n", 12) != 12) return 1;
    return 0;                               // pool and keep live: 72768
}
