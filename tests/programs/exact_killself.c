/* exact_killself: allocates 20000 blocks of 48 bytes (kept), waits 500 ms
 * (none with an argument "now"), and sends itself SIGKILL, which no
 * handler sees.  Under memtally record every allocation that returned
 * before the kill is in the trace, with or without the pause: the events
 * are in memory memtally record shares, not in the program's.
 *
 * Truth: allocations 20000, frees 0, bytes_allocated 960000, dies by
 * SIGKILL. */
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static void *keep[20000];
    for (int i = 0; i < 20000; i++)
        keep[i] = malloc(48);
    struct timespec pause = { 0, 500 * 1000000L };
    if (argc < 2)
        nanosleep(&pause, NULL);
    kill(getpid(), SIGKILL);
    return keep[0] == NULL;
}
