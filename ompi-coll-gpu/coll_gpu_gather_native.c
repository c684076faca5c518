/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather, direct: per step, every rank but the root copies its block's chunk into its
 * scratch half; once every rank announced the step, the root fetches every peer's chunk straight
 * into its receive buffer (a copy from a peer of its node, a get from another node's) and copies
 * its own from its send buffer (in place: already there).  The root's reads complete before its
 * next announcement, after which their owners may reuse that half.
 */
#include "coll_gpu_native.h"

int coll_gpu_gather_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    const void *sbuf = call->sbuf;
    void *rbuf = call->rbuf;
    size_t count = call->count;
    int root = call->root;
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    int size = native->team->size, rank = native->team->rank;
    bool is_root = (rank == root);
    size_t esize = call->esize, per_step = native->half / esize;
    accel_status_t astatus = call->entry_status;
    shmem_status_t status = SHMEM_OK;

    for (size_t first = 0; first < count; first += per_step) {
        size_t n = (count - first < per_step) ? count - first : per_step;
        uint64_t step = ++native->step;
        const char *in = (NULL != sbuf) ? (const char *)sbuf + first * esize : NULL;

        if (!is_root && (ACCEL_OK == astatus)) {
            astatus = mem->copy(coll_gpu_native_mine(native, call->kind, step), in, n * esize,
                                call->stream);
        }
        if (!is_root && (ACCEL_OK == astatus) && !coll_gpu_native_is_local(native, root)) {
            astatus = coll_gpu_native_publish(native, call->kind, step, 0, n * esize, call->stream);
        }
        /* a non-root's chunk landed; the root's reads of the previous step completed */
        status = coll_gpu_native_announce(call, step, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        for (int p = 0; is_root && (p < size) && (ACCEL_OK == astatus); ++p) {
            char *out = (char *)rbuf + ((size_t)p * count + first) * esize;
            if (p != rank) {
                astatus = coll_gpu_native_fetch(native, call->kind, p, step, 0, out, n * esize,
                                                call->stream, &status);
                if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                    goto err_transport;
                }
            } else if (NULL != in) {
                astatus = mem->copy(out, in, n * esize, call->stream);
            }
        }
    }
    return coll_gpu_native_finish(call, comm, SHMEM_OK, astatus);

err_transport:
    return coll_gpu_native_finish(call, comm, status, astatus);
}
