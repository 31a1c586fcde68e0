/* exact_passthrough: writes "stdin:" on stdout, then copies stdin to stdout,
 * writes the number of bytes read to stderr, and exits with 7.  Its one
 * buffer comes from malloc.
 *
 * Truth (from the code; valgrind agrees):
 *   allocations 1, frees 1, bytes_allocated 4096, peak_live_bytes 4096,
 *   live_bytes_at_end 0, threads 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int put(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w <= 0) return -1;
        p += w; n -= (size_t)w;
    }
    return 0;
}

int main(void)
{
    char *buf = malloc(4096);
    char msg[64];
    long total = 0;
    ssize_t n;
    if (!buf || put("stdin:\n", 7)) return 1;
    while ((n = read(0, buf, 4096)) > 0) {
        if (put(buf, (size_t)n)) return 1;
        total += n;
    }
    free(buf);
    snprintf(msg, sizeof msg, "stderr: %ld bytes read\n", total);
    (void)!write(2, msg, strlen(msg));
    return 7;
}
