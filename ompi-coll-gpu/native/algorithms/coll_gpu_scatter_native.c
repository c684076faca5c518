/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Scatter, direct: per step, the root copies its chunk of every other rank's block into its
 * scratch half (rank p's at slot p, or p - 1 past the root: one copy for the ranks before it
 * and one for those after, 2D where the chunk is less than a block); once every rank announced the
 * step, every other rank fetches its chunk out of the root's scratch (a copy on the root's
 * node, a get from another node) into its receive buffer, and the root
 * copies its own block's chunk from its send buffer (in place: it stays there).  A non-root
 * announces a step after its read of the previous one completed, so the root writes the next
 * chunks into the other half while these are read.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

int coll_gpu_scatter_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    int size = call->native->team->size, rank = call->native->team->rank, root = call->root;
    size_t esize = call->esize, slots = (size > 1) ? (size_t)size - 1 : 1;
    size_t per_step = call->native->half / (slots * esize);
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, per_step);) {
        size_t len = c.n * esize;
        coll_gpu_prims_run_t run = {NULL, NULL, 0, 0, 0, 0};

        /* the chunks lie at regular strides on both sides: a copy or two (coll_gpu_run.h) */
        for (int p = 0; (rank == root) && (p < size); ++p) {
            if (p != rank) {
                coll_gpu_prims_run_add(
                    &pr, &run, coll_gpu_prims_mine(&pr, c.step) + (size_t)(p - (p > root)) * len,
                    (const char *)call->sbuf + ((size_t)p * call->count + c.first) * esize, len);
            }
        }
        coll_gpu_prims_run_flush(&pr, &run);
        if ((rank == root) && (call->native->team->nnodes > 1)) {
            coll_gpu_prims_publish(&pr, c.step, 0, (size_t)(size - 1) * len);
        }
        /* the root's chunks landed; a non-root's read of the previous step completed */
        coll_gpu_prims_announce(&pr, c.step);
        if (rank != root) {
            coll_gpu_prims_fetch(&pr, root, c.step, (size_t)(rank - (rank > root)) * len,
                                 (char *)call->rbuf + c.first * esize, len);
        } else if (NULL != call->rbuf) {
            coll_gpu_prims_copy(
                &pr, (char *)call->rbuf + c.first * esize,
                (const char *)call->sbuf + ((size_t)rank * call->count + c.first) * esize, len);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}
