/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce, binomial (across many nodes): bcast binomial run backwards on the same leaders and
 * tree (coll_gpu_tree.h), with or without rails; the reduction order does not depend on who runs
 * it.  The protocol, the reuse of halves and the order: docs/many-nodes.md, "Reduce across many
 * nodes".
 *
 * MPI_IN_PLACE at the root: its input is rbuf, copied into its input slot in the step that
 * writes the same chunk of rbuf.
 */
#include "coll_gpu_algorithms.h"
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

/* Who read this rank's half of chunk k (its CONSUMED frees the half): the chunk's leader of its
 * node (its input); where it led the chunk, the parent position's leader of the chunk (its
 * partial), on the root's node the root (the partial it copies out); the root leading, nobody. */
static int coll_gpu_reduce_binomial_reader(const coll_gpu_team_t *team, int root, int v,
                                           int parent_v, size_t k, bool rails) {
    int leader = coll_gpu_team_chunk_leader(team, root, v, k, rails);

    if (team->rank != leader) {
        return leader;
    }
    if (v > 0) {
        return coll_gpu_team_chunk_leader(team, root, parent_v, k, rails);
    }
    return (team->rank != root) ? root : -1;
}

int coll_gpu_reduce_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_team_t *team = native->team;
    const void **srcs = native->srcs;
    int root = call->root, rank = team->rank, nnodes = team->nnodes;
    int v = coll_gpu_team_root_position(team, root, team->node);
    int first_child = coll_gpu_tree_first_child(COLL_GPU_TREE_BINOMIAL, v, nnodes);
    int parent_v = (v > 0) ? coll_gpu_tree_parent(COLL_GPU_TREE_BINOMIAL, v) : -1;
    /* the same on every rank: part of the protocol */
    bool rails = team->rails;
    int slots = coll_gpu_reduce_binomial_slots(nnodes);
    size_t esize = call->esize, per_step = native->half / ((size_t)(2 + slots) * esize);
    /* a leader alone on its node with no children (it leads every chunk): its input is its
     * partial */
    bool input_is_partial = (rank != root) && (1 == team->local_size) && (0 == first_child);
    coll_gpu_prims_t pr;

    if (rails && (team->local_size > 1)) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Reduce on %s: binomial to root %d over %d nodes: rank %d%s leads one "
                         "chunk in %d of node position %d (rails), child leader(s) from %d",
                         comm->c_name, root, nnodes, rank, (rank == root) ? " (the root)" : "",
                         team->local_size, v, v + first_child);
    } else if (rank == coll_gpu_team_chunk_leader(team, root, v, 0, false)) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Reduce on %s: binomial to root %d over %d nodes: rank %d leads node "
                         "position %d, reduces %d node rank(s) and child leader(s) from %d, "
                         "sends to %d",
                         comm->c_name, root, nnodes, rank, v, team->local_size - 1, v + first_child,
                         (v > 0) ? coll_gpu_team_chunk_leader(team, root, parent_v, 0, false) : -1);
    } else {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Reduce on %s: binomial to root %d over %d nodes: rank %d gives its "
                         "input to its node's leader %d",
                         comm->c_name, root, nnodes, rank,
                         coll_gpu_team_chunk_leader(team, root, v, 0, false));
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, per_step);) {
        size_t bytes = per_step * esize, len = c.n * esize, k = c.first / per_step;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        char *out = (char *)call->rbuf + c.first * esize;
        const char *in = (const char *)call->sbuf + c.first * esize;
        int leader = coll_gpu_team_chunk_leader(team, root, v, k, rails);
        /* a chunk two steps on writes this one's half (every rank writes its half every chunk):
         * its readers say when they are done */
        bool reused = (c.first + 2 * per_step < call->count);
        int nsrcs = 0, child = 0;

        if (k >= 2) {
            int reader = coll_gpu_reduce_binomial_reader(team, root, v, parent_v, k - 2, rails);

            if (reader >= 0) {
                coll_gpu_prims_wait(&pr, reader, c.step - 2, COLL_GPU_PHASE_CONSUMED);
            }
        }
        if (rank != leader) {
            coll_gpu_prims_copy(&pr, mine, in, len);
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_READY);
            if (rank == root) {
                /* with rails, the chunk's leader on the root's node reduced it into its partial */
                coll_gpu_prims_wait(&pr, leader, c.step, COLL_GPU_PHASE_READY);
                coll_gpu_prims_copy(&pr, out, coll_gpu_prims_theirs(&pr, leader, c.step) + bytes,
                                    len);
                if (reused) {
                    coll_gpu_prims_sync(&pr);
                    coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_CONSUMED);
                }
            }
            continue;
        }
        coll_gpu_prims_copy(&pr, mine + (input_is_partial ? bytes : 0), in, len);
        /* the node's inputs, then the children's partials (nearest first), in flight together */
        coll_gpu_prims_wait_node(&pr, c.step, COLL_GPU_PHASE_READY);
        for (int m = 1; (0 != first_child) && (m <= first_child); m *= 2, ++child) {
            coll_gpu_prims_take(&pr, coll_gpu_team_chunk_leader(team, root, v + m, k, rails),
                                c.step, bytes, mine + (size_t)(2 + child) * bytes, len);
        }
        coll_gpu_prims_fetch_complete(&pr);
        if (reused) {
            /* the children's partials are in this rank's landing slots */
            for (int m = 1; (0 != first_child) && (m <= first_child); m *= 2) {
                coll_gpu_prims_signal(&pr, coll_gpu_team_chunk_leader(team, root, v + m, k, rails),
                                      c.step, COLL_GPU_PHASE_CONSUMED);
            }
        }
        if (!input_is_partial) {
            for (int l = 0; l < team->local_size; ++l) {
                int q = team->local_ranks[l];

                srcs[nsrcs++] = (q == rank) ? mine : coll_gpu_prims_theirs(&pr, q, c.step);
            }
            for (int i = 0; i < child; ++i) {
                srcs[nsrcs++] = mine + (size_t)(2 + i) * bytes;
            }
            coll_gpu_prims_reduce(&pr, (rank == root) ? out : mine + bytes, srcs, nsrcs, c.n);
        }
        if (v > 0) {
            /* (synchronized: the reduction's reads of the node's inputs done) */
            coll_gpu_prims_offer(&pr, coll_gpu_team_chunk_leader(team, root, parent_v, k, rails),
                                 c.step, bytes, len);
        } else if (rank != root) {
            /* the root's node, with rails: the root copies the partial out */
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, root, c.step, COLL_GPU_PHASE_READY);
        } else if (reused) {
            coll_gpu_prims_sync(&pr);
        }
        if (reused) {
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_CONSUMED);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}
