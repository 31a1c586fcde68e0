/* tag_after: blocks from malloc tagged afterwards with mtl_tag, as a
 * runtime that learns an object's type after allocating it does; linked
 * with -lmemtally.
 *
 *   main        100 x malloc(48), each tagged "Node" right away
 *   main        50 x malloc(16), then CHURN x (malloc(32), free) and a
 *               50 ms sleep, then each of the 50 tagged "Late" (the
 *               writer has long read their allocations: TAG records)
 *   main        frees 20 nodes and 10 late blocks
 *
 * CHURN is 1,100,000: more blocks than an index keeps in memory while it
 * is built, so that the late tags reach blocks whose rows are written.
 * Truth (types): Node 100 calls 4800 bytes, live at the end 80 / 3840;
 * Late 50 / 800, live 40 / 640; the churn's 1,100,000 blocks of 32 bytes
 * untagged, none live.  Prints "tag ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memtally.h"

#define CHURN 1100000

int main(void)
{
    uint32_t node = mtl_type("Node"), late = mtl_type("Late");
    void *nodes[100], *lates[50];
    for (int i = 0; i < 100; i++)
        nodes[i] = mtl_tag(malloc(48), node);
    for (int i = 0; i < 50; i++)
        lates[i] = malloc(16);
    for (int i = 0; i < CHURN; i++) {
        void *p = malloc(32);
        if (!p)
            return 1;
        free(p);
    }
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    for (int i = 0; i < 50; i++)
        mtl_tag(lates[i], late);
    for (int i = 0; i < 20; i++)
        free(nodes[i]);
    for (int i = 0; i < 10; i++)
        free(lates[i]);
    puts("tag ok");
    return 0;
}
