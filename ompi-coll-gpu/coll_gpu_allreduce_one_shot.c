/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, one-shot (small messages, latency bound): every rank puts its input in its own
 * scratch half, announces it, and once every peer has, reduces all n inputs straight from
 * the peers' scratch (mapped here) into its receive buffer, in rank order.  One signal round
 * per step; a message larger than a scratch half is cut into steps.  Device or host memory
 * alike: args->mem says how to copy, reduce and wait for completion.
 *
 * An accelerator error does not stop the signals: peers finish the call instead of waiting
 * for a timeout, and every rank returns the error at the end (coll_gpu_native_conclude).
 */
#include "coll_gpu_native.h"

int coll_gpu_allreduce_one_shot(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                coll_gpu_native_t *native,
                                const coll_gpu_allreduce_native_args_t *args) {
    const coll_gpu_native_mem_t *mem = args->mem;
    const void **srcs = native->srcs;
    size_t per_step = native->half / args->esize;
    int size = native->team->size;
    accel_status_t astatus = args->entry_status;
    shmem_status_t status;

    (void)module;
    for (size_t first = 0; first < args->count; first += per_step) {
        size_t n = (args->count - first < per_step) ? args->count - first : per_step;
        size_t offset = first * args->esize;
        uint64_t step = ++native->step;
        coll_gpu_native_range_t all = {0, n * args->esize};

        status = coll_gpu_native_step_ready(native, args, step, (const char *)args->sbuf + offset,
                                            &all, 1, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto conclude;
        }
        if (ACCEL_OK == astatus) {
            for (int p = 0; p < size; ++p) {
                srcs[p] = coll_gpu_native_theirs(native, args->kind, p, step);
            }
            /* peers' next announcement waits for the end of this read: the next step's copy
             * follows it on the stream, and is synchronized before the announcement */
            astatus = coll_gpu_native_reduce(mem, (char *)args->rbuf + offset, srcs, size, n,
                                             args->dtype, args->op, args->stream);
        }
    }
    status = SHMEM_OK;
conclude:
    return coll_gpu_native_conclude(native, args->kind, args->stream, args->mpi_call, comm, status,
                                    astatus);
}
