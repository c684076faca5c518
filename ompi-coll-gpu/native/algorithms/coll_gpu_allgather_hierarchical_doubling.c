/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather(v), hierarchical_doubling (small messages across many nodes: O(log nnodes)
 * rounds and messages between nodes, where hierarchical announces every step to every rank and
 * each node fetches from every other node).  Per step, elements [first, first + per_step) of
 * every block, laid out in a scratch half in node order (node j's ranks, in rank order, then
 * node j + 1's; packed), so that any run of consecutive nodes is one run of bytes:
 *   1. the node step: every rank but the node's leader (its first rank) copies its chunk into
 *      its half and tells the leader (READY); the leader copies its node's chunks into their
 *      places in its own half;
 *   2. recursive doubling between the leaders on node indices: with p the largest power of two
 *      <= nnodes and rem = nnodes - p, node 2i (i < rem, an extra) first hands its node's run to
 *      node 2i + 1; then log2(p) rounds, round k with virtual partner v ^ 2^k: each gets the
 *      partner's group of nodes (2^k virtual members, one run) into the same place of its own
 *      half; at last each extra gets the whole step back from its partner (two runs around its
 *      own node's);
 *   3. the leader tells its node (FINAL); every rank copies every block's chunk from the
 *      leader's half into its receive buffer (adjacent blocks in one copy).
 * A leader receives every other node's bytes once (the least any allgather can) in log2(p) gets
 * (+ 1 for a paired node), and sends log2(p) (+ 1) signals; the other ranks talk only to their
 * leader.  Only copies: the bits are direct's.
 *
 * Synchronization, one native step per chunk: every signal of a chunk goes from one rank to
 * another at most once (READY of the step: a rank to its leader, leaders to their round
 * partners, an extra to its partner and back; FINAL: a leader to its node), so all carry the
 * chunk's step.  Reuse of a half (chunk k + 2 writes the half of chunk k): the node's ranks
 * said READY of chunk k + 1 after their copies out of chunk k; every leader that read this
 * leader's half in chunk k is its partner again in chunk k + 1 (the same pairs every chunk), and
 * said READY there after its gets of chunk k completed.  A leader writes into its half only
 * the runs of nodes its partners do not read in that round.  The halves of earlier calls are
 * free: their last step, the agreement, was announced by every rank.
 */
#include "coll_gpu_prims.h"

bool coll_gpu_allgather_doubling_fits(const coll_gpu_native_t *native, size_t esize) {
    return (size_t)native->team->size * esize <= native->half;
}

/* The step's layout: pos_off[i] = the byte offset of node-order position i's chunk (node_ranks);
 * returns the step's bytes. */
static size_t coll_gpu_ag_doubling_layout(const coll_gpu_team_t *team, const size_t *counts,
                                          size_t first, size_t per_step, size_t esize,
                                          size_t *pos_off) {
    size_t pos = 0;

    for (int i = 0; i < team->size; ++i) {
        pos_off[i] = pos;
        pos += coll_gpu_prims_block_chunk(counts[team->node_ranks[i]], first, per_step) * esize;
    }
    return pos;
}

/* Where node j's run starts in the layout (j = nnodes: its end). */
static size_t coll_gpu_ag_doubling_node_at(const coll_gpu_team_t *team, const size_t *pos_off,
                                           size_t total, int j) {
    return (j < team->nnodes) ? pos_off[team->node_first[j]] : total;
}

/* The first node of virtual member u's run (u = p: nnodes): the extras' partners hold two;
 * and the node that takes part in the rounds for it (an extra's partner). */
static int coll_gpu_ag_doubling_node_of(int u, int rem) { return (u < rem) ? 2 * u : u + rem; }
static int coll_gpu_ag_doubling_member(int u, int rem) { return (u < rem) ? 2 * u + 1 : u + rem; }

/* Waits for peer's READY of step and gets [from, to) of its half into the same place of mine. */
static void coll_gpu_ag_doubling_take(coll_gpu_prims_t *pr, int peer, uint64_t step, size_t from,
                                      size_t to) {
    coll_gpu_prims_wait(pr, peer, step, COLL_GPU_PHASE_READY);
    coll_gpu_prims_fetch(pr, peer, step, from, coll_gpu_prims_mine(pr, step) + from, to - from);
}

/* [from, to) of my half is there for peer (on another node) to get. */
static void coll_gpu_ag_doubling_offer(coll_gpu_prims_t *pr, int peer, uint64_t step, size_t from,
                                       size_t to) {
    coll_gpu_prims_publish(pr, step, from, to - from);
    coll_gpu_prims_sync(pr);
    coll_gpu_prims_signal(pr, peer, step, COLL_GPU_PHASE_READY);
}

/* Step 2 on a leader: the whole step in its half.  Every leader takes it, node indices the
 * members. */
static void coll_gpu_ag_doubling_between_nodes(coll_gpu_prims_t *pr, uint64_t step,
                                               const size_t *pos_off, size_t total) {
    const coll_gpu_team_t *team = pr->native->team;
    int p = 1, rem, me = team->node, v;

    while (2 * p <= team->nnodes) {
        p *= 2;
    }
    rem = team->nnodes - p;
#define NODE_AT(j) coll_gpu_ag_doubling_node_at(team, pos_off, total, (j))
#define LEADER(j) coll_gpu_team_node_rank(team, (j), 0)
    if (me < 2 * rem) {
        if (0 == (me & 1)) {
            /* an extra: hand my node's run over, get everything else back at the end */
            coll_gpu_ag_doubling_offer(pr, LEADER(me + 1), step, NODE_AT(me), NODE_AT(me + 1));
            coll_gpu_ag_doubling_take(pr, LEADER(me + 1), step, 0, NODE_AT(me));
            coll_gpu_prims_fetch(pr, LEADER(me + 1), step, NODE_AT(me + 1),
                                 coll_gpu_prims_mine(pr, step) + NODE_AT(me + 1),
                                 total - NODE_AT(me + 1));
            coll_gpu_prims_fetch_complete(pr);
            return;
        }
        coll_gpu_ag_doubling_take(pr, LEADER(me - 1), step, NODE_AT(me - 1), NODE_AT(me));
        coll_gpu_prims_fetch_complete(pr);
        v = me / 2;
    } else {
        v = me - rem;
    }
    for (int mask = 1; mask < p; mask *= 2) {
        int lo = v & ~(mask - 1), plo = (v ^ mask) & ~(mask - 1);
        int partner = LEADER(coll_gpu_ag_doubling_member(v ^ mask, rem));

        coll_gpu_ag_doubling_offer(pr, partner, step,
                                   NODE_AT(coll_gpu_ag_doubling_node_of(lo, rem)),
                                   NODE_AT(coll_gpu_ag_doubling_node_of(lo + mask, rem)));
        coll_gpu_ag_doubling_take(pr, partner, step,
                                  NODE_AT(coll_gpu_ag_doubling_node_of(plo, rem)),
                                  NODE_AT(coll_gpu_ag_doubling_node_of(plo + mask, rem)));
        coll_gpu_prims_fetch_complete(pr);
    }
    if (me < 2 * rem) {
        coll_gpu_ag_doubling_offer(pr, LEADER(me - 1), step, 0, total);
    }
#undef LEADER
#undef NODE_AT
}

/* Step 3: every block's chunk from the leader's layout (base) into the receive buffer, runs of
 * adjacent blocks (in both) in one copy; this rank's own block skipped in place. */
static void coll_gpu_ag_doubling_copy_out(coll_gpu_prims_t *pr, const char *base,
                                          const size_t *pos_off, size_t first, size_t per_step) {
    const coll_gpu_native_call_t *call = pr->call;
    const coll_gpu_team_t *team = pr->native->team;
    size_t esize = call->esize, run = 0;
    const char *from = NULL;
    char *to = NULL;

    for (int q = 0; q <= team->size; ++q) {
        size_t len = 0;
        const char *src = NULL;
        char *dst = NULL;

        if (q < team->size) {
            len = coll_gpu_prims_block_chunk(call->counts[q], first, per_step) * esize;
            src = base + pos_off[coll_gpu_team_node_order(team, q)];
            dst = (char *)call->rbuf + (call->displs[q] + first) * esize;
        }
        if ((q < team->size) && ((0 == len) || ((q == team->rank) && (NULL == call->sbuf)))) {
            continue;
        }
        if ((run > 0) && ((q == team->size) || (src != from + run) || (dst != to + run))) {
            coll_gpu_prims_copy(pr, to, from, run);
            run = 0;
        }
        if (0 == run) {
            from = src;
            to = dst;
        }
        run += len;
    }
}

int coll_gpu_allgatherv_hierarchical_doubling(struct ompi_communicator_t *comm,
                                              const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_team_t *team = native->team;
    const size_t *counts = call->counts, *displs = call->displs;
    int rank = team->rank, leader = coll_gpu_team_node_rank(team, team->node, 0);
    size_t esize = call->esize, largest = 0, per_step = native->half / ((size_t)team->size * esize);
    size_t *pos_off = native->send_displs; /* (the alltoalls' work array; free here) */
    const char *own = (const char *)call->rbuf + displs[rank] * esize;
    coll_gpu_prims_t pr;

    for (int q = 0; q < team->size; ++q) {
        largest = (counts[q] > largest) ? counts[q] : largest;
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, largest, per_step);) {
        size_t total = coll_gpu_ag_doubling_layout(team, counts, c.first, per_step, esize, pos_off);
        size_t n = coll_gpu_prims_block_chunk(counts[rank], c.first, per_step) * esize;
        const char *in = ((NULL != call->sbuf) ? (const char *)call->sbuf : own) + c.first * esize;
        char *mine = coll_gpu_prims_mine(&pr, c.step);

        /* 1. the node's chunks to the leader's half */
        if (rank != leader) {
            coll_gpu_prims_copy(&pr, mine, in, n);
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_READY);
        } else {
            coll_gpu_prims_copy(&pr, mine + pos_off[coll_gpu_team_node_order(team, rank)], in, n);
            for (int l = 1; l < team->local_size; ++l) {
                int q = team->local_ranks[l];

                coll_gpu_prims_wait(&pr, q, c.step, COLL_GPU_PHASE_READY);
                coll_gpu_prims_copy(&pr, mine + pos_off[coll_gpu_team_node_order(team, q)],
                                    coll_gpu_prims_theirs(&pr, q, c.step),
                                    coll_gpu_prims_block_chunk(counts[q], c.first, per_step) *
                                        esize);
            }
            coll_gpu_prims_sync(&pr);
            /* 2. between the leaders */
            if (team->nnodes > 1) {
                coll_gpu_ag_doubling_between_nodes(&pr, c.step, pos_off, total);
            }
            /* 3. to the node */
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_FINAL);
        }
        if (rank != leader) {
            coll_gpu_prims_wait(&pr, leader, c.step, COLL_GPU_PHASE_FINAL);
        }
        coll_gpu_ag_doubling_copy_out(
            &pr, (rank == leader) ? mine : coll_gpu_prims_theirs(&pr, leader, c.step), pos_off,
            c.first, per_step);
        /* the reads of the leader's half done before this rank's READY of the next chunk */
        coll_gpu_prims_sync(&pr);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_allgather_hierarchical_doubling(struct ompi_communicator_t *comm,
                                             const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = coll_gpu_prims_uniform_blocks(call);

    return coll_gpu_allgatherv_hierarchical_doubling(comm, &blocks);
}
