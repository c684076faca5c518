/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter(_block), direct: per step every rank copies its chunk of every other rank's
 * block into its scratch half, announces, and reduces its own block's chunk from every peer in rank
 * order (another node's chunk first fetched into the staging area, the second part of the half):
 * allreduce's result block, bit for bit.  docs/collectives.md.
 *
 * MPI_IN_PLACE: the result goes to rbuf's first counts[rank] elements, where step s writes
 * elements no later step reads.  Rank 0 reduces its block in place (its own input is the first
 * input and the destination, which the reduction allows); another rank whose own input could
 * overlap what the same step writes reads it from a copy in its scratch.
 *
 * An accelerator error does not stop the signals: peers finish the call and every rank returns
 * the error at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

int coll_gpu_reduce_scatter_direct(struct ompi_communicator_t *comm,
                                   const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    /* counts may be native->counts: the displacements go to the other array */
    const size_t *counts = call->counts;
    const void **srcs = native->srcs;
    size_t *displs = native->displs;
    int size = native->team->size, rank = native->team->rank;
    /* the staging area of other nodes' chunks: as many places as blocks, so that every rank
     * lays its scratch out alike whatever the size of its node */
    size_t slots = (size_t)size * ((native->team->nnodes > 1) ? 2 : 1);
    size_t esize = call->esize, per_step = native->half / (slots * esize), largest = 0;
    bool copy_own;
    coll_gpu_prims_t pr;

    for (int b = 0; b < size; ++b) {
        displs[b] = (0 == b) ? 0 : displs[b - 1] + counts[b - 1];
        largest = (counts[b] > largest) ? counts[b] : largest;
    }
    /* in place, this rank's input chunk [displs + first, + n) and the result chunk
     * [first, + n) it writes overlap unless they coincide or lie a whole chunk apart */
    copy_own = (call->sbuf == call->rbuf) && (0 != rank) && (displs[rank] < per_step);
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, largest, per_step);) {
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        char *staging = mine + (size_t)size * per_step * esize;
        size_t n = coll_gpu_prims_block_chunk(counts[rank], c.first, per_step);

        for (int b = 0; b < size; ++b) {
            size_t nb = coll_gpu_prims_block_chunk(counts[b], c.first, per_step);
            if ((b != rank) || copy_own) {
                coll_gpu_prims_copy(&pr, mine + (size_t)b * per_step * esize,
                                    (const char *)call->sbuf + (displs[b] + c.first) * esize,
                                    nb * esize);
            }
        }
        if (native->team->nnodes > 1) {
            coll_gpu_prims_publish(&pr, c.step, 0, (size_t)size * per_step * esize);
        }
        /* the copies have landed and the previous step's reads are complete before peers are
         * told */
        coll_gpu_prims_announce(&pr, c.step);
        if (0 == n) {
            continue;
        }
        for (int p = 0; p < size; ++p) {
            size_t offset = (size_t)rank * per_step * esize;

            if (p == rank) {
                srcs[p] = copy_own ? mine + offset
                                   : (const char *)call->sbuf + (displs[rank] + c.first) * esize;
            } else if (coll_gpu_native_is_local(native, p)) {
                srcs[p] = coll_gpu_prims_theirs(&pr, p, c.step) + offset;
            } else {
                char *slot = staging + (size_t)p * per_step * esize;

                coll_gpu_prims_fetch(&pr, p, c.step, offset, slot, n * esize);
                srcs[p] = slot;
            }
        }
        /* the other nodes' chunks have arrived */
        coll_gpu_prims_fetch_complete(&pr);
        coll_gpu_prims_reduce(&pr, (char *)call->rbuf + c.first * esize, srcs, size, n);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_reduce_scatter_block_direct(struct ompi_communicator_t *comm,
                                         const coll_gpu_native_call_t *call) {
    /* (the displacements it computes itself, from the counts) */
    coll_gpu_native_call_t blocks = coll_gpu_prims_uniform_blocks(call);

    return coll_gpu_reduce_scatter_direct(comm, &blocks);
}
