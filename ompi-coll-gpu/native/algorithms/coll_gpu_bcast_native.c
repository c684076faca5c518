/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Bcast, pipelined: flat (the root's scratch read by every rank), two-level (one leader per
 * other node gets from the root, its node loads from it) or, on 3 nodes or more above 64 KiB,
 * the chain (coll_gpu_bcast_tree.c).  The forms, the choice of leader and why a leader writes
 * ahead into the half of step s + 1: docs/collectives.md, "Reduce, gather, scatter; bcast across
 * nodes".
 *
 * Reuse: every read of a half of step s completes before its reader announces s + 1, so the root
 * writes its half of s once every peer announced s - 1, and a leader its half of s + 1 during s.
 * A leader's scratch is never published: nobody on another node reads it.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

/* Who this rank reads from in a two-level bcast, computed from the team alone (the same on
 * every rank of a node). */
typedef struct {
    bool two_level;  /* some node other than the root's has several ranks */
    int leader;      /* the rank this rank's node gets the data through (the root on its node) */
    int node_others; /* the other ranks of this rank's node */
} coll_gpu_bcast_relay_t;

static void coll_gpu_bcast_relay(const coll_gpu_team_t *team, int root,
                                 coll_gpu_bcast_relay_t *relay) {
    int root_node = team->node_of_rank[root], root_node_size = team->node_sizes[root_node];

    /* more ranks than nodes off the root's node: a node with several */
    relay->two_level = (team->size - root_node_size) > (team->nnodes - 1);
    relay->leader = coll_gpu_team_root_leader(team, root, team->node);
    relay->node_others = team->local_size - 1;
}

static int coll_gpu_bcast_flat(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                               void *buf, size_t count, int root) {
    bool is_root = (call->native->team->rank == root);
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0};
         coll_gpu_prims_next(&pr, &c, count, call->native->half / esize);) {
        char *data = (char *)buf + c.first * esize;

        if (is_root) {
            coll_gpu_prims_copy(&pr, coll_gpu_prims_mine(&pr, c.step), data, c.n * esize);
            if (call->native->team->nnodes > 1) {
                coll_gpu_prims_publish(&pr, c.step, 0, c.n * esize);
            }
        }
        /* the root's chunk landed; a non-root's reads of the previous chunk completed */
        coll_gpu_prims_announce(&pr, c.step);
        if (!is_root) {
            coll_gpu_prims_fetch(&pr, root, c.step, 0, data, c.n * esize);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

static int coll_gpu_bcast_two_level(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call,
                                    const coll_gpu_bcast_relay_t *relay, void *buf, size_t count,
                                    int root) {
    int rank = call->native->team->rank;
    bool is_root = (rank == root), on_root_node = coll_gpu_native_is_local(call->native, root);
    bool is_leader = !on_root_node && (rank == relay->leader);
    /* a leader alone on its node needs no relay copy: it gets straight into its buffer */
    bool relays = is_leader && (relay->node_others > 0);
    size_t esize = call->esize, per_step = call->native->half / esize;
    size_t nchunks = (count + per_step - 1) / per_step;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    /* step s carries chunk k from the root and chunk k - 1 out of the leaders */
    for (size_t k = 0; (k < nchunks + 1) && coll_gpu_prims_linked(&pr); ++k) {
        size_t first = k * per_step, n = (k < nchunks) ? count - first : 0;
        size_t prev_n = (k > 0) ? count - (first - per_step) : 0;
        uint64_t step = ++call->native->step;
        char *data = (char *)buf + first * esize, *prev = data - per_step * esize;

        n = (n < per_step) ? n : per_step;
        prev_n = (prev_n < per_step) ? prev_n : per_step;
        if (is_root) {
            coll_gpu_prims_copy(&pr, coll_gpu_prims_mine(&pr, step), data, n * esize);
            coll_gpu_prims_publish(&pr, step, 0, n * esize);
        }
        /* the root's chunk k and the leaders' chunk k - 1 landed; every rank's reads of the
         * step before completed */
        coll_gpu_prims_announce(&pr, step);
        if (is_root) {
            continue;
        }
        if (on_root_node || (is_leader && !relays)) {
            coll_gpu_prims_fetch(&pr, root, step, 0, data, n * esize);
        } else if (relays) {
            coll_gpu_prims_fetch(&pr, root, step, 0, coll_gpu_prims_mine(&pr, step + 1), n * esize);
            coll_gpu_prims_copy(&pr, prev, coll_gpu_prims_mine(&pr, step), prev_n * esize);
        } else {
            coll_gpu_prims_fetch(&pr, relay->leader, step, 0, prev, prev_n * esize);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

/* The chain (coll_gpu_bcast_tree.c): 3 nodes or more, a message of more than
 * COLL_GPU_BCAST_CHUNK_MIN bytes. */
static bool coll_gpu_bcast_chains(const coll_gpu_team_t *team, size_t bytes) {
    return (team->nnodes > 2) && (bytes > COLL_GPU_BCAST_CHUNK_MIN);
}

/* Which form runs, and this rank's part in it: the verbose log of every call. */
static void coll_gpu_bcast_log(struct ompi_communicator_t *comm, const coll_gpu_team_t *team,
                               const coll_gpu_bcast_relay_t *relay, int root) {
    if (!relay->two_level) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "MPI_Bcast on %s: pipelined flat from root %d",
                         comm->c_name, root);
    } else if (team->rank == root) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: pipelined two-level from root %d over %d nodes: "
                         "rank %d is the root",
                         comm->c_name, root, team->nnodes, team->rank);
    } else if (relay->leader == root) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: pipelined two-level from root %d over %d nodes: "
                         "rank %d loads from the root",
                         comm->c_name, root, team->nnodes, team->rank);
    } else if (relay->leader == team->rank) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: pipelined two-level from root %d over %d nodes: "
                         "rank %d gets from the root for %d rank(s) of its node",
                         comm->c_name, root, team->nnodes, team->rank, relay->node_others);
    } else {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPI_Bcast on %s: pipelined two-level from root %d over %d nodes: "
                         "rank %d loads from its node's leader %d",
                         comm->c_name, root, team->nnodes, team->rank, relay->leader);
    }
}

int coll_gpu_bcast_pipelined(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    void *buf = call->rbuf;
    size_t count = call->count;
    int root = call->root;
    coll_gpu_team_t *team = call->native->team;
    coll_gpu_bcast_relay_t relay = {.two_level = false};

    if (team->nnodes > 1) {
        coll_gpu_bcast_relay(team, root, &relay);
    }
    if ((team->nnodes > 1) && coll_gpu_bcast_chains(team, count * call->esize)) {
        return coll_gpu_bcast_tree(comm, call, COLL_GPU_TREE_CHAIN);
    }
    coll_gpu_bcast_log(comm, team, &relay, root);
    if (!relay.two_level) {
        return coll_gpu_bcast_flat(comm, call, buf, count, root);
    }
    return coll_gpu_bcast_two_level(comm, call, &relay, buf, count, root);
}
