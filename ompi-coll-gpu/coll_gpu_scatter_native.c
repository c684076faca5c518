/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Scatter, direct: per step, the root copies its chunk of every other rank's block into its
 * scratch half (rank p's at slot p, or p - 1 past the root); once every rank announced the
 * step, every other rank fetches its chunk out of the root's scratch (a copy on the root's
 * node, a get from another node) into its receive buffer, and the root
 * copies its own block's chunk from its send buffer (in place: it stays there).  A non-root
 * announces a step after its read of the previous one completed, so the root writes the next
 * chunks into the other half while these are read.
 */
#include "coll_gpu_native.h"

int coll_gpu_scatter_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    const void *sbuf = call->sbuf;
    void *rbuf = call->rbuf;
    size_t count = call->count;
    int root = call->root;
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    int size = native->team->size, rank = native->team->rank;
    bool is_root = (rank == root);
    size_t esize = call->esize, slots = (size > 1) ? (size_t)size - 1 : 1;
    size_t per_step = native->half / (slots * esize);
    accel_status_t astatus = call->entry_status;
    shmem_status_t status = SHMEM_OK;

    for (size_t first = 0; first < count; first += per_step) {
        size_t n = (count - first < per_step) ? count - first : per_step;
        uint64_t step = ++native->step;
        char *mine = coll_gpu_native_mine(native, call->kind, step);

        for (int p = 0; is_root && (p < size) && (ACCEL_OK == astatus); ++p) {
            if (p != rank) {
                astatus = mem->copy(mine + (size_t)(p - (p > root)) * n * esize,
                                    (const char *)sbuf + ((size_t)p * count + first) * esize,
                                    n * esize, call->stream);
            }
        }
        if (is_root && (ACCEL_OK == astatus) && (native->team->nnodes > 1)) {
            astatus = coll_gpu_native_publish(native, call->kind, step, 0,
                                              (size_t)(size - 1) * n * esize, call->stream);
        }
        /* the root's chunks landed; a non-root's read of the previous step completed */
        status = coll_gpu_native_announce(call, step, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        if (ACCEL_OK != astatus) {
            continue;
        }
        if (!is_root) {
            astatus = coll_gpu_native_fetch(
                native, call->kind, root, step, (size_t)(rank - (rank > root)) * n * esize,
                (char *)rbuf + first * esize, n * esize, call->stream, &status);
            if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                goto err_transport;
            }
        } else if (NULL != rbuf) {
            astatus = mem->copy((char *)rbuf + first * esize,
                                (const char *)sbuf + ((size_t)rank * count + first) * esize,
                                n * esize, call->stream);
        }
    }
    return coll_gpu_native_finish(call, comm, SHMEM_OK, astatus);

err_transport:
    return coll_gpu_native_finish(call, comm, status, astatus);
}
