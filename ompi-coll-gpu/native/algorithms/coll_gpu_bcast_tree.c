/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Bcast down a tree of the node leaders, on point-to-point signals: binomial (its own row:
 * across many nodes, O(log nnodes) rounds and messages between nodes per chunk) and the chain
 * (pipelined's form for large messages on 3 nodes or more: every node's network interface sends
 * the message once).  pipelined's two-level form instead has every other node's leader get each
 * chunk from the root after a barrier of every rank, the root's interface serving nnodes - 1
 * copies of it.
 *
 * The leaders are pipelined's (coll_gpu_team_root_leader): the root on its node, elsewhere the
 * rank at the root's index in its node (modulo the node's size).  The tree (coll_gpu_tree.h) is
 * on node positions v = (node - root's node) mod nnodes:
 *   - binomial: v's parent is v without its lowest set bit, its children v + m for the powers of
 *     two m below v's lowest set bit (every power below nnodes for the root) with v + m < nnodes,
 *     the farthest served first; a leader is popcount(v) <= ceil(log2 nnodes) gets from the
 *     root, whose interface sends each chunk ceil(log2 nnodes) times at most;
 *   - chain: v's parent is v - 1, its child v + 1.
 * Per chunk (coll_gpu_bcast_chunk_elems: a half at most, an eighth of the message at least
 * 64 KiB, so that it pipelines), one native step s:
 *   - the root copies the chunk into its half of s; any other leader takes it from its parent's
 *     half of s (READY, then a get) into its own half of s (a leader that serves nobody, with no
 *     children and alone on its node, gets straight into its buffer);
 *   - a leader offers its half to its children (published once, READY to each) and tells its
 *     node (FINAL), then copies the chunk into its buffer (off the critical path: its readers
 *     read the half);
 *   - the other ranks of a node copy the chunk out of their leader's half.
 * Nothing waits for every rank's step: a chunk moves down the tree as soon as each parent has it,
 * so chunks pipeline through the tree's depth.
 *
 * Reuse of a half (chunk k + 2 writes the half of chunk k): whoever read a leader's half of chunk
 * k, its children (gets) and its node (copies), says CONSUMED of that step once its read is done,
 * where a chunk k + 2 follows; the leader waits for those before it writes its half of chunk
 * k + 2.  The halves of earlier calls are free: their last step, the agreement, was announced by
 * every rank.  Every signal of a chunk goes once from one rank to another (READY parent to child,
 * FINAL leader to node, CONSUMED back), so all carry the chunk's step.
 *
 * Only copies: every rank's result is the root's bytes.
 */

#include "coll_gpu_prims.h"

size_t coll_gpu_bcast_chunk_elems(const coll_gpu_native_t *native, size_t count, size_t esize) {
    size_t per_step = count * esize / 8;

    per_step = (per_step < COLL_GPU_BCAST_CHUNK_MIN) ? COLL_GPU_BCAST_CHUNK_MIN : per_step;
    per_step = (per_step < native->half) ? per_step : native->half;
    per_step /= esize;
    return (per_step > 0) ? per_step : 1;
}

int coll_gpu_bcast_tree(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                        coll_gpu_tree_t shape) {
    const char *name = (COLL_GPU_TREE_CHAIN == shape) ? "pipelined chain" : "binomial";
    const coll_gpu_team_t *team = call->native->team;
    int root = call->root, rank = team->rank, nnodes = team->nnodes;
    int v = coll_gpu_team_root_position(team, root, team->node);
    int leader = coll_gpu_team_position_leader(team, root, v);
    int first_child = coll_gpu_tree_first_child(shape, v, nnodes);
    int parent = ((rank == leader) && (v > 0))
                     ? coll_gpu_team_position_leader(team, root, coll_gpu_tree_parent(shape, v))
                     : -1;
    /* a leader whose half somebody reads: its children, or its node */
    bool serves = (rank == leader) && ((first_child > 0) || (team->local_size > 1));
    size_t esize = call->esize, count = call->count;
    size_t per_step = coll_gpu_bcast_chunk_elems(call->native, count, esize);
    coll_gpu_prims_t pr;

    if (rank == leader) {
        int children = 0;

        for (int m = first_child; m > 0; m /= 2) {
            ++children;
        }
        if (rank == root) {
            COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                             "MPI_Bcast on %s: %s from root %d over %d nodes: rank %d is the "
                             "root, serves %d leader(s)",
                             comm->c_name, name, root, nnodes, rank, children);
        } else {
            COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                             "MPI_Bcast on %s: %s from root %d over %d nodes: rank %d leads "
                             "node position %d, gets from %d, serves %d leader(s)",
                             comm->c_name, name, root, nnodes, rank, v, parent, children);
        }
    } else {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: %s from root %d over %d nodes: rank %d loads from "
                         "its node's leader %d",
                         comm->c_name, name, root, nnodes, rank, leader);
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, count, per_step);) {
        char *data = (char *)call->rbuf + c.first * esize, *half = coll_gpu_prims_mine(&pr, c.step);
        size_t len = c.n * esize;
        /* a chunk two steps on writes this one's half: its readers say when they are done */
        bool reused = (c.first + 2 * per_step < count);

        if (rank != leader) {
            coll_gpu_prims_wait(&pr, leader, c.step, COLL_GPU_PHASE_FINAL);
            coll_gpu_prims_copy(&pr, data, coll_gpu_prims_theirs(&pr, leader, c.step), len);
            if (reused) {
                /* (else the end of the call completes the copy, before its agreement) */
                coll_gpu_prims_sync(&pr);
                coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_CONSUMED);
            }
            continue;
        }
        if (serves && (c.first >= 2 * per_step)) {
            /* the readers of chunk k - 2 in this half are done with it (this rank's own copy out
             * of it into its buffer completed at chunk k - 1's fetch_complete, which
             * synchronizes the stream) */
            coll_gpu_prims_wait_node(&pr, c.step - 2, COLL_GPU_PHASE_CONSUMED);
            for (int m = first_child; m > 0; m /= 2) {
                coll_gpu_prims_wait(&pr, coll_gpu_team_position_leader(team, root, v + m),
                                    c.step - 2, COLL_GPU_PHASE_CONSUMED);
            }
        }
        if (rank == root) {
            if (serves) {
                coll_gpu_prims_copy(&pr, half, data, len);
            }
        } else {
            coll_gpu_prims_take(&pr, parent, c.step, 0, serves ? half : data, len);
            coll_gpu_prims_fetch_complete(&pr);
            if (reused) {
                coll_gpu_prims_signal(&pr, parent, c.step, COLL_GPU_PHASE_CONSUMED);
            }
        }
        if (!serves) {
            continue;
        }
        if (first_child > 0) {
            coll_gpu_prims_publish(&pr, c.step, 0, len);
        }
        coll_gpu_prims_sync(&pr);
        for (int m = first_child; m > 0; m /= 2) {
            coll_gpu_prims_signal(&pr, coll_gpu_team_position_leader(team, root, v + m), c.step,
                                  COLL_GPU_PHASE_READY);
        }
        coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_FINAL);
        if (rank != root) {
            /* off the critical path: its readers read the half, not the buffer; completed
             * before the chunk two on overwrites the half, or by the end of the call */
            coll_gpu_prims_copy(&pr, data, half, len);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_bcast_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    return coll_gpu_bcast_tree(comm, call, COLL_GPU_TREE_BINOMIAL);
}
