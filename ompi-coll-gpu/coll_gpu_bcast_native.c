/*
 * MPI_Bcast, pipelined: per step, the root copies chunk k into its scratch half (parity k) and
 * announces it; every other rank copies it out of the root's scratch once announced.  Every
 * rank announces every step (the non-roots: their reads of the previous step completed), and
 * the root writes chunk k + 1 into the other half as soon as every rank announced step k, so
 * the writing of chunk k + 1 overlaps the reading of chunk k; chunk k + 2 reuses the half of
 * chunk k only after every rank announced step k + 1, that is finished reading chunk k.
 */
#include "coll_gpu_native.h"

int coll_gpu_bcast_pipelined(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                             void *buf, size_t count, int root) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    bool is_root = (native->team->rank == root);
    size_t esize = call->esize, per_step = native->half / esize;
    accel_status_t astatus = ACCEL_OK;
    shmem_status_t status;

    for (size_t first = 0; first < count; first += per_step) {
        size_t n = (count - first < per_step) ? count - first : per_step;
        uint64_t step = ++native->step;
        char *data = (char *)buf + first * esize;

        if (is_root && (ACCEL_OK == astatus)) {
            astatus = mem->copy(coll_gpu_native_mine(native, call->kind, step), data, n * esize,
                                call->stream);
        }
        /* the root's chunk landed; a non-root's reads of the previous chunk completed */
        if (ACCEL_OK == astatus) {
            astatus = mem->synchronize(call->stream);
        }
        status = coll_gpu_native_signal_all(native, step, COLL_GPU_PHASE_READY);
        if (SHMEM_OK == status) {
            status = coll_gpu_native_wait_all(native, step, COLL_GPU_PHASE_READY);
        }
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        if (!is_root && (ACCEL_OK == astatus)) {
            astatus = mem->copy(data, coll_gpu_native_theirs(native, call->kind, root, step),
                                n * esize, call->stream);
        }
    }
    if (ACCEL_OK == astatus) {
        astatus = mem->synchronize(call->stream);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != astatus)) {
        return coll_gpu_accel_failed(astatus, call->mpi_call, comm);
    }
    return OMPI_SUCCESS;

err_transport:
    (void)mem->synchronize(call->stream);
    return coll_gpu_native_transport_failed(native, status, call->mpi_call, comm);
}
