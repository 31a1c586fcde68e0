/* pool_types: a pool allocator that reports its objects through memtally's
 * API (include/memtally.h), with two types; linked with -lmemtally.
 *
 *   main       malloc(65536): the pool's own block (untagged), given to
 *              mtl_pool: out of the totals, its free not recorded
 *   make_node  100 x 48 bytes from the pool, mtl_alloc(.., mtl_type("Node"))
 *   make_edge  40 x 24 bytes from the pool, tagged "Edge"
 *   main       mtl_free of 30 nodes; malloc(1000) and free of it
 *   main       free(pool) without reporting the 70 nodes and 40 edges left
 *
 * Truth (report --by type): Node 100 calls 4800 bytes, Edge 40 calls 960
 * bytes, untagged 2 calls 1000 bytes (the pool's malloc, registered right
 * after, is a call of 0 bytes); by function: make_node 100 / 4800,
 * make_edge 40 / 960; live at the end: 70 nodes and 40 edges, 4320 bytes;
 * the peak: 5760 bytes, right after the last edge (100 nodes, 40 edges: the
 * pool's own block is never live, though the first node has its address).
 * mtl_type gives the same tag for the same name, and tags to both.
 * Prints "pool ok" at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtally.h"

#define NOINLINE __attribute__((noinline))

static char *pool;
static size_t used;

static void *pool_get(size_t n)
{
    void *p = pool + used;
    used += (n + 15) & ~(size_t)15;
    return p;
}

NOINLINE static void *make_node(void)
{
    void *p = pool_get(48);
    mtl_alloc(p, 48, mtl_type("Node"));
    return p;
}

NOINLINE static void *make_edge(void)
{
    void *p = pool_get(24);
    mtl_alloc(p, 24, mtl_type("Edge"));
    return p;
}

int main(void)
{
    uint32_t node = mtl_type("Node"), edge = mtl_type("Edge");
    if (mtl_recording() && (!node || !edge || node == edge || mtl_type("Node") != node)) {
        fprintf(stderr, "bad tags: Node %u, Edge %u\n", node, edge);
        return 1;
    }
    pool = malloc(65536);
    if (!pool)
        return 1;
    mtl_pool(pool, 65536);
    void *nodes[100];
    for (int i = 0; i < 100; i++)
        nodes[i] = make_node();
    for (int i = 0; i < 40; i++)
        make_edge();
    for (int i = 0; i < 30; i++)
        mtl_free(nodes[i]);
    char *q = malloc(1000);
    if (!q)
        return 1;
    memset(q, 0, 1000);
    free(q);
    free(pool);
    puts("pool ok");
    return 0;
}
