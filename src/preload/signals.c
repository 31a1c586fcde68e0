/*
 * signals.c: the handlers that finish the trace when a fatal signal ends
 * the program, and the program's view of them.
 *
 * For each fatal signal whose action is the default, our handler finishes
 * the trace, restores the default and raises the signal again, so that the
 * program dies as it would have, its trace complete.  The program must not
 * see that handler (CPython, for one, installs its SIGINT handler only
 * where it finds the default): sigaction and signal are hooked, and for a
 * signal whose handler is ours they answer with the action the program set
 * or found, the default.  Setting the default keeps ours in place, so the
 * clean-up idiom "restore the default and raise again" (dash's for TERM
 * and INT) still finishes the trace; a handler of the program's own, or
 * SIG_IGN, replaces ours, as without memtally.  A program that makes the
 * system call itself (not through libc), or calls sigset, sees ours.
 *
 * The hooks are async-signal-safe, as sigaction is: no lock, no
 * allocation; the real call is glibc's __sigaction, which needs no lookup.
 */
#include "preload/preload.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static const int fatal_signals[] = {
    SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
    SIGSEGV, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ,
};

static struct {
    atomic_uchar ours[NSIG];       /* our handler is installed */
    struct sigaction shown[NSIG];  /* what the program sees meanwhile */
} sig;

static int is_fatal(int s)
{
    for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++)
        if (fatal_signals[i] == s)
            return 1;
    return 0;
}

static int is_default(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

static void on_fatal_signal(int s, siginfo_t *si, void *uc)
{
    int saved = errno;
    /* SA_RESETHAND restored the default action. */
    atomic_store(&sig.ours[s], 0);
    mtl__finish_on_signal(s);
    /* A fault raised by an instruction happens again on return; a sent
     * signal is sent again and delivered when the handler returns. */
    int fault = si && si->si_code > 0 &&
                (s == SIGSEGV || s == SIGBUS || s == SIGILL || s == SIGFPE || s == SIGTRAP);
    if (!fault)
        raise(s);
    errno = saved;
}

/* Puts our handler on s, the program seeing shown; 0 or -1. */
static int install(int s, const struct sigaction *shown)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sig.shown[s] = *shown;
    if (__sigaction(s, &sa, NULL) < 0)
        return -1;
    atomic_store(&sig.ours[s], 1);
    return 0;
}

void mtl__install_signal_handlers(void)
{
    static int done;
    if (done || mtl__attached)
        return; /* attached: the program's dispositions stay as they are */
    done = 1;
    for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
        struct sigaction old;
        if (__sigaction(fatal_signals[i], NULL, &old) == 0 && is_default(&old))
            install(fatal_signals[i], &old); /* else the program's, or ignored */
    }
}

EXPORT int sigaction(int s, const struct sigaction *act, struct sigaction *old)
{
    if (s <= 0 || s >= NSIG || !atomic_load(&sig.ours[s])) {
        /* Setting the default of a fatal signal while recording: ours,
         * in the default's place (the idiom above). */
        if (act && s > 0 && s < NSIG && is_default(act) && is_fatal(s) &&
            mtl__recording_here()) {
            struct sigaction was;
            if (__sigaction(s, NULL, &was) < 0)
                return -1;
            if (install(s, act) == 0) {
                if (old)
                    *old = was;
                return 0;
            }
        }
        return __sigaction(s, act, old);
    }
    struct sigaction shown = sig.shown[s];
    if (act && !is_default(act)) {
        /* The program's own handler, or SIG_IGN: it replaces ours. */
        if (__sigaction(s, act, NULL) < 0)
            return -1;
        atomic_store(&sig.ours[s], 0);
    } else if (act) {
        sig.shown[s] = *act;
    }
    if (old)
        *old = shown;
    return 0;
}

/* The signal() family: handler on s with flags, the signal itself
 * blocked in its handler or not; the old handler, or SIG_ERR. */
static __sighandler_t set_handler(int s, __sighandler_t handler, int flags, int block_self)
{
    struct sigaction act, old;
    if (s <= 0 || s >= NSIG || handler == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (block_self)
        sigaddset(&act.sa_mask, s);
    act.sa_flags = flags;
    if (sigaction(s, &act, &old) < 0)
        return SIG_ERR;
    return old.sa_handler; /* sa_sigaction shares its place */
}

/* signal(): BSD semantics, as glibc's (the signal blocked in its handler,
 * calls restarted). */
EXPORT __sighandler_t signal(int s, __sighandler_t handler)
{
    return set_handler(s, handler, SA_RESTART, 1);
}

EXPORT __sighandler_t bsd_signal(int s, __sighandler_t handler)
{
    return signal(s, handler);
}

/* sysv_signal(): the handler reset to the default when it runs, the
 * signal not blocked in it, calls interrupted. */
EXPORT __sighandler_t sysv_signal(int s, __sighandler_t handler)
{
    return set_handler(s, handler, SA_RESETHAND | SA_NODEFER, 0);
}
