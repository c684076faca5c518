/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoall(v), direct: a rank's scratch half holds one area per destination; per step every
 * rank fills the areas, announces, and fetches its own area out of every peer pairwise (at most
 * coll_gpu_alltoall_max_outstanding gets in flight).  The longest block of any pair sets the
 * steps: the caller says it (a blocking call agreed before), or a nonblocking call agrees on it in
 * a first step of signals (coll_gpu_native_agree_max, which may round it up: the steps beyond the
 * blocks move nothing).  docs/collectives.md, "Allgatherv, reduce_scatter, alltoall".
 *
 * MPI_Alltoall's blocks lie at one stride: a step's chunks go into the areas in one strided copy
 * (coll_gpu_prims_copy2d), a call of one step packing them into one plain copy, instead of a
 * launch per destination (docs/cost-model.md).  MPI_Alltoallv copies per block: its ranks know only
 * their own blocks.
 *
 * MPI_IN_PLACE (sbuf NULL): step s copies chunk s of every block into the scratch before any rank
 * is told, and fetches overwrite only chunk s of each block, which no later step reads.
 *
 * An accelerator error does not stop the signals: peers finish the call and every rank returns
 * the error at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

static inline size_t coll_gpu_alltoall_chunk(size_t count, size_t first, size_t per_step) {
    return (count <= first) ? 0 : (count - first < per_step) ? count - first : per_step;
}

/* uniform: an MPI_Alltoall (every block call->largest elements, in rank order, on every rank) */
static int coll_gpu_alltoall_direct_run(struct ompi_communicator_t *comm,
                                        const coll_gpu_native_call_t *call, bool uniform) {
    const size_t *scounts = call->scounts, *sdispls = call->sdispls;
    const size_t *rcounts = call->counts, *rdispls = call->displs;
    int size = call->native->team->size, rank = call->native->team->rank;
    size_t esize = call->esize, per_step = call->native->half / ((size_t)size * esize);
    size_t area = per_step * esize;
    bool packed = uniform && (call->largest <= per_step);
    const char *in = (NULL != call->sbuf) ? (const char *)call->sbuf : (const char *)call->rbuf;
    size_t largest = call->largest;
    unsigned max_outstanding = mca_coll_gpu_component.alltoall_max_outstanding;
    coll_gpu_prims_t pr;

    if (NULL == call->sbuf) {
        /* in place: the blocks sent are the blocks received */
        scounts = rcounts;
        sdispls = rdispls;
    }
    coll_gpu_prims_init(&pr, call);
    if (COLL_GPU_NATIVE_LARGEST_AGREED == largest) {
        largest = 0;
        for (int p = 0; p < size; ++p) {
            largest = (scounts[p] > largest) ? scounts[p] : largest;
            largest = (rcounts[p] > largest) ? rcounts[p] : largest;
        }
        largest = (size_t)coll_gpu_prims_agree_max(&pr, largest);
    }
    if (packed) {
        area = largest * esize;
    }
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, largest, per_step);) {
        char *mine = coll_gpu_prims_mine(&pr, c.step);

        if (uniform) {
            /* every block's chunk, its own too, then its own out */
            size_t nd = coll_gpu_alltoall_chunk(largest, c.first, per_step);

            coll_gpu_prims_copy2d(&pr, mine, area, in + c.first * esize, largest * esize,
                                  nd * esize, (size_t)size);
            if (NULL != call->sbuf) {
                coll_gpu_prims_copy(&pr, (char *)call->rbuf + (rdispls[rank] + c.first) * esize,
                                    in + (sdispls[rank] + c.first) * esize, nd * esize);
            }
        }
        for (int d = 0; (d < size) && !uniform; ++d) {
            size_t nd = coll_gpu_alltoall_chunk(scounts[d], c.first, per_step);
            const char *src = in + (sdispls[d] + c.first) * esize;

            if (d != rank) {
                coll_gpu_prims_copy(&pr, mine + (size_t)d * area, src, nd * esize);
            } else if (NULL != call->sbuf) {
                coll_gpu_prims_copy(&pr, (char *)call->rbuf + (rdispls[rank] + c.first) * esize,
                                    src, nd * esize);
            }
        }
        if (call->native->team->nnodes > 1) {
            coll_gpu_prims_publish(&pr, c.step, 0, (size_t)size * area);
        }
        /* the copies have landed and the previous step's fetches are complete before peers
         * are told */
        coll_gpu_prims_announce(&pr, c.step);
        /* pairwise: rank + k at the k-th get, so that each rank's scratch is read by one peer
         * at a time rather than by everyone at once, with at most max_outstanding gets from
         * other nodes in flight */
        for (int k = 1; k < size; ++k) {
            int p = (rank + k) % size;
            size_t np = coll_gpu_alltoall_chunk(rcounts[p], c.first, per_step);

            coll_gpu_prims_fetch_bounded(&pr, max_outstanding, p, c.step, (size_t)rank * area,
                                         (char *)call->rbuf + (rdispls[p] + c.first) * esize,
                                         np * esize);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

int coll_gpu_alltoallv_direct(struct ompi_communicator_t *comm,
                              const coll_gpu_native_call_t *call) {
    return coll_gpu_alltoall_direct_run(comm, call, false);
}

int coll_gpu_alltoall_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = coll_gpu_prims_uniform_blocks(call);

    blocks.scounts = blocks.counts;
    blocks.sdispls = blocks.displs;
    blocks.largest = call->count;
    return coll_gpu_alltoall_direct_run(comm, &blocks, true);
}
