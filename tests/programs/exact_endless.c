/*
 * exact_endless: allocates and frees 64-byte blocks for ever, a thousand
 * every millisecond, until killed (test_exact_sigkill.sh kills it with
 * SIGKILL, which no handler sees).  With an argument N: N threads that
 * allocate and free without pause, so that a kill lands in the middle of
 * recording an event.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *churn(void *arg)
{
    (void)arg;
    for (;;)
        free(malloc(64));
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, churn, NULL);
    }
    for (;;) {
        for (int i = 0; i < 1000; i++)
            free(malloc(64));
        usleep(1000);
    }
}
