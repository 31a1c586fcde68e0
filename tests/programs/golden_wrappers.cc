// golden_wrappers: user functions that allocate only through the standard
// containers, std::string, make_shared, std::function, strdup and an
// xmalloc-style wrapper, for the allocation wrappers (docs/ANALYSIS.md,
// "Allocation wrappers"): each block's site must be the user function, not
// the container's growth or the wrapper.
//
// The program counts its own truth, exactly: this operator new (and new[],
// nothrow, aligned) calls malloc and adds the size it asks for to the table
// of the user function running on this thread (a thread-local label that
// each user function sets on entry and puts back on return); the C
// wrappers add what they pass to malloc and realloc (strdup: strlen + 1, as
// glibc's does).  At the end it prints, on stderr, one line per user
// function:
//
//     truth FUNCTION CALLS BYTES
//
// compare_keys is called by std::sort from inside sort_with_copies and
// allocates itself: its blocks are its own (the innermost user function),
// not sort_with_copies'.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

struct Truth {
    const char *function;
    unsigned long calls, bytes;
};

static Truth truth[] = {
    { "fill_vector", 0, 0 },    { "fill_map", 0, 0 },      { "fill_unordered", 0, 0 },
    { "grow_string", 0, 0 },    { "fill_deque", 0, 0 },    { "make_shared_objects", 0, 0 },
    { "fill_function", 0, 0 },  { "sort_with_copies", 0, 0 }, { "compare_keys", 0, 0 },
    { "dup_strings", 0, 0 },    { "use_xmalloc", 0, 0 },
};
enum { VECTOR, MAP, UNORDERED, STRING, DEQUE, SHARED, FUNCTION, SORT, COMPARE, STRDUP, XMALLOC };

static thread_local Truth *current;

// Sets the running user function for the life of the object.
struct Label {
    Truth *saved;
    explicit Label(int which) : saved(current) { current = &truth[which]; }
    ~Label() { current = saved; }
};

static void count(size_t size)
{
    if (current) {
        current->calls++;
        current->bytes += size;
    }
}

// operator new calls malloc itself, not through a helper function: a helper
// would be a frame of the program's own between the containers and malloc,
// and so the site of every block.
#define COUNTED_MALLOC(n, fail)                                               \
    size_t size = (n) ? (n) : 1;                                              \
    void *p = malloc(size);                                                   \
    if (!p)                                                                   \
        fail;                                                                 \
    count(size);                                                              \
    return p
#define COUNTED_ALIGNED(n, al)                                                \
    size_t a = static_cast<size_t>(al), size = ((n) ? (n) : 1) + a - 1;       \
    size -= size % a;                                                         \
    void *p = aligned_alloc(a, size);                                         \
    if (!p)                                                                   \
        throw std::bad_alloc();                                               \
    count(size);                                                              \
    return p

void *operator new(size_t n) { COUNTED_MALLOC(n, throw std::bad_alloc()); }
void *operator new[](size_t n) { COUNTED_MALLOC(n, throw std::bad_alloc()); }
void *operator new(size_t n, const std::nothrow_t &) noexcept { COUNTED_MALLOC(n, return nullptr); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { COUNTED_MALLOC(n, return nullptr); }
void *operator new(size_t n, std::align_val_t al) { COUNTED_ALIGNED(n, al); }
void *operator new[](size_t n, std::align_val_t al) { COUNTED_ALIGNED(n, al); }
void operator delete(void *p) noexcept { free(p); }
void operator delete[](void *p) noexcept { free(p); }
void operator delete(void *p, size_t) noexcept { free(p); }
void operator delete[](void *p, size_t) noexcept { free(p); }
void operator delete(void *p, std::align_val_t) noexcept { free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { free(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { free(p); }

// An xmalloc-style wrapper, as libiberty's, gnulib's and git's.
NOINLINE void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    count(n);
    return p;
}

NOINLINE void *xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n);
    if (!p)
        abort();
    count(n); // realloc to a non-zero size is one allocation of n bytes
    return p;
}

static size_t sink;

NOINLINE void fill_vector()
{
    Label l(VECTOR);
    std::vector<long> v; // no reserve: it grows 1, 2, 4, ... 1024
    for (long i = 0; i < 1000; i++)
        v.push_back(i);
    std::vector<std::string> names;
    for (int i = 0; i < 40; i++)
        names.emplace_back(20 + i, 'v'); // too long for the string's own buffer
    sink += v.size() + names.size();
    BARRIER();
}

NOINLINE void fill_map()
{
    Label l(MAP);
    std::map<int, long> m;
    for (int i = 0; i < 300; i++)
        m[(i * 37) % 1000] = i;
    std::map<std::string, int> byname;
    for (int i = 0; i < 50; i++)
        byname.emplace(std::string(30, char('a' + i % 26)) + std::to_string(i), i);
    sink += m.size() + byname.size();
    BARRIER();
}

NOINLINE void fill_unordered()
{
    Label l(UNORDERED);
    std::unordered_map<int, int> h;
    for (int i = 0; i < 500; i++)
        h[i * 7] = i;
    h.rehash(4096);
    sink += h.size();
    BARRIER();
}

NOINLINE void grow_string()
{
    Label l(STRING);
    std::string s;
    for (int i = 0; i < 200; i++)
        s += "a piece of text that is appended ";
    std::string t(100, 'x');
    s.append(t);
    s.insert(10, t);
    s.replace(0, 5, std::string(300, 'r'));
    std::string u = s + t;
    u.reserve(100000);
    sink += s.size() + u.size();
    BARRIER();
}

NOINLINE void fill_deque()
{
    Label l(DEQUE);
    std::deque<int> d;
    for (int i = 0; i < 3000; i++)
        d.push_back(i);
    for (int i = 0; i < 1000; i++)
        d.push_front(i);
    sink += d.size();
    BARRIER();
}

struct Big {
    long values[20];
    Big() { values[0] = 1; }
};

NOINLINE void make_shared_objects()
{
    Label l(SHARED);
    std::shared_ptr<Big> keep[10];
    for (int i = 0; i < 10; i++)
        keep[i] = std::make_shared<Big>();
    std::shared_ptr<Big> owned(new Big()); // a separate control block
    sink += keep[9]->values[0] + owned->values[0];
    BARRIER();
}

NOINLINE void fill_function()
{
    Label l(FUNCTION);
    long payload[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    std::vector<std::function<long()>> calls;
    for (int i = 0; i < 5; i++) // too big for std::function's own buffer
        calls.emplace_back([payload, i]() { return payload[i] + payload[7]; });
    for (auto &f : calls)
        sink += (size_t)f();
    BARRIER();
}

// Called by std::sort: allocates a key string per comparison.
NOINLINE bool compare_keys(int a, int b)
{
    Label l(COMPARE);
    std::string ka = std::to_string(a) + std::string(40, 'k');
    std::string kb = std::to_string(b) + std::string(40, 'k');
    return ka < kb;
}

NOINLINE void sort_with_copies()
{
    Label l(SORT);
    std::vector<int> v;
    v.reserve(64);
    for (int i = 0; i < 64; i++)
        v.push_back((i * 29) % 64);
    std::sort(v.begin(), v.end(), compare_keys);
    sink += (size_t)v[0];
    BARRIER();
}

NOINLINE void dup_strings()
{
    Label l(STRDUP);
    static const char *const words[] = { "a", "strdup", "allocates for its caller",
                                         "", "the quick brown fox jumps over the lazy dog" };
    char *copies[20];
    for (int i = 0; i < 20; i++) {
        const char *w = words[i % 5];
        copies[i] = strdup(w);
        if (!copies[i])
            abort();
        count(strlen(w) + 1);
    }
    for (int i = 0; i < 20; i++) {
        sink += strlen(copies[i]);
        free(copies[i]);
    }
    BARRIER();
}

NOINLINE void use_xmalloc()
{
    Label l(XMALLOC);
    char *blocks[8];
    for (int i = 0; i < 8; i++)
        blocks[i] = (char *)xmalloc(16 << i);
    char *grown = nullptr;
    for (size_t n = 10; n < 5000; n *= 3)
        grown = (char *)xrealloc(grown, n);
    for (int i = 0; i < 8; i++)
        free(blocks[i]);
    free(grown);
    BARRIER();
}

int main()
{
    fill_vector();
    fill_map();
    fill_unordered();
    grow_string();
    fill_deque();
    make_shared_objects();
    fill_function();
    sort_with_copies();
    dup_strings();
    use_xmalloc();
    for (const Truth &t : truth)
        fprintf(stderr, "truth %s %lu %lu\n", t.function, t.calls, t.bytes);
    printf("wrappers ok %zu\n", sink);
    return 0;
}
