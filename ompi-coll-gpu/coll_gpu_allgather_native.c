/*
 * MPI_Allgather, direct: per step, every rank copies its block's chunk into its scratch half,
 * announces it, and once every peer has, copies every peer's chunk out of the peer's scratch
 * into its receive buffer (its own straight from its send buffer; with MPI_IN_PLACE it is
 * already there).  The reads of a step complete before the next step's announcement, after
 * which their owner may reuse that half.
 */
#include "coll_gpu_native.h"

int coll_gpu_allgather_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                              const void *sbuf, void *rbuf, size_t count) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    int size = native->team->size, rank = native->team->rank;
    size_t esize = call->esize, per_step = native->half / esize;
    accel_status_t astatus = ACCEL_OK;
    shmem_status_t status;

    for (size_t first = 0; first < count; first += per_step) {
        size_t n = (count - first < per_step) ? count - first : per_step;
        uint64_t step = ++native->step;
        const char *in = (NULL != sbuf)
                             ? (const char *)sbuf + first * esize
                             : (const char *)rbuf + ((size_t)rank * count + first) * esize;

        if (ACCEL_OK == astatus) {
            astatus = mem->copy(coll_gpu_native_mine(native, call->kind, step), in, n * esize,
                                call->stream);
        }
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
        for (int p = 0; (p < size) && (ACCEL_OK == astatus); ++p) {
            char *out = (char *)rbuf + ((size_t)p * count + first) * esize;
            if (p != rank) {
                astatus = mem->copy(out, coll_gpu_native_theirs(native, call->kind, p, step),
                                    n * esize, call->stream);
            } else if (NULL != sbuf) {
                astatus = mem->copy(out, in, n * esize, call->stream);
            }
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
