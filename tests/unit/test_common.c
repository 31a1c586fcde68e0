/*
 * test_common.c: the shared pieces of src/common: buffer, arena, hash
 * map (against a plain array as the truth, through growth and removals),
 * interning, bitset and the JSON writer (exact output), and the region's
 * wake-up of its writer.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "common/arena.h"
#include "common/bitset.h"
#include "common/buf.h"
#include "common/hmap.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/region.h"
#include "memtally/errors.h"

static void test_buf(void)
{
    struct mtl_buf b = MTL_BUF_INIT;
    mtl_buf_adds(&b, "abc");
    mtl_buf_addc(&b, '-');
    mtl_buf_addf(&b, "%d/%s", 42, "x");
    CHECK(!strcmp(b.data, "abc-42/x"));
    CHECK_EQ(b.len, 8);
    char big[1000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mtl_buf_addf(&b, "%s", big); /* longer than the formatting buffer */
    CHECK_EQ(b.len, 8 + 999);
    CHECK(b.data[b.len] == '\0' && b.data[b.len - 1] == 'q');
    mtl_buf_pad(&b, ' ', 3);
    CHECK_EQ(b.len, 1010);
    mtl_buf_reset(&b);
    CHECK_EQ(b.len, 0);
    CHECK(!strcmp(b.data, ""));
    mtl_buf_adds(&b, "kept");
    char *d = mtl_buf_detach(&b);
    CHECK(!strcmp(d, "kept") && b.data == NULL && b.len == 0);
    free(d);
    d = mtl_buf_detach(&b);
    CHECK(d && !strcmp(d, ""));
    free(d);
    mtl_buf_release(&b);
}

static void test_arena(void)
{
    struct mtl_arena a = MTL_ARENA_INIT;
    char *s[2000];
    for (int i = 0; i < 2000; i++) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "name-%d", i);
        s[i] = mtl_arena_strdup(&a, tmp);
        CHECK(s[i] && ((uintptr_t)s[i] % 16) == 0);
    }
    char *huge = mtl_arena_alloc(&a, 200000); /* a block of its own */
    CHECK(huge);
    memset(huge, 1, 200000);
    char *after = mtl_arena_strdup(&a, "after");
    for (int i = 0; i < 2000; i++) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "name-%d", i);
        CHECK(!strcmp(s[i], tmp));
    }
    CHECK(!strcmp(after, "after"));
    CHECK(!strcmp(mtl_arena_strndup(&a, "abcdef", 3), "abc"));
    mtl_arena_release(&a);
    CHECK(a.head == NULL);
}

/* The map against an array of the truth, keys from a small range so that
 * removals and re-insertions collide, with key 0 among them. */
static void test_hmap(void)
{
    enum { RANGE = 5000 };
    static uint64_t truth[RANGE];
    static int present[RANGE];
    struct mtl_hmap m = MTL_HMAP_INIT;
    uint64_t seed = 12345;
    size_t count = 0;
    for (int step = 0; step < 400000; step++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = seed >> 33;
        uint64_t k = r % RANGE;
        /* Spread keys over the whole 64 bits, 0 kept as 0. */
        uint64_t key = k * 0x100000001b3ull; /* injective; 0 stays 0 */
        if (r & (1u << 20)) {
            uint64_t old = 0;
            int rc = mtl_hmap_put(&m, key, step, &old);
            CHECK(rc == present[k]);
            if (present[k])
                CHECK_EQ(old, truth[k]);
            else
                count++;
            truth[k] = (uint64_t)step;
            present[k] = 1;
        } else {
            uint64_t v = 0;
            int rc = mtl_hmap_take(&m, key, &v);
            CHECK(rc == present[k]);
            if (present[k]) {
                CHECK_EQ(v, truth[k]);
                count--;
            }
            present[k] = 0;
        }
        CHECK_EQ(m.count, count);
    }
    for (uint64_t k = 0; k < RANGE; k++) {
        uint64_t key = k * 0x100000001b3ull, v = 0;
        CHECK(mtl_hmap_get(&m, key, &v) == present[k]);
        if (present[k])
            CHECK_EQ(v, truth[k]);
    }
    size_t seen = 0, i = 0;
    uint64_t key, val;
    while (mtl_hmap_next(&m, &i, &key, &val))
        seen++;
    CHECK_EQ(seen, count);
    int created;
    uint64_t *slot = mtl_hmap_slot(&m, 777777, &created);
    CHECK(slot && created);
    *slot = 5;
    slot = mtl_hmap_slot(&m, 777777, &created);
    CHECK(slot && !created && *slot == 5);
    mtl_hmap_clear(&m);
    CHECK(m.count == 0 && !mtl_hmap_get(&m, 777777, NULL));
    mtl_hmap_release(&m);
    CHECK(mtl_hash_bytes("a", 1) != mtl_hash_bytes("b", 1));
}

static void test_intern(void)
{
    struct mtl_intern t = MTL_INTERN_INIT;
    uint32_t id, id2;
    for (int i = 0; i < 3000; i++) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "fn%d", i);
        CHECK(mtl_intern_str(&t, tmp, &id) == 1);
        CHECK_EQ(id, i);
    }
    CHECK(mtl_intern_str(&t, "fn1234", &id2) == 0);
    CHECK_EQ(id2, 1234);
    CHECK(!strcmp(mtl_intern_at(&t, 1234, NULL), "fn1234"));
    uint32_t blob[3] = { 1, 0, 7 };
    CHECK(mtl_intern_add(&t, blob, sizeof blob, &id) == 1);
    size_t len;
    CHECK(!memcmp(mtl_intern_at(&t, id, &len), blob, sizeof blob) && len == sizeof blob);
    CHECK_EQ(mtl_intern_find(&t, blob, sizeof blob), id);
    CHECK_EQ(mtl_intern_find(&t, "nope", 4), MTL_INTERN_NONE);
    CHECK(mtl_intern_at(&t, 99999, NULL) == NULL);
    mtl_intern_release(&t);
}

static void test_bitset(void)
{
    struct mtl_bitset b = MTL_BITSET_INIT;
    CHECK(!mtl_bitset_test(&b, 5));
    CHECK(mtl_bitset_set(&b, 5) == 1);
    CHECK(mtl_bitset_set(&b, 5) == 0);
    CHECK(mtl_bitset_set(&b, 100000) == 1);
    CHECK(mtl_bitset_test(&b, 5) && mtl_bitset_test(&b, 100000) && !mtl_bitset_test(&b, 6));
    CHECK_EQ(mtl_bitset_count(&b), 2);
    mtl_bitset_clear(&b, 5);
    CHECK(!mtl_bitset_test(&b, 5));
    CHECK_EQ(mtl_bitset_count(&b), 1);
    mtl_bitset_release(&b);
}

static void test_json(void)
{
    struct mtl_buf b = MTL_BUF_INIT;
    struct mtl_json j;
    mtl_json_init(&j, &b);
    mtl_json_begin_object(&j);
    mtl_json_kv_number(&j, "calls", 12);
    mtl_json_kv_number(&j, "est", 1234567.4);
    mtl_json_kv_number(&j, "mean", 2.5);
    mtl_json_kv_fixed(&j, "percent", 12.5, 4);
    mtl_json_kv_string(&j, "name", "a\"b\\c\n\x01");
    mtl_json_kv_string(&j, "none", NULL);
    mtl_json_key(&j, "rows");
    mtl_json_begin_array(&j);
    mtl_json_uint(&j, 1);
    mtl_json_begin_object(&j);
    mtl_json_end(&j);
    mtl_json_begin_array(&j);
    mtl_json_end(&j);
    mtl_json_bool(&j, 1);
    mtl_json_null(&j);
    mtl_json_int(&j, -3);
    mtl_json_number(&j, 0.0 / 0.0);
    mtl_json_end(&j);
    mtl_json_kv_string(&j, "utf8", "caf\xc3\xa9 \xff\xc3");
    mtl_json_end(&j);
    CHECK(!b.failed && j.depth == 0);
    const char *want =
        "{\"calls\": 12, \"est\": 1234567, \"mean\": 2.5, \"percent\": 12.5000, "
        "\"name\": \"a\\\"b\\\\c\\n\\u0001\", \"none\": null, "
        "\"rows\": [1, {}, [], true, null, -3, null], "
        "\"utf8\": \"caf\xc3\xa9 \\ufffd\\ufffd\"}";
    if (strcmp(b.data, want))
        fprintf(stderr, "got  %s\nwant %s\n", b.data, want);
    CHECK(!strcmp(b.data, want));
    mtl_buf_release(&b);
}

static void test_errors(void)
{
    CHECK(!strcmp(mtl_strerror(MTL_ECORRUPT), "corrupt trace"));
    CHECK(!strcmp(mtl_strerror(MTL_ESTOPPED), "stopped by the caller"));
    CHECK(!strcmp(mtl_strerror(-16 /* EBUSY */), "already recording"));
    CHECK(!strcmp(mtl_strerror(0), "success"));
    CHECK(!strcmp(mtl_strerror(12345), "unknown error"));
}

/* A writer asleep on the region (a long timeout) wakes when woken, and
 * says it sleeps only while it does: the wake makes its system call only
 * then. */
static double slept_s;
static _Atomic int sleeper_tid;

/* Whether thread tid of this process is asleep (state S in its stat). */
static int asleep(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'S';
}

static void *sleeper(void *arg)
{
    atomic_store(&sleeper_tid, (int)syscall(SYS_gettid));
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    mtl_region_sleep(arg, mtl_region_wakes(arg), 20000);
    clock_gettime(CLOCK_MONOTONIC, &b);
    slept_s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    return NULL;
}

static void test_region_wake(void)
{
    struct mtl_region *r = mtl_region_new_private();
    CHECK(r != NULL);
    if (!r)
        return;
    mtl_region_wake(r); /* nobody asleep: counted, nothing else */
    CHECK(atomic_load(&r->wake) == 1 && atomic_load(&r->writer_sleeping) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, sleeper, r) == 0);
    /* Until it is in its futex wait (a wake before that would be seen by
     * the wait's compare, not by the wake's system call). */
    for (int i = 0; i < 5000 && !(atomic_load(&r->writer_sleeping) &&
                                   asleep(atomic_load(&sleeper_tid)));
         i++)
        usleep(1000);
    /* The wake ends the sleep, long before its timeout of 20 s (a lost
     * wake would sleep it out). */
    mtl_region_wake(r);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(slept_s < 10);
    CHECK(atomic_load(&r->writer_sleeping) == 0);
    /* A wake that comes while the writer works, after it took its count
     * and before it sleeps (the program's end during a round), is not
     * lost: the sleep returns at once, not after its 20 s. */
    uint32_t seen = mtl_region_wakes(r);
    mtl_region_wake(r);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    mtl_region_sleep(r, seen, 20000);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < 10);
    mtl_region_unmap(r);
}

int main(void)
{
    test_buf();
    test_arena();
    test_hmap();
    test_intern();
    test_bitset();
    test_json();
    test_errors();
    test_region_wake();
    CHECKS_DONE();
}
