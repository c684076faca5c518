/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather and MPI_Scatter, binomial (across many nodes, small blocks): bcast and reduce
 * binomial's leaders and tree, a scratch half of one slot per rank in tree position order so that
 * every subtree is one run.  Protocol and the reuse of halves: docs/many-nodes.md, "Gather and
 * scatter across many nodes".  Only copies: the bits are direct's.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

/* The first slot of node position v's ranks in a half (v = nnodes: the end, size): slots in
 * position order are node order (coll_gpu_team_node_order) rotated to start at the root's node. */
static size_t coll_gpu_binomial_position_slot(const coll_gpu_team_t *team, int root, int v) {
    int root_first = team->node_first[team->node_of_rank[root]];

    if (v >= team->nnodes) {
        return (size_t)team->size;
    }
    return (size_t)((team->node_first[coll_gpu_team_position_node(team, root, v)] - root_first +
                     team->size) %
                    team->size);
}

/* Rank p's slot. */
static size_t coll_gpu_binomial_rank_slot(const coll_gpu_team_t *team, int root, int p) {
    int v = coll_gpu_team_root_position(team, root, team->node_of_rank[p]);

    return coll_gpu_binomial_position_slot(team, root, v) +
           (size_t)coll_gpu_team_index_in_node(team, p);
}

/* The run of slots of position v's subtree, in bytes of slots of len bytes. */
static size_t coll_gpu_binomial_subtree_run(const coll_gpu_team_t *team, int root, int v,
                                            size_t len, size_t *bytes_p) {
    int end = (0 == v) ? team->nnodes : v + (v & -v);
    size_t first = coll_gpu_binomial_position_slot(team, root, v);

    *bytes_p = (coll_gpu_binomial_position_slot(team, root, end) - first) * len;
    return first * len;
}

/* This rank's place in the tree. */
typedef struct {
    int v, leader, parent, first_child;
    size_t slot, per_step;
} coll_gpu_binomial_place_t;

static coll_gpu_binomial_place_t coll_gpu_binomial_place(const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    int root = call->root;
    coll_gpu_binomial_place_t pl;

    pl.v = coll_gpu_team_root_position(team, root, team->node);
    pl.leader = coll_gpu_team_position_leader(team, root, pl.v);
    pl.first_child = coll_gpu_tree_first_child(COLL_GPU_TREE_BINOMIAL, pl.v, team->nnodes);
    pl.parent = ((team->rank == pl.leader) && (pl.v > 0))
                    ? coll_gpu_team_position_leader(
                          team, root, coll_gpu_tree_parent(COLL_GPU_TREE_BINOMIAL, pl.v))
                    : -1;
    pl.slot = coll_gpu_binomial_rank_slot(team, root, team->rank);
    pl.per_step = call->native->half / (size_t)team->size / call->esize;
    return pl;
}

static void coll_gpu_binomial_log(struct ompi_communicator_t *comm,
                                  const coll_gpu_native_call_t *call, const char *mpi_call,
                                  const coll_gpu_binomial_place_t *pl) {
    const coll_gpu_team_t *team = call->native->team;

    if (team->rank == pl->leader) {
        int children = 0;

        for (int m = pl->first_child; m > 0; m /= 2) {
            ++children;
        }
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "%s on %s: binomial, root %d, over %d nodes: rank %d leads node position "
                         "%d, parent %d, %d child leader(s)",
                         mpi_call, comm->c_name, call->root, team->nnodes, team->rank, pl->v,
                         pl->parent, children);
    } else {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "%s on %s: binomial, root %d, over %d nodes: rank %d goes through its "
                         "node's leader %d",
                         mpi_call, comm->c_name, call->root, team->nnodes, team->rank, pl->leader);
    }
}

int coll_gpu_gather_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_binomial_place_t pl = coll_gpu_binomial_place(call);
    int rank = team->rank, root = call->root;
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_binomial_log(comm, call, "MPI_Gather", &pl);
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, pl.per_step);) {
        const char *in = (NULL != call->sbuf) ? (const char *)call->sbuf + c.first * esize : NULL;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        size_t len = c.n * esize, run, off;
        /* a step two on writes this one's half: its readers say when they are done */
        bool reused = (c.first + 2 * pl.per_step < call->count);
        bool later = (c.first >= 2 * pl.per_step);

        if (rank != pl.leader) {
            if (later) {
                coll_gpu_prims_wait(&pr, pl.leader, c.step - 2, COLL_GPU_PHASE_CONSUMED);
            }
            coll_gpu_prims_copy(&pr, mine + pl.slot * len, in, len);
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, pl.leader, c.step, COLL_GPU_PHASE_READY);
            continue;
        }
        if (later && (pl.parent >= 0)) {
            /* the parent got this leader's run of step - 2 */
            coll_gpu_prims_wait(&pr, pl.parent, c.step - 2, COLL_GPU_PHASE_CONSUMED);
        }
        if (rank != root) {
            coll_gpu_prims_copy(&pr, mine + pl.slot * len, in, len);
        }
        /* the children's runs (nearest first) in flight together, the node's chunks loaded */
        for (int m = 1; (0 != pl.first_child) && (m <= pl.first_child); m *= 2) {
            off = coll_gpu_binomial_subtree_run(team, root, pl.v + m, len, &run);
            coll_gpu_prims_take(&pr, coll_gpu_team_position_leader(team, root, pl.v + m), c.step,
                                off, mine + off, run);
        }
        coll_gpu_prims_wait_node(&pr, c.step, COLL_GPU_PHASE_READY);
        for (int l = 0; l < team->local_size; ++l) {
            int q = team->local_ranks[l];
            size_t at = coll_gpu_binomial_rank_slot(team, root, q) * len;
            char *dst = (rank == root)
                            ? (char *)call->rbuf + ((size_t)q * call->count + c.first) * esize
                            : mine + at;

            if (q != rank) {
                coll_gpu_prims_copy(&pr, dst, coll_gpu_prims_theirs(&pr, q, c.step) + at, len);
            } else if ((rank == root) && (NULL != in)) {
                coll_gpu_prims_copy(&pr, dst, in, len);
            }
        }
        /* the children's runs arrived, the node's loads completed */
        coll_gpu_prims_fetch_complete(&pr);
        if (reused) {
            for (int m = 1; (0 != pl.first_child) && (m <= pl.first_child); m *= 2) {
                coll_gpu_prims_signal(&pr, coll_gpu_team_position_leader(team, root, pl.v + m),
                                      c.step, COLL_GPU_PHASE_CONSUMED);
            }
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_CONSUMED);
        }
        if (rank != root) {
            off = coll_gpu_binomial_subtree_run(team, root, pl.v, len, &run);
            coll_gpu_prims_offer(&pr, pl.parent, c.step, off, run);
            continue;
        }
        /* the root: the other nodes' chunks out of its half */
        coll_gpu_prims_slots_copy(&pr, mine, len, team->node_first[team->node_of_rank[root]],
                                  (char *)call->rbuf + c.first * esize, call->count * esize, true,
                                  true);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_scatter_binomial(struct ompi_communicator_t *comm,
                              const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_binomial_place_t pl = coll_gpu_binomial_place(call);
    int rank = team->rank, root = call->root;
    /* a leader whose half somebody reads: its children, or its node */
    bool serves = (rank == pl.leader) && ((pl.first_child > 0) || (team->local_size > 1));
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_binomial_log(comm, call, "MPI_Scatter", &pl);
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, pl.per_step);) {
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        char *out = (NULL != call->rbuf) ? (char *)call->rbuf + c.first * esize : NULL;
        size_t len = c.n * esize, run, off;
        bool reused = (c.first + 2 * pl.per_step < call->count);
        bool later = (c.first >= 2 * pl.per_step);

        if (rank != pl.leader) {
            coll_gpu_prims_wait(&pr, pl.leader, c.step, COLL_GPU_PHASE_FINAL);
            coll_gpu_prims_copy(&pr, out,
                                coll_gpu_prims_theirs(&pr, pl.leader, c.step) + pl.slot * len, len);
            if (reused) {
                /* (else the end of the call completes the copy, before its agreement) */
                coll_gpu_prims_sync(&pr);
                coll_gpu_prims_signal(&pr, pl.leader, c.step, COLL_GPU_PHASE_CONSUMED);
            }
            continue;
        }
        if (serves && later) {
            /* the readers of step - 2 in this half are done with it */
            coll_gpu_prims_wait_node(&pr, c.step - 2, COLL_GPU_PHASE_CONSUMED);
            for (int m = pl.first_child; m > 0; m /= 2) {
                coll_gpu_prims_wait(&pr, coll_gpu_team_position_leader(team, root, pl.v + m),
                                    c.step - 2, COLL_GPU_PHASE_CONSUMED);
            }
        }
        if (rank == root) {
            coll_gpu_prims_slots_copy(&pr, mine, len, team->node_first[team->node_of_rank[root]],
                                      (char *)call->sbuf + c.first * esize, call->count * esize,
                                      false, false);
        } else {
            if (serves) {
                off = coll_gpu_binomial_subtree_run(team, root, pl.v, len, &run);
                coll_gpu_prims_take(&pr, pl.parent, c.step, off, mine + off, run);
            } else {
                coll_gpu_prims_take(&pr, pl.parent, c.step, pl.slot * len, out, len);
            }
            coll_gpu_prims_fetch_complete(&pr);
            if (reused) {
                coll_gpu_prims_signal(&pr, pl.parent, c.step, COLL_GPU_PHASE_CONSUMED);
            }
        }
        if (serves) {
            for (int m = pl.first_child; m > 0; m /= 2) {
                off = coll_gpu_binomial_subtree_run(team, root, pl.v + m, len, &run);
                coll_gpu_prims_publish(&pr, c.step, off, run);
            }
            coll_gpu_prims_sync(&pr);
            for (int m = pl.first_child; m > 0; m /= 2) {
                coll_gpu_prims_signal(&pr, coll_gpu_team_position_leader(team, root, pl.v + m),
                                      c.step, COLL_GPU_PHASE_READY);
            }
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_FINAL);
        }
        if (rank == root) {
            if (NULL != out) {
                coll_gpu_prims_copy(
                    &pr, out,
                    (const char *)call->sbuf + ((size_t)rank * call->count + c.first) * esize, len);
            }
        } else if (serves) {
            /* off the critical path: its readers read the half */
            coll_gpu_prims_copy(&pr, out, mine + pl.slot * len, len);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}
