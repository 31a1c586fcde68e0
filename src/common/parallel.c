/* parallel.c: see parallel.h. */
#include "common/parallel.h"

#include <pthread.h>
#include <unistd.h>

struct share {
    int (*fn)(void *arg, unsigned k);
    void *arg;
    unsigned k;
    int rc;
};

static void *run_share(void *p)
{
    struct share *s = p;
    s->rc = s->fn(s->arg, s->k);
    return NULL;
}

int mtl_parallel(unsigned n, int (*fn)(void *arg, unsigned k), void *arg)
{
    struct share shares[MTL_MAX_THREADS];
    pthread_t tid[MTL_MAX_THREADS];
    int started[MTL_MAX_THREADS] = { 0 };
    if (n < 1)
        n = 1;
    if (n > MTL_MAX_THREADS)
        n = MTL_MAX_THREADS;
    for (unsigned k = 0; k < n; k++) {
        shares[k] = (struct share){ fn, arg, k, 0 };
        if (k > 0)
            started[k] = pthread_create(&tid[k], NULL, run_share, &shares[k]) == 0;
    }
    shares[0].rc = fn(arg, 0);
    for (unsigned k = 1; k < n; k++) {
        if (started[k])
            pthread_join(tid[k], NULL);
        else
            shares[k].rc = fn(arg, k);
    }
    for (unsigned k = 0; k < n; k++)
        if (shares[k].rc)
            return shares[k].rc;
    return 0;
}

unsigned mtl_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}
