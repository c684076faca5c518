/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather, direct: per step, every rank but the root copies its block's chunk into its
 * scratch half; once every rank announced the step, the root fetches every peer's chunk straight
 * into its receive buffer (a copy from a peer of its node, a get from another node's) and copies
 * its own from its send buffer (in place: already there).  The root's reads complete before its
 * next announcement, after which their owners may reuse that half.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

int coll_gpu_gather_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    int size = call->native->team->size, rank = call->native->team->rank, root = call->root;
    size_t esize = call->esize, per_step = call->native->half / esize;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, per_step);) {
        const char *in = (NULL != call->sbuf) ? (const char *)call->sbuf + c.first * esize : NULL;

        if (rank != root) {
            coll_gpu_prims_copy(&pr, coll_gpu_prims_mine(&pr, c.step), in, c.n * esize);
            if (!coll_gpu_native_is_local(call->native, root)) {
                coll_gpu_prims_publish(&pr, c.step, 0, c.n * esize);
            }
        }
        /* a non-root's chunk landed; the root's reads of the previous step completed */
        coll_gpu_prims_announce(&pr, c.step);
        for (int p = 0; (rank == root) && (p < size); ++p) {
            char *out = (char *)call->rbuf + ((size_t)p * call->count + c.first) * esize;

            if (p != rank) {
                coll_gpu_prims_fetch(&pr, p, c.step, 0, out, c.n * esize);
            } else if (NULL != in) {
                coll_gpu_prims_copy(&pr, out, in, c.n * esize);
            }
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}
