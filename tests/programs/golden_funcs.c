/* golden_funcs: allocations from known functions, for the golden tests of the
 * analysis commands (tests/integration/test_golden_*.sh).
 *
 *   golden_funcs [N [STATUS]]   alpha makes N blocks (default 10); exits STATUS
 *
 * Every allocating line is marked with a comment "@NAME" so that the tests
 * can find its line number.  Order of events (live bytes after each step):
 *
 *   scratch      8 x malloc(36), each freed at once        live 0
 *   grow         malloc(40) (realloc of NULL)              live 40
 *   alpha        N x malloc(100), kept                     live 40 + 100N
 *   grow         realloc to 80                             live 80 + 100N
 *   beta         6 x calloc(4, 50), kept                   live 1280 + 100N
 *   grow         realloc to 120                            live 1320 + 100N
 *   delta(1)     recursion 4 deep, malloc(64) per level    live 1576 + 100N
 *   grow         realloc to 160                            live 1616 + 100N
 *   keeper       7 x malloc(52), kept                      live 1980 + 100N
 *   grow         realloc to 200 (leaked)                   live 2020 + 100N
 *   gamma        3 x make_buffer(1000), kept: the peak     live 5020 + 100N
 *   sleep 60 ms, then free all but alpha's last block, grow's block and
 *   gamma's last buffer                                    live 1300
 *
 * Truth with N = 10 (by site; per_call = bytes / calls):
 *   function     calls  bytes  per_call  at peak  leaked  temporary
 *   make_buffer      3   3000      1000     3000    1000          0
 *   beta             6   1200       200     1200       0          0
 *   alpha           10   1000       100     1000     100          0
 *   grow             5    600       120      200     200          0
 *   keeper           7    364        52      364       0          0
 *   scratch          8    288        36        0       0          8
 *   delta            4    256        64      256       0          0
 *   total           43   6708                6020    1300          8
 * Calls, bytes and per_call are all different, so every sort order is
 * unique.  Inclusive: gamma 3 / 3000 (its make_buffer calls), delta 4 / 256
 * (each block once however deep), main 43 / 6708.  No allocation happens
 * between a block's allocation and its free but for scratch's blocks (grow's
 * reallocs each come after other allocations; the last allocation, gamma's
 * third buffer, is never freed).  Blocks freed within 20 ms of their
 * allocation: scratch's 8 and grow's first 4 (40 + 80 + 120 + 160 bytes);
 * every other block lives past the 60 ms sleep.
 * Sizes by power-of-two bucket: [32,63] 16 calls 692 bytes, [64,127] 16 calls
 * 1456 bytes, [128,255] 8 calls 1560 bytes, [512,1023] 3 calls 3000 bytes.
 * With N = 13, alpha is 13 / 1300 (1300 at the peak, 100 leaked): the total
 * is 46 / 7008, peak 6320, leaked 1300.
 * Prints "funcs ok" at the very end (write(2): no stdio buffer).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

static void die(const char *s) { (void)!write(2, s, strlen(s)); _exit(1); }
static void *check(void *p) { if (!p) die("allocation failed\n"); return p; }

static void *alpha_blocks[100];
static void *beta_blocks[6];
static void *delta_blocks[4];
static void *keeper_blocks[7];
static void *gamma_blocks[3];

NOINLINE void scratch(void)
{
    for (int i = 0; i < 8; i++) {
        char *p = malloc(36); /* @scratch */
        ((char *)check(p))[0] = 1;
        BARRIER();
        free(p);
    }
    BARRIER();
}

NOINLINE void *grow(void *p, size_t n)
{
    p = realloc(p, n); /* @grow */
    BARRIER();
    return check(p);
}

NOINLINE void alpha(int n)
{
    for (int i = 0; i < n; i++) {
        alpha_blocks[i] = malloc(100); /* @alpha */
        check(alpha_blocks[i]);
    }
    BARRIER();
}

NOINLINE void beta(void)
{
    for (int i = 0; i < 6; i++) {
        beta_blocks[i] = calloc(4, 50); /* @beta */
        check(beta_blocks[i]);
    }
    BARRIER();
}

NOINLINE void delta(int level)
{
    delta_blocks[level - 1] = malloc(64); /* @delta */
    check(delta_blocks[level - 1]);
    if (level < 4)
        delta(level + 1); /* @delta_recurse */
    BARRIER();
}

NOINLINE void keeper(void)
{
    for (int i = 0; i < 7; i++) {
        keeper_blocks[i] = malloc(52); /* @keeper */
        check(keeper_blocks[i]);
    }
    BARRIER();
}

NOINLINE void *make_buffer(size_t n)
{
    void *p = malloc(n); /* @make_buffer */
    BARRIER();
    return check(p);
}

NOINLINE void gamma(void)
{
    for (int i = 0; i < 3; i++)
        gamma_blocks[i] = make_buffer(1000); /* @gamma */
    BARRIER();
}

NOINLINE void cleanup(int n)
{
    for (int i = 0; i < n - 1; i++) free(alpha_blocks[i]);   /* alpha's last leaks */
    for (int i = 0; i < 6; i++) free(beta_blocks[i]);
    for (int i = 0; i < 4; i++) free(delta_blocks[i]);
    for (int i = 0; i < 7; i++) free(keeper_blocks[i]);
    for (int i = 0; i < 2; i++) free(gamma_blocks[i]);       /* the third leaks */
    BARRIER();
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int status = argc > 2 ? atoi(argv[2]) : 0;
    struct timespec nap = { 0, 60 * 1000 * 1000 };
    void *chain;

    if (n < 1 || n > 100) die("usage: golden_funcs [N (1..100) [STATUS]]\n");
    scratch();
    chain = grow(NULL, 40);
    alpha(n);
    chain = grow(chain, 80);
    beta();
    chain = grow(chain, 120);
    delta(1);
    chain = grow(chain, 160);
    keeper();
    chain = grow(chain, 200);       /* leaked */
    gamma(); /* @call_gamma */
    nanosleep(&nap, NULL);
    cleanup(n);
    BARRIER();
    (void)chain;
    (void)!write(1, "funcs ok\n", 9);
    return status;
}
