/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The code of the values ranks agree on inside a native call (ompi-coll-gpu/native/
 * coll_gpu_value_code.h), on which a nonblocking alltoallv's number of steps rests: it fits 24
 * bits, decodes to at least the value (exactly below 2^18), never more than 2^-17 above, and is
 * monotone, so that the largest of the ranks' codes decodes to at least every rank's value.
 */
#include "coll_gpu_value_code.h"
#include "unit_check.h"

#include <stdio.h>
#include <stdlib.h>

static bool round_trip_ok(uint64_t v) {
    uint32_t code = coll_gpu_value_encode(v);
    uint64_t back = coll_gpu_value_decode(code);

    if (code >> COLL_GPU_VALUE_CODE_BITS) {
        return false;
    }
    if (v < ((uint64_t)1 << COLL_GPU_VALUE_CODE_MANT_BITS)) {
        return back == v;
    }
    /* back - v <= v / 2^17 */
    return (back >= v) && ((back - v) <= (v >> (COLL_GPU_VALUE_CODE_MANT_BITS - 1)));
}

static void test_round_trip(void) {
    static const uint64_t edges[] = {0,
                                     1,
                                     2,
                                     262143,
                                     262144,
                                     262145,
                                     524287,
                                     524288,
                                     524289,
                                     1048575,
                                     4194304,
                                     4194305,
                                     (uint64_t)1 << 31,
                                     ((uint64_t)1 << 31) - 1,
                                     (uint64_t)1 << 40,
                                     ((uint64_t)1 << 40) + 1,
                                     ((uint64_t)1 << 63) - 1,
                                     (uint64_t)1 << 63};
    int bad = 0;

    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); ++i) {
        bad += !round_trip_ok(edges[i]);
    }
    CHECK(0 == bad, "edge values: %d of %zu decode wrongly", bad, sizeof(edges) / sizeof(edges[0]));
    /* every power of two and its neighbours */
    bad = 0;
    for (int b = 1; b < 64; ++b) {
        uint64_t p = (uint64_t)1 << b;
        bad += !round_trip_ok(p - 1) + !round_trip_ok(p) + !round_trip_ok(p + 1);
    }
    CHECK(0 == bad, "powers of two and neighbours: %d decode wrongly", bad);
    CHECK(UINT64_MAX == coll_gpu_value_decode(coll_gpu_value_encode(UINT64_MAX)),
          "2^64 - 1 saturates");
}

static void test_monotone(void) {
    uint64_t state = 88172645463325252ULL;
    int bad = 0, exact = 0;

    /* pseudo-random pairs across all magnitudes (xorshift) */
    for (int i = 0; i < 200000; ++i) {
        uint64_t a, b;
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        a = state >> (state % 64);
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        b = (i & 1) ? a + (state % 1000) : state >> (state % 64);
        if (a > b) {
            uint64_t t = a;
            a = b;
            b = t;
        }
        bad += coll_gpu_value_encode(a) > coll_gpu_value_encode(b);
        bad += !round_trip_ok(a) + !round_trip_ok(b);
        exact += (a == coll_gpu_value_decode(coll_gpu_value_encode(a)));
    }
    CHECK(0 == bad, "200000 pairs: %d out of order or off the bound", bad);
    CHECK(exact > 0, "some values decode exactly (%d)", exact);
    /* the largest code of a set is at least every value */
    {
        uint64_t vals[] = {5, 1u << 20, 3000000, 262145, 7};
        uint32_t max = 0;
        for (int i = 0; i < 5; ++i) {
            uint32_t c = coll_gpu_value_encode(vals[i]);
            max = (c > max) ? c : max;
        }
        CHECK(coll_gpu_value_decode(max) >= 3000000 && coll_gpu_value_decode(max) < 3000100,
              "max of codes decodes to %llu (largest value 3000000)",
              (unsigned long long)coll_gpu_value_decode(max));
    }
}

int main(void) {
    test_round_trip();
    test_monotone();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (0 == test_failed) ? 0 : 1;
}
