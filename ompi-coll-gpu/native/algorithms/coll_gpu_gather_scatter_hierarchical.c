/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather and MPI_Scatter, hierarchical (communicators spanning nodes with several ranks on a
 * node): the root exchanges one message per other node per step, where direct has it get from
 * (or serve a get of) every rank of every other node.  The bytes over the root's link are the
 * same (every remote block crosses once, the least any gather can); the messages and the
 * signals the root waits for go from size - local_size to nnodes - 1 per step, and each other
 * node's link is used by one rank, its leader: the node's rank at the root's index within the
 * root's node, modulo the node's size (the root's network rail on machines with a NIC per GPU).
 *
 * Layout: a scratch half has one slot per rank, in node order (coll_gpu_team_node_order: a
 * node's ranks in consecutive slots), each the step's chunk long (the same on every rank), so
 * that a node's chunks are one run; step s carries elements [s * per_step, (s + 1) * per_step)
 * of every block, per_step the half over the ranks.
 *
 * Gather, per step:
 *   1. every rank but the root copies its chunk into its slot of its half and announces the step;
 *   2. on every node but the root's, the leader loads its node's other ranks' chunks into their
 *      slots of its own half, publishes the node's run of slots and tells the root (GATHERED);
 *   3. the root copies its node's ranks' chunks straight from their halves into its receive
 *      buffer, gets each other node's run of slots from its leader into the same slots of its
 *      own half (one message per node), then copies them out, and copies its own chunk from its
 *      send buffer (in place: already there).
 * Scatter, the same backwards:
 *   1. the root copies every other rank's chunk into that rank's slot of its half, publishes
 *      them and announces the step;
 *   2. on every node but the root's, the leader gets its node's run of slots from the root
 *      (one message per node) into the same slots of its half and tells its node's ranks
 *      (SCATTERED);
 *   3. every rank copies its chunk into its receive buffer: on the root's node from the root's
 *      half, elsewhere from its leader's (the leader's own); the root from its send buffer (in
 *      place: it stays there).
 *
 * Reuse of a half: the half of step s is written again in step s + 2, after every rank
 * announced s + 1, which each does once its reads of step s (loads, gets, copies out) completed.
 * GATHERED / SCATTERED of step s lie between READY(s) and READY(s + 1) in a slot's monotone
 * values.  Only copies: the bits are direct's.
 */
#include "coll_gpu_prims.h"

bool coll_gpu_gather_scatter_hierarchical_fits(const coll_gpu_native_t *native, size_t esize) {
    return (size_t)native->team->size * esize <= native->half;
}

/* This rank's leader for a rooted collective (the root on the root's node), its slot, and the
 * elements of a block a step carries (a slot's room: the half over the ranks). */
typedef struct {
    int root_node, root_index, leader, slot;
    size_t per_step;
} coll_gpu_rooted_layout_t;

static coll_gpu_rooted_layout_t coll_gpu_rooted_layout(const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_rooted_layout_t lay;

    lay.root_node = team->node_of_rank[call->root];
    lay.root_index = coll_gpu_team_index_in_node(team, call->root);
    lay.leader = (team->node == lay.root_node)
                     ? call->root
                     : coll_gpu_team_rail_rank(team, team->node, lay.root_index);
    lay.slot = coll_gpu_team_node_order(team, team->rank);
    lay.per_step = call->native->half / (size_t)team->size / call->esize;
    return lay;
}

/* Node j's run of slots of len bytes: its offset in a half, and its bytes. */
static size_t coll_gpu_rooted_run(const coll_gpu_team_t *team, int j, size_t len, size_t *bytes_p) {
    *bytes_p = (size_t)team->node_sizes[j] * len;
    return (size_t)team->node_first[j] * len;
}

int coll_gpu_gather_hierarchical(struct ompi_communicator_t *comm,
                                 const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_rooted_layout_t lay = coll_gpu_rooted_layout(call);
    int rank = team->rank, root = call->root;
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, lay.per_step);) {
        const char *in = (NULL != call->sbuf) ? (const char *)call->sbuf + c.first * esize : NULL;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        size_t len = c.n * esize, run, off;

        if (rank != root) {
            coll_gpu_prims_copy(&pr, mine + (size_t)lay.slot * len, in, len);
        }
        /* the chunks landed; every rank's reads of step - 2 completed */
        coll_gpu_prims_announce(&pr, c.step);
        if ((rank == lay.leader) && (rank != root)) {
            for (int l = 0; l < team->local_size; ++l) {
                int q = team->local_ranks[l];
                size_t at = (size_t)coll_gpu_team_node_order(team, q) * len;

                if (q != rank) {
                    coll_gpu_prims_copy(&pr, mine + at, coll_gpu_prims_theirs(&pr, q, c.step) + at,
                                        len);
                }
            }
            off = coll_gpu_rooted_run(team, team->node, len, &run);
            coll_gpu_prims_publish(&pr, c.step, off, run);
            /* the node's chunks are there (and published) before the root is told */
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, root, c.step, COLL_GPU_PHASE_GATHERED);
            continue;
        }
        if (rank != root) {
            continue;
        }
        /* the root: one get per other node, its node's chunks loaded */
        for (int j = 0; j < team->nnodes; ++j) {
            int their_leader = coll_gpu_team_rail_rank(team, j, lay.root_index);

            if (j == team->node) {
                continue;
            }
            off = coll_gpu_rooted_run(team, j, len, &run);
            coll_gpu_prims_wait(&pr, their_leader, c.step, COLL_GPU_PHASE_GATHERED);
            coll_gpu_prims_fetch(&pr, their_leader, c.step, off, mine + off, run);
        }
        for (int p = 0; p < team->size; ++p) {
            char *out = (char *)call->rbuf + ((size_t)p * call->count + c.first) * esize;
            size_t at = (size_t)coll_gpu_team_node_order(team, p) * len;

            if ((p != rank) && coll_gpu_native_is_local(call->native, p)) {
                coll_gpu_prims_copy(&pr, out, coll_gpu_prims_theirs(&pr, p, c.step) + at, len);
            } else if ((p == rank) && (NULL != in)) {
                coll_gpu_prims_copy(&pr, out, in, len);
            }
        }
        /* the other nodes' chunks have arrived */
        coll_gpu_prims_fetch_complete(&pr);
        coll_gpu_prims_slots_copy(&pr, mine, len, 0, (char *)call->rbuf + c.first * esize,
                                  call->count * esize, true, true);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_scatter_hierarchical(struct ompi_communicator_t *comm,
                                  const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_rooted_layout_t lay = coll_gpu_rooted_layout(call);
    int rank = team->rank, root = call->root;
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, lay.per_step);) {
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        char *out = (NULL != call->rbuf) ? (char *)call->rbuf + c.first * esize : NULL;
        size_t len = c.n * esize, run, off;

        if (rank == root) {
            coll_gpu_prims_slots_copy(&pr, mine, len, 0, (char *)call->sbuf + c.first * esize,
                                      call->count * esize, false, false);
            for (int j = 0; j < team->nnodes; ++j) {
                if (j != team->node) {
                    off = coll_gpu_rooted_run(team, j, len, &run);
                    coll_gpu_prims_publish(&pr, c.step, off, run);
                }
            }
        }
        /* the root's chunks landed; every rank's reads of step - 2 completed */
        coll_gpu_prims_announce(&pr, c.step);
        if (rank == root) {
            if (NULL != out) {
                coll_gpu_prims_copy(
                    &pr, out,
                    (const char *)call->sbuf + ((size_t)rank * call->count + c.first) * esize, len);
            }
            continue;
        }
        if (rank == lay.leader && (team->node != lay.root_node)) {
            /* the node's chunks, one get; then its ranks are told */
            off = coll_gpu_rooted_run(team, team->node, len, &run);
            coll_gpu_prims_fetch(&pr, root, c.step, off, mine + off, run);
            coll_gpu_prims_fetch_complete(&pr);
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_SCATTERED);
            coll_gpu_prims_copy(&pr, out, mine + (size_t)lay.slot * len, len);
            continue;
        }
        if (team->node != lay.root_node) {
            coll_gpu_prims_wait(&pr, lay.leader, c.step, COLL_GPU_PHASE_SCATTERED);
        }
        /* from the root on its node, from the leader elsewhere */
        coll_gpu_prims_copy(
            &pr, out, coll_gpu_prims_theirs(&pr, lay.leader, c.step) + (size_t)lay.slot * len, len);
    }
    return coll_gpu_prims_finish(&pr, comm);
}
