/* exact_sigterm: allocates, then kills itself with SIGTERM (default action):
 * its status, and memtally's, is "killed by SIGTERM" (143 from sh). */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    char *a = malloc(64);
    if (!a) return 1;
    (void)!write(1, "terminating\n", 12);
    kill(getpid(), SIGTERM);
    for (;;) pause();
}
