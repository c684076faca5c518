/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, one-shot (small messages, latency bound): every rank puts its input in its own
 * scratch half, announces it, and once every peer has, reduces all n inputs straight from
 * the peers' scratch (mapped here) into its receive buffer, in rank order.  One signal round
 * per step; a message larger than a scratch half is cut into steps.  Device or host memory
 * alike: call->mem says how to copy, reduce and wait for completion.
 *
 * An accelerator error does not stop the signals: peers finish the call instead of waiting
 * for a timeout, and every rank returns the error at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

int coll_gpu_allreduce_one_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call) {
    const void **srcs = call->native->srcs;
    int size = call->native->team->size;
    size_t esize = call->esize;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0};
         coll_gpu_prims_next(&pr, &c, call->count, call->native->half / esize);) {
        size_t offset = c.first * esize;

        coll_gpu_prims_copy(&pr, coll_gpu_prims_mine(&pr, c.step),
                            (const char *)call->sbuf + offset, c.n * esize);
        /* the copy must have landed before peers are told to read it */
        coll_gpu_prims_sync(&pr);
        coll_gpu_prims_signal_all(&pr, c.step, COLL_GPU_PHASE_READY);
        coll_gpu_prims_wait_all(&pr, c.step, COLL_GPU_PHASE_READY);
        for (int p = 0; p < size; ++p) {
            srcs[p] = coll_gpu_prims_theirs(&pr, p, c.step);
        }
        /* peers' next announcement waits for the end of this read: the next step's copy
         * follows it on the stream, and is synchronized before the announcement */
        coll_gpu_prims_reduce(&pr, (char *)call->rbuf + offset, srcs, size, c.n);
    }
    return coll_gpu_prims_finish(&pr, comm);
}
