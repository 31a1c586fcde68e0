/* util.c: helpers shared by the subcommands (see cli.h). */
#include <stdarg.h>
#include <stdio.h>

#include "cli/cli.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("memtally: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

