/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather(v), hierarchical (communicators spanning nodes with several ranks on a node):
 * every block crosses to each other node once, where direct has every rank of a node fetch
 * every other node's block (the node's link carries each block local_size times).  Per step,
 * elements [first, first + per_step) of every block:
 *   1. every rank copies its chunk into slot 0 of its scratch half, publishes it for the other
 *      nodes, and announces the step (READY to every rank);
 *   2. the other nodes' chunks are shared out among the node's ranks: the i-th rank of another
 *      node (in rank order, this node's ranks skipped) goes to local rank i mod local_size, which
 *      fetches it (a get) into slot 1 + i / local_size of its half, then tells the node's ranks
 *      (GATHERED of the step, to this node only);
 *   3. every rank copies every chunk into its receive buffer: its node's ranks' from their slot
 *      0, the other nodes' from the slot of the rank that fetched them.
 * Per rank, ceil((size - local_size) / local_size) chunks come from other nodes per step: the
 * node gets (size - local_size) chunks, the least any allgather can (docs/algorithms.md, "Traffic
 * between nodes"), spread over its ranks and their network interfaces.  The same slots on every
 * rank: 1 + the most chunks any rank of any node fetches, which sets per_step.
 *
 * Reuse of a half: a step's slots are written after the step's announcement, and the half of
 * step s + 2 only after every rank announced s + 1, which each does once its copies out of step
 * s (steps 2 and 3) completed.  GATHERED(s) lies between READY(s) and READY(s + 1) in the slot's
 * monotone values.  Only copies: the bits are direct's.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

/* Slots of a scratch half: this rank's chunk, then its share of the other nodes' chunks, as
 * many as the rank that takes the most has (the same on every rank). */
static size_t coll_gpu_allgather_hier_slots(const coll_gpu_team_t *team) {
    return 1 + coll_gpu_team_remote_share(team);
}

bool coll_gpu_allgather_hierarchical_fits(const coll_gpu_native_t *native, size_t esize) {
    return coll_gpu_allgather_hier_slots(native->team) * esize <= native->half;
}

int coll_gpu_allgatherv_hierarchical(struct ompi_communicator_t *comm,
                                     const coll_gpu_native_call_t *call) {
    const size_t *counts = call->counts, *displs = call->displs;
    coll_gpu_team_t *team = call->native->team;
    int size = team->size, rank = team->rank, nlocal = team->local_size;
    size_t esize = call->esize, largest = 0;
    size_t per_step = call->native->half / (coll_gpu_allgather_hier_slots(team) * esize);
    char *own = (char *)call->rbuf + displs[rank] * esize;
    coll_gpu_prims_t pr;

    for (int p = 0; p < size; ++p) {
        largest = (counts[p] > largest) ? counts[p] : largest;
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, largest, per_step);) {
        size_t n = coll_gpu_prims_block_chunk(counts[rank], c.first, per_step);
        const char *in = ((NULL != call->sbuf) ? (const char *)call->sbuf : own) + c.first * esize;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        int i;

        coll_gpu_prims_copy(&pr, mine, in, n * esize);
        if (team->nnodes > 1) {
            coll_gpu_prims_publish(&pr, c.step, 0, n * esize);
        }
        coll_gpu_prims_announce(&pr, c.step);

        /* this rank's share of the other nodes' chunks */
        i = 0;
        for (int p = 0; p < size; ++p) {
            if (coll_gpu_native_is_local(call->native, p)) {
                continue;
            }
            if (i % nlocal == team->local_rank) {
                coll_gpu_prims_fetch(
                    &pr, p, c.step, 0, mine + (size_t)(1 + i / nlocal) * per_step * esize,
                    coll_gpu_prims_block_chunk(counts[p], c.first, per_step) * esize);
            }
            ++i;
        }
        coll_gpu_prims_fetch_complete(&pr);
        coll_gpu_prims_signal_node(&pr, c.step, COLL_GPU_PHASE_GATHERED);
        coll_gpu_prims_wait_node(&pr, c.step, COLL_GPU_PHASE_GATHERED);

        /* every chunk to the receive buffer, from the slot it is in on this node */
        i = 0;
        for (int p = 0; p < size; ++p) {
            size_t np = coll_gpu_prims_block_chunk(counts[p], c.first, per_step);
            char *out = (char *)call->rbuf + (displs[p] + c.first) * esize;
            const char *from;

            if (coll_gpu_native_is_local(call->native, p)) {
                from = (p == rank) ? ((NULL != call->sbuf) ? in : NULL)
                                   : coll_gpu_prims_theirs(&pr, p, c.step);
            } else {
                int holder = team->local_ranks[i % nlocal];

                from = ((holder == rank) ? mine : coll_gpu_prims_theirs(&pr, holder, c.step)) +
                       (size_t)(1 + i / nlocal) * per_step * esize;
                ++i;
            }
            if (NULL != from) {
                coll_gpu_prims_copy(&pr, out, from, np * esize);
            }
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_allgather_hierarchical(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = coll_gpu_prims_uniform_blocks(call);

    return coll_gpu_allgatherv_hierarchical(comm, &blocks);
}
