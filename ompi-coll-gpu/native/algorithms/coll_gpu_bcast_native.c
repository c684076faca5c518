/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Bcast, pipelined: the root copies chunk k of its buffer into its scratch half of step k
 * before announcing step k, and the other ranks read it once every rank announced it.
 *
 * Flat (one node, or every other node has a single rank): every non-root rank fetches chunk k
 * out of the root's scratch in step k: a load from a peer of its node, a get from another
 * node's.  One step per chunk.
 *
 * Chain (3 nodes or more, more than 64 KiB: coll_gpu_bcast_tree, CHAIN): the leaders of the
 * two-level form pass the chunks on from node to node on point-to-point signals, so no node
 * sends the message more than once and no step waits for every rank; otherwise, two-level or
 * flat:
 *
 * Two-level (some node other than the root's has several ranks): only one rank of each other
 * node, its leader, gets from the root; the rest of its node loads from the leader, so the
 * root's node sends each chunk once per node instead of once per rank.  In step s (chunk k):
 *   - the root's node loads chunk k from the root, as in the flat form;
 *   - a leader gets chunk k from the root's half of step s into its own half of step s + 1,
 *     and copies chunk k - 1 from its half of step s into its buffer;
 *   - the other ranks of a leader's node load chunk k - 1 from the leader's half of step s.
 * So a node reads chunk k - 1 from its leader while the leader gets chunk k from the root:
 * one step more than chunks.  Nobody on another node reads a leader's scratch: it is never
 * published (coll_gpu_native_publish), only the root's is.
 *
 * Reuse: every read of a half of step s happens in step s and completes before the reader
 * announces step s + 1 (coll_gpu_native_announce completes a rank's fetches first), as every
 * native algorithm requires, so the next call of any collective may reuse the halves.  What
 * tells a writer that its half is free is the announcement of the step before by every peer:
 * the root writes its half of step s before announcing s, once every peer announced s - 1
 * (the last reads of that parity were in step s - 2); a leader writes its half of step s + 1
 * during step s, after every peer announced s (the last reads of that parity, its node's loads
 * of chunk k - 2, were in step s - 1).  Why the leader writes ahead into the half of step s + 1
 * rather than its half of step s: its node reads the chunk in step s + 1, and a half of step s
 * read in step s + 1 could be overwritten by the next call's first step.
 *
 * The leader of a node is its rank with the root's index among the root's node (modulo the
 * node's size): the ranks of the same local index usually share a rail of the network (GPU i
 * and NIC i of every node on one leaf switch), where the root's data already travels, and the
 * role moves with the root instead of always loading the node's first rank.
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
