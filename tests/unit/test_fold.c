/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fold of n members onto a power of two (ompi-coll-gpu/native/coll_gpu_fold.h), on which
 * recursive doubling and halving rest (allreduce recursive_doubling, hierarchical_doubling,
 * hierarchical_rabenseifner; allgather(v) hierarchical_doubling; reduce_scatter(_block)
 * hierarchical_halving), for every n from 1 to 1,025:
 *   - p is the largest power of two <= n, rem = n - p; the extras are the even members below
 *     2 rem; the others take the virtual indices 0 .. p - 1 in member order, and
 *     member(virtual(i)) = i;
 *   - the runs [first(v), first(v + 1)) cover 0 .. n - 1 in order, two members below rem, one
 *     above, each ending with member(v);
 *   - recursive doubling as allgather's (round mask: get the partner's group of mask virtual
 *     members, one run of members): every member that takes part ends holding all n, having
 *     received each other member's once;
 *   - recursive halving as reduce_scatter's (round mask p/2 .. 1: keep the half of the run of
 *     2 mask virtual members holding my index): each ends with exactly its own run, having
 *     received (p - 1) / p of the members' data.
 */
#include "coll_gpu_fold.h"
#include "unit_check.h"

#include <stdlib.h>
#include <string.h>

#define MAX_N 1025

static void test_indices(void) {
    int bad_p = 0, bad_virtual = 0, bad_runs = 0;

    for (int n = 1; n <= MAX_N; ++n) {
        coll_gpu_prims_fold_t f = coll_gpu_prims_fold(n);
        int next_virtual = 0;

        bad_p += !((f.p <= n) && (n < 2 * f.p) && ((1 << f.log2p) == f.p) && (f.rem == n - f.p));
        bad_virtual +=
            (-1 != coll_gpu_prims_fold_virtual(&f, -1)) || coll_gpu_prims_fold_paired(&f, -1);
        for (int i = 0; i < n; ++i) {
            int v = coll_gpu_prims_fold_virtual(&f, i);
            bool extra = (i < 2 * f.rem) && (0 == (i & 1));

            bad_virtual += (coll_gpu_prims_fold_paired(&f, i) != (i < 2 * f.rem));
            if (extra) {
                bad_virtual += (-1 != v);
                continue;
            }
            bad_virtual += (v != next_virtual++) || (coll_gpu_prims_fold_member(&f, v) != i);
        }
        bad_virtual += (next_virtual != f.p);
        bad_runs +=
            (0 != coll_gpu_prims_fold_first(&f, 0)) || (n != coll_gpu_prims_fold_first(&f, f.p));
        for (int v = 0; v < f.p; ++v) {
            int lo = coll_gpu_prims_fold_first(&f, v), hi = coll_gpu_prims_fold_first(&f, v + 1);

            bad_runs +=
                (hi - lo != ((v < f.rem) ? 2 : 1)) || (coll_gpu_prims_fold_member(&f, v) != hi - 1);
        }
    }
    CHECK(0 == bad_p, "p, log2p, rem for n = 1 .. %d: %d wrong", MAX_N, bad_p);
    CHECK(0 == bad_virtual, "virtual indices and members: %d wrong", bad_virtual);
    CHECK(0 == bad_runs, "runs of members cover 0 .. n - 1 in order: %d wrong", bad_runs);
}

/* Recursive doubling on member ranges: holds[v] = [lo, hi) of members, received[v] = members
 * received. */
static void test_doubling(void) {
    int bad = 0;
    int *lo = malloc(MAX_N * sizeof(int)), *hi = malloc(MAX_N * sizeof(int));
    int *got = malloc(MAX_N * sizeof(int)), *nlo = malloc(MAX_N * sizeof(int));
    int *nhi = malloc(MAX_N * sizeof(int));

    for (int n = 1; n <= MAX_N && NULL != nhi; ++n) {
        coll_gpu_prims_fold_t f = coll_gpu_prims_fold(n);

        for (int v = 0; v < f.p; ++v) {
            lo[v] = coll_gpu_prims_fold_first(&f, v);
            hi[v] = coll_gpu_prims_fold_first(&f, v + 1);
            got[v] = 0;
        }
        for (int mask = 1; mask < f.p; mask *= 2) {
            for (int v = 0; v < f.p; ++v) {
                int plo = (v ^ mask) & ~(mask - 1);
                int from = coll_gpu_prims_fold_first(&f, plo);
                int to = coll_gpu_prims_fold_first(&f, plo + mask);

                /* the partner's group is what the partner holds, next to mine */
                bad += (from != lo[v ^ mask]) || (to != hi[v ^ mask]) ||
                       ((to != lo[v]) && (from != hi[v]));
                nlo[v] = (from < lo[v]) ? from : lo[v];
                nhi[v] = (to > hi[v]) ? to : hi[v];
                got[v] += to - from;
            }
            memcpy(lo, nlo, (size_t)f.p * sizeof(int));
            memcpy(hi, nhi, (size_t)f.p * sizeof(int));
        }
        for (int v = 0; v < f.p; ++v) {
            bad += (0 != lo[v]) || (n != hi[v]) ||
                   (got[v] !=
                    n - (coll_gpu_prims_fold_first(&f, v + 1) - coll_gpu_prims_fold_first(&f, v)));
        }
    }
    CHECK(NULL != nhi && 0 == bad,
          "recursive doubling: everyone holds all n, each received once: "
          "%d wrong",
          bad);
    free(lo), free(hi), free(got), free(nlo), free(nhi);
}

/* Recursive halving: each keeps the half of its run of 2 mask virtual members holding its
 * index; it receives the partner's data of that half. */
static void test_halving(void) {
    int bad = 0;

    for (int n = 1; n <= MAX_N; ++n) {
        coll_gpu_prims_fold_t f = coll_gpu_prims_fold(n);

        for (int v = 0; v < f.p; ++v) {
            int klo = 0, khi = f.p, received = 0;

            for (int mask = f.p / 2; mask >= 1; mask /= 2) {
                int group = v & ~(2 * mask - 1), keep = group + (v & mask);
                int give = group + ((v ^ mask) & mask), pv = v ^ mask;

                /* my run so far; the partner is in it and keeps the half I give */
                bad += (group != klo) || (group + 2 * mask != khi) ||
                       ((pv & ~(2 * mask - 1)) != group) || (group + (pv & mask) != give) ||
                       (keep == give) || ((keep != group) && (keep != group + mask));
                klo = keep;
                khi = keep + mask;
                received += mask;
            }
            bad += (klo != v) || (khi != v + 1) || (received != f.p - 1);
        }
    }
    CHECK(0 == bad, "recursive halving: each keeps its own run, receives (p - 1)/p: %d wrong", bad);
}

int main(void) {
    test_indices();
    test_doubling();
    test_halving();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (0 == test_failed) ? 0 : 1;
}
