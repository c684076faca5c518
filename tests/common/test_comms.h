/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The communicators of the coll/gpu MPI tests: a dup of world, an odd/even split and one group
 * in reversed rank order, each with the world rank of every member.
 */
#ifndef TEST_COMMS_H
#define TEST_COMMS_H

#include <mpi.h>

typedef struct {
    MPI_Comm comm;
    char name[32];
    int rank;
    int size;
    int *world_ranks; /* world rank of each member */
} tu_comm_t;

typedef enum {
    TU_COMM_WORLD,
    TU_COMM_SPLIT_ODD_EVEN,
    TU_COMM_SPLIT_REVERSED,
    TU_NUM_COMMS
} tu_comm_id_t;

/* Dup of MPI_COMM_WORLD, split by rank parity, and one group ordered by descending world
 * rank; all with MPI_ERRORS_RETURN. */
int tu_comm_create(tu_comm_id_t id, tu_comm_t *comm);
int tu_comm_wrap(MPI_Comm mpi_comm, const char *name, tu_comm_t *comm);
void tu_comm_free(tu_comm_t *comm);
/* Every tu_comm_id_t in order (the order of creation gives Open MPI's communicator names,
 * "MPI COMM 3 DUP FROM 0" for the world dup, which check scripts grep); one that cannot be
 * created is a failure that ends the program. */
void tu_comms_create_all(tu_comm_t comms[TU_NUM_COMMS]);
void tu_comms_free_all(tu_comm_t comms[TU_NUM_COMMS]);

#endif /* TEST_COMMS_H */
