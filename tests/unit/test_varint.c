/* Varint and zigzag coding: round trips at every boundary, and the
 * decoder's refusal of cut or overlong input. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "common/varint.h"

static void round_trip(uint64_t v, size_t expect_len)
{
    uint8_t buf[MTL_VARINT_MAX + 1];
    uint8_t *end = mtl__put_varint(buf, v);
    CHECK_EQ(end - buf, expect_len);
    CHECK_EQ(mtl__varint_len(v), expect_len);
    const uint8_t *p = buf;
    uint64_t got;
    CHECK(mtl__get_varint(&p, end, &got) == 0);
    CHECK_EQ(got, v);
    CHECK(p == end);
    /* Every cut short of the end is an error, and does not move p. */
    for (size_t cut = 0; cut < expect_len; cut++) {
        p = buf;
        CHECK(mtl__get_varint(&p, buf + cut, &got) == -1);
        CHECK(p == buf);
    }
}

int main(void)
{
    round_trip(0, 1);
    round_trip(127, 1);
    round_trip(128, 2);
    round_trip(16383, 2);
    round_trip(16384, 3);
    round_trip(UINT32_MAX, 5);
    round_trip((uint64_t)1 << 63, 10);
    round_trip(UINT64_MAX, 10);
    for (int shift = 0; shift < 64; shift++)
        round_trip((uint64_t)1 << shift, (size_t)shift / 7 + 1);

    /* 11 continuation bytes, or a 10th byte above 1: longer than 64 bits. */
    uint8_t bad[12];
    memset(bad, 0x80, sizeof bad);
    const uint8_t *p = bad;
    uint64_t v;
    CHECK(mtl__get_varint(&p, bad + sizeof bad, &v) == -1);
    memset(bad, 0xff, 9);
    bad[9] = 0x02;
    p = bad;
    CHECK(mtl__get_varint(&p, bad + 10, &v) == -1);
    bad[9] = 0x01;
    p = bad;
    CHECK(mtl__get_varint(&p, bad + 10, &v) == 0);
    CHECK_EQ(v, UINT64_MAX);

    int64_t signed_values[] = { 0, 1, -1, 2, -2, INT64_MAX, INT64_MIN, 123456789, -987654321 };
    uint64_t zig_expect[] = { 0, 2, 1, 4, 3 };
    for (size_t i = 0; i < sizeof signed_values / sizeof *signed_values; i++) {
        uint64_t z = mtl__zigzag(signed_values[i]);
        if (i < 5)
            CHECK_EQ(z, zig_expect[i]);
        CHECK(mtl__unzigzag(z) == signed_values[i]);
    }
    CHECKS_DONE();
}
