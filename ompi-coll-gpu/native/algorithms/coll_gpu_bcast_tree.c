/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Bcast down a tree of node leaders on point-to-point signals: binomial (its own row) and the
 * chain (pipelined's form for large messages on 3 nodes or more), with or without rails.  The
 * tree, the leaders, the per-chunk protocol and the reuse of halves (CONSUMED):
 * docs/many-nodes.md, "Bcast across many nodes" and "Rails of the rooted trees".
 */

#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

size_t coll_gpu_bcast_chunk_elems(const coll_gpu_native_t *native, size_t count, size_t esize) {
    size_t per_step = count * esize / 8;

    per_step = (per_step < COLL_GPU_BCAST_CHUNK_MIN) ? COLL_GPU_BCAST_CHUNK_MIN : per_step;
    per_step = (per_step < native->half) ? per_step : native->half;
    per_step /= esize;
    return (per_step > 0) ? per_step : 1;
}

/* After how many chunks writer w writes the same half again: the root writes every chunk (its
 * node reads them all; alone on its node it leads them all), another leader the chunks it leads,
 * one in its node's size with rails, so every lcm(2, size) chunks on the same half. */
static size_t coll_gpu_bcast_write_stride(const coll_gpu_team_t *team, int root, int w,
                                          bool rails) {
    size_t size = (size_t)team->node_sizes[team->node_of_rank[w]];

    if (!rails || (w == root)) {
        return 2;
    }
    return (size % 2) ? 2 * size : size;
}

/* The children of tree position v (first_child, first_child / 2, ..., 1) of chunk k: phase of
 * step to each (signal) or each one's (wait). */
static void coll_gpu_bcast_children(coll_gpu_prims_t *pr, int root, int v, int first_child,
                                    size_t k, bool rails, uint64_t step, coll_gpu_phase_t phase,
                                    bool signal) {
    const coll_gpu_team_t *team = pr->native->team;

    for (int m = first_child; m > 0; m /= 2) {
        int child = coll_gpu_team_chunk_leader(team, root, v + m, k, rails);

        if (signal) {
            coll_gpu_prims_signal(pr, child, step, phase);
        } else {
            coll_gpu_prims_wait(pr, child, step, phase);
        }
    }
}

/* This rank's part, in the verbose log of every call. */
static void coll_gpu_bcast_tree_log(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call, const char *name, int v,
                                    int parent_v, int first_child, bool rails) {
    const coll_gpu_team_t *team = call->native->team;
    int root = call->root, rank = team->rank, nnodes = team->nnodes, children = 0;
    int leader = coll_gpu_team_chunk_leader(team, root, v, 0, false);

    for (int m = first_child; m > 0; m /= 2) {
        ++children;
    }
    if (rails && (team->local_size > 1)) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: %s from root %d over %d nodes: rank %d%s carries one "
                         "chunk in %d of node position %d (rails), to %d leader(s)",
                         comm->c_name, name, root, nnodes, rank,
                         (rank == root) ? " (the root)" : "", team->local_size, v, children);
    } else if (rank == root) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: %s from root %d over %d nodes: rank %d is the root, "
                         "serves %d leader(s)",
                         comm->c_name, name, root, nnodes, rank, children);
    } else if (rank == leader) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: %s from root %d over %d nodes: rank %d leads node "
                         "position %d, gets from %d, serves %d leader(s)",
                         comm->c_name, name, root, nnodes, rank, v,
                         coll_gpu_team_chunk_leader(team, root, parent_v, 0, false), children);
    } else {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: %s from root %d over %d nodes: rank %d loads from "
                         "its node's leader %d",
                         comm->c_name, name, root, nnodes, rank, leader);
    }
}

int coll_gpu_bcast_tree(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                        coll_gpu_tree_t shape) {
    const char *name = (COLL_GPU_TREE_CHAIN == shape) ? "pipelined chain" : "binomial";
    const coll_gpu_team_t *team = call->native->team;
    int root = call->root, rank = team->rank, nnodes = team->nnodes;
    int v = coll_gpu_team_root_position(team, root, team->node);
    int first_child = coll_gpu_tree_first_child(shape, v, nnodes);
    int parent_v = (v > 0) ? coll_gpu_tree_parent(shape, v) : -1;
    /* one rank of a node carries a chunk; with rails, the node's ranks take turns (the same on
     * every rank: part of the protocol) */
    bool rails = team->rails;
    size_t stride = coll_gpu_bcast_write_stride(team, root, rank, rails);
    size_t esize = call->esize, count = call->count;
    size_t per_step = coll_gpu_bcast_chunk_elems(call->native, count, esize);
    size_t nchunks = (count + per_step - 1) / per_step;
    coll_gpu_prims_t pr;

    coll_gpu_bcast_tree_log(comm, call, name, v, parent_v, first_child, rails);
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, count, per_step);) {
        size_t k = c.first / per_step, len = c.n * esize;
        char *data = (char *)call->rbuf + c.first * esize, *half = coll_gpu_prims_mine(&pr, c.step);
        int leader = coll_gpu_team_chunk_leader(team, root, v, k, rails);

        if (rank == root) {
            /* its node reads every chunk from its half, its children the chunks it leads */
            bool children = (leader == root) && (first_child > 0);

            if ((team->local_size == 1) && !children) {
                continue;
            }
            if (k >= 2) {
                /* the readers of chunk k - 2 in this half are done with it */
                if (team->local_size > 1) {
                    coll_gpu_prims_wait_node(&pr, c.step - 2, COLL_GPU_PHASE_CONSUMED);
                }
                if (coll_gpu_team_chunk_leader(team, root, 0, k - 2, rails) == root) {
                    coll_gpu_bcast_children(&pr, root, 0, first_child, k - 2, rails, c.step - 2,
                                            COLL_GPU_PHASE_CONSUMED, false);
                }
            }
            coll_gpu_prims_copy(&pr, half, data, len);
            if (children) {
                coll_gpu_prims_publish(&pr, c.step, 0, len);
            }
            coll_gpu_prims_sync(&pr);
            if (children) {
                coll_gpu_bcast_children(&pr, root, 0, first_child, k, rails, c.step,
                                        COLL_GPU_PHASE_READY, true);
            }
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_FINAL);
            continue;
        }
        if (v == 0) {
            /* the root's node: every rank copies the chunk out of the root's half; the chunk's
             * leader copies it into its own half too and serves its children from there */
            bool relays = (rank == leader) && (first_child > 0);

            if (relays && (k >= stride)) {
                coll_gpu_bcast_children(&pr, root, 0, first_child, k - stride, rails,
                                        c.step - stride, COLL_GPU_PHASE_CONSUMED, false);
            }
            coll_gpu_prims_wait(&pr, root, c.step, COLL_GPU_PHASE_FINAL);
            coll_gpu_prims_copy(&pr, relays ? half : data, coll_gpu_prims_theirs(&pr, root, c.step),
                                len);
            if (relays) {
                coll_gpu_prims_publish(&pr, c.step, 0, len);
            }
            if (relays || (k + 2 < nchunks)) {
                coll_gpu_prims_sync(&pr);
            }
            if (k + 2 < nchunks) {
                /* (else the end of the call completes the copy, before its agreement) */
                coll_gpu_prims_signal(&pr, root, c.step, COLL_GPU_PHASE_CONSUMED);
            }
            if (relays) {
                coll_gpu_bcast_children(&pr, root, 0, first_child, k, rails, c.step,
                                        COLL_GPU_PHASE_READY, true);
                coll_gpu_prims_copy(&pr, data, half, len);
            }
            continue;
        }
        if (rank != leader) {
            coll_gpu_prims_wait(&pr, leader, c.step, COLL_GPU_PHASE_FINAL);
            coll_gpu_prims_copy(&pr, data, coll_gpu_prims_theirs(&pr, leader, c.step), len);
            if (k + coll_gpu_bcast_write_stride(team, root, leader, rails) < nchunks) {
                coll_gpu_prims_sync(&pr);
                coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_CONSUMED);
            }
            continue;
        }
        /* this chunk's leader of a node other than the root's: it gets the chunk from its parent
         * position's leader of the chunk; it serves the chunk from its half when somebody reads
         * it (its children, its node), else gets it straight into its buffer */
        bool serves = (first_child > 0) || (team->local_size > 1);
        int parent = coll_gpu_team_chunk_leader(team, root, parent_v, k, rails);

        if (serves && (k >= stride)) {
            if (coll_gpu_team_chunk_leader(team, root, v, k - 1, rails) != rank) {
                /* its own copy out of this half (chunk k - stride) completed: a get into the
                 * half is not ordered behind the stream (a chunk it led just before completed
                 * it in its fetch_complete) */
                coll_gpu_prims_sync(&pr);
            }
            coll_gpu_prims_wait_node(&pr, c.step - stride, COLL_GPU_PHASE_CONSUMED);
            coll_gpu_bcast_children(&pr, root, v, first_child, k - stride, rails, c.step - stride,
                                    COLL_GPU_PHASE_CONSUMED, false);
        }
        coll_gpu_prims_take(&pr, parent, c.step, 0, serves ? half : data, len);
        coll_gpu_prims_fetch_complete(&pr);
        if (k + coll_gpu_bcast_write_stride(team, root, parent, rails) < nchunks) {
            coll_gpu_prims_signal(&pr, parent, c.step, COLL_GPU_PHASE_CONSUMED);
        }
        if (!serves) {
            continue;
        }
        if (first_child > 0) {
            coll_gpu_prims_publish(&pr, c.step, 0, len);
        }
        coll_gpu_prims_sync(&pr);
        coll_gpu_bcast_children(&pr, root, v, first_child, k, rails, c.step, COLL_GPU_PHASE_READY,
                                true);
        coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_FINAL);
        /* off the critical path: its readers read the half, not the buffer; completed before
         * this half is written again (above), or by the end of the call */
        coll_gpu_prims_copy(&pr, data, half, len);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_bcast_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    return coll_gpu_bcast_tree(comm, call, COLL_GPU_TREE_BINOMIAL);
}
