/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce, binomial (across many nodes: O(log nnodes) rounds and messages between nodes,
 * where hierarchical's root gets one partial from every other node, its network interface
 * taking nnodes - 1 messages per chunk after a barrier of every rank).  bcast binomial run
 * backwards, on the same leaders (coll_gpu_team_root_leader: the root on its node, elsewhere the
 * rank at the root's index in its node) and the same binomial tree of node positions
 * (coll_gpu_tree.h; v = (node - root's node) mod nnodes, v's subtree the positions
 * [v, v + lowbit(v))).  Per chunk, one native step s; a scratch half holds [input][partial]
 * [one landing slot per child: ceil(log2 nnodes)], per_step elements each:
 *   1. every rank copies its chunk into its input slot; a rank that does not lead its node says
 *      READY to its leader;
 *   2. a leader waits for its node's READY and, for each child (nearest first), the child's
 *      READY, getting the child's partial into a landing slot (the gets in flight together);
 *      then it reduces, left to right, its node's inputs in local rank order and the children's
 *      partials in position order into its partial (the root: into its receive buffer), and
 *      says READY to its parent, which gets it.  A leader alone on its node with no children
 *      copies its input straight into its partial.
 * A node's partial crosses to another node once; a parent receives one per child, the root's
 * node ceil(log2 nnodes) at most.
 *
 * Determinism: an element is reduced in one tree, the same on every rank and run, whatever the
 * chunk size: on every node its ranks' inputs in local rank order, then up the binomial tree,
 * each leader combining its node's partial with its children's subtrees left to right (the runs
 * of positions [v + 1], [v + 2, v + 4), [v + 4, v + 8) ...).  Not hierarchical's order (node
 * partials in node order), so floats may differ from it in the last bits; on one node the same
 * as hierarchical's (local rank order).
 *
 * Reuse of a half (chunk k + 2 writes the half of chunk k), where a chunk k + 2 follows: a leader
 * says CONSUMED of the step to its children once it got their partials, and to its node's ranks
 * once its reduction read their inputs; a rank waits for that before it writes the half of chunk
 * k + 2 (a node's rank its input slot, a leader its partial: nobody else reads its input and
 * landing slots).  The halves of earlier calls are free: their last step, the agreement, was
 * announced by every rank.  Every signal of a chunk goes once from one rank to another (READY up,
 * CONSUMED down), so all carry the chunk's step.
 *
 * MPI_IN_PLACE at the root: its input is rbuf, copied into its input slot in the step that
 * writes the same chunk of rbuf.
 */
#include "coll_gpu_prims.h"

/* ceil(log2 nnodes): the root's children, the most a leader has (landing slots). */
static int coll_gpu_reduce_binomial_slots(int nnodes) {
    int k = 0;

    while ((1 << k) < nnodes) {
        ++k;
    }
    return k;
}

bool coll_gpu_reduce_binomial_fits(const coll_gpu_native_t *native, size_t esize) {
    return (size_t)(2 + coll_gpu_reduce_binomial_slots(native->team->nnodes)) * esize <=
           native->half;
}

int coll_gpu_reduce_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_team_t *team = native->team;
    const void **srcs = native->srcs;
    int root = call->root, rank = team->rank, nnodes = team->nnodes;
    int v = coll_gpu_team_root_position(team, root, team->node);
    int leader = coll_gpu_team_root_leader(team, root, team->node);
    int first_child = coll_gpu_tree_first_child(COLL_GPU_TREE_BINOMIAL, v, nnodes);
    int parent = ((rank == leader) && (v > 0))
                     ? coll_gpu_team_position_leader(
                           team, root, coll_gpu_tree_parent(COLL_GPU_TREE_BINOMIAL, v))
                     : -1;
    int slots = coll_gpu_reduce_binomial_slots(nnodes);
    size_t esize = call->esize, per_step = native->half / ((size_t)(2 + slots) * esize);
    /* a leader alone on its node with no children: its input is its partial */
    bool input_is_partial =
        (rank == leader) && (rank != root) && (1 == team->local_size) && (0 == first_child);
    coll_gpu_prims_t pr;

    if (rank == leader) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Reduce on %s: binomial to root %d over %d nodes: rank %d leads node "
                         "position %d, reduces %d node rank(s) and child leader(s) from %d, "
                         "sends to %d",
                         comm->c_name, root, nnodes, rank, v, team->local_size - 1, v + first_child,
                         parent);
    } else {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Reduce on %s: binomial to root %d over %d nodes: rank %d gives its "
                         "input to its node's leader %d",
                         comm->c_name, root, nnodes, rank, leader);
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, per_step);) {
        size_t bytes = per_step * esize, len = c.n * esize;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        const char *in = (const char *)call->sbuf + c.first * esize;
        /* a chunk two steps on writes this one's half: its readers say when they are done */
        bool reused = (c.first + 2 * per_step < call->count), later = (c.first >= 2 * per_step);
        int nsrcs = 0, child = 0;

        if (rank != leader) {
            if (later) {
                coll_gpu_prims_wait(&pr, leader, c.step - 2, COLL_GPU_PHASE_CONSUMED);
            }
            coll_gpu_prims_copy(&pr, mine, in, len);
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_READY);
            continue;
        }
        if (later && (parent >= 0)) {
            /* the parent got this leader's partial of chunk k - 2 (input_is_partial: the input
             * slot is the partial) */
            coll_gpu_prims_wait(&pr, parent, c.step - 2, COLL_GPU_PHASE_CONSUMED);
        }
        coll_gpu_prims_copy(&pr, mine + (input_is_partial ? bytes : 0), in, len);
        /* the node's inputs, then the children's partials (nearest first), in flight together */
        coll_gpu_prims_wait_node(&pr, c.step, COLL_GPU_PHASE_READY);
        for (int m = 1; (0 != first_child) && (m <= first_child); m *= 2, ++child) {
            coll_gpu_prims_take(&pr, coll_gpu_team_position_leader(team, root, v + m), c.step,
                                bytes, mine + (size_t)(2 + child) * bytes, len);
        }
        coll_gpu_prims_fetch_complete(&pr);
        if (reused) {
            /* the children's partials are in this rank's landing slots */
            for (int m = 1; (0 != first_child) && (m <= first_child); m *= 2) {
                coll_gpu_prims_signal(&pr, coll_gpu_team_position_leader(team, root, v + m), c.step,
                                      COLL_GPU_PHASE_CONSUMED);
            }
        }
        if (!input_is_partial) {
            for (int l = 0; l < team->local_size; ++l) {
                int q = team->local_ranks[l];

                srcs[nsrcs++] = (q == rank) ? mine : coll_gpu_prims_theirs(&pr, q, c.step);
            }
            for (int k = 0; k < child; ++k) {
                srcs[nsrcs++] = mine + (size_t)(2 + k) * bytes;
            }
            coll_gpu_prims_reduce(
                &pr, (rank == root) ? (char *)call->rbuf + c.first * esize : mine + bytes, srcs,
                nsrcs, c.n);
        }
        if (rank != root) {
            /* (synchronized: the reduction's reads of the node's inputs done) */
            coll_gpu_prims_offer(&pr, parent, c.step, bytes, len);
        } else if (reused) {
            coll_gpu_prims_sync(&pr);
        }
        if (reused) {
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_CONSUMED);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}
