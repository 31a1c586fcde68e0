/* util.c: helpers shared by the subcommands (see cli.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/filter.h"
#include "cli/cli.h"
#include "common/recenv.h"

int cli_parse_time_resolution(const char *v, uint64_t *us)
{
    return v && mtl_parse_time(v, us) == 0 && *us >= 1 && *us <= MTL_MAX_TIME_RESOLUTION_US
               ? 0 : -1;
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("memtally: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The library next to this executable, or where `make install` puts it. */
int cli_find_library(char *out, size_t cap)
{
    const char *env = getenv("MEMTALLY_LIBRARY");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    static const char *const rel[] = {
        "libmemtally.so", "../lib/memtally/libmemtally.so", "../lib/libmemtally.so",
    };
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        int len = snprintf(out, cap, "%s/%s", exe, rel[i]);
        if (len > 0 && (size_t)len < cap && access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

/* Expands %p and %e of pattern for the process pid running program. */
void cli_expand_pattern(char *out, size_t cap, const char *pattern, pid_t pid,
                   const char *program)
{
    const char *base = strrchr(program, '/');
    base = base ? base + 1 : program;
    size_t o = 0;
    for (const char *s = pattern; *s && o + 1 < cap; s++) {
        int n = 0;
        if (s[0] == '%' && s[1] == 'p')
            n = snprintf(out + o, cap - o, "%d", (int)pid), s++;
        else if (s[0] == '%' && s[1] == 'e')
            n = snprintf(out + o, cap - o, "%s", base), s++;
        else
            out[o++] = *s;
        if (n > 0)
            o += (size_t)n < cap - o ? (size_t)n : cap - o - 1;
    }
    out[o] = '\0';
}
