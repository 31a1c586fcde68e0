/* exact_closeall: the daemon idiom of closing every descriptor above 2:
 * allocates 1000 blocks of 32 bytes, closes descriptors 3 to 1023, frees
 * the blocks, allocates one more of 64 bytes and keeps it.
 *
 * Truth: allocations 1001, frees 1000, bytes_allocated 32064,
 * peak_live_bytes 32000, live_bytes_at_end 64, threads 1.  Exits 0. */
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    static void *keep[1000];
    for (int i = 0; i < 1000; i++)
        keep[i] = malloc(32);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    for (int i = 0; i < 1000; i++)
        free(keep[i]);
    return malloc(64) == NULL;
}
