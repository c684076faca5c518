/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The trees of node positions the rooted algorithms between node leaders walk (bcast binomial
 * and its chain, reduce binomial): positions v = (node - root's node) mod n, the root's node at
 * 0.  No dependencies: tests/unit/test_tree checks both shapes for every n up to 1,025.
 *   - binomial: v's parent is v without its lowest set bit; its children are v + m for the
 *     powers of two m below v's lowest set bit (every power below n for the root) with
 *     v + m < n.  v's subtree is the positions [v, v + lowbit(v)) below n, its depth
 *     popcount(v) <= ceil(log2 n);
 *   - chain: v's parent is v - 1, its child v + 1.
 * Children are walked from the farthest down (the largest subtree first where n is a power of
 * two): for (m = first_child; m > 0; m /= 2) the child v + m (the chain's one child: m = 1).
 */
#ifndef COLL_GPU_TREE_H
#define COLL_GPU_TREE_H

typedef enum { COLL_GPU_TREE_BINOMIAL, COLL_GPU_TREE_CHAIN } coll_gpu_tree_t;

/* Position v's parent (v > 0). */
static inline int coll_gpu_tree_parent(coll_gpu_tree_t shape, int v) {
    return (COLL_GPU_TREE_CHAIN == shape) ? v - 1 : v & (v - 1);
}

/* The offset m of position v's first child v + m (0: none); the others are v + m / 2, ...,
 * v + 1. */
static inline int coll_gpu_tree_first_child(coll_gpu_tree_t shape, int v, int n) {
    int limit = (0 == v) ? n : (v & -v), m = 0;

    if (COLL_GPU_TREE_CHAIN == shape) {
        return (v + 1 < n) ? 1 : 0;
    }
    for (int p = 1; (p < limit) && (v + p < n); p *= 2) {
        m = p;
    }
    return m;
}

#endif /* COLL_GPU_TREE_H */
