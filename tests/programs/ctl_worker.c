/* ctl_worker: runs until SIGTERM, for the control tests.  Every tick
 * (about 20 ms) tick_alloc() makes 100 blocks of 64 bytes and tick_free()
 * frees them; nothing else allocates after start-up.  Prints "ready PID"
 * once running; exits 0 on SIGTERM.  write(2) only. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TICK_BLOCKS 100
#define BLOCK_SIZE 64

static volatile sig_atomic_t stop;
static void *blocks[TICK_BLOCKS];

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

__attribute__((noinline)) static void tick_alloc(void)
{
    for (int i = 0; i < TICK_BLOCKS; i++)
        blocks[i] = malloc(BLOCK_SIZE);
}

__attribute__((noinline)) static void tick_free(void)
{
    for (int i = 0; i < TICK_BLOCKS; i++)
        free(blocks[i]);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);

    char line[64];
    int n = snprintf(line, sizeof line, "ready %d\n", (int)getpid());
    (void)!write(1, line, (size_t)n);
    struct timespec tick = { 0, 20 * 1000 * 1000 };
    while (!stop) {
        tick_alloc();
        tick_free();
        nanosleep(&tick, NULL);
    }
    return 0;
}
