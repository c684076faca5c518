/*
 * MPI_Bcast, pipelined: per step, the root copies chunk k into its scratch half (parity k),
 * and once every rank announced step k, every other rank fetches chunk k out of the root's
 * scratch: a copy from a peer of its node, a get from another node's.  A non-root announces step k
 * after its reads of chunk k - 1 completed, so the root writes chunk k + 1 into the other half
 * while chunk k is read, and chunk k + 2 reuses the half of chunk k only after every rank finished
 * reading it.  Every remote rank gets from the root itself (no relay through its node).
 */
#include "coll_gpu_native.h"

int coll_gpu_bcast_pipelined(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                             void *buf, size_t count, int root) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    bool is_root = (native->team->rank == root);
    size_t esize = call->esize, per_step = native->half / esize;
    accel_status_t astatus = ACCEL_OK;
    shmem_status_t status = SHMEM_OK;

    for (size_t first = 0; first < count; first += per_step) {
        size_t n = (count - first < per_step) ? count - first : per_step;
        uint64_t step = ++native->step;
        char *data = (char *)buf + first * esize;

        if (is_root && (ACCEL_OK == astatus)) {
            astatus = mem->copy(coll_gpu_native_mine(native, call->kind, step), data, n * esize,
                                call->stream);
        }
        if (is_root && (ACCEL_OK == astatus) && (native->team->nnodes > 1)) {
            astatus = coll_gpu_native_publish(native, call->kind, step, 0, n * esize, call->stream);
        }
        /* the root's chunk landed; a non-root's reads of the previous chunk completed */
        status = coll_gpu_native_announce(call, step, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        if (!is_root && (ACCEL_OK == astatus)) {
            astatus = coll_gpu_native_fetch(native, call->kind, root, step, 0, data, n * esize,
                                            call->stream, &status);
            if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                goto err_transport;
            }
        }
    }
    return coll_gpu_native_finish(call, comm, SHMEM_OK, astatus);

err_transport:
    return coll_gpu_native_finish(call, comm, status, astatus);
}
