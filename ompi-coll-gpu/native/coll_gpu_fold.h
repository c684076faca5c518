/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fold of n members onto a power of two, which the algorithms of partners (recursive
 * doubling and halving: allreduce recursive_doubling, hierarchical_doubling and
 * hierarchical_rabenseifner, allgather(v) hierarchical_doubling, reduce_scatter(_block)
 * hierarchical_halving) share.  No dependencies: tests/unit/test_fold checks its index
 * arithmetic, and runs doubling and halving on it, for every n up to 1,025.
 */
#ifndef COLL_GPU_FOLD_H
#define COLL_GPU_FOLD_H

#include <stdbool.h>

/* n members folded onto p, the largest power of two <= n, for recursive doubling and halving
 * (rem = n - p): the members below 2 rem pair up, the even one of each pair (an extra) hands its
 * part to its odd neighbour and sits the rounds out; the p members left take virtual indices
 * 0 .. p - 1 in member order (i / 2 below 2 rem, i - rem above). */
typedef struct {
    int p, log2p, rem;
} coll_gpu_prims_fold_t;

static inline coll_gpu_prims_fold_t coll_gpu_prims_fold(int n) {
    coll_gpu_prims_fold_t f = {1, 0, 0};

    while (2 * f.p <= n) {
        f.p *= 2;
        ++f.log2p;
    }
    f.rem = n - f.p;
    return f;
}
/* Whether member i is one of a pair: an extra (even) or the member taking part for both (odd). */
static inline bool coll_gpu_prims_fold_paired(const coll_gpu_prims_fold_t *f, int i) {
    return (i >= 0) && (i < 2 * f->rem);
}
/* Member i's virtual index; -1 for an extra, or for i < 0 (a rank outside the group). */
static inline int coll_gpu_prims_fold_virtual(const coll_gpu_prims_fold_t *f, int i) {
    return (i < 0) ? -1 : (i < 2 * f->rem) ? ((i & 1) ? i / 2 : -1) : i - f->rem;
}
/* The member taking part for virtual index v. */
static inline int coll_gpu_prims_fold_member(const coll_gpu_prims_fold_t *f, int v) {
    return (v < f->rem) ? 2 * v + 1 : v + f->rem;
}
/* The first member of virtual index v's run (its extra where v stands for two; v = p: n), so
 * that virtual indices [u, w) stand for members [first(u), first(w)). */
static inline int coll_gpu_prims_fold_first(const coll_gpu_prims_fold_t *f, int v) {
    return (v < f->rem) ? 2 * v : v + f->rem;
}

#endif /* COLL_GPU_FOLD_H */
