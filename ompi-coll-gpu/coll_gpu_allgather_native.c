/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather(v), direct: per step, every rank copies a chunk of its block into its scratch
 * half, announces it, and once every peer has, fetches every peer's chunk out of the peer's
 * scratch into its receive buffer (coll_gpu_native_fetch: a copy from a peer of this node, a
 * get from another node's); its own chunk comes straight from its send buffer (with
 * MPI_IN_PLACE it is already there).  The blocks may differ in length (allgatherv): step s
 * carries elements [s * per_step, (s + 1) * per_step) of every block, a block already
 * exhausted contributes nothing, and the largest block, which every rank knows, sets the
 * number of steps.  The fetches of a step complete before the next step's announcement, after
 * which their owners may reuse that half.
 */
#include "coll_gpu_native.h"

/* Elements [first, first + per_step) of a block of count elements: how many there are. */
static inline size_t coll_gpu_allgather_chunk(size_t count, size_t first, size_t per_step) {
    return (count <= first) ? 0 : (count - first < per_step) ? count - first : per_step;
}

int coll_gpu_allgatherv_direct(struct ompi_communicator_t *comm,
                               const coll_gpu_native_call_t *call) {
    const void *sbuf = call->sbuf;
    void *rbuf = call->rbuf;
    const size_t *counts = call->counts, *displs = call->displs;
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    int size = native->team->size, rank = native->team->rank;
    size_t esize = call->esize, per_step = native->half / esize, largest = 0;
    char *own = (char *)rbuf + displs[rank] * esize;
    accel_status_t astatus = call->entry_status;
    shmem_status_t status = SHMEM_OK;

    for (int p = 0; p < size; ++p) {
        largest = (counts[p] > largest) ? counts[p] : largest;
    }
    for (size_t first = 0; first < largest; first += per_step) {
        size_t n = coll_gpu_allgather_chunk(counts[rank], first, per_step);
        const char *in = ((NULL != sbuf) ? (const char *)sbuf : own) + first * esize;
        uint64_t step = ++native->step;

        if ((ACCEL_OK == astatus) && (n > 0)) {
            astatus = mem->copy(coll_gpu_native_mine(native, call->kind, step), in, n * esize,
                                call->stream);
        }
        if ((ACCEL_OK == astatus) && (n > 0) && (native->team->nnodes > 1)) {
            astatus = coll_gpu_native_publish(native, call->kind, step, 0, n * esize, call->stream);
        }
        /* the copy has landed and the previous step's fetches are complete: peers may read
         * this half and reuse theirs of the previous step */
        status = coll_gpu_native_announce(call, step, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        for (int p = 0; (p < size) && (ACCEL_OK == astatus); ++p) {
            size_t np = coll_gpu_allgather_chunk(counts[p], first, per_step);
            char *out = (char *)rbuf + (displs[p] + first) * esize;
            if (0 == np) {
                continue;
            }
            if (p != rank) {
                astatus = coll_gpu_native_fetch(native, call->kind, p, step, 0, out, np * esize,
                                                call->stream, &status);
                if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                    goto err_transport;
                }
            } else if (NULL != sbuf) {
                astatus = mem->copy(out, in, np * esize, call->stream);
            }
        }
    }
    return coll_gpu_native_finish(call, comm, SHMEM_OK, astatus);

err_transport:
    return coll_gpu_native_finish(call, comm, status, astatus);
}

int coll_gpu_allgather_direct(struct ompi_communicator_t *comm,
                              const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = *call;
    size_t *counts = call->native->counts, *displs = call->native->displs;

    for (int p = 0; p < call->native->team->size; ++p) {
        counts[p] = call->count;
        displs[p] = (size_t)p * call->count;
    }
    blocks.counts = counts;
    blocks.displs = displs;
    return coll_gpu_allgatherv_direct(comm, &blocks);
}
