/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather(v), hierarchical (nodes of several ranks): every block crosses to each other node
 * once, the other nodes' chunks shared out among the node's ranks (the i-th goes to local rank
 * i mod local_size), which tell their node GATHERED.  The same slots on every rank: 1 + the most
 * chunks any rank fetches.  docs/collectives.md, "Allgather and reduce_scatter across nodes".
 * Only copies: the bits are direct's.
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
