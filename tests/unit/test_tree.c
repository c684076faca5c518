/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The trees of node positions of the rooted algorithms between node leaders
 * (ompi-coll-gpu/native/coll_gpu_tree.h: bcast binomial and chain, reduce binomial), both shapes,
 * for every n from 1 to 1,025:
 *   - every position but the root is the child (walked from its parent's first child down) of
 *     exactly its parent, which is a lower position: a tree rooted at 0, and a walk from the
 *     root reaches every position once;
 *   - binomial: the depth of v is popcount(v), at most ceil(log2 n); the root has
 *     ceil(log2 n) children; v's subtree is the positions [v, v + lowbit(v)) below n (the
 *     root's: all), so a reduction up the tree combines runs of consecutive positions;
 *     children are walked from the farthest down (the largest subtree first on a power of
 *     two);
 *   - chain: the parent of v is v - 1, the depth n - 1.
 */
#include "coll_gpu_tree.h"
#include "unit_check.h"

#include <stdlib.h>

#define MAX_N 1025

static int ceil_log2(int n) {
    int k = 0;

    while ((1 << k) < n) {
        ++k;
    }
    return k;
}

/* Marks v's subtree in seen (counting each visit) and returns its size; bad_order counts a
 * child walked after a smaller one. */
static int walk(coll_gpu_tree_t shape, int v, int n, int *seen, int *bad_order) {
    int size = 1, prev = 0;

    seen[v] += 1;
    for (int m = coll_gpu_tree_first_child(shape, v, n); m > 0; m /= 2) {
        int sub = walk(shape, v + m, n, seen, bad_order);

        *bad_order += (0 != prev) && (sub > prev);
        prev = sub;
        size += sub;
    }
    return size;
}

static int subtree_size(coll_gpu_tree_t shape, int v, int n) {
    int size = 1;

    for (int m = coll_gpu_tree_first_child(shape, v, n); m > 0; m /= 2) {
        size += subtree_size(shape, v + m, n);
    }
    return size;
}

static void test_shape(coll_gpu_tree_t shape, const char *name) {
    int bad_parent = 0, bad_cover = 0, bad_depth = 0, bad_root = 0, bad_subtree = 0;
    int bad_order = 0;
    int *seen = malloc(MAX_N * sizeof(int));

    for (int n = 1; n <= MAX_N; ++n) {
        int max_depth = 0, root_children = 0;

        for (int v = 0; v < n; ++v) {
            seen[v] = 0;
        }
        {
            int order = 0;

            (void)walk(shape, 0, n, seen, &order);
            /* (a power of two: beyond, a subtree cut at n may be smaller than a later one) */
            bad_order += (0 == (n & (n - 1))) ? order : 0;
        }
        for (int v = 0; v < n; ++v) {
            int depth = 0;

            bad_cover += (1 != seen[v]);
            for (int m = coll_gpu_tree_first_child(shape, v, n); m > 0; m /= 2) {
                bad_parent += (coll_gpu_tree_parent(shape, v + m) != v) || (v + m >= n);
            }
            for (int u = v; u > 0; u = coll_gpu_tree_parent(shape, u)) {
                bad_parent += !(coll_gpu_tree_parent(shape, u) < u);
                ++depth;
            }
            max_depth = (depth > max_depth) ? depth : max_depth;
            if (COLL_GPU_TREE_BINOMIAL == shape) {
                int low = (0 == v) ? n : (v & -v), end = (v + low < n) ? v + low : n;

                bad_depth += (depth != __builtin_popcount((unsigned)v));
                bad_subtree += (subtree_size(shape, v, n) != end - v);
            }
        }
        for (int m = coll_gpu_tree_first_child(shape, 0, n); m > 0; m /= 2) {
            ++root_children;
        }
        if (COLL_GPU_TREE_BINOMIAL == shape) {
            bad_depth += (max_depth > ceil_log2(n));
            bad_root += (root_children != ceil_log2(n));
        } else {
            bad_depth += (max_depth != n - 1);
            bad_root += (root_children != ((n > 1) ? 1 : 0));
        }
    }
    free(seen);
    CHECK(0 == bad_parent, "%s: every child's parent is its parent, a lower position (%d bad)",
          name, bad_parent);
    CHECK(0 == bad_cover, "%s: a walk from the root reaches every position once (%d bad)", name,
          bad_cover);
    CHECK(0 == bad_depth, "%s: depths (%d bad)", name, bad_depth);
    CHECK(0 == bad_root, "%s: the root's children (%d bad)", name, bad_root);
    CHECK(0 == bad_subtree, "%s: subtrees are runs of positions (%d bad)", name, bad_subtree);
    CHECK(0 == bad_order,
          "%s: children walked from the largest subtree down on a power of two "
          "(%d bad)",
          name, bad_order);
}

int main(void) {
    test_shape(COLL_GPU_TREE_BINOMIAL, "binomial");
    test_shape(COLL_GPU_TREE_CHAIN, "chain");
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (0 == test_failed) ? 0 : 1;
}
