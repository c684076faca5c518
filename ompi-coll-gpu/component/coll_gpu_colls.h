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
 * (appended, so that the first elements of the counters kept their meaning).
 */
#ifndef COLL_GPU_COLLS_H
#define COLL_GPU_COLLS_H

/* X(id, mpi_name) */
#define COLL_GPU_FOREACH_COLL(X)                                                                   \
    X(ALLGATHER, "MPI_Allgather")                                                                  \
    X(ALLGATHERV, "MPI_Allgatherv")                                                                \
    X(ALLREDUCE, "MPI_Allreduce")                                                                  \
    X(ALLTOALL, "MPI_Alltoall")                                                                    \
    X(ALLTOALLV, "MPI_Alltoallv")                                                                  \
    X(BCAST, "MPI_Bcast")                                                                          \
    X(EXSCAN, "MPI_Exscan")                                                                        \
    X(GATHER, "MPI_Gather")                                                                        \
    X(GATHERV, "MPI_Gatherv")                                                                      \
    X(REDUCE, "MPI_Reduce")                                                                        \
    X(REDUCE_SCATTER, "MPI_Reduce_scatter")                                                        \
    X(REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block")                                            \
    X(SCAN, "MPI_Scan")                                                                            \
    X(SCATTER, "MPI_Scatter")                                                                      \
    X(SCATTERV, "MPI_Scatterv")                                                                    \
    X(REDUCE_LOCAL, "MPI_Reduce_local")                                                            \
    X(IALLGATHER, "MPI_Iallgather")                                                                \
    X(IALLGATHERV, "MPI_Iallgatherv")                                                              \
    X(IALLREDUCE, "MPI_Iallreduce")                                                                \
    X(IALLTOALL, "MPI_Ialltoall")                                                                  \
    X(IALLTOALLV, "MPI_Ialltoallv")                                                                \
    X(IBCAST, "MPI_Ibcast")                                                                        \
    X(IEXSCAN, "MPI_Iexscan")                                                                      \
    X(IGATHER, "MPI_Igather")                                                                      \
    X(IGATHERV, "MPI_Igatherv")                                                                    \
    X(IREDUCE, "MPI_Ireduce")                                                                      \
    X(IREDUCE_SCATTER, "MPI_Ireduce_scatter")                                                      \
    X(IREDUCE_SCATTER_BLOCK, "MPI_Ireduce_scatter_block")                                          \
    X(ISCAN, "MPI_Iscan")                                                                          \
    X(ISCATTER, "MPI_Iscatter")                                                                    \
    X(ISCATTERV, "MPI_Iscatterv")                                                                  \
    X(ALLTOALLW, "MPI_Alltoallw")                                                                  \
    X(NEIGHBOR_ALLGATHER, "MPI_Neighbor_allgather")                                                \
    X(NEIGHBOR_ALLGATHERV, "MPI_Neighbor_allgatherv")                                              \
    X(NEIGHBOR_ALLTOALL, "MPI_Neighbor_alltoall")                                                  \
    X(NEIGHBOR_ALLTOALLV, "MPI_Neighbor_alltoallv")                                                \
    X(NEIGHBOR_ALLTOALLW, "MPI_Neighbor_alltoallw")                                                \
    X(IALLTOALLW, "MPI_Ialltoallw")                                                                \
    X(INEIGHBOR_ALLGATHER, "MPI_Ineighbor_allgather")                                              \
    X(INEIGHBOR_ALLGATHERV, "MPI_Ineighbor_allgatherv")                                            \
    X(INEIGHBOR_ALLTOALL, "MPI_Ineighbor_alltoall")                                                \
    X(INEIGHBOR_ALLTOALLV, "MPI_Ineighbor_alltoallv")                                              \
    X(INEIGHBOR_ALLTOALLW, "MPI_Ineighbor_alltoallw")

typedef enum {
#define COLL_GPU_ENUM_ENTRY(id, name) COLL_GPU_##id,
    COLL_GPU_FOREACH_COLL(COLL_GPU_ENUM_ENTRY)
#undef COLL_GPU_ENUM_ENTRY
        COLL_GPU_NUM_COLLS
} coll_gpu_coll_t;

#endif /* COLL_GPU_COLLS_H */
