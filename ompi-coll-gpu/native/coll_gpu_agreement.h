/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The closing agreement's words and schedule (coll_gpu_native_agree_word, coll_gpu_native_agree.c;
 * docs/algorithms.md, "The closing agreement"), apart so that unit/test_agreement checks them for
 * every node count up to thousands without an MPI job.
 *
 * A word: the agreement's number above a dead flag and a 24-bit payload that the ranks
 * combine by max.  The number keeps a slot's words monotone (waits need it).
 */
#ifndef COLL_GPU_AGREEMENT_H
#define COLL_GPU_AGREEMENT_H

#include "coll_gpu_value_code.h"

#include <stdint.h>

/* coll_gpu_agreement_radix's largest value */
#define COLL_GPU_AGREE_MAX_RADIX 256

#define COLL_GPU_AGREE_DEAD ((uint64_t)1 << COLL_GPU_VALUE_CODE_BITS)
#define COLL_GPU_AGREE_SHIFT (COLL_GPU_VALUE_CODE_BITS + 1)
#define COLL_GPU_AGREE_PAYLOAD_MASK (COLL_GPU_AGREE_DEAD - 1)

/* Every word of agreement number is at least this, every word of an earlier one below it. */
static inline uint64_t coll_gpu_agree_base(uint64_t number) {
    return number << COLL_GPU_AGREE_SHIFT;
}

/* A call's outcome as a payload: 0 when it succeeded here; else the rank and its MPI error class
 * (1 .. 253) subtracted from the largest payload, so that the max of the ranks' payloads is the
 * lowest failing rank's (ranks from 0xffff on share the last value). */
#define COLL_GPU_AGREE_FAILURE_MAX ((1u << COLL_GPU_VALUE_CODE_BITS) - 2)

static inline uint32_t coll_gpu_agree_failure_payload(int rank, int mpi_class) {
    uint32_t r = (rank < 0xffff) ? (uint32_t)rank : 0xffff;

    return (0 == mpi_class)
               ? 0
               : COLL_GPU_AGREE_FAILURE_MAX - ((r << 8) | ((uint32_t)mpi_class & 0xff));
}

/* The failing rank and class of a combined payload that is not 0. */
static inline void coll_gpu_agree_failure_decode(uint32_t payload, int *rank_p, int *class_p) {
    uint32_t failed = COLL_GPU_AGREE_FAILURE_MAX - payload;

    *rank_p = (int)(failed >> 8);
    *class_p = (int)(failed & 0xff);
}

/*
 * The leaders' dissemination of radix k: in round i a leader (node j) sends to the leaders of
 * nodes j + d and waits for those of j - d (mod nnodes), for the distances d = m k^i,
 * m = 1 .. k - 1, d < nnodes.  Returns how many distances round i has (0: no such round) and
 * puts them in dists (k - 1 entries at most).  Distances are distinct over all rounds (one
 * nonzero base-k digit each), so a pair of leaders exchanges at most one word a way, and every
 * distance below nnodes is a sum of them with increasing rounds: after the last round every
 * leader has every node's word.
 */
static inline int coll_gpu_agree_round(int nnodes, int radix, int round, long *dists) {
    long power = 1;
    int count = 0;

    for (int i = 0; i < round; ++i) {
        power *= radix;
        if (power >= nnodes) {
            return 0;
        }
    }
    for (long m = 1; (m < radix) && (m * power < nnodes); ++m) {
        dists[count++] = m * power;
    }
    return count;
}

#endif /* COLL_GPU_AGREEMENT_H */
