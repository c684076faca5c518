/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter(_block), hierarchical_halving (small messages across many nodes): allgather's
 * hierarchical_doubling run backwards, recursive halving between the node leaders
 * (coll_gpu_prims_fold) on the node-order layout.  Protocol, reuse and the reduction order:
 * docs/many-nodes.md, "Small reduce_scatter across many nodes".
 *
 * MPI_IN_PLACE: the input is rbuf; the result chunk [first, first + n) of step s covers only
 * elements of chunks up to s, copied in at the start of their step.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

bool coll_gpu_reduce_scatter_halving_fits(const coll_gpu_native_t *native, size_t esize) {
    return 2 * (size_t)native->team->size * esize <= native->half;
}

/* Waits for peer's READY of step, gets [from, to) of its work area (at work) into the same place
 * of my landing area and reduces it into the same place of my work: (peer's op mine) when
 * theirs_first, else (mine op peer's). */
static void coll_gpu_rs_halving_reduce_from(coll_gpu_prims_t *pr, int peer, uint64_t step,
                                            size_t work, size_t from, size_t to,
                                            bool theirs_first) {
    char *landing = coll_gpu_prims_mine(pr, step) + from, *own = landing + work;
    const void *srcs[2] = {theirs_first ? landing : own, theirs_first ? own : landing};

    coll_gpu_prims_take(pr, peer, step, work + from, landing, to - from);
    coll_gpu_prims_fetch_complete(pr);
    coll_gpu_prims_reduce(pr, own, srcs, 2, (to - from) / pr->call->esize);
}

/* Step 2 on a leader: its node's partial in its work area (at work). */
static void coll_gpu_rs_halving_between_nodes(coll_gpu_prims_t *pr, uint64_t step,
                                              const size_t *pos_off, size_t total, size_t work) {
    const coll_gpu_team_t *team = pr->native->team;
    coll_gpu_prims_fold_t f = coll_gpu_prims_fold(team->nnodes);
    int me = team->node, v = coll_gpu_prims_fold_virtual(&f, me);
    char *mine = coll_gpu_prims_mine(pr, step);

#define NODE_AT(j) coll_gpu_prims_node_at(team, pos_off, total, (j))
#define LEADER(j) coll_gpu_team_node_rank(team, (j), 0)
    if (coll_gpu_prims_fold_paired(&f, me) && (v < 0)) {
        /* an extra: my partial to my partner, my node's run of the result back at the end */
        coll_gpu_prims_offer(pr, LEADER(me + 1), step, work, total);
        coll_gpu_prims_take(pr, LEADER(me + 1), step, work + NODE_AT(me), mine + work + NODE_AT(me),
                            NODE_AT(me + 1) - NODE_AT(me));
        coll_gpu_prims_fetch_complete(pr);
        return;
    }
    if (coll_gpu_prims_fold_paired(&f, me)) {
        /* the extra's partial first (the lower node) */
        coll_gpu_rs_halving_reduce_from(pr, LEADER(me - 1), step, work, 0, total, true);
    }
    for (int mask = f.p / 2; mask >= 1; mask /= 2) {
        int lo = v & ~(2 * mask - 1), keep = lo + (v & mask), give = lo + ((v ^ mask) & mask);
        int partner = LEADER(coll_gpu_prims_fold_member(&f, v ^ mask));
        size_t give_at = NODE_AT(coll_gpu_prims_fold_first(&f, give));

        coll_gpu_prims_offer(pr, partner, step, work + give_at,
                             NODE_AT(coll_gpu_prims_fold_first(&f, give + mask)) - give_at);
        coll_gpu_rs_halving_reduce_from(
            pr, partner, step, work, NODE_AT(coll_gpu_prims_fold_first(&f, keep)),
            NODE_AT(coll_gpu_prims_fold_first(&f, keep + mask)), give < keep);
    }
    if (coll_gpu_prims_fold_paired(&f, me)) {
        coll_gpu_prims_offer(pr, LEADER(me - 1), step, work + NODE_AT(me - 1),
                             NODE_AT(me) - NODE_AT(me - 1));
    }
#undef LEADER
#undef NODE_AT
}

int coll_gpu_reduce_scatter_hierarchical_halving(struct ompi_communicator_t *comm,
                                                 const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_team_t *team = native->team;
    /* counts may be native->counts: the displacements go to native->displs, the layout to a
     * send-side array (the alltoalls' work arrays; free here) */
    const size_t *counts = call->counts;
    size_t *displs = native->displs, *pos_off = native->send_displs;
    int rank = team->rank, leader = coll_gpu_team_node_rank(team, team->node, 0);
    size_t esize = call->esize, largest = 0;
    size_t per_step = native->half / (2 * (size_t)team->size * esize);
    coll_gpu_prims_t pr;

    for (int b = 0; b < team->size; ++b) {
        displs[b] = (0 == b) ? 0 : displs[b - 1] + counts[b - 1];
        largest = (counts[b] > largest) ? counts[b] : largest;
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, largest, per_step);) {
        size_t total = coll_gpu_prims_node_layout(team, counts, c.first, per_step, esize, pos_off);
        size_t work = total; /* the work area follows the landing area */
        size_t n = coll_gpu_prims_block_chunk(counts[rank], c.first, per_step);
        char *mine = coll_gpu_prims_mine(&pr, c.step), *in = (char *)call->sbuf;

        /* 1. the node's partial in the leader's work area */
        coll_gpu_prims_node_layout_copy(&pr, mine + ((1 == team->local_size) ? work : 0), pos_off,
                                        in, counts, displs, c.first, per_step, -1, true);
        coll_gpu_prims_sync(&pr);
        if (rank != leader) {
            coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_READY);
            coll_gpu_prims_wait(&pr, leader, c.step, COLL_GPU_PHASE_FINAL);
            /* 3. my block's chunk from the leader's work area */
            coll_gpu_prims_copy(&pr, (char *)call->rbuf + c.first * esize,
                                coll_gpu_prims_theirs(&pr, leader, c.step) + work +
                                    pos_off[coll_gpu_team_node_order(team, rank)],
                                n * esize);
            /* the reads of the leader's half done before this rank's READY of the next chunk */
            coll_gpu_prims_sync(&pr);
            continue;
        }
        if (team->local_size > 1) {
            coll_gpu_prims_wait_node(&pr, c.step, COLL_GPU_PHASE_READY);
            coll_gpu_prims_reduce_node(&pr, mine + work, c.step, 0, total / esize);
            /* read before gets land there */
            coll_gpu_prims_sync(&pr);
        }
        /* 2. between the leaders */
        if (team->nnodes > 1) {
            coll_gpu_rs_halving_between_nodes(&pr, c.step, pos_off, total, work);
        }
        /* 3. to the node, and my own block */
        coll_gpu_prims_sync(&pr);
        coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_FINAL);
        coll_gpu_prims_copy(&pr, (char *)call->rbuf + c.first * esize,
                            mine + work + pos_off[coll_gpu_team_node_order(team, rank)], n * esize);
        coll_gpu_prims_sync(&pr);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_reduce_scatter_block_hierarchical_halving(struct ompi_communicator_t *comm,
                                                       const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = coll_gpu_prims_uniform_blocks(call);

    return coll_gpu_reduce_scatter_hierarchical_halving(comm, &blocks);
}
