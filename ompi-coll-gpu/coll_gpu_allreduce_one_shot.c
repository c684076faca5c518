/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, one-shot (small messages, latency bound): every rank puts its input in its own
 * scratch half, announces it, and once every peer has, reduces all n inputs straight from
 * the peers' scratch (mapped here) into its receive buffer, in rank order.  One signal round
 * per step; a message larger than a scratch half is cut into steps.  Device or host memory
 * alike: call->mem says how to copy, reduce and wait for completion.
 *
 * An accelerator error does not stop the signals: peers finish the call instead of waiting
 * for a timeout, and every rank returns the error at the end (coll_gpu_native_conclude).
 */
#include "coll_gpu_native.h"

int coll_gpu_allreduce_one_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    const void **srcs = native->srcs;
    size_t per_step = native->half / call->esize;
    int size = native->team->size;
    accel_status_t astatus = call->entry_status;
    shmem_status_t status;

    for (size_t first = 0; first < call->count; first += per_step) {
        size_t n = (call->count - first < per_step) ? call->count - first : per_step;
        size_t offset = first * call->esize;
        uint64_t step = ++native->step;
        coll_gpu_native_range_t all = {0, n * call->esize};

        status = coll_gpu_native_step_ready(call, step, (const char *)call->sbuf + offset, &all, 1,
                                            &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto conclude;
        }
        if (ACCEL_OK == astatus) {
            for (int p = 0; p < size; ++p) {
                srcs[p] = coll_gpu_native_theirs(native, call->kind, p, step);
            }
            /* peers' next announcement waits for the end of this read: the next step's copy
             * follows it on the stream, and is synchronized before the announcement */
            astatus = coll_gpu_native_reduce(mem, (char *)call->rbuf + offset, srcs, size, n,
                                             call->dtype, call->op, call->stream);
        }
    }
    status = SHMEM_OK;
conclude:
    return coll_gpu_native_finish(call, comm, status, astatus);
}
