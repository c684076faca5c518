/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The communicators of the coll/gpu MPI tests: see test_comms.h.
 */
#include "test_comms.h"

#include <stdio.h>
#include <stdlib.h>

#include "test_report.h"

int tu_comm_wrap(MPI_Comm mpi_comm, const char *name, tu_comm_t *comm) {
    MPI_Group group, world_group;
    int *ranks;

    comm->comm = mpi_comm;
    snprintf(comm->name, sizeof(comm->name), "%s", name);
    MPI_Comm_rank(mpi_comm, &comm->rank);
    MPI_Comm_size(mpi_comm, &comm->size);
    MPI_Comm_set_errhandler(mpi_comm, MPI_ERRORS_RETURN);
    comm->world_ranks = malloc(sizeof(int) * comm->size);
    ranks = malloc(sizeof(int) * comm->size);
    for (int i = 0; i < comm->size; i++) {
        ranks[i] = i;
    }
    MPI_Comm_group(mpi_comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_translate_ranks(group, comm->size, ranks, world_group, comm->world_ranks);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    free(ranks);
    return 0;
}

int tu_comm_create(tu_comm_id_t id, tu_comm_t *comm) {
    MPI_Comm mpi_comm;
    int rc;

    switch (id) {
    case TU_COMM_WORLD:
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm);
        break;
    case TU_COMM_SPLIT_ODD_EVEN:
        rc = MPI_Comm_split(MPI_COMM_WORLD, tu_world_rank % 2, tu_world_rank, &mpi_comm);
        break;
    default:
        /* one group, ranks in reverse order: comm rank order != world rank order */
        rc = MPI_Comm_split(MPI_COMM_WORLD, 0, tu_world_size - tu_world_rank, &mpi_comm);
        break;
    }
    if (MPI_SUCCESS != rc) {
        return -1;
    }
    return tu_comm_wrap(mpi_comm,
                        TU_COMM_WORLD == id            ? "world"
                        : TU_COMM_SPLIT_ODD_EVEN == id ? "odd-even"
                                                       : "reversed",
                        comm);
}

void tu_comm_free(tu_comm_t *comm) {
    if (MPI_COMM_NULL != comm->comm) {
        MPI_Comm_free(&comm->comm);
    }
    free(comm->world_ranks);
    comm->world_ranks = NULL;
}

void tu_comms_create_all(tu_comm_t comms[TU_NUM_COMMS]) {
    for (int i = 0; i < TU_NUM_COMMS; i++) {
        if (0 != tu_comm_create((tu_comm_id_t)i, &comms[i])) {
            tu_fail("cannot create communicator %d", i);
            tu_finish(tu_summary(MPI_COMM_WORLD));
        }
    }
}

void tu_comms_free_all(tu_comm_t comms[TU_NUM_COMMS]) {
    for (int i = 0; i < TU_NUM_COMMS; i++) {
        tu_comm_free(&comms[i]);
    }
}
