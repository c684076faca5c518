/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather and MPI_Scatter, hierarchical (communicators spanning nodes with several ranks on a
 * node): one message per other node per step, between its leader and its carrier on the root's
 * node (with rails, the root's node's ranks share the nodes out).  Layout and protocol:
 * docs/collectives.md, "Reduce, gather, scatter"; rails: docs/many-nodes.md, "Rails of gather
 * and scatter".  Only copies: the bits are direct's.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

bool coll_gpu_gather_scatter_hierarchical_fits(const coll_gpu_native_t *native, size_t esize) {
    return (size_t)native->team->size * esize <= native->half;
}

/* Node j's carrier: the rank of the root's node that exchanges node j's run with node j's
 * leader.  With rails (coll_gpu_tree_rails) the other nodes are shared out among the root's
 * node's first W = min(its size, nnodes - 1) ranks counted from the root, in ranges of
 * consecutive positions from the root's node (position v = 1 .. nnodes - 1 to turn
 * (v - 1) W / (nnodes - 1): the root carries the first range), so that every network interface
 * of the root's node carries its share and a carrier's nodes are one or two runs of slots;
 * without, the root carries every node.  Node j's leader is its rank on its carrier's rail (the
 * carrier's index modulo node j's size). */
static int coll_gpu_rooted_carrier_index(const coll_gpu_team_t *team, int root, int j, bool rails) {
    int nroot = team->node_sizes[team->node_of_rank[root]], others = team->nnodes - 1;
    int ways = (nroot < others) ? nroot : others;
    int v = coll_gpu_team_root_position(team, root, j);
    int turn = (rails && (v > 0)) ? (int)((int64_t)(v - 1) * ways / others) : 0;

    return (coll_gpu_team_index_in_node(team, root) + turn) % nroot;
}

/* This rank's leader for a rooted collective (the root on the root's node), its node's carrier,
 * its slot, and the elements of a block a step carries (a slot's room: the half over the
 * ranks). */
typedef struct {
    int root_node, leader, carrier, slot;
    bool rails; /* the same on every rank: part of the protocol */
    size_t per_step;
} coll_gpu_rooted_layout_t;

/* Node j's carrier and leader (on the root's node both are the root: position 0, its own
 * index). */
static void coll_gpu_rooted_pair(const coll_gpu_native_call_t *call,
                                 const coll_gpu_rooted_layout_t *lay, int j, int *carrier_p,
                                 int *leader_p) {
    const coll_gpu_team_t *team = call->native->team;
    int index = coll_gpu_rooted_carrier_index(team, call->root, j, lay->rails);

    *carrier_p = coll_gpu_team_node_rank(team, lay->root_node, index);
    *leader_p = coll_gpu_team_rail_rank(team, j, index);
}

static coll_gpu_rooted_layout_t coll_gpu_rooted_layout(const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_rooted_layout_t lay;

    lay.rails = team->rails;
    lay.root_node = team->node_of_rank[call->root];
    coll_gpu_rooted_pair(call, &lay, team->node, &lay.carrier, &lay.leader);
    lay.slot = coll_gpu_team_node_order(team, team->rank);
    lay.per_step = call->native->half / (size_t)team->size / call->esize;
    return lay;
}

/* The next node after j (from -1) that this rank carries, and its leader; -1: no more. */
static int coll_gpu_rooted_next_carried(const coll_gpu_native_call_t *call,
                                        const coll_gpu_rooted_layout_t *lay, int j, int *leader_p) {
    const coll_gpu_team_t *team = call->native->team;
    int carrier;

    while (++j < team->nnodes) {
        if (j == lay->root_node) {
            continue;
        }
        coll_gpu_rooted_pair(call, lay, j, &carrier, leader_p);
        if (carrier == team->rank) {
            return j;
        }
    }
    return -1;
}

/* Node j's run of slots of len bytes: its offset in a half, and its bytes. */
static size_t coll_gpu_rooted_run(const coll_gpu_team_t *team, int j, size_t len, size_t *bytes_p) {
    *bytes_p = (size_t)team->node_sizes[j] * len;
    return (size_t)team->node_first[j] * len;
}

/* Ranges of a half to publish, adjacent ones as one. */
typedef struct {
    size_t off, len;
} coll_gpu_rooted_range_t;

static void coll_gpu_rooted_publish_flush(coll_gpu_prims_t *pr, uint64_t step,
                                          coll_gpu_rooted_range_t *range) {
    if (range->len > 0) {
        coll_gpu_prims_publish(pr, step, range->off, range->len);
        range->len = 0;
    }
}
static void coll_gpu_rooted_publish_add(coll_gpu_prims_t *pr, uint64_t step,
                                        coll_gpu_rooted_range_t *range, size_t off, size_t len) {
    if ((range->len > 0) && (off != range->off + range->len)) {
        coll_gpu_rooted_publish_flush(pr, step, range);
    }
    if (0 == range->len) {
        range->off = off;
    }
    range->len += len;
}

int coll_gpu_gather_hierarchical(struct ompi_communicator_t *comm,
                                 const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_rooted_layout_t lay = coll_gpu_rooted_layout(call);
    int rank = team->rank, root = call->root, carrier, leader;
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, lay.per_step);) {
        const char *in = (NULL != call->sbuf) ? (const char *)call->sbuf + c.first * esize : NULL;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        size_t len = c.n * esize, run, off;
        coll_gpu_prims_run_t out_run = {NULL, NULL, 0, 0, 0, 0};
        bool carries = false;

        if (rank != root) {
            coll_gpu_prims_copy(&pr, mine + (size_t)lay.slot * len, in, len);
        }
        /* the chunks landed; every rank's reads of step - 2 completed */
        coll_gpu_prims_announce(&pr, c.step);
        if (team->node != lay.root_node) {
            if (rank != lay.leader) {
                continue;
            }
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
            /* the node's chunks are there (and published) before the carrier is told */
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, lay.carrier, c.step, COLL_GPU_PHASE_GATHERED);
            continue;
        }
        /* the root's node: each carrier (the root among them) gets the runs of the nodes it
         * carries into the same slots of its half, one message per node */
        for (int j = coll_gpu_rooted_next_carried(call, &lay, -1, &leader); j >= 0;
             j = coll_gpu_rooted_next_carried(call, &lay, j, &leader)) {
            off = coll_gpu_rooted_run(team, j, len, &run);
            coll_gpu_prims_wait(&pr, leader, c.step, COLL_GPU_PHASE_GATHERED);
            coll_gpu_prims_fetch(&pr, leader, c.step, off, mine + off, run);
            carries = true;
        }
        if (rank != root) {
            if (carries) {
                /* the runs have arrived before the root is told */
                coll_gpu_prims_fetch_complete(&pr);
                coll_gpu_prims_signal(&pr, root, c.step, COLL_GPU_PHASE_GATHERED);
            }
            continue;
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
        /* the root's runs have arrived; another carrier's are in its half once it said
         * GATHERED (a wait that returns at once for its later nodes: signals only grow) */
        coll_gpu_prims_fetch_complete(&pr);
        for (int j = 0; j < team->nnodes; ++j) {
            const char *src = mine;

            if (j == team->node) {
                continue;
            }
            coll_gpu_rooted_pair(call, &lay, j, &carrier, &leader);
            if (carrier != rank) {
                coll_gpu_prims_wait(&pr, carrier, c.step, COLL_GPU_PHASE_GATHERED);
                src = coll_gpu_prims_theirs(&pr, carrier, c.step);
            }
            for (int k = team->node_first[j]; k < team->node_first[j] + team->node_sizes[j]; ++k) {
                char *out = (char *)call->rbuf +
                            ((size_t)team->node_ranks[k] * call->count + c.first) * esize;

                coll_gpu_prims_run_add(&pr, &out_run, out, src + (size_t)k * len, len);
            }
        }
        coll_gpu_prims_run_flush(&pr, &out_run);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_scatter_hierarchical(struct ompi_communicator_t *comm,
                                  const coll_gpu_native_call_t *call) {
    const coll_gpu_team_t *team = call->native->team;
    coll_gpu_rooted_layout_t lay = coll_gpu_rooted_layout(call);
    int rank = team->rank, root = call->root, leader;
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, lay.per_step);) {
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        char *out = (NULL != call->rbuf) ? (char *)call->rbuf + c.first * esize : NULL;
        size_t len = c.n * esize, run, off;
        coll_gpu_prims_run_t in_run = {NULL, NULL, 0, 0, 0, 0};
        coll_gpu_rooted_range_t published = {0, 0};
        bool carries = false;

        if (rank == root) {
            coll_gpu_prims_slots_copy(&pr, mine, len, 0, (char *)call->sbuf + c.first * esize,
                                      call->count * esize, false, false);
            for (int j = coll_gpu_rooted_next_carried(call, &lay, -1, &leader); j >= 0;
                 j = coll_gpu_rooted_next_carried(call, &lay, j, &leader)) {
                off = coll_gpu_rooted_run(team, j, len, &run);
                coll_gpu_rooted_publish_add(&pr, c.step, &published, off, run);
            }
            coll_gpu_rooted_publish_flush(&pr, c.step, &published);
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
        if (team->node == lay.root_node) {
            /* another carrier: the runs of the nodes it carries (one or two runs of slots),
             * from the root's half into the same slots of its own (inside the node), published;
             * then their leaders are told */
            for (int j = coll_gpu_rooted_next_carried(call, &lay, -1, &leader); j >= 0;
                 j = coll_gpu_rooted_next_carried(call, &lay, j, &leader)) {
                off = coll_gpu_rooted_run(team, j, len, &run);
                coll_gpu_prims_run_add(&pr, &in_run, mine + off,
                                       coll_gpu_prims_theirs(&pr, root, c.step) + off, run);
                coll_gpu_rooted_publish_add(&pr, c.step, &published, off, run);
                carries = true;
            }
            coll_gpu_prims_run_flush(&pr, &in_run);
            coll_gpu_rooted_publish_flush(&pr, c.step, &published);
            if (carries) {
                coll_gpu_prims_sync(&pr);
                for (int j = coll_gpu_rooted_next_carried(call, &lay, -1, &leader); j >= 0;
                     j = coll_gpu_rooted_next_carried(call, &lay, j, &leader)) {
                    coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_SCATTERED);
                }
            }
            /* its own chunk from the root's half */
            coll_gpu_prims_copy(
                &pr, out, coll_gpu_prims_theirs(&pr, root, c.step) + (size_t)lay.slot * len, len);
            continue;
        }
        if (rank == lay.leader) {
            /* the node's chunks, one get from its carrier (the root's half is ready at the
             * handshake; another carrier's once it says so); then its ranks are told */
            if (lay.carrier != root) {
                coll_gpu_prims_wait(&pr, lay.carrier, c.step, COLL_GPU_PHASE_SCATTERED);
            }
            off = coll_gpu_rooted_run(team, team->node, len, &run);
            coll_gpu_prims_fetch(&pr, lay.carrier, c.step, off, mine + off, run);
            coll_gpu_prims_fetch_complete(&pr);
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_SCATTERED);
            coll_gpu_prims_copy(&pr, out, mine + (size_t)lay.slot * len, len);
            continue;
        }
        coll_gpu_prims_wait(&pr, lay.leader, c.step, COLL_GPU_PHASE_SCATTERED);
        coll_gpu_prims_copy(
            &pr, out, coll_gpu_prims_theirs(&pr, lay.leader, c.step) + (size_t)lay.slot * len, len);
    }
    return coll_gpu_prims_finish(&pr, comm);
}
