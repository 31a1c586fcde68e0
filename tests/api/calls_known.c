/* A program built with -finstrument-functions whose functions are called
 * a known number of times and allocate known bytes (the test's truth):
 *
 *   main             1 call;  malloc 100, and libc's own for puts and
 *                             pthread_create (counted for main)
 *   parse           10 calls; each malloc 64, then tokenize 3 times
 *   tokenize        30 calls; each malloc 16
 *   emit             5 calls; nothing itself, calls format_line
 *   format_line      5 calls; each malloc 200
 *   leaf_noalloc  1000 calls; nothing
 *   worker (a second thread): 1 call; calls parse twice (2 x 64 and
 *                             6 x 16 bytes in tokenize)
 *
 * Every block is freed.  With --pattern parse --pattern main, tokenize's
 * bytes go to parse (its nearest counted caller), format_line's to main.
 * Prints "calls ok". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) static void tokenize(void)
{
    free(malloc(16));
}

__attribute__((noinline)) static void parse(void)
{
    free(malloc(64));
    for (int i = 0; i < 3; i++)
        tokenize();
}

__attribute__((noinline)) static void format_line(void)
{
    free(malloc(200));
}

__attribute__((noinline)) static void emit(void)
{
    format_line();
}

__attribute__((noinline)) static void leaf_noalloc(unsigned i)
{
    sink += i;
}

static void *worker(void *arg)
{
    (void)arg;
    parse();
    parse();
    return NULL;
}

int main(void)
{
    free(malloc(100));
    for (int i = 0; i < 10; i++)
        parse();
    for (int i = 0; i < 5; i++)
        emit();
    for (unsigned i = 0; i < 1000; i++)
        leaf_noalloc(i);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
        return 1;
    puts("calls ok");
    return 0;
}
