/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runs of copies (ompi-coll-gpu/native/coll_gpu_run.h) that the rooted collectives and
 * alltoall issue as one copy: which copies join a run and what the run then copies, against
 * copies made one by one:
 *   - whole blocks following each other in both (a one-step gather): one plain copy;
 *   - a chunk of every block, slots of the chunk's length in a scratch half to blocks of the
 *     buffer's stride (a step of a multi-step gather), and back (scatter): one 2D copy, every
 *     row where the per-block copy put it;
 *   - the root's own block skipped in the middle: two runs; a rank order that is not the slot
 *     order (nodes that are not rank ranges): rows break where the strides do;
 *   - a row of another length, a backward row, rows that would overlap, a row off the strides:
 *     not joined;
 *   - a row grown by a following copy, then rows of its new length at a stride: 2D.
 */
#include "coll_gpu_run.h"
#include "unit_check.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS 64
#define STRIDE 1000

static unsigned char half[SLOTS * STRIDE], buf[SLOTS * STRIDE], want[SLOTS * STRIDE];
static int plain_copies, copies_2d;

/* What coll_gpu_prims_run_flush issues, done here with memcpy. */
static void issue(coll_gpu_prims_run_t *run) {
    if (1 == run->rows) {
        memcpy(run->dst, run->src, run->len);
        ++plain_copies;
    } else if (run->rows > 1) {
        for (size_t r = 0; r < run->rows; ++r) {
            memcpy(run->dst + r * run->dpitch, run->src + r * run->spitch, run->len);
        }
        ++copies_2d;
    }
    run->rows = 0;
}

static void add(coll_gpu_prims_run_t *run, char *dst, const char *src, size_t len) {
    if (!coll_gpu_run_join(run, dst, src, len)) {
        issue(run);
        coll_gpu_run_start(run, dst, src, len);
    }
}

/* from filled with a pattern, to and the reference cleared, no copies counted */
static void reset(unsigned char *from, unsigned char *to) {
    fill(from, SLOTS * STRIDE, 3);
    memset(to, 0, SLOTS * STRIDE);
    memset(want, 0, sizeof(want));
    plain_copies = copies_2d = 0;
}

/* slots k of len bytes in half to buf + order[k] * stride (skip: a rank left out, -1: none),
 * through runs and one by one; the copies issued. */
static bool slots_to_buf(const int *order, int n, size_t len, size_t stride, int skip) {
    coll_gpu_prims_run_t run = {NULL, NULL, 0, 0, 0, 0};

    reset(half, buf);
    for (int k = 0; k < n; ++k) {
        if (order[k] == skip) {
            continue;
        }
        memcpy(want + (size_t)order[k] * stride, half + (size_t)k * len, len);
        add(&run, (char *)buf + (size_t)order[k] * stride, (const char *)half + (size_t)k * len,
            len);
    }
    issue(&run);
    return 0 == memcmp(buf, want, sizeof(buf));
}

static void test_rooted(void) {
    int order[SLOTS], odd_order[SLOTS];

    for (int k = 0; k < SLOTS; ++k) {
        order[k] = k;
        /* two nodes interleaved (ranks 0, 2, 4, .. on one): slots in node order */
        odd_order[k] = (k < SLOTS / 2) ? 2 * k : 2 * (k - SLOTS / 2) + 1;
    }
    bool ok = slots_to_buf(order, SLOTS, STRIDE, STRIDE, -1);

    CHECK(ok && 1 == plain_copies && 0 == copies_2d,
          "whole blocks following each other: one plain copy (%d plain, %d 2D)", plain_copies,
          copies_2d);
    ok = slots_to_buf(order, SLOTS, 96, STRIDE, -1);
    CHECK(ok && 0 == plain_copies && 1 == copies_2d,
          "a chunk of every block (96 of 1000 bytes): one 2D copy, the bytes of one by one (%d "
          "plain, %d 2D)",
          plain_copies, copies_2d);
    ok = slots_to_buf(order, SLOTS, 96, STRIDE, 17);
    CHECK(ok && 0 == plain_copies && 2 == copies_2d,
          "rank 17 skipped: two 2D copies (%d plain, %d 2D)", plain_copies, copies_2d);
    ok = slots_to_buf(order, SLOTS, 96, STRIDE, 1);
    CHECK(ok && 2 == plain_copies + copies_2d,
          "rank 1 skipped: two copies (%d plain, %d 2D: rows 0 and 2 join at their own strides)",
          plain_copies, copies_2d);
    ok = slots_to_buf(odd_order, SLOTS, 96, STRIDE, -1);
    CHECK(ok && 0 == plain_copies && 2 == copies_2d,
          "nodes interleaved: a 2D copy per node (the strides change once) (%d plain, %d 2D)",
          plain_copies, copies_2d);
}

/* scatter's direction: blocks' chunks of the buffer into slots */
static void test_into_slots(void) {
    coll_gpu_prims_run_t run = {NULL, NULL, 0, 0, 0, 0};

    reset(buf, half);
    for (int k = 0; k < SLOTS; ++k) {
        memcpy(want + (size_t)k * 40, buf + (size_t)k * STRIDE + 200, 40);
        add(&run, (char *)half + (size_t)k * 40, (const char *)buf + (size_t)k * STRIDE + 200, 40);
    }
    issue(&run);
    bool ok = (0 == memcmp(half, want, sizeof(half)));
    CHECK(ok && 1 == copies_2d && 0 == plain_copies,
          "chunks at an offset of every block into slots: one 2D copy (%d plain, %d 2D)",
          plain_copies, copies_2d);
}

static void test_not_joined(void) {
    coll_gpu_prims_run_t run = {NULL, NULL, 0, 0, 0, 0};
    /* (room before them for the backward rows) */
    char *d = (char *)buf + 1000;
    const char *s = (const char *)half + 1000;

    CHECK(!coll_gpu_run_join(&run, d, s, 8), "an empty run joins nothing");
    coll_gpu_run_start(&run, d, s, 8);
    CHECK(!coll_gpu_run_join(&run, d + 100, s + 100, 9), "a row of another length: not joined");
    CHECK(!coll_gpu_run_join(&run, d - 100, s + 100, 8) &&
              !coll_gpu_run_join(&run, d + 100, s - 100, 8),
          "a row backwards on either side: not joined");
    CHECK(!coll_gpu_run_join(&run, d + 4, s + 100, 8), "a row overlapping the first: not joined");
    CHECK(coll_gpu_run_join(&run, d + 100, s + 50, 8) && 2 == run.rows && 100 == run.dpitch &&
              50 == run.spitch,
          "a second row sets the strides (100, 50)");
    CHECK(coll_gpu_run_join(&run, d + 200, s + 100, 8) && 3 == run.rows,
          "a row at the strides joins");
    CHECK(!coll_gpu_run_join(&run, d + 300, s + 151, 8) && 3 == run.rows,
          "a row off the strides: not joined");
    CHECK(!coll_gpu_run_join(&run, d + 308, s + 158, 8),
          "following the last row in both, once there are rows: not joined (2D rows have one "
          "length)");

    coll_gpu_run_start(&run, d, s, 8);
    CHECK(coll_gpu_run_join(&run, d + 8, s + 8, 24) && 1 == run.rows && 32 == run.len,
          "following in both: the row grows (8 + 24 = 32)");
    CHECK(coll_gpu_run_join(&run, d + 100, s + 32, 32) && 2 == run.rows && 100 == run.dpitch &&
              32 == run.spitch,
          "then a row of its new length: 2D");
}

int main(void) {
    test_rooted();
    test_into_slots();
    test_not_joined();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (0 == test_failed) ? 0 : 1;
}
