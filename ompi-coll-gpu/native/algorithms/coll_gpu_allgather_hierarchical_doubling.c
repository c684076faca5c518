/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather(v), hierarchical_doubling (small messages across many nodes): the node's chunks
 * gathered by its leader, recursive doubling between the leaders on node indices (extras paired
 * first), the leader's half copied out by its node; a scratch half in node order so that any run
 * of nodes is one run of bytes.  Protocol and reuse: docs/many-nodes.md, "Small allgather across
 * many nodes".  Only copies: the bits are direct's.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

bool coll_gpu_allgather_doubling_fits(const coll_gpu_native_t *native, size_t esize) {
    return (size_t)native->team->size * esize <= native->half;
}

/* Step 2 on a leader: the whole step in its half.  Every leader takes it, node indices the
 * members. */
static void coll_gpu_ag_doubling_between_nodes(coll_gpu_prims_t *pr, uint64_t step,
                                               const size_t *pos_off, size_t total) {
    const coll_gpu_team_t *team = pr->native->team;
    coll_gpu_prims_fold_t f = coll_gpu_prims_fold(team->nnodes);
    int me = team->node, v = coll_gpu_prims_fold_virtual(&f, me);

#define NODE_AT(j) coll_gpu_prims_node_at(team, pos_off, total, (j))
#define LEADER(j) coll_gpu_team_node_rank(team, (j), 0)
/* [from, to) of my half for peer; peer's [from, to) into the same place of mine */
#define OFFER(peer, from, to) coll_gpu_prims_offer(pr, (peer), step, (from), (to) - (from))
#define TAKE(peer, from, to)                                                                       \
    coll_gpu_prims_take(pr, (peer), step, (from), coll_gpu_prims_mine(pr, step) + (from),          \
                        (to) - (from))
    if (coll_gpu_prims_fold_paired(&f, me)) {
        if (v < 0) {
            /* an extra: hand my node's run over, get everything else back at the end */
            OFFER(LEADER(me + 1), NODE_AT(me), NODE_AT(me + 1));
            TAKE(LEADER(me + 1), 0, NODE_AT(me));
            coll_gpu_prims_fetch(pr, LEADER(me + 1), step, NODE_AT(me + 1),
                                 coll_gpu_prims_mine(pr, step) + NODE_AT(me + 1),
                                 total - NODE_AT(me + 1));
            coll_gpu_prims_fetch_complete(pr);
            return;
        }
        TAKE(LEADER(me - 1), NODE_AT(me - 1), NODE_AT(me));
        coll_gpu_prims_fetch_complete(pr);
    }
    for (int mask = 1; mask < f.p; mask *= 2) {
        int lo = v & ~(mask - 1), plo = (v ^ mask) & ~(mask - 1);
        int partner = LEADER(coll_gpu_prims_fold_member(&f, v ^ mask));

        OFFER(partner, NODE_AT(coll_gpu_prims_fold_first(&f, lo)),
              NODE_AT(coll_gpu_prims_fold_first(&f, lo + mask)));
        TAKE(partner, NODE_AT(coll_gpu_prims_fold_first(&f, plo)),
             NODE_AT(coll_gpu_prims_fold_first(&f, plo + mask)));
        coll_gpu_prims_fetch_complete(pr);
    }
    if (coll_gpu_prims_fold_paired(&f, me)) {
        OFFER(LEADER(me - 1), 0, total);
    }
#undef TAKE
#undef OFFER
#undef LEADER
#undef NODE_AT
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
        size_t total = coll_gpu_prims_node_layout(team, counts, c.first, per_step, esize, pos_off);
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
        /* 3. every block's chunk from the leader's half (this rank's own stays in place) */
        coll_gpu_prims_node_layout_copy(
            &pr, (rank == leader) ? mine : coll_gpu_prims_theirs(&pr, leader, c.step), pos_off,
            (char *)call->rbuf, counts, displs, c.first, per_step, (NULL == call->sbuf) ? rank : -1,
            false);
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
