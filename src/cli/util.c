/* util.c: helpers shared by the subcommands (see cli.h). */
#include <stdarg.h>
#include <stdio.h>

#include "cli/cli.h"
#include "memtally/trace.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("memtally: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

struct mtl_reader *cli_open_trace(const char *path)
{
    struct mtl_reader *r;
    int rc = mtl_reader_open(&r, path);
    if (rc < 0) {
        cli_error("%s: %s", path, mtl_strerror(rc));
        return NULL;
    }
    return r;
}

int cli_finish_trace(struct mtl_reader *r, const char *path, int rc)
{
    if (rc < 0) {
        cli_error("%s: %s after block %llu", path, mtl_strerror(rc),
                  (unsigned long long)mtl_reader_blocks(r));
        return 1;
    }
    if (mtl_reader_info(r)->truncated)
        cli_error("%s: trace truncated after block %llu; what it holds up to there was read",
                  path, (unsigned long long)mtl_reader_blocks(r));
    return 0;
}

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

const char *human_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%.0f B", bytes);
    else
        snprintf(buf, cap, "%.1f %s", bytes, unit[u]);
    return buf;
}
