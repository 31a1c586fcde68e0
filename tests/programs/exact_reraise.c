/* exact_reraise: the clean-up idiom of dash and many daemons: a SIGTERM
 * handler that restores the default action and raises the signal again.
 * Before, main asks for the actions of the fatal signals (all the default,
 * as started) and prints what it sees; then it allocates 100001 blocks of
 * 16 bytes, kept, and raises SIGTERM.
 *
 * Truth: prints "default default default default", dies by SIGTERM;
 * allocations 100001, frees 0, bytes_allocated 1600016, threads 1. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_term(int sig)
{
    signal(sig, SIG_DFL);
    raise(sig);
}

static const char *seen(int sig)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) < 0)
        return "error";
    return !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL ? "default" : "handler";
}

int main(void)
{
    char line[128]; /* no stdio buffer: the only allocations are below */
    int n = snprintf(line, sizeof line, "%s %s %s %s\n", seen(SIGINT), seen(SIGTERM),
                     seen(SIGSEGV), seen(SIGABRT));
    if (write(1, line, (size_t)n) != n)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    static void *keep[100001];
    for (int i = 0; i < 100001; i++)
        keep[i] = malloc(16);
    raise(SIGTERM);
    return keep[0] != NULL; /* not reached */
}
