/*
 * The transport team of a communicator: which rank is on which node, and the
 * shmem-transport team the native algorithms move data with.  Created on the
 * first native collective of the communicator (collective: every rank of the
 * communicator gets there at the same call), never for a communicator that
 * only carries host or staged collectives.
 */
#ifndef COLL_GPU_TEAM_H
#define COLL_GPU_TEAM_H

#include "coll_gpu.h"
#include "shmem.h"

BEGIN_C_DECLS

typedef struct coll_gpu_team {
    shmem_team_t *shmem;
    int rank, size;
    int nnodes;
    int node;          /* this rank's node */
    int *node_of_rank; /* size entries */
    int local_rank;    /* among the ranks of this rank's node, in communicator order */
    int local_size;
    int *local_ranks; /* communicator ranks of this node, local_size entries */
} coll_gpu_team_t;

/*
 * The communicator's team, created now if it does not exist.  Collective on
 * first use.  On failure returns an error (help message shown once) and the
 * caller falls back to the staged path; creation is not retried on that
 * communicator.
 */
int coll_gpu_team_get(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                      coll_gpu_team_t **team_p);
void coll_gpu_team_destroy(coll_gpu_team_t *team);

/*
 * node_of_rank of a communicator: nodes as MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
 * finds them, each split into emulated nodes of ranks_per_node ranks when that is > 0
 * (coll_gpu_ranks_per_node).  Node indices follow the lowest communicator rank of each
 * node.  Collective (one split_type and one allgather over the saved host
 * collectives).
 */
int coll_gpu_team_node_map(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                           int ranks_per_node, int *node_of_rank);

END_C_DECLS

#endif /* COLL_GPU_TEAM_H */
