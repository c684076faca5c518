/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The closing agreement's schedule and words (ompi-coll-gpu/native/coll_gpu_agreement.h), for
 * node counts the MPI tests cannot start (up to 4,097 nodes) and every radix:
 *   - the leaders' dissemination leaves every leader with every node's word (simulated with
 *     bitsets, round by round: what a leader sends is what it had when the round began), in
 *     ceil(log_radix nnodes) rounds, with distinct distances (a pair of leaders exchanges at most
 *     one word a way), (radix - 1) per round at most;
 *   - the failure payload: the max of the ranks' is the lowest failing rank's, with its class;
 *     success (0) below every failure; 24 bits;
 *   - words: every word of agreement g lies in [base(g), base(g + 1)), dead flag and payload
 *     included, so a slot's words grow from one agreement to the next.
 */
#include "coll_gpu_agreement.h"
#include "unit_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool dissemination_ok(int n, int radix, int *rounds_p, int *messages_p) {
    size_t words = ((size_t)n + 63) / 64;
    uint64_t *know = calloc((size_t)n * words, sizeof(uint64_t));
    uint64_t *before = malloc((size_t)n * words * sizeof(uint64_t));
    char *used = calloc((size_t)n, 1);
    long dists[COLL_GPU_AGREE_MAX_RADIX];
    int count, round, messages = 0, expected_rounds = 0;
    bool ok = (NULL != know) && (NULL != before) && (NULL != used);

    for (long power = 1; power < n; power *= radix) {
        ++expected_rounds;
    }
    for (int j = 0; ok && (j < n); ++j) {
        know[(size_t)j * words + (size_t)j / 64] |= (uint64_t)1 << (j % 64);
    }
    for (round = 0; ok && (0 < (count = coll_gpu_agree_round(n, radix, round, dists))); ++round) {
        ok = (count <= radix - 1);
        memcpy(before, know, (size_t)n * words * sizeof(uint64_t));
        for (int i = 0; ok && (i < count); ++i) {
            ok = (dists[i] > 0) && (dists[i] < n) && !used[dists[i]];
            used[ok ? dists[i] : 0] = 1;
            ++messages;
            for (int j = 0; ok && (j < n); ++j) {
                const uint64_t *from = before + (size_t)((j - dists[i] + n) % n) * words;
                for (size_t w = 0; w < words; ++w) {
                    know[(size_t)j * words + w] |= from[w];
                }
            }
        }
    }
    for (int j = 0; ok && (j < n); ++j) {
        for (int r = 0; ok && (r < n); ++r) {
            ok = 0 != (know[(size_t)j * words + (size_t)r / 64] & ((uint64_t)1 << (r % 64)));
        }
    }
    ok = ok && (round == expected_rounds);
    *rounds_p = round;
    *messages_p = messages;
    free(know);
    free(before);
    free(used);
    return ok;
}

static void test_dissemination(void) {
    static const int radices[] = {2, 3, 4, 5, 8, 16, 256};
    static const int large[] = {255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 4096, 4097};
    int bad = 0, cases = 0, rounds, messages;

    for (size_t k = 0; k < sizeof(radices) / sizeof(radices[0]); ++k) {
        for (int n = 2; n <= 140 + (int)(sizeof(large) / sizeof(large[0])); ++n) {
            int nodes = (n <= 140) ? n : large[n - 141];
            if (!dissemination_ok(nodes, radices[k], &rounds, &messages)) {
                if (++bad <= 5) {
                    CHECK(false, "dissemination of radix %d on %d nodes: %d rounds, %d messages",
                          radices[k], nodes, rounds, messages);
                }
            }
            ++cases;
        }
    }
    CHECK(0 == bad,
          "dissemination: every leader has every node's word after ceil(log_k n) "
          "rounds, distinct distances, at most k - 1 a round (%d layouts, 2 .. 4097 "
          "nodes, radix 2 .. 256; %d wrong)",
          cases, bad);
    /* the counts the documentation gives: (nodes, radix, rounds, messages per leader) */
    {
        static const int documented[][4] = {
            {8, 8, 1, 7}, {512, 8, 3, 21}, {1024, 8, 4, 22}, {5, 2, 3, 3}, {16, 8, 2, 8}};

        for (size_t i = 0; i < sizeof(documented) / sizeof(documented[0]); ++i) {
            bool ok = dissemination_ok(documented[i][0], documented[i][1], &rounds, &messages);

            CHECK(ok && (documented[i][2] == rounds) && (documented[i][3] == messages),
                  "%d nodes, radix %d: %d rounds, %d messages per leader (%d, %d)",
                  documented[i][0], documented[i][1], rounds, messages, documented[i][2],
                  documented[i][3]);
        }
    }
}

static void test_failure_payload(void) {
    uint32_t p3 = coll_gpu_agree_failure_payload(3, 16), p7 = coll_gpu_agree_failure_payload(7, 5);
    uint32_t p0 = coll_gpu_agree_failure_payload(0, 253);
    uint32_t big = coll_gpu_agree_failure_payload(100000, 253);
    uint32_t max = (p3 > p7) ? p3 : p7;
    int rank, mpi_class;

    coll_gpu_agree_failure_decode(max, &rank, &mpi_class);
    CHECK((3 == rank) && (16 == mpi_class),
          "max of ranks 3 (class 16) and 7 (class 5): rank %d "
          "class %d",
          rank, mpi_class);
    coll_gpu_agree_failure_decode(p0, &rank, &mpi_class);
    CHECK((p0 > p3) && (0 == rank) && (253 == mpi_class), "rank 0 wins over rank 3: rank %d", rank);
    CHECK(0 == coll_gpu_agree_failure_payload(5, 0), "success is 0");
    CHECK((big > 0) && (big < p7), "a rank above 0xffff failing: %u, nonzero and below rank 7's",
          big);
    CHECK((p0 <= COLL_GPU_AGREE_PAYLOAD_MASK) && (p3 <= COLL_GPU_AGREE_PAYLOAD_MASK),
          "failure payloads fit %d bits", COLL_GPU_VALUE_CODE_BITS);
}

static void test_words(void) {
    uint64_t highest = COLL_GPU_AGREE_DEAD | COLL_GPU_AGREE_PAYLOAD_MASK;
    bool ok = true;

    for (uint64_t g = 1; g < 1000; ++g) {
        ok = ok && ((coll_gpu_agree_base(g) | highest) < coll_gpu_agree_base(g + 1)) &&
             ((coll_gpu_agree_base(g) | 0) >= coll_gpu_agree_base(g));
    }
    /* 2^39 agreements: 6 days at one per microsecond */
    ok = ok && (coll_gpu_agree_base((uint64_t)1 << 38) > coll_gpu_agree_base(1));
    CHECK(ok, "every word of agreement g is in [base(g), base(g + 1)), numbers up to 2^38");
}

int main(void) {
    test_dissemination();
    test_failure_payload();
    test_words();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (0 == test_failed) ? 0 : 1;
}
