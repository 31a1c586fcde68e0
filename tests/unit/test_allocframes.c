/* The roles of frames (src/analyze/allocframes.h): every built-in pattern
 * matches a name made from it, in each form the symbolizer gives names
 * (a template instance's return type before it, parameters after it,
 * glibc's __GI_ alias, a clone suffix); real names from libstdc++, glibc,
 * SQLite and CPython as memtally shows them; near misses that are user
 * code; strings that are not function names at all; and how fast it is
 * (printed, not checked: the machine is shared). */
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/allocframes.h"
#include "check.h"

/* As the analysis calls it: with the name cut at its first '('. */
static enum mtl_frame_role role(const char *name)
{
    char cut[4096];
    const char *paren = strchr(name, '(');
    if (!paren || paren == name)
        return mtl_frame_role(name, NULL);
    size_t n = (size_t)(paren - name);
    if (n >= sizeof cut)
        n = sizeof cut - 1;
    memcpy(cut, name, n);
    cut[n] = '\0';
    return mtl_frame_role(name, cut);
}

#define CHECK_ROLE(name, want)                                                \
    do {                                                                      \
        enum mtl_frame_role got_ = role(name);                                \
        if (got_ != (want))                                                   \
            fprintf(stderr, "role of \"%s\": %d, want %d\n", (name), got_,    \
                    (want));                                                  \
        CHECK_EQ(got_, want);                                                 \
    } while (0)

/* A name the pattern matches: each '*' becomes "x", an escaped character
 * itself (the lists use no '?' and no brackets). */
static void instance(const char *pattern, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *p = pattern; *p && k + 2 < cap; p++) {
        CHECK(*p != '?' && *p != '[');
        if (*p == '\\' && p[1])
            p++;
        out[k++] = *p == '*' ? 'x' : *p;
    }
    out[k] = '\0';
}

static int matches_any(const char *const *patterns, const char *name)
{
    for (; *patterns; patterns++)
        if (fnmatch(*patterns, name, 0) == 0)
            return 1;
    return 0;
}

/* The role of a bare qualified name by fnmatch() over the lists: what the
 * fast matcher must agree with. */
static enum mtl_frame_role reference(const char *name)
{
    if (matches_any(mtl_plumbing_patterns, name))
        return MTL_ROLE_PLUMBING;
    return matches_any(mtl_wrapper_patterns, name) ? MTL_ROLE_WRAPPER : MTL_ROLE_USER;
}

static void check_list(const char *const *list, enum mtl_frame_role want)
{
    size_t n = 0;
    for (const char *const *p = list; *p; p++, n++) {
        char name[512], deco[700];
        instance(*p, name, sizeof name);
        /* a wrapper's instance that a plumbing pattern also matches is
         * plumbing ("std::allocator<x" is both std::* and std::allocator<*) */
        enum mtl_frame_role w = reference(name);
        CHECK(w == want || (want == MTL_ROLE_WRAPPER && w == MTL_ROLE_PLUMBING));
        CHECK_ROLE(name, w);
        /* with parameters, and what the demangler prints after them */
        snprintf(deco, sizeof deco, "%s(unsigned long, char const*) const [clone .cold]", name);
        CHECK_ROLE(deco, w);
        /* as a template instance, after its return type */
        snprintf(deco, sizeof deco, "std::pair<int, char*> %s<int, std::less<int> >(int)", name);
        if (name[strlen(name) - 1] != '<')
            CHECK_ROLE(deco, w);
        /* glibc's internal alias and a compiler's clone */
        snprintf(deco, sizeof deco, "__GI_%s", name);
        CHECK_ROLE(deco, w);
        snprintf(deco, sizeof deco, "%s.part.0", name);
        CHECK_ROLE(deco, w);
        snprintf(deco, sizeof deco, "%s.constprop.3.isra.0", name);
        CHECK_ROLE(deco, w);
        /* near misses: one more letter before or after makes another
         * name, whose role is whatever the lists say of it (often user) */
        snprintf(deco, sizeof deco, "%sq", name);
        CHECK_ROLE(deco, reference(deco));
        snprintf(deco, sizeof deco, "my_%s_stats", name);
        CHECK_ROLE(deco, reference(deco));
        snprintf(deco, sizeof deco, "q%s", name);
        CHECK_ROLE(deco, reference(deco));
    }
    CHECK(n > 0);
}

/* Names as memtally shows them, recorded from programs on this system. */
static const struct {
    const char *name;
    enum mtl_frame_role role;
} real[] = {
    /* libstdc++ at -O0, tests/programs/golden_cxx.cc and golden_wrappers.cc */
    { "operator new(unsigned long)", MTL_ROLE_PLUMBING },
    { "operator new[](unsigned long)", MTL_ROLE_PLUMBING },
    { "operator new(unsigned long, std::align_val_t, std::nothrow_t const&)", MTL_ROLE_PLUMBING },
    { "operator delete(void*, unsigned long)", MTL_ROLE_PLUMBING },
    { "Widget::operator new(unsigned long)", MTL_ROLE_PLUMBING },
    { "std::__new_allocator<int>::allocate(unsigned long, void const*)", MTL_ROLE_PLUMBING },
    { "__gnu_cxx::new_allocator<int>::allocate(unsigned long, void const*)", MTL_ROLE_PLUMBING },
    { "std::allocator_traits<std::allocator<int> >::allocate(std::allocator<int>&, unsigned long)", MTL_ROLE_PLUMBING },
    { "std::_Vector_base<int, std::allocator<int> >::_M_allocate(unsigned long)", MTL_ROLE_PLUMBING },
    { "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)", MTL_ROLE_PLUMBING },
    { "std::_Rb_tree<int, std::pair<int const, int>, std::_Select1st<std::pair<int const, int> >, std::less<int>, std::allocator<std::pair<int const, int> > >::_M_get_node()", MTL_ROLE_PLUMBING },
    { "std::__detail::_Hashtable_alloc<std::allocator<std::__detail::_Hash_node<std::pair<int const, int>, false> > >::_M_allocate_buckets(unsigned long)", MTL_ROLE_PLUMBING },
    { "std::__detail::_Hash_node<std::pair<int const, int>, false>* std::__detail::_Hashtable_alloc<std::allocator<std::__detail::_Hash_node<std::pair<int const, int>, false> > >::_M_allocate_node<std::piecewise_construct_t const&, std::tuple<int const&>, std::tuple<> >(std::piecewise_construct_t const&, std::tuple<int const&>&&, std::tuple<>&&)", MTL_ROLE_PLUMBING },
    { "std::_Deque_base<int, std::allocator<int> >::_M_allocate_map(unsigned long)", MTL_ROLE_PLUMBING },
    { "std::__allocated_ptr<std::allocator<std::_Sp_counted_ptr_inplace<Big, std::allocator<Big>, (__gnu_cxx::_Lock_policy)2> > > std::__allocate_guarded<std::allocator<std::_Sp_counted_ptr_inplace<Big, std::allocator<Big>, (__gnu_cxx::_Lock_policy)2> > >(std::allocator<std::_Sp_counted_ptr_inplace<Big, std::allocator<Big>, (__gnu_cxx::_Lock_policy)2> >&)", MTL_ROLE_PLUMBING },
    { "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)", MTL_ROLE_WRAPPER },
    { "std::vector<int, std::allocator<int> >::push_back(int const&)", MTL_ROLE_WRAPPER },
    { "void std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)", MTL_ROLE_WRAPPER },
    { "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)", MTL_ROLE_WRAPPER },
    { "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_append(char const*, unsigned long)", MTL_ROLE_WRAPPER },
    { "std::string::_M_replace_aux(unsigned long, unsigned long, unsigned long, char)", MTL_ROLE_WRAPPER },
    { "std::_Rb_tree_node<std::pair<int const, int> >* std::_Rb_tree<int, std::pair<int const, int>, std::_Select1st<std::pair<int const, int> >, std::less<int>, std::allocator<std::pair<int const, int> > >::_M_create_node<std::piecewise_construct_t const&, std::tuple<int const&>, std::tuple<> >(std::piecewise_construct_t const&, std::tuple<int const&>&&, std::tuple<>&&)", MTL_ROLE_WRAPPER },
    { "std::pair<std::_Rb_tree_iterator<std::pair<int const, int> >, bool> std::_Rb_tree<int, std::pair<int const, int>, std::_Select1st<std::pair<int const, int> >, std::less<int>, std::allocator<std::pair<int const, int> > >::_M_insert_unique<std::pair<int const, int> >(std::pair<int const, int>&&)", MTL_ROLE_WRAPPER },
    { "std::map<int, int, std::less<int>, std::allocator<std::pair<int const, int> > >::operator[](int const&)", MTL_ROLE_WRAPPER },
    { "std::__detail::_Map_base<int, std::pair<int const, int>, std::allocator<std::pair<int const, int> >, std::__detail::_Select1st, std::equal_to<int>, std::hash<int>, std::__detail::_Mod_range_hashing, std::__detail::_Default_ranged_hash, std::__detail::_Prime_rehash_policy, std::__detail::_Hashtable_traits<false, false, true>, true>::operator[](int const&)", MTL_ROLE_WRAPPER },
    { "void std::deque<int, std::allocator<int> >::_M_push_back_aux<int const&>(int const&)", MTL_ROLE_WRAPPER },
    { "std::shared_ptr<Big> std::make_shared<Big>()", MTL_ROLE_WRAPPER },
    { "std::__shared_count<(__gnu_cxx::_Lock_policy)2>::__shared_count<Big, std::allocator<Big>>(Big*&, std::_Sp_alloc_shared_tag<std::allocator<Big> >)", MTL_ROLE_WRAPPER },
    { "void std::_Function_base::_Base_manager<fill_function()::{lambda()#1}>::_M_create<fill_function()::{lambda()#1}>(std::_Any_data&, fill_function()::{lambda()#1}&&, std::integral_constant<bool, false>)", MTL_ROLE_PLUMBING },
    { "std::function<void ()>::function<fill_function()::{lambda()#1}, void>(fill_function()::{lambda()#1}&&)", MTL_ROLE_WRAPPER },
    { "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)", MTL_ROLE_WRAPPER },
    { "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > std::operator+<char, std::char_traits<char>, std::allocator<char> >(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&)", MTL_ROLE_WRAPPER },
    { "bool std::operator==<char>(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, char const*)", MTL_ROLE_WRAPPER },
    { "auto std::operator<=><int, int>(std::pair<int, int> const&, std::pair<int, int> const&)", MTL_ROLE_WRAPPER },
    { "std::_Function_base::_Base_manager<fill_function()::<lambda()> >::_M_init_functor<fill_function()::<lambda()> >(std::_Any_data&, fill_function()::<lambda()>&&)", MTL_ROLE_WRAPPER },
    { "std::locale::_Impl::_Impl(unsigned long)", MTL_ROLE_WRAPPER },
    { "__gnu_cxx::__pool<true>::_M_reserve_block(unsigned long, unsigned long)", MTL_ROLE_WRAPPER },
    { "std::__1::vector<int, std::__1::allocator<int> >::__push_back_slow_path<int const&>(int const&)", MTL_ROLE_WRAPPER },
    { "std::__1::allocator<int>::allocate(unsigned long)", MTL_ROLE_PLUMBING },
    { "__cxa_allocate_exception", MTL_ROLE_WRAPPER },
    /* glibc, with its debugging symbols and without */
    { "malloc", MTL_ROLE_PLUMBING },
    { "__libc_malloc", MTL_ROLE_PLUMBING },
    { "__GI___libc_malloc", MTL_ROLE_PLUMBING },
    { "__libc_calloc", MTL_ROLE_PLUMBING },
    { "__strdup", MTL_ROLE_WRAPPER },
    { "__GI___strdup", MTL_ROLE_WRAPPER },
    { "__getdelim", MTL_ROLE_WRAPPER },
    { "__vasprintf_internal", MTL_ROLE_WRAPPER },
    { "___asprintf", MTL_ROLE_WRAPPER },
    { "__alloc_dir", MTL_ROLE_WRAPPER },
    { "__open_memstream", MTL_ROLE_WRAPPER },
    { "__fopen_internal", MTL_ROLE_WRAPPER },
    { "realpath_stk", MTL_ROLE_WRAPPER },
    { "__libc_scratch_buffer_grow_preserve", MTL_ROLE_WRAPPER },
    { "__libc_dynarray_emplace_enlarge", MTL_ROLE_WRAPPER },
    { "_IO_file_doallocate", MTL_ROLE_USER },
    { "__nss_module_allocate", MTL_ROLE_USER },
    { "getpwuid", MTL_ROLE_USER },
    { "__libc_start_main_impl", MTL_ROLE_USER },
    /* SQLite (Debian's libsqlite3 exports its internal functions) */
    { "sqlite3Malloc", MTL_ROLE_WRAPPER },
    { "sqlite3DbMallocRawNN", MTL_ROLE_WRAPPER },
    { "sqlite3DbStrNDup", MTL_ROLE_WRAPPER },
    { "sqlite3VdbeMemGrow", MTL_ROLE_WRAPPER },
    { "sqlite3ParserAlloc", MTL_ROLE_USER },
    { "sqlite3VdbeCreate", MTL_ROLE_USER },
    { "sqlite3_prepare_v2", MTL_ROLE_USER },
    { "libsqlite3.so.0+0xa7504", MTL_ROLE_USER },
    { "sqlite3+0x352d4", MTL_ROLE_USER },
    /* CPython */
    { "PyMem_Malloc", MTL_ROLE_WRAPPER },
    { "_PyObject_GC_NewVar", MTL_ROLE_WRAPPER },
    { "PyObject_GC_Track", MTL_ROLE_WRAPPER }, /* harmless: it never allocates */
    { "PyType_GenericAlloc", MTL_ROLE_WRAPPER },
    { "PyList_Append", MTL_ROLE_USER },
    { "_PyUnicode_JoinArray", MTL_ROLE_USER },
    { "PyObject_Vectorcall", MTL_ROLE_USER },
    /* Rust, legacy mangling as memtally demangles it */
    { "alloc::raw_vec::finish_grow", MTL_ROLE_WRAPPER },
    { "alloc::raw_vec::RawVec<T,A>::reserve::do_reserve_and_handle", MTL_ROLE_WRAPPER },
    { "<alloc::alloc::Global as core::alloc::Allocator>::allocate", MTL_ROLE_PLUMBING },
    { "alloc::alloc::exchange_malloc", MTL_ROLE_PLUMBING },
    { "__rust_alloc", MTL_ROLE_PLUMBING },
    { "<alloc::vec::Vec<T,A> as core::clone::Clone>::clone", MTL_ROLE_WRAPPER },
    { "myapp::parse::{{closure}}", MTL_ROLE_USER },
};

/* User code that looks like plumbing or wrappers. */
static const char *const user[] = {
    "my_malloc_stats", "malloc_stats", "mallocx", "xmalloc_stats", "my_xmalloc",
    "g_malloc_wrapper", "sqlite3MallocCount", "mystrdup", "strdupa_helper",
    "std_vector_fill", "stdio_init", "mystd::vector<int>::push_back(int const&)",
    "app::std::helper()", "Pool<std::string>::grow()",
    "Cache<std::allocator<int> >::_M_allocate_thing(int)",
    "std::vector<int, std::allocator<int> > make_vector<int>(int)",
    "std::unique_ptr<Node, std::default_delete<Node> > build<Node>()",
    "make_name[abi:cxx11]()", "(anonymous namespace)::pool::pool()",
    "fill_vector()", "main", "operator_new_count", "Widget::operator==(Widget const&) const",
    "Widget::operator()(int)", "Widget::operator<(Widget const&) const",
    "bool operator< <int>(Box<int> const&, Box<int> const&)",
    "Box<std::string> operator+<std::string, std::allocator<char> >(Box<std::string> const&, Box<std::string> const&)",
    "std::vector<int, std::allocator<int> > operator|<int>(std::vector<int, std::allocator<int> > const&, int)",
    "Matrix<double> Matrix<double>::operator*=<double>(double)",
    "Widget::operator std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >() const",
    "fill_function()::{lambda()#1}::operator()() const",
    "compare_copies(int, int)", "alloc_pool_get", "allocate", "free_list_pop",
    "PyObject_Call", "g_stringify", "xmallocz_", "_Znw", "__GI_", "__GI_main",
    "foo.cold.bar", "sqlite3Malloc_", "Perl_safesysmalloc2",
};

/* Not names at all: any string must be read safely. */
static const char *const odd[] = {
    "", "(", ")", "<", ">", "<<<<", ">>>>", "((((", "operator", "operator(",
    "operator ", "operator new", "operator<", "operator\"\"", "std::", "::",
    " ", "   malloc", "malloc ", ".", ".cold", "(unnamed frame)",
    "(anonymous namespace)", "(anonymous namespace", "{lambda(", "[abi:",
};

/* docs/ANALYSIS.md, "Allocation wrappers", lists every pattern, each in
 * backquotes: the documentation cannot drift from the code. */
static void check_documented(void)
{
    const char *root = getenv("MEMTALLY_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/ANALYSIS.md", root ? root : ".");
    FILE *f = fopen(path, "r");
    if (!f)
        fprintf(stderr, "cannot read %s (run from the source tree or set MEMTALLY_ROOT)\n", path);
    CHECK(f != NULL);
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = '\0';
    const char *section = strstr(doc, "\n## Allocation wrappers\n");
    CHECK(section != NULL);
    const char *end = strstr(section + 1, "\n## ");
    size_t len = end ? (size_t)(end - section) : strlen(section);
    const char *const *lists[] = { mtl_plumbing_patterns, mtl_wrapper_patterns };
    for (int k = 0; k < 2; k++)
        for (const char *const *p = lists[k]; *p; p++) {
            char quoted[256];
            snprintf(quoted, sizeof quoted, "`%s`", *p);
            if (!memmem(section, len, quoted, strlen(quoted)))
                fprintf(stderr, "%s does not list %s\n", path, quoted);
            CHECK(memmem(section, len, quoted, strlen(quoted)) != NULL);
        }
}

int main(void)
{
    check_list(mtl_plumbing_patterns, MTL_ROLE_PLUMBING);
    check_list(mtl_wrapper_patterns, MTL_ROLE_WRAPPER);
    check_documented();

    for (size_t i = 0; i < sizeof real / sizeof *real; i++)
        CHECK_ROLE(real[i].name, real[i].role);
    for (size_t i = 0; i < sizeof user / sizeof *user; i++)
        CHECK_ROLE(user[i], MTL_ROLE_USER);
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        enum mtl_frame_role r = role(odd[i]);
        CHECK(r == MTL_ROLE_USER || r == MTL_ROLE_PLUMBING || r == MTL_ROLE_WRAPPER);
    }
    CHECK_ROLE("operator new", MTL_ROLE_PLUMBING);
    CHECK_ROLE("   malloc", MTL_ROLE_PLUMBING); /* after an empty return type */

    /* The cut the caller passes does not change the answer. */
    CHECK_EQ(mtl_frame_role("std::function<void ()>::operator=(std::function<void ()> const&)",
                            "std::function<void "), MTL_ROLE_WRAPPER);
    CHECK_EQ(mtl_frame_role("strdup", NULL), MTL_ROLE_WRAPPER);

    /* A name longer than any buffer: still read to its end. */
    size_t big = 200000;
    char *s = malloc(big + 64);
    CHECK(s != NULL);
    memset(s, 'a', big);
    memcpy(s, "__libc_", 7);
    strcpy(s + big, "malloc");
    CHECK_ROLE(s, MTL_ROLE_USER); /* too long for the fnmatch patterns */
    memcpy(s, "std::", 5);
    CHECK_ROLE(s, MTL_ROLE_WRAPPER);
    memset(s, '<', big);
    CHECK_ROLE(s, MTL_ROLE_USER);
    free(s);

    /* Random bytes from the alphabet of names, for the sanitizers. */
    static const char alphabet[] = "std::<>(){}[] ,*&opeatrnw_mlcx.\"0";
    uint64_t seed = 88172645463325252ull;
    char rnd[64];
    for (int k = 0; k < 200000; k++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        size_t n = (size_t)(seed % sizeof rnd);
        for (size_t i = 0; i < n; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            rnd[i] = alphabet[seed % (sizeof alphabet - 1)];
        }
        rnd[n] = '\0';
        enum mtl_frame_role r = role(rnd);
        CHECK(r <= MTL_ROLE_WRAPPER);
    }

    /* Speed on the real names, printed for docs/PERFORMANCE.md's readers
     * (under the sanitizers this is several times slower than -O2). */
    size_t nreal = sizeof real / sizeof *real, calls = 0, wrappers = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int rep = 0; rep < 2000; rep++)
        for (size_t i = 0; i < nreal; i++, calls++)
            wrappers += mtl_frame_role(real[i].name, NULL) == MTL_ROLE_WRAPPER;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%zu calls in %.3fs: %.0f calls/s\n", calls, secs, (double)calls / secs);
    CHECK(wrappers > 0);
    CHECKS_DONE();
}
