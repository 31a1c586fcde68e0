/*
 * exact_endless: allocates and frees 64-byte blocks for ever, a thousand
 * every millisecond, until killed (test_exact_sigkill.sh kills it with
 * SIGKILL, which no handler sees).
 */
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    for (;;) {
        for (int i = 0; i < 1000; i++)
            free(malloc(64));
        usleep(1000);
    }
}
