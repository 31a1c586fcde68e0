/* The live-block map against a plain array model, through a million random
 * inserts, replacements and removals (backward-shift deletion is where
 * such maps go wrong). */
#include <stdint.h>
#include <string.h>

#include "analyze/ptrmap.h"
#include "check.h"

#define KEYS 5000

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    return check_xorshift(&rng);
}

static void count_entry(uint64_t key, const struct mtl_ptrmap_val *v, void *arg)
{
    (void)key;
    (void)v;
    (*(size_t *)arg)++;
}

int main(void)
{
    struct mtl_ptrmap m = MTL_PTRMAP_INIT;
    static uint64_t model_size[KEYS];  /* 0: absent, else size + 1 */
    size_t live = 0;
    for (int i = 0; i < 1000000; i++) {
        /* Keys that collide in their low bits, like aligned addresses. */
        uint64_t k = next() % KEYS;
        uint64_t key = 0x7f0000000000ull + k * 64;
        if (next() % 3) {
            struct mtl_ptrmap_val v = { .size = (uint64_t)i, .stack = (uint32_t)k }, old;
            int rc = mtl_ptrmap_put(&m, key, &v, &old);
            CHECK(rc >= 0);
            CHECK_EQ(rc, model_size[k] != 0);
            if (rc == 1)
                CHECK_EQ(old.size + 1, model_size[k]);
            else
                live++;
            model_size[k] = (uint64_t)i + 1;
        } else {
            struct mtl_ptrmap_val out;
            int rc = mtl_ptrmap_take(&m, key, &out);
            CHECK_EQ(rc, model_size[k] != 0);
            if (rc) {
                CHECK_EQ(out.size + 1, model_size[k]);
                CHECK_EQ(out.stack, k);
                model_size[k] = 0;
                live--;
            }
        }
        CHECK_EQ(m.count, live);
    }
    size_t seen = 0;
    mtl_ptrmap_each(&m, count_entry, &seen);
    CHECK_EQ(seen, live);
    /* Key 0 is stored (under a stand-in) and found again. */
    struct mtl_ptrmap_val z = { .size = 42 }, out;
    CHECK(mtl_ptrmap_put(&m, 0, &z, NULL) >= 0);
    CHECK(mtl_ptrmap_take(&m, 0, &out) == 1);
    CHECK_EQ(out.size, 42);
    mtl_ptrmap_release(&m);
    CHECK_EQ(m.count, 0);
    CHECKS_DONE();
}
