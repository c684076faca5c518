/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter(_block), hierarchical (communicators spanning nodes with several ranks on
 * a node): each node sends one partial of each other node's block, where direct has every owner
 * fetch its block from every rank of the other nodes (a node's link carries local_size times
 * more).  Per step, elements [first, first + per_step) of every block:
 *   1. every rank copies its chunk of every block into its input area and announces the step;
 *   2. the blocks of the other nodes' ranks are shared out among the node's ranks as
 *      allgather's hierarchical shares its fetches: the i-th rank of another node (rank order,
 *      this node's ranks skipped) goes to local rank i mod local_size, which reduces the node's
 *      inputs of that block, in local rank order, into its partial slot 1 + i / local_size,
 *      then tells the block's owner (REDUCED of the step);
 *   3. every rank reduces its node's inputs of its own block into its own partial, fetches (a
 *      get) the other nodes' partials of its block, each from the rank that made it, and
 *      reduces the nnodes partials, in node order, into its receive buffer.
 * Per rank, nnodes - 1 partials come from other nodes per step; a node sends (size - local_size)
 * partials, one per block of the other nodes: the least a reduce-scatter can
 * (docs/algorithms.md, "Traffic between nodes").
 *
 * Determinism: every element is its node partials (each its node's inputs in local rank order)
 * reduced in node order, by its owner alone: the same bits on every rank and run, independent
 * of the chunk size, and hierarchical allreduce's order (not direct's rank order).
 *
 * Scratch half of a step: [inputs: size blocks][partials: the most any rank makes][fetched
 * partials: nnodes][own partial], per_step elements each, the same layout on every rank.  Reuse:
 * the half of step s is written again in step s + 2, after every rank announced s + 1, which each
 * does once its reads of step s (loads of this node's inputs, gets of partials) completed.
 *
 * MPI_IN_PLACE: the input is rbuf, copied into the scratch in the step that reads it; the result
 * chunk [first, + n) of step s covers only elements of steps up to s (block 0's chunk of step s,
 * earlier chunks of the other blocks), already copied.
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
