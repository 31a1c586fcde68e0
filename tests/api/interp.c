/* interp: a tiny interpreter whose script functions allocate through a
 * native builtin, pushing its frames with mtl_frame_push and mtl_frame_pop
 * (include/memtally.h); linked with -lmemtally.
 *
 * The script: main() calls build() then load(); build() allocates 5
 * blocks of 200 bytes and calls load(); load() allocates 10 of 100.
 * Every block comes from builtin_alloc (native), called by eval, the
 * interpreter's loop, which pushed the script function's frame.
 *
 * Truth, with builtin_alloc a wrapper (its caller's frame is the site):
 * load (script.mini:3) 20 calls 2000 bytes, build (script.mini:7) 5 calls
 * 1000 bytes; inclusive: main (script.mini:12) 25 / 3000, build 15 / 2000
 * (its own and its load's), load 20 / 2000.  The stack of a block of the
 * load called by build, innermost first: builtin_alloc, load, eval,
 * build, eval, main (the script's), eval, main (the program's).
 * Prints "interp ok".
 */
#include <stdio.h>
#include <stdlib.h>

#include "memtally.h"

enum fn { MAIN, BUILD, LOAD };
static uint32_t frame_of[3];
static void *keep[64];
static int nkeep;

__attribute__((noinline)) void *builtin_alloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        exit(1);
    keep[nkeep++] = p;
    return p;
}

__attribute__((noinline)) void eval(enum fn f)
{
    mtl_frame_push(frame_of[f]);
    switch (f) {
    case MAIN:
        eval(BUILD);
        eval(LOAD);
        break;
    case BUILD:
        for (int i = 0; i < 5; i++)
            builtin_alloc(200);
        eval(LOAD);
        break;
    case LOAD:
        for (int i = 0; i < 10; i++)
            builtin_alloc(100);
        break;
    }
    mtl_frame_pop();
}

int main(void)
{
    frame_of[MAIN] = mtl_frame("main", "script.mini", 12);
    frame_of[BUILD] = mtl_frame("build", "script.mini", 7);
    frame_of[LOAD] = mtl_frame("load", "script.mini", 3);
    eval(MAIN);
    for (int i = 0; i < nkeep; i++)
        free(keep[i]);
    puts("interp ok");
    return 0;
}
