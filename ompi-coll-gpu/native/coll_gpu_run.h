/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A run of copies issued as one (coll_gpu_prims_run_add): rows of len bytes at regular strides
 * on both sides, one 2D copy, where a launch per copy was the cost of the per-rank loops of the
 * rooted collectives and alltoall on many ranks; a row grows while the copies follow each other
 * in both (one plain copy).  No dependencies: tests/unit/test_run checks which copies join.
 */
#ifndef COLL_GPU_RUN_H
#define COLL_GPU_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *dst;
    const char *src;
    size_t len;            /* of a row */
    size_t rows;           /* 0: empty */
    size_t dpitch, spitch; /* between rows, when rows > 1 */
} coll_gpu_prims_run_t;

/* Whether len bytes src -> dst join the run: the run's row grows when they follow it in both (a
 * run of one row); a row of the same length at the run's strides (the second row sets them:
 * forward, not overlapping the first) is one more row.  Otherwise the run is to be issued and a
 * new one started with them (coll_gpu_run_start). */
static inline bool coll_gpu_run_join(coll_gpu_prims_run_t *run, char *dst, const char *src,
                                     size_t len) {
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    uintptr_t d0 = (uintptr_t)run->dst, s0 = (uintptr_t)run->src;

    if (0 == run->rows) {
        return false;
    }
    if ((1 == run->rows) && (d == d0 + run->len) && (s == s0 + run->len)) {
        run->len += len;
        return true;
    }
    if (len != run->len) {
        return false;
    }
    if ((1 == run->rows) && (d >= d0 + len) && (s >= s0 + len)) {
        run->dpitch = d - d0;
        run->spitch = s - s0;
        run->rows = 2;
        return true;
    }
    if ((run->rows > 1) && (d == d0 + run->rows * run->dpitch) &&
        (s == s0 + run->rows * run->spitch)) {
        ++run->rows;
        return true;
    }
    return false;
}
static inline void coll_gpu_run_start(coll_gpu_prims_run_t *run, char *dst, const char *src,
                                      size_t len) {
    run->dst = dst;
    run->src = src;
    run->len = len;
    run->rows = 1;
}

#endif /* COLL_GPU_RUN_H */
