/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoall(v), direct: a rank's scratch half holds one area per destination rank (area d
 * at d * per_step elements).  Per step, every rank copies a chunk of each of its send blocks
 * into the destination's area, announces it, and once every peer has, fetches its own area's
 * chunk out of every peer's scratch into that peer's block of its receive buffer
 * (coll_gpu_native_fetch: a copy from a peer of this node, a get from another node's).  Its own
 * block is copied from its send buffer to its receive buffer.  Step s carries elements
 * [s * per_step, (s + 1) * per_step) of every block; the caller says how long the largest block
 * of any pair of ranks is, which sets the number of steps (the same on every rank).
 *
 * MPI_IN_PLACE (sbuf NULL): the receive buffer's blocks are sent and replaced.  Step s copies
 * chunk s of every block into the scratch before any rank is told, and fetches overwrite only
 * chunk s of each block, which no later step reads: no block needs a copy of its own.
 *
 * An accelerator error does not stop the signals: peers finish the call and every
 * rank returns the error at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_native.h"

static inline size_t coll_gpu_alltoall_chunk(size_t count, size_t first, size_t per_step) {
    return (count <= first) ? 0 : (count - first < per_step) ? count - first : per_step;
}

int coll_gpu_alltoallv_direct(struct ompi_communicator_t *comm,
                              const coll_gpu_native_call_t *call) {
    const void *sbuf = call->sbuf;
    void *rbuf = call->rbuf;
    const size_t *scounts = call->scounts, *sdispls = call->sdispls;
    const size_t *rcounts = call->counts, *rdispls = call->displs;
    size_t largest = call->largest;
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    int size = native->team->size, rank = native->team->rank;
    size_t esize = call->esize, per_step = native->half / ((size_t)size * esize);
    size_t area = per_step * esize;
    accel_status_t astatus = call->entry_status;
    shmem_status_t status = SHMEM_OK;
    const char *in = (NULL != sbuf) ? (const char *)sbuf : (const char *)rbuf;

    if (NULL == sbuf) {
        /* in place: the blocks sent are the blocks received */
        scounts = rcounts;
        sdispls = rdispls;
    }
    for (size_t first = 0; first < largest; first += per_step) {
        uint64_t step = ++native->step;
        char *mine = coll_gpu_native_mine(native, call->kind, step);

        for (int d = 0; (d < size) && (ACCEL_OK == astatus); ++d) {
            size_t nd = coll_gpu_alltoall_chunk(scounts[d], first, per_step);
            const char *src = in + (sdispls[d] + first) * esize;
            if (0 == nd) {
                continue;
            }
            if (d != rank) {
                astatus = mem->copy(mine + (size_t)d * area, src, nd * esize, call->stream);
            } else if (NULL != sbuf) {
                astatus = mem->copy((char *)rbuf + (rdispls[rank] + first) * esize, src, nd * esize,
                                    call->stream);
            }
        }
        if ((ACCEL_OK == astatus) && (native->team->nnodes > 1)) {
            astatus = coll_gpu_native_publish(native, call->kind, step, 0, (size_t)size * area,
                                              call->stream);
        }
        /* the copies have landed and the previous step's fetches are complete before peers
         * are told */
        status = coll_gpu_native_announce(call, step, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        for (int p = 0; (p < size) && (ACCEL_OK == astatus); ++p) {
            size_t np = coll_gpu_alltoall_chunk(rcounts[p], first, per_step);
            if ((p == rank) || (0 == np)) {
                continue;
            }
            astatus = coll_gpu_native_fetch(native, call->kind, p, step, (size_t)rank * area,
                                            (char *)rbuf + (rdispls[p] + first) * esize, np * esize,
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

int coll_gpu_alltoall_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = *call;
    size_t *counts = call->native->counts, *displs = call->native->displs;

    for (int p = 0; p < call->native->team->size; ++p) {
        counts[p] = call->count;
        displs[p] = (size_t)p * call->count;
    }
    blocks.counts = blocks.scounts = counts;
    blocks.displs = blocks.sdispls = displs;
    blocks.largest = call->count;
    return coll_gpu_alltoallv_direct(comm, &blocks);
}
