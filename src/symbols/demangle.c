/*
 * demangle.c: readable names for mangled symbols: C++ (the Itanium ABI)
 * through libstdc++'s __cxa_demangle, and Rust's legacy mangling, which is
 * Itanium-style with a hash element at the end of the path and escapes in
 * the identifiers ($LT$ for '<', .. for ::).  Rust's newer v0 mangling
 * ("_R...") is not decoded (the name shows as mangled).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/internal.h"

/* libstdc++'s demangler, loaded at the first mangled name rather than
 * linked: loading libstdc++ costs every memtally command half a
 * millisecond at start, `memtally record` included, which never
 * demangles.  NULL when libstdc++ is not there: names stay mangled. */
typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void load_cxa_demangle(void)
{
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) {
        void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        f = lib ? dlsym(lib, "__cxa_demangle") : NULL;
    }
    cxa_demangle = (cxa_demangle_fn)f;
}

static int is_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return 0;
    return 1;
}

/* Writes code point c as UTF-8 at out; returns the bytes written. */
static size_t put_utf8(char *out, unsigned long c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3f));
    out[2] = (char)(0x80 | (c >> 6 & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Decodes, in place, the escapes of Rust's legacy mangling in a demangled
 * path: "$LT$" is '<', "$u20$" is ' ', ".." is "::", and a path element
 * that starts with "_$" loses its '_'.  The result is never longer. */
static void rust_unescape(char *s)
{
    static const struct { const char *esc; char c; } table[] = {
        { "$SP$", '@' }, { "$BP$", '*' }, { "$RF$", '&' }, { "$LT$", '<' },
        { "$GT$", '>' }, { "$LP$", '(' }, { "$RP$", ')' }, { "$C$", ',' },
    };
    char *out = s;
    const char *p = s;
    int element_start = 1;
    while (*p) {
        if (element_start && p[0] == '_' && p[1] == '$')
            p++;
        element_start = 0;
        if (p[0] == ':' && p[1] == ':') {
            *out++ = *p++;
            *out++ = *p++;
            element_start = 1;
            continue;
        }
        if (p[0] == '.') {
            if (p[1] == '.') {
                *out++ = ':';
                *out++ = ':';
                p += 2;
            } else {
                *out++ = *p++;
            }
            continue;
        }
        if (p[0] == '$') {
            size_t i, done = 0;
            for (i = 0; i < sizeof table / sizeof table[0] && !done; i++) {
                size_t n = strlen(table[i].esc);
                if (strncmp(p, table[i].esc, n) == 0) {
                    *out++ = table[i].c;
                    p += n;
                    done = 1;
                }
            }
            if (!done && p[1] == 'u') {
                const char *end = strchr(p + 2, '$');
                size_t n = end ? (size_t)(end - (p + 2)) : 0;
                if (n >= 1 && n <= 6 && is_hex(p + 2, n)) {
                    unsigned long c = strtoul(p + 2, NULL, 16);
                    if (c > 0 && c <= 0x10ffff && !(c >= 0xd800 && c < 0xe000)) {
                        out += put_utf8(out, c);
                        p = end + 1;
                        done = 1;
                    }
                }
            }
            if (done)
                continue;
        }
        *out++ = *p++;
    }
    *out = '\0';
}

char *mtl_demangle(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    /* LLVM's ThinLTO adds ".llvm.<number>" to local symbols it promotes;
     * the demangler would print it as a clone suffix. */
    const char *llvm = strstr(name, ".llvm.");
    char *copy = NULL;
    if (llvm) {
        copy = strndup(name, (size_t)(llvm - name));
        if (!copy)
            return NULL;
        name = copy;
    }
    /* Rust's legacy mangling ends its path with a hash element,
     * "17h0123456789abcdefE"; Itanium C++ names never do in practice. */
    size_t len = strlen(name);
    int rust = len > 23 && name[len - 1] == 'E' &&
               memcmp(name + len - 20, "17h", 3) == 0 &&
               is_hex(name + len - 17, 16);
    int status = -1;
    pthread_once(&cxa_once, load_cxa_demangle);
    char *d = cxa_demangle ? cxa_demangle(name, NULL, NULL, &status) : NULL;
    free(copy);
    if (status != 0 || !d) {
        free(d);
        return NULL;
    }
    size_t n = strlen(d);
    if (rust && n > 19 && memcmp(d + n - 19, "::h", 3) == 0 &&
        is_hex(d + n - 16, 16)) {
        d[n - 19] = '\0';
        rust_unescape(d);
    }
    return d;
}

/* Names live in libdw's data, so a string's address is its identity. */
const char *mtl__sym_readable(struct mtl_symbolizer *s, const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return name;
    uint64_t known;
    if (mtl_hmap_get(&s->names, (uintptr_t)name, &known))
        return (const char *)(uintptr_t)known;
    char *d = mtl_demangle(name);
    const char *r = name;
    if (d) {
        char *copy = mtl_arena_strdup(&s->arena, d);
        free(d);
        if (copy)
            r = copy;
    }
    mtl_hmap_put(&s->names, (uintptr_t)name, (uintptr_t)r, NULL); /* or not cached */
    return r;
}
