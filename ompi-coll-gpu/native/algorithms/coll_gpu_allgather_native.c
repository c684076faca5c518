/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather(v), direct: per step, every rank copies a chunk of its block into its scratch
 * half, announces it, and once every peer has, fetches every peer's chunk out of the peer's
 * scratch into its receive buffer (coll_gpu_native_fetch: a copy from a peer of this node, a
 * get from another node's); its own chunk comes straight from its send buffer (with
 * MPI_IN_PLACE it is already there).  The blocks may differ in length (allgatherv): step s
 * carries elements [s * per_step, (s + 1) * per_step) of every block, a block already
 * exhausted contributes nothing, and the largest block, which every rank knows, sets the
 * number of steps.  The fetches of a step complete before the next step's announcement, after
 * which their owners may reuse that half.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

int coll_gpu_allgatherv_direct(struct ompi_communicator_t *comm,
                               const coll_gpu_native_call_t *call) {
    const size_t *counts = call->counts, *displs = call->displs;
    int size = call->native->team->size, rank = call->native->team->rank;
    size_t esize = call->esize, per_step = call->native->half / esize, largest = 0;
    char *own = (char *)call->rbuf + displs[rank] * esize;
    coll_gpu_prims_t pr;

    for (int p = 0; p < size; ++p) {
        largest = (counts[p] > largest) ? counts[p] : largest;
    }
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, largest, per_step);) {
        size_t n = coll_gpu_prims_block_chunk(counts[rank], c.first, per_step);
        const char *in = ((NULL != call->sbuf) ? (const char *)call->sbuf : own) + c.first * esize;

        coll_gpu_prims_copy(&pr, coll_gpu_prims_mine(&pr, c.step), in, n * esize);
        if (call->native->team->nnodes > 1) {
            coll_gpu_prims_publish(&pr, c.step, 0, n * esize);
        }
        /* the copy has landed and the previous step's fetches are complete: peers may read
         * this half and reuse theirs of the previous step */
        coll_gpu_prims_announce(&pr, c.step);
        for (int p = 0; p < size; ++p) {
            size_t np = coll_gpu_prims_block_chunk(counts[p], c.first, per_step);
            char *out = (char *)call->rbuf + (displs[p] + c.first) * esize;

            if (p != rank) {
                coll_gpu_prims_fetch(&pr, p, c.step, 0, out, np * esize);
            } else if (NULL != call->sbuf) {
                coll_gpu_prims_copy(&pr, out, in, np * esize);
            }
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_allgather_direct(struct ompi_communicator_t *comm,
                              const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = coll_gpu_prims_uniform_blocks(call);

    return coll_gpu_allgatherv_direct(comm, &blocks);
}
