/*
 * allocframes.c: see allocframes.h; docs/ANALYSIS.md, "Allocation wrappers",
 * says why each group of the lists is there.
 *
 * Matching.  A name is first reduced to its qualified name (qualified()
 * below: the return type of a template instance, the parameters, glibc's
 * __GI_ prefix and clone suffixes go), then looked up.  The patterns are
 * sorted once, on first use, into four kinds by shape:
 *
 *   exact   "xmalloc"              an open-addressing hash table
 *   prefix  "std::*"               memcmp, of those with the name's first byte
 *   suffix  "*::_M_allocate"       memcmp, of those with the name's last byte
 *   other   "__libc_*alloc*"       fnmatch(), after its literal prefix
 *
 * so that most names cost one pass over their characters, one hash lookup
 * and a few byte tests.  This is called once per distinct resolved
 * location of an analysis (up to a few hundred thousand), so it must not
 * be a loop of fnmatch() calls.
 */
#include "analyze/allocframes.h"

#include <assert.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The allocator and the language runtimes' allocation paths.  Blocks never
 * belong to these: they are how every block is made. */
const char *const mtl_plumbing_patterns[] = {
    /* C: the malloc family, and glibc's names for it */
    "malloc", "calloc", "realloc", "reallocarray", "free", "cfree",
    "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
    "__libc_*alloc*", "__libc_free",
    /* C++: operator new and delete, demangled and, where no demangler was
     * at hand, mangled (_Znwm, _Znam and their nothrow and aligned forms) */
    "operator new*", "operator delete*", "_Znwm*", "_Znam*",
    "*::operator new", "*::operator new\\[\\]", "*::operator delete",
    "*::operator delete\\[\\]",
    /* libstdc++'s allocators and the containers' helpers that call them */
    "std::allocator<*", "std::allocator_traits<*", "std::__allocator_traits_base*",
    "__gnu_cxx::new_allocator<*", "std::__new_allocator<*",
    "__gnu_cxx::__alloc_traits<*",
    "*::_M_allocate", "*::_M_create", "*::_M_get_node", "*::_M_allocate_node",
    "*::_M_allocate_buckets", "*::_M_allocate_map",
    "std::__allocate_guarded<*", "std::__allocated_ptr<*",
    /* libc++ */
    "std::__1::allocator<*", "std::__1::allocator_traits<*",
    "std::__1::__libcpp_allocate", "std::__1::__libcpp_operator_new<*",
    /* Rust: the global allocator's shims and the alloc module */
    "__rust_alloc", "__rust_alloc_zeroed", "__rust_realloc", "__rust_dealloc",
    "__rdl_alloc", "__rdl_alloc_zeroed", "__rdl_realloc", "__rdl_dealloc",
    "__rg_alloc", "__rg_alloc_zeroed", "__rg_realloc", "__rg_dealloc",
    "alloc::alloc::*", "<alloc::alloc::Global as core::alloc::Allocator>::*",
    NULL
};

/* Functions that allocate for their caller: the block is the caller's. */
const char *const mtl_wrapper_patterns[] = {
    /* C++: the whole standard library and its extensions (containers'
     * growth and nodes, std::string, make_shared, std::function, ...) and
     * the runtime's allocations for a throw */
    "std::*", "__gnu_cxx::*",
    "__cxa_allocate_exception", "__cxa_allocate_dependent_exception",
    "__cxa_demangle",
    /* glibc: functions that return memory the caller frees, under their
     * public and their internal names */
    "strdup", "__strdup", "strndup", "__strndup", "wcsdup", "__wcsdup",
    "asprintf", "__asprintf", "___asprintf", "__asprintf_chk",
    "vasprintf", "__vasprintf", "__vasprintf_internal", "__vasprintf_chk",
    "getline", "__getline", "getdelim", "__getdelim",
    "realpath", "__realpath", "realpath_stk", "__realpath_chk",
    "canonicalize_file_name", "__canonicalize_file_name",
    "getcwd", "__getcwd", "get_current_dir_name", "tempnam",
    "open_memstream", "__open_memstream", "open_wmemstream",
    "fopen", "fopen64", "_IO_new_fopen", "__fopen_internal",
    "fdopen", "_IO_new_fdopen", "fmemopen", "__fmemopen",
    "popen", "_IO_new_popen", "_IO_new_proc_open",
    "opendir", "__opendir", "fdopendir", "__fdopendir", "opendir_tail",
    "__alloc_dir",
    "scandir", "scandir64", "__scandir64", "__scandir64_tail",
    "scandirat", "scandirat64", "__scandirat",
    "glob", "glob64", "__glob", "__glob64",
    "backtrace_symbols", "__backtrace_symbols",
    /* glibc's functions that allocate for their caller's sake: qsort's
     * merge buffer; a new thread's stack and TLS (for pthread_create's
     * caller) */
    "qsort", "qsort_r", "__qsort_r",
    "pthread_create", "pthread_create@*", "__pthread_create_2_1", "allocate_stack",
    "_dl_allocate_tls", "__GI__dl_allocate_tls", "allocate_dtv", "_dl_allocate_tls_init",
    /* glibc's growing buffers: memory streams (which fclose finishes),
     * posix_spawn's file actions, its scratch buffers and dynamic arrays */
    "_IO_str_overflow", "_IO_wstr_overflow", "_IO_mem_finish", "_IO_wmem_finish",
    "fclose", "_IO_new_fclose", "posix_spawn_file_actions_add*",
    "__posix_spawn_file_actions_add*", "__posix_spawn_file_actions_realloc",
    "__libc_scratch_buffer_*", "__libc_dynarray_*", "__libc_alloc_buffer_*",
    /* xmalloc: libiberty (gcc, binutils, gdb), gnulib (coreutils, ...), git */
    "xmalloc", "xcalloc", "xrealloc", "xzalloc", "xstrdup", "xstrndup",
    "xmemdup", "xmemdupz", "xmallocz", "xmallocz_gently", "do_xmalloc",
    "xnmalloc", "xnrealloc", "x2realloc", "x2nrealloc", "xcharalloc",
    "xreallocarray", "ximalloc", "xizalloc", "xicalloc", "xirealloc",
    "xireallocarray", "ximemdup", "ximemdup0", "xpalloc",
    "xasprintf", "xvasprintf",
    /* glib: g_malloc and kin (g_new, g_new0 and g_renew are macros over
     * g_malloc_n, g_malloc0_n and g_realloc_n), and its containers */
    "g_malloc", "g_malloc0", "g_realloc", "g_malloc_n", "g_malloc0_n",
    "g_realloc_n", "g_try_malloc", "g_try_malloc0", "g_try_realloc",
    "g_try_malloc_n", "g_try_malloc0_n", "g_try_realloc_n",
    "g_aligned_alloc", "g_aligned_alloc0",
    "g_slice_alloc", "g_slice_alloc0", "g_slice_copy",
    "g_strdup", "g_strndup", "g_strdup_printf", "g_strdup_vprintf",
    "g_strdupv", "g_strnfill", "g_strconcat", "g_strjoin", "g_strjoinv",
    "g_memdup", "g_memdup2",
    "g_string_*", "g_array_*", "g_ptr_array_*", "g_byte_array_*",
    "g_hash_table_*",
    /* SQLite: its allocator, public and internal, and its growing
     * buffers; the static ones are named only when symbols are at hand */
    "sqlite3_malloc", "sqlite3_malloc64", "sqlite3_realloc",
    "sqlite3_realloc64", "sqlite3_mprintf", "sqlite3_vmprintf",
    "sqlite3_str_*",
    "sqlite3Malloc", "sqlite3MallocZero", "sqlite3Realloc",
    "sqlite3DbMallocRaw", "sqlite3DbMallocRawNN", "sqlite3DbMallocZero",
    "sqlite3DbRealloc", "sqlite3DbReallocOrFree", "sqlite3DbStrDup",
    "sqlite3DbStrNDup", "sqlite3DbSpanDup", "sqlite3MPrintf",
    "sqlite3VMPrintf", "sqlite3StrAccumEnlarge", "sqlite3StrAccumFinish",
    "sqlite3ArrayAllocate", "sqlite3VdbeMemGrow", "sqlite3PageMalloc",
    "sqlite3MemMalloc", "sqlite3MemRealloc", "mallocWithAlarm",
    "dbMallocRawFinish", "dbReallocFinish", "strAccumFinishRealloc",
    "pcache1Alloc",
    /* CPython's allocators */
    "PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc",
    "PyMem_RawMalloc", "PyMem_RawCalloc", "PyMem_RawRealloc",
    "_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc",
    "_PyMem_Strdup", "_PyMem_RawStrdup", "_PyMem_RawWcsdup",
    "_PyMem_Debug*", "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc",
    "_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc",
    "pymalloc_alloc", "pymalloc_realloc", "_PyObject_New", "_PyObject_NewVar",
    "PyObject_GC_*", "_PyObject_GC_*", "PyType_GenericAlloc",
    "_PyType_AllocNoTrack",
    /* OpenSSL */
    "CRYPTO_malloc", "CRYPTO_zalloc", "CRYPTO_realloc", "CRYPTO_clear_realloc",
    "CRYPTO_memdup", "CRYPTO_strdup", "CRYPTO_strndup",
    "CRYPTO_secure_malloc", "CRYPTO_secure_zalloc",
    /* Perl */
    "Perl_safesysmalloc", "Perl_safesyscalloc", "Perl_safesysrealloc",
    "Perl_savepv", "Perl_savepvn", "Perl_savesharedpv", "Perl_savesharedpvn",
    "Perl_savesharedsvpv", "Perl_savesvpv", "Perl_sv_grow", "Perl_sv_grow_fresh",
    /* Rust: the alloc crate (Vec, String, Box, Rc, Arc, the collections) */
    "alloc::*", "<alloc::*",
    NULL
};

#define COUNT(a) (sizeof (a) / sizeof *(a) - 1)
#define NPATTERNS (COUNT(mtl_plumbing_patterns) + COUNT(mtl_wrapper_patterns))
#define EXACT_SLOTS 1024 /* a power of two, over twice the patterns */

#define MAX_LITERAL 64 /* no built-in pattern has a longer literal part */

struct pat {
    const char *s;      /* the literal part (exact, prefix, suffix) or the pattern */
    uint32_t len;       /* of the literal part */
    uint8_t role;
};

/* The patterns by kind; prefixes grouped by their first byte and suffixes
 * by their last: those for byte c are [by_first[c], by_first[c + 1]). */
static struct {
    pthread_once_t once;
    struct pat exact[EXACT_SLOTS]; /* s == NULL: empty */
    struct pat prefix[NPATTERNS], suffix[NPATTERNS], other[NPATTERNS];
    size_t nprefix, nsuffix, nother;
    size_t exact_max;              /* the longest exact name */
    uint16_t by_first[257], by_last[257];
    char literals[NPATTERNS][MAX_LITERAL]; /* unescaped literal parts */
    size_t nliterals;
} tables = { .once = PTHREAD_ONCE_INIT };

static uint32_t hash_span(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* Sorts a pattern into its kind.  Its literal part is p without the
 * leading or trailing '*' and with its escapes ("\\[") resolved. */
static void add_pattern(const char *p, uint8_t role)
{
    size_t n = strlen(p), metas = 0, first = n;
    int lead = p[0] == '*', trail = 0;
    char *lit = tables.literals[tables.nliterals++];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n) {
            i++;
        } else if (p[i] == '*' || p[i] == '?' || p[i] == '[') {
            metas++;
            if (first == n)
                first = i;
            trail = i == n - 1 && p[i] == '*';
            continue;
        }
        assert(len + 1 < MAX_LITERAL);
        lit[len++] = p[i];
    }
    lit[len] = '\0';
    if (metas == 0) {
        uint32_t i = hash_span(lit, len) & (EXACT_SLOTS - 1);
        while (tables.exact[i].s)
            i = (i + 1) & (EXACT_SLOTS - 1);
        tables.exact[i] = (struct pat){ lit, (uint32_t)len, role };
        if (len > tables.exact_max)
            tables.exact_max = len;
    } else if (metas == 1 && trail) {
        tables.prefix[tables.nprefix++] = (struct pat){ lit, (uint32_t)len, role };
    } else if (metas == 1 && lead) {
        tables.suffix[tables.nsuffix++] = (struct pat){ lit, (uint32_t)len, role };
    } else {
        /* the literal prefix, up to the first metacharacter, as written */
        tables.other[tables.nother++] = (struct pat){ p, (uint32_t)first, role };
        for (size_t i = 0; i < first; i++)
            assert(p[i] != '\\'); /* or the prefix test below is wrong */
    }
}

/* Groups pats by the byte at (first ? 0 : len - 1) into index[byte],
 * plumbing before wrappers within a group: once a wrapper matches, no
 * plumbing pattern of the group is left to try. */
static void group(struct pat *pats, size_t n, uint16_t *index, int first)
{
    size_t k = 0;
    struct pat sorted[NPATTERNS];
    for (unsigned c = 0; c < 256; c++) {
        index[c] = (uint16_t)k;
        for (uint8_t role = MTL_ROLE_PLUMBING; role <= MTL_ROLE_WRAPPER; role++)
            for (size_t i = 0; i < n; i++) {
                unsigned char b = (unsigned char)pats[i].s[first ? 0 : pats[i].len - 1];
                if (pats[i].len > 0 && b == c && pats[i].role == role)
                    sorted[k++] = pats[i];
            }
    }
    index[256] = (uint16_t)k;
    assert(k == n); /* no empty literal: "*" alone is not a built-in */
    memcpy(pats, sorted, n * sizeof *pats);
}

static void build_tables(void)
{
    for (const char *const *p = mtl_plumbing_patterns; *p; p++)
        add_pattern(*p, MTL_ROLE_PLUMBING);
    for (const char *const *p = mtl_wrapper_patterns; *p; p++)
        add_pattern(*p, MTL_ROLE_WRAPPER);
    group(tables.prefix, tables.nprefix, tables.by_first, 1);
    group(tables.suffix, tables.nsuffix, tables.by_last, 0);
}

/* The role s[0, n) has by the patterns, USER when none matches; when both
 * a plumbing and a wrapper pattern match, plumbing. */
static enum mtl_frame_role lookup(const char *s, size_t n)
{
    enum mtl_frame_role best = MTL_ROLE_USER;
    if (n == 0)
        return best;
    for (uint32_t i = n <= tables.exact_max ? hash_span(s, n) & (EXACT_SLOTS - 1) : 0;
         n <= tables.exact_max && tables.exact[i].s; i = (i + 1) & (EXACT_SLOTS - 1)) {
        const struct pat *e = &tables.exact[i];
        if (e->len == n && !memcmp(e->s, s, n)) {
            best = e->role;
            break;
        }
    }
    if (best == MTL_ROLE_PLUMBING)
        return best;
    unsigned char c = (unsigned char)s[0];
    for (size_t i = tables.by_first[c]; i < tables.by_first[c + 1]; i++) {
        const struct pat *e = &tables.prefix[i];
        if (e->len <= n && !memcmp(e->s, s, e->len)) {
            if (e->role == MTL_ROLE_PLUMBING)
                return MTL_ROLE_PLUMBING;
            best = MTL_ROLE_WRAPPER;
            break;
        }
    }
    c = (unsigned char)s[n - 1];
    for (size_t i = tables.by_last[c]; i < tables.by_last[c + 1]; i++) {
        const struct pat *e = &tables.suffix[i];
        if (e->len <= n && !memcmp(e->s, s + n - e->len, e->len)) {
            if (e->role == MTL_ROLE_PLUMBING)
                return MTL_ROLE_PLUMBING;
            best = MTL_ROLE_WRAPPER;
            break;
        }
    }
    char buf[1024];
    int copied = 0;
    for (size_t i = 0; i < tables.nother; i++) {
        const struct pat *e = &tables.other[i];
        if (e->len > n || memcmp(e->s, s, e->len))
            continue;
        /* fnmatch wants a string; a name too long for buf matches none of
         * these (no built-in pattern of this kind is meant for one). */
        if (!copied) {
            if (n >= sizeof buf)
                break;
            memcpy(buf, s, n);
            buf[n] = '\0';
            copied = 1;
        }
        if (fnmatch(e->s, buf, 0) == 0) {
            if (e->role == MTL_ROLE_PLUMBING)
                return MTL_ROLE_PLUMBING;
            best = MTL_ROLE_WRAPPER;
        }
    }
    return best;
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* Given "operator" at s[i] (a whole word), the index just past the
 * operator's name: "operator()", "operator<<", "operator new[]",
 * "operator delete", "operator bool", "operator std::string"... The
 * space the demangler puts between "operator<<" and template arguments
 * ("operator<< <char>") is skipped, so it does not pass for the one after
 * a return type. */
static size_t skip_operator(const char *s, size_t i)
{
    i += 8;
    if (s[i] == ' ' && (is_ident(s[i + 1]) || s[i + 1] == ':')) {
        /* a word operator or a conversion: up to the parameters */
        int depth = 0;
        for (i++; s[i] && !(depth == 0 && s[i] == '('); i++) {
            if (s[i] == '<' || s[i] == '[')
                depth++;
            else if ((s[i] == '>' || s[i] == ']') && depth > 0)
                depth--;
        }
        return i;
    }
    if (s[i] == '"' && s[i + 1] == '"') { /* a literal: operator"" _km */
        i += 2;
        while (s[i] == ' ')
            i++;
        while (is_ident(s[i]))
            i++;
        return i;
    }
    /* the longest operator that is there: "operator<=<int>" is operator<=
     * with template arguments, "operator+<char>" operator+ */
    static const char *const ops[] = {
        "<<=", ">>=", "->*", "<=>", "()", "[]", "<<", ">>", "<=", ">=", "==",
        "!=", "&&", "||", "++", "--", "->", "+=", "-=", "*=", "/=", "%=", "^=",
        "&=", "|=", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", "<",
        ">", ",",
    };
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        size_t len = strlen(ops[k]);
        if (!strncmp(s + i, ops[k], len)) {
            i += len;
            break;
        }
    }
    if (s[i] == ' ' && s[i + 1] == '<')
        i++;
    return i;
}

/* glibc's and compilers' decorations of a C name: a clone of foo is
 * "foo.part.0", "foo.isra.0", "foo.constprop.0", "foo.cold",
 * "foo.lto_priv.0"; glibc's internal alias of foo is "__GI_foo". */
static const char *const clone_suffixes[] = {
    ".part.", ".isra.", ".constprop.", ".cold", ".lto_priv.", ".localalias",
    ".llvm.",
};

/* The qualified name within name, as [*q, *q + return value). */
static size_t qualified(const char *name, const char **q)
{
    size_t i = 0, start = 0;
    int depth = 0;
    if (!strncmp(name, "__GI_", 5) && name[5])
        i = start = 5;
    while (name[i]) {
        char c = name[i];
        if (c == '(' && depth == 0) {
            if (!strncmp(name + i, "(anonymous namespace)", 21)) {
                i += 21;
                continue;
            }
            break; /* the parameters */
        }
        if (c == 'o' && (i == start || !is_ident(name[i - 1])) &&
            !strncmp(name + i, "operator", 8) && !is_ident(name[i + 8])) {
            i = skip_operator(name, i);
            continue;
        }
        if (c == '<' || c == '(' || c == '[' || c == '{')
            depth++;
        else if ((c == '>' || c == ')' || c == ']' || c == '}') && depth > 0)
            depth--;
        else if (c == ' ' && depth == 0)
            start = i + 1; /* what came before was a return type */
        i++;
    }
    size_t n = i - start;
    const char *dot = memchr(name + start, '.', n);
    while (dot) {
        for (size_t k = 0; k < sizeof clone_suffixes / sizeof *clone_suffixes; k++) {
            size_t len = strlen(clone_suffixes[k]);
            if ((size_t)(name + i - dot) >= len && !memcmp(dot, clone_suffixes[k], len)) {
                n = (size_t)(dot - (name + start));
                dot = NULL;
                break;
            }
        }
        if (dot)
            dot = memchr(dot + 1, '.', (size_t)(name + i - dot - 1));
    }
    *q = name + start;
    return n;
}

/* The length of s[0, n) without its final template arguments
 * ("std::make_shared<Foo>" -> "std::make_shared"); n when it has none. */
static size_t without_template_args(const char *s, size_t n)
{
    if (n == 0 || s[n - 1] != '>')
        return n;
    int depth = 0;
    for (size_t i = n; i-- > 0;) {
        if (s[i] == '>')
            depth++;
        else if (s[i] == '<' && --depth == 0)
            return i;
    }
    return n;
}

enum mtl_frame_role mtl_frame_role(const char *name, const char *cut)
{
    /* cut is not needed: the qualified name is found in name itself, which
     * is more than cut can tell (a '(' may be inside template arguments,
     * "std::function<void ()>", or belong to "operator()"). */
    (void)cut;
    assert(name);
    pthread_once(&tables.once, build_tables);
    const char *q;
    size_t n = qualified(name, &q);
    enum mtl_frame_role r = lookup(q, n);
    size_t stem = without_template_args(q, n);
    if (r != MTL_ROLE_PLUMBING && stem != n && stem > 0) {
        enum mtl_frame_role s = lookup(q, stem);
        if (s != MTL_ROLE_USER)
            r = s;
    }
    return r;
}
