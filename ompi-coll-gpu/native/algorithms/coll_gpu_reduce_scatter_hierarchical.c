/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter(_block), hierarchical (nodes of several ranks): each node sends one partial
 * of each other node's block, made by the local rank the block is shared out to; every owner
 * reduces the nnodes partials of its block in node order.  docs/collectives.md, "Allgather and
 * reduce_scatter across nodes".
 *
 * Scratch half: [inputs: size blocks][partials: the most any rank makes][fetched partials:
 * nnodes][own partial], per_step elements each, alike on every rank.  MPI_IN_PLACE: the input is
 * rbuf, copied into the scratch in the step that reads it; the result chunk of step s covers only
 * elements of steps up to s, already copied.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

static size_t coll_gpu_rs_hier_slots(const coll_gpu_team_t *team) {
    return (size_t)team->size + coll_gpu_team_remote_share(team) + (size_t)team->nnodes + 1;
}

bool coll_gpu_reduce_scatter_hierarchical_fits(const coll_gpu_native_t *native, size_t esize) {
    return coll_gpu_rs_hier_slots(native->team) * esize <= native->half;
}

/* Where node j keeps its partial of block b (b not on node j): the rank that makes it and its
 * place among that rank's partials. */
static void coll_gpu_rs_hier_holder(const coll_gpu_team_t *team, int j, int b, int *holder,
                                    size_t *slot) {
    int before = 0; /* node j's ranks before b */

    while ((before < team->node_sizes[j]) && (coll_gpu_team_node_rank(team, j, before) < b)) {
        ++before;
    }
    /* b is the (b - before)-th rank off node j */
    *holder = coll_gpu_team_node_rank(team, j, (b - before) % team->node_sizes[j]);
    *slot = (size_t)((b - before) / team->node_sizes[j]);
}

int coll_gpu_reduce_scatter_hierarchical(struct ompi_communicator_t *comm,
                                         const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    coll_gpu_team_t *team = native->team;
    /* counts may be native->counts: the displacements go to native->displs; the holders of
     * this rank's block on every node to the send-side arrays, which reductions do not use */
    const size_t *counts = call->counts;
    size_t *displs = native->displs, *slot_of = native->send_displs;
    size_t *holder_of = native->send_counts;
    const void **srcs = native->srcs;
    int size = team->size, rank = team->rank, nlocal = team->local_size;
    size_t esize = call->esize, largest = 0, nparts = coll_gpu_team_remote_share(team);
    size_t per_step = native->half / (coll_gpu_rs_hier_slots(team) * esize);
    size_t off_parts = (size_t)size, off_fetched = off_parts + nparts;
    size_t off_own = off_fetched + (size_t)team->nnodes;
    coll_gpu_prims_t pr;

    for (int b = 0; b < size; ++b) {
        displs[b] = (0 == b) ? 0 : displs[b - 1] + counts[b - 1];
        largest = (counts[b] > largest) ? counts[b] : largest;
    }
    for (int j = 0; j < team->nnodes; ++j) {
        int holder = rank;

        slot_of[j] = 0;
        if (j != team->node) {
            coll_gpu_rs_hier_holder(team, j, rank, &holder, &slot_of[j]);
            /* the slot of the partial at the holder (a node of one rank: its input) */
            slot_of[j] = (1 == team->node_sizes[j]) ? (size_t)rank : off_parts + slot_of[j];
        }
        holder_of[j] = (size_t)holder;
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, largest, per_step);) {
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        size_t bytes = per_step * esize,
               n = coll_gpu_prims_block_chunk(counts[rank], c.first, per_step);
        const void *own;
        int i, nsrcs;

        for (int b = 0; b < size; ++b) {
            coll_gpu_prims_copy(&pr, mine + (size_t)b * bytes,
                                (const char *)call->sbuf + (displs[b] + c.first) * esize,
                                coll_gpu_prims_block_chunk(counts[b], c.first, per_step) * esize);
        }
        /* the inputs landed and every rank's reads of step - 2 completed */
        coll_gpu_prims_announce(&pr, c.step);

        /* this rank's share of the other nodes' blocks: the node's partial of each */
        i = 0;
        for (int b = 0; b < size; ++b) {
            size_t nb = coll_gpu_prims_block_chunk(counts[b], c.first, per_step);
            char *part;

            if (coll_gpu_native_is_local(native, b)) {
                continue;
            }
            if (i++ % nlocal != team->local_rank) {
                continue;
            }
            /* (a node of one rank: the partial is the input) */
            part =
                mine + ((1 == nlocal) ? (size_t)b : off_parts + (size_t)((i - 1) / nlocal)) * bytes;
            if (nlocal > 1) {
                coll_gpu_prims_reduce_node(&pr, part, c.step, (size_t)b * bytes, nb);
            }
            coll_gpu_prims_publish(&pr, c.step, (size_t)(part - mine), nb * esize);
        }
        /* the partials are reduced (and published) before their owners are told */
        coll_gpu_prims_sync(&pr);
        i = 0;
        for (int b = 0; b < size; ++b) {
            if (!coll_gpu_native_is_local(native, b) && (i++ % nlocal == team->local_rank)) {
                coll_gpu_prims_signal(&pr, b, c.step, COLL_GPU_PHASE_REDUCED);
            }
        }

        /* this rank's block: its node's partial, then every node's in node order */
        if (1 == team->nnodes) {
            coll_gpu_prims_reduce_node(&pr, (char *)call->rbuf + c.first * esize, c.step,
                                       (size_t)rank * bytes, n);
            continue;
        }
        own = mine + ((1 == nlocal) ? (size_t)rank : off_own) * bytes;
        if (nlocal > 1) {
            coll_gpu_prims_reduce_node(&pr, mine + off_own * bytes, c.step, (size_t)rank * bytes,
                                       n);
        }
        nsrcs = 0;
        for (int j = 0; j < team->nnodes; ++j) {
            char *dst = mine + (off_fetched + (size_t)j) * bytes;

            if (j == team->node) {
                srcs[nsrcs++] = own;
                continue;
            }
            coll_gpu_prims_wait(&pr, (int)holder_of[j], c.step, COLL_GPU_PHASE_REDUCED);
            coll_gpu_prims_fetch(&pr, (int)holder_of[j], c.step, slot_of[j] * bytes, dst,
                                 n * esize);
            srcs[nsrcs++] = dst;
        }
        /* the other nodes' partials have arrived */
        coll_gpu_prims_fetch_complete(&pr);
        coll_gpu_prims_reduce(&pr, (char *)call->rbuf + c.first * esize, srcs, nsrcs, n);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_reduce_scatter_block_hierarchical(struct ompi_communicator_t *comm,
                                               const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = coll_gpu_prims_uniform_blocks(call);

    return coll_gpu_reduce_scatter_hierarchical(comm, &blocks);
}
