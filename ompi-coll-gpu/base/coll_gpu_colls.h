/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives coll/gpu intercepts, in the order of the per-collective
 * MPI_T counters (coll_gpu_calls_passthrough, coll_gpu_calls_staged): element
 * i of those array pvars counts collective i of this list.  Plain C with no
 * Open MPI headers, so tests can include it.
 *
 * Two groups, each its blocking collectives, then their nonblocking forms in
 * the same order (reduce_local has none): the first the collectives of the
 * first releases, the second MPI_Alltoallw and the neighborhood collectives
 * (appended, so that the first elements of the counters kept their meaning);
 * then the persistent forms (MPI-4's MPI_*_init, Open MPI 4.1's MPIX_*_init)
 * of both groups in the same order.
 */
#ifndef COLL_GPU_COLLS_H
#define COLL_GPU_COLLS_H

/* X(id, mpi_name, name, FAMILY, FORM): name is the call's in Open MPI's coll framework
 * (coll_<name>), FAMILY its parameters and FORM blocking, nonblocking or local
 * (coll_gpu_dispatch.h generates the entry points from them). */
#define COLL_GPU_FOREACH_COLL(X)                                                                   \
    X(ALLGATHER, "MPI_Allgather", allgather, BLOCKS, BLOCKING)                                     \
    X(ALLGATHERV, "MPI_Allgatherv", allgatherv, GATHERV_ALL, BLOCKING)                             \
    X(ALLREDUCE, "MPI_Allreduce", allreduce, REDUCTION, BLOCKING)                                  \
    X(ALLTOALL, "MPI_Alltoall", alltoall, BLOCKS, BLOCKING)                                        \
    X(ALLTOALLV, "MPI_Alltoallv", alltoallv, ALLTOALLV, BLOCKING)                                  \
    X(BCAST, "MPI_Bcast", bcast, BCAST, BLOCKING)                                                  \
    X(EXSCAN, "MPI_Exscan", exscan, REDUCTION, BLOCKING)                                           \
    X(GATHER, "MPI_Gather", gather, BLOCKS_ROOT, BLOCKING)                                         \
    X(GATHERV, "MPI_Gatherv", gatherv, GATHERV, BLOCKING)                                          \
    X(REDUCE, "MPI_Reduce", reduce, REDUCE, BLOCKING)                                              \
    X(REDUCE_SCATTER, "MPI_Reduce_scatter", reduce_scatter, REDUCE_SCATTER, BLOCKING)              \
    X(REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block", reduce_scatter_block,                      \
      REDUCE_SCATTER_BLOCK, BLOCKING)                                                              \
    X(SCAN, "MPI_Scan", scan, REDUCTION, BLOCKING)                                                 \
    X(SCATTER, "MPI_Scatter", scatter, BLOCKS_ROOT, BLOCKING)                                      \
    X(SCATTERV, "MPI_Scatterv", scatterv, SCATTERV, BLOCKING)                                      \
    X(REDUCE_LOCAL, "MPI_Reduce_local", reduce_local, REDUCTION, LOCAL)                            \
    X(IALLGATHER, "MPI_Iallgather", iallgather, BLOCKS, NONBLOCKING)                               \
    X(IALLGATHERV, "MPI_Iallgatherv", iallgatherv, GATHERV_ALL, NONBLOCKING)                       \
    X(IALLREDUCE, "MPI_Iallreduce", iallreduce, REDUCTION, NONBLOCKING)                            \
    X(IALLTOALL, "MPI_Ialltoall", ialltoall, BLOCKS, NONBLOCKING)                                  \
    X(IALLTOALLV, "MPI_Ialltoallv", ialltoallv, ALLTOALLV, NONBLOCKING)                            \
    X(IBCAST, "MPI_Ibcast", ibcast, BCAST, NONBLOCKING)                                            \
    X(IEXSCAN, "MPI_Iexscan", iexscan, REDUCTION, NONBLOCKING)                                     \
    X(IGATHER, "MPI_Igather", igather, BLOCKS_ROOT, NONBLOCKING)                                   \
    X(IGATHERV, "MPI_Igatherv", igatherv, GATHERV, NONBLOCKING)                                    \
    X(IREDUCE, "MPI_Ireduce", ireduce, REDUCE, NONBLOCKING)                                        \
    X(IREDUCE_SCATTER, "MPI_Ireduce_scatter", ireduce_scatter, REDUCE_SCATTER, NONBLOCKING)        \
    X(IREDUCE_SCATTER_BLOCK, "MPI_Ireduce_scatter_block", ireduce_scatter_block,                   \
      REDUCE_SCATTER_BLOCK, NONBLOCKING)                                                           \
    X(ISCAN, "MPI_Iscan", iscan, REDUCTION, NONBLOCKING)                                           \
    X(ISCATTER, "MPI_Iscatter", iscatter, BLOCKS_ROOT, NONBLOCKING)                                \
    X(ISCATTERV, "MPI_Iscatterv", iscatterv, SCATTERV, NONBLOCKING)                                \
    X(ALLTOALLW, "MPI_Alltoallw", alltoallw, ALLTOALLW, BLOCKING)                                  \
    X(NEIGHBOR_ALLGATHER, "MPI_Neighbor_allgather", neighbor_allgather, BLOCKS, BLOCKING)          \
    X(NEIGHBOR_ALLGATHERV, "MPI_Neighbor_allgatherv", neighbor_allgatherv, GATHERV_ALL, BLOCKING)  \
    X(NEIGHBOR_ALLTOALL, "MPI_Neighbor_alltoall", neighbor_alltoall, BLOCKS, BLOCKING)             \
    X(NEIGHBOR_ALLTOALLV, "MPI_Neighbor_alltoallv", neighbor_alltoallv, ALLTOALLV, BLOCKING)       \
    X(NEIGHBOR_ALLTOALLW, "MPI_Neighbor_alltoallw", neighbor_alltoallw, NEIGHBOR_ALLTOALLW,        \
      BLOCKING)                                                                                    \
    X(IALLTOALLW, "MPI_Ialltoallw", ialltoallw, ALLTOALLW, NONBLOCKING)                            \
    X(INEIGHBOR_ALLGATHER, "MPI_Ineighbor_allgather", ineighbor_allgather, BLOCKS, NONBLOCKING)    \
    X(INEIGHBOR_ALLGATHERV, "MPI_Ineighbor_allgatherv", ineighbor_allgatherv, GATHERV_ALL,         \
      NONBLOCKING)                                                                                 \
    X(INEIGHBOR_ALLTOALL, "MPI_Ineighbor_alltoall", ineighbor_alltoall, BLOCKS, NONBLOCKING)       \
    X(INEIGHBOR_ALLTOALLV, "MPI_Ineighbor_alltoallv", ineighbor_alltoallv, ALLTOALLV, NONBLOCKING) \
    X(INEIGHBOR_ALLTOALLW, "MPI_Ineighbor_alltoallw", ineighbor_alltoallw, NEIGHBOR_ALLTOALLW,     \
      NONBLOCKING)                                                                                 \
    X(ALLGATHER_INIT, "MPI_Allgather_init", allgather_init, BLOCKS, PERSISTENT)                    \
    X(ALLGATHERV_INIT, "MPI_Allgatherv_init", allgatherv_init, GATHERV_ALL, PERSISTENT)            \
    X(ALLREDUCE_INIT, "MPI_Allreduce_init", allreduce_init, REDUCTION, PERSISTENT)                 \
    X(ALLTOALL_INIT, "MPI_Alltoall_init", alltoall_init, BLOCKS, PERSISTENT)                       \
    X(ALLTOALLV_INIT, "MPI_Alltoallv_init", alltoallv_init, ALLTOALLV, PERSISTENT)                 \
    X(BCAST_INIT, "MPI_Bcast_init", bcast_init, BCAST, PERSISTENT)                                 \
    X(EXSCAN_INIT, "MPI_Exscan_init", exscan_init, REDUCTION, PERSISTENT)                          \
    X(GATHER_INIT, "MPI_Gather_init", gather_init, BLOCKS_ROOT, PERSISTENT)                        \
    X(GATHERV_INIT, "MPI_Gatherv_init", gatherv_init, GATHERV, PERSISTENT)                         \
    X(REDUCE_INIT, "MPI_Reduce_init", reduce_init, REDUCE, PERSISTENT)                             \
    X(REDUCE_SCATTER_INIT, "MPI_Reduce_scatter_init", reduce_scatter_init, REDUCE_SCATTER,         \
      PERSISTENT)                                                                                  \
    X(REDUCE_SCATTER_BLOCK_INIT, "MPI_Reduce_scatter_block_init", reduce_scatter_block_init,       \
      REDUCE_SCATTER_BLOCK, PERSISTENT)                                                            \
    X(SCAN_INIT, "MPI_Scan_init", scan_init, REDUCTION, PERSISTENT)                                \
    X(SCATTER_INIT, "MPI_Scatter_init", scatter_init, BLOCKS_ROOT, PERSISTENT)                     \
    X(SCATTERV_INIT, "MPI_Scatterv_init", scatterv_init, SCATTERV, PERSISTENT)                     \
    X(ALLTOALLW_INIT, "MPI_Alltoallw_init", alltoallw_init, ALLTOALLW, PERSISTENT)                 \
    X(NEIGHBOR_ALLGATHER_INIT, "MPI_Neighbor_allgather_init", neighbor_allgather_init, BLOCKS,     \
      PERSISTENT)                                                                                  \
    X(NEIGHBOR_ALLGATHERV_INIT, "MPI_Neighbor_allgatherv_init", neighbor_allgatherv_init,          \
      GATHERV_ALL, PERSISTENT)                                                                     \
    X(NEIGHBOR_ALLTOALL_INIT, "MPI_Neighbor_alltoall_init", neighbor_alltoall_init, BLOCKS,        \
      PERSISTENT)                                                                                  \
    X(NEIGHBOR_ALLTOALLV_INIT, "MPI_Neighbor_alltoallv_init", neighbor_alltoallv_init, ALLTOALLV,  \
      PERSISTENT)                                                                                  \
    X(NEIGHBOR_ALLTOALLW_INIT, "MPI_Neighbor_alltoallw_init", neighbor_alltoallw_init,             \
      NEIGHBOR_ALLTOALLW, PERSISTENT)

typedef enum {
#define COLL_GPU_ENUM_ENTRY(id, ...) COLL_GPU_##id,
    COLL_GPU_FOREACH_COLL(COLL_GPU_ENUM_ENTRY)
#undef COLL_GPU_ENUM_ENTRY
        COLL_GPU_NUM_COLLS
} coll_gpu_coll_t;

/* Each group of forms lists its collectives in its blocking group's order. */
_Static_assert(COLL_GPU_ISCATTERV - COLL_GPU_IALLGATHER == COLL_GPU_SCATTERV - COLL_GPU_ALLGATHER,
               "nonblocking forms out of order");
_Static_assert(COLL_GPU_SCATTERV_INIT - COLL_GPU_ALLGATHER_INIT ==
                   COLL_GPU_SCATTERV - COLL_GPU_ALLGATHER,
               "persistent forms out of order");
_Static_assert(COLL_GPU_INEIGHBOR_ALLTOALLW - COLL_GPU_IALLTOALLW ==
                   COLL_GPU_NEIGHBOR_ALLTOALLW - COLL_GPU_ALLTOALLW,
               "nonblocking neighborhood forms out of order");
_Static_assert(COLL_GPU_NEIGHBOR_ALLTOALLW_INIT - COLL_GPU_ALLTOALLW_INIT ==
                   COLL_GPU_NEIGHBOR_ALLTOALLW - COLL_GPU_ALLTOALLW,
               "persistent neighborhood forms out of order");

/* The blocking form of any call (MPI_Iallreduce, MPI_Allreduce_init: MPI_Allreduce). */
static inline coll_gpu_coll_t coll_gpu_coll_blocking(coll_gpu_coll_t coll) {
    if (coll >= COLL_GPU_ALLTOALLW_INIT) {
        return (coll_gpu_coll_t)(coll - COLL_GPU_ALLTOALLW_INIT + COLL_GPU_ALLTOALLW);
    }
    if (coll >= COLL_GPU_ALLGATHER_INIT) {
        return (coll_gpu_coll_t)(coll - COLL_GPU_ALLGATHER_INIT + COLL_GPU_ALLGATHER);
    }
    if (coll >= COLL_GPU_IALLTOALLW) {
        return (coll_gpu_coll_t)(coll - COLL_GPU_IALLTOALLW + COLL_GPU_ALLTOALLW);
    }
    if (coll >= COLL_GPU_IALLGATHER && coll < COLL_GPU_ALLTOALLW) {
        return (coll_gpu_coll_t)(coll - COLL_GPU_IALLGATHER + COLL_GPU_ALLGATHER);
    }
    return coll;
}

/* The form of a call whose groups start at first (the allgather group) and neighborhood
 * (the alltoallw group), from any of its forms; MPI_Reduce_local has one form only. */
static inline coll_gpu_coll_t coll_gpu_coll_form(coll_gpu_coll_t coll, coll_gpu_coll_t first,
                                                 coll_gpu_coll_t neighborhood) {
    coll = coll_gpu_coll_blocking(coll);
    if (COLL_GPU_REDUCE_LOCAL == coll) {
        return coll;
    }
    return (coll_gpu_coll_t)((coll >= COLL_GPU_ALLTOALLW) ? coll - COLL_GPU_ALLTOALLW + neighborhood
                                                          : coll - COLL_GPU_ALLGATHER + first);
}

/* The nonblocking, and the persistent, form of a call. */
static inline coll_gpu_coll_t coll_gpu_coll_nonblocking(coll_gpu_coll_t coll) {
    return coll_gpu_coll_form(coll, COLL_GPU_IALLGATHER, COLL_GPU_IALLTOALLW);
}
static inline coll_gpu_coll_t coll_gpu_coll_persistent(coll_gpu_coll_t coll) {
    return coll_gpu_coll_form(coll, COLL_GPU_ALLGATHER_INIT, COLL_GPU_ALLTOALLW_INIT);
}

#endif /* COLL_GPU_COLLS_H */
