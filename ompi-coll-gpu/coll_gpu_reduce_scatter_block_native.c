/*
 * MPI_Reduce_scatter_block, direct: per step, every rank copies its chunk of every other
 * rank's block into its scratch half (block b's chunk at b * chunk), announces it, and once
 * every peer has, reduces its own block's chunk from every peer's scratch (its own from its
 * send buffer), in rank order, into its receive buffer.  Every element is combined exactly as
 * the allreduce algorithms combine it (coll_gpu_native_reduce over the n inputs in rank
 * order): the result is allreduce's result block, bit for bit.
 *
 * MPI_IN_PLACE: the input is rbuf; the result goes to its first count elements.  Rank 0
 * reduces its block in place (the first input is the destination, which the reduction
 * allows), other ranks read their block past the first count elements, which are written
 * only after the block 0 chunks they hold were copied into the scratch.
 *
 * An accelerator error does not stop the signals: peers finish the call and the error is
 * returned at the end.
 */
#include "coll_gpu_native.h"

int coll_gpu_reduce_scatter_block_direct(struct ompi_communicator_t *comm,
                                         const coll_gpu_native_call_t *call, const void *sbuf,
                                         void *rbuf, size_t count) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    const void *srcs[COLL_GPU_NATIVE_MAX_RANKS];
    int size = native->team->size, rank = native->team->rank;
    size_t esize = call->esize, per_step = native->half / ((size_t)size * esize);
    accel_status_t astatus = ACCEL_OK;
    shmem_status_t status;

    for (size_t first = 0; first < count; first += per_step) {
        size_t n = (count - first < per_step) ? count - first : per_step;
        uint64_t step = ++native->step;
        char *mine = coll_gpu_native_mine(native, call->kind, step);

        for (int b = 0; (b < size) && (ACCEL_OK == astatus); ++b) {
            if (b != rank) {
                astatus = mem->copy(mine + (size_t)b * n * esize,
                                    (const char *)sbuf + ((size_t)b * count + first) * esize,
                                    n * esize, call->stream);
            }
        }
        /* the copies must have landed (and the previous step's reads completed) before
         * peers are told */
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
        if (ACCEL_OK == astatus) {
            for (int p = 0; p < size; ++p) {
                srcs[p] =
                    coll_gpu_native_theirs(native, call->kind, p, step) + (size_t)rank * n * esize;
            }
            srcs[rank] = (const char *)sbuf + ((size_t)rank * count + first) * esize;
            astatus = coll_gpu_native_reduce(mem, (char *)rbuf + first * esize, srcs, size, n,
                                             call->dtype, call->op, call->stream);
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
