// exact_cxx: new/delete, new[]/delete[] (with the 8-byte array cookie that a
// type with a destructor adds), std::vector growth after a known reserve,
// std::string past its 15-character in-place buffer.  libstdc++ (GCC 12)
// allocates its emergency exception pool when loaded: one malloc(72704),
// freed at exit by __gnu_cxx::__freeres, which memtally calls at exit as
// valgrind does.
//
// Truth (from the code; valgrind agrees):
//   allocations 9, frees 9, bytes_allocated 73878, peak_live_bytes 73704,
//   live_bytes_at_end 0, threads 1.  Prints "cxx ok", exits 0.
#include <string>
#include <vector>
#include <unistd.h>

struct Obj {
    int v;
    Obj() : v(1) {}
    ~Obj() { v = 0; }                       // non-trivial: new[] adds a cookie
};

static int run()
{
    // live: 72704 (the pool)
    int *i = new int(7);                    // 4: live 72708
    delete i;                               // live 72704
    int *arr = new int[10];                 // 40: live 72744
    Obj *objs = new Obj[3];                 // 3*4 + 8 = 20: live 72764
    delete[] arr;                           // live 72724
    delete[] objs;                          // live 72704
    {
        std::vector<int> v;
        v.reserve(4);                       // 16: live 72720
        for (int k = 0; k < 4; k++) v.push_back(k);   // no allocation
        v.push_back(4);                     // 32 then free 16: live 72736
        std::string s(20, 'x');             // 21: live 72757
        s.append("0123456789");             // capacity 40: 41 then free 21: live 72777
        std::string small("short");         // in place: no allocation
        if (v.size() != 5 || s.size() != 30 || small.size() != 5) return 1;
    }                                       // free 32 and 41: live 72704
    char *big = new char[1000];             // live 73704: the peak
    big[999] = 0;
    delete[] big;                           // live 72704
    return 0;
}

int main()
{
    if (run()) return 1;
    if (write(1, "cxx ok\n", 7) != 7) return 1;
    return 0;                               // the pool is still live: 72704
}
