/*
 * frame_roles.c: how fast mtl_frame_role() (src/analyze/allocframes.c)
 * classifies function names.  Reads names, one a line, from stdin (bench/
 * frame_roles.sh feeds it the demangled dynamic symbols of libstdc++,
 * glibc, libsqlite3, python3 and glib: the names an analysis meets), then
 * classifies all of them R times and prints calls per second and how many
 * names got each role.
 *
 *     frame_roles [R] <names
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/allocframes.h"

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    char **names = NULL, **cuts = NULL, *line = NULL;
    size_t n = 0, cap = 0, len = 0, bytes = 0;
    ssize_t got;
    while ((got = getline(&line, &len, stdin)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        if (!got)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            names = realloc(names, cap * sizeof *names);
            cuts = realloc(cuts, cap * sizeof *cuts);
            if (!names || !cuts)
                return 1;
        }
        names[n] = strdup(line);
        const char *paren = strchr(line, '(');
        cuts[n] = paren && paren != line ? strndup(line, (size_t)(paren - line)) : NULL;
        bytes += (size_t)got;
        n++;
    }
    free(line);
    if (!n || reps < 1) {
        fprintf(stderr, "usage: frame_roles [REPS] <names\n");
        return 2;
    }
    size_t count[3] = { 0 };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < n; i++)
            count[mtl_frame_role(names[i], cuts[i])]++;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double calls = (double)n * reps;
    printf("%zu names (%.0f bytes on average), %d times: %.2f million calls/s, %.0f ns a call\n",
           n, (double)bytes / (double)n, reps, calls / secs / 1e6, secs / calls * 1e9);
    printf("user %zu, plumbing %zu, wrapper %zu\n", count[0] / reps, count[1] / reps,
           count[2] / reps);
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
        free(cuts[i]);
    }
    free(names);
    free(cuts);
    return 0;
}
