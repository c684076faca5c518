/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which processes run coll/gpu, and with which protocol: a record each process publishes in the
 * modex when the component opens (before MPI_Init's fence), read when a communicator's module is
 * enabled.  A communicator of whose members one does not run the component alike (coll/gpu not
 * loaded there, coll_gpu_enable false, no accelerator, another protocol parameter or tuning
 * rule, a process of another job) gets no board and no native setup: its setup's messages would
 * wait for a process that never sends them.  Its device calls are then one host collective
 * each on staged copies, which meets whatever the other processes call (Open MPI's own).
 * Decided alike on every member: each reads the same records (docs/failure-model.md).
 */
#ifndef COLL_GPU_PRESENCE_H
#define COLL_GPU_PRESENCE_H

#include "coll_gpu.h"

BEGIN_C_DECLS

/* What a process runs: its record's role. */
typedef enum {
    COLL_GPU_ROLE_OFF = 0,    /* opened, but declines every communicator */
    COLL_GPU_ROLE_HOST = 1,   /* no accelerator: host-buffer mode (coll_gpu_host_buffers) */
    COLL_GPU_ROLE_DEVICE = 2, /* an accelerator */
} coll_gpu_role_t;

/* Whether records can be published and read: a modex (not ompi_info) whose fence collects
 * them (not Open MPI's asynchronous modex, coll_gpu_presence.c).  Where not, communicators
 * trust their members to run the component alike. */
bool coll_gpu_presence_possible(void);

/* At component open, after every parameter is final (hash: of those that change the protocol):
 * publishes this process's record; false where it could not be (every communicator of two
 * processes or more is then staged: the peers find no record of this one). */
bool coll_gpu_presence_publish(coll_gpu_role_t role, uint64_t hash);

/* Whether every member of the intracommunicator comm publishes this process's record.  False
 * names one that does not (*rank_p) and why (*why_p, for the message; *params_p: only its
 * protocol parameters differ). */
bool coll_gpu_presence_alike(struct ompi_communicator_t *comm, int *rank_p, const char **why_p,
                             bool *params_p);

/* Component close. */
void coll_gpu_presence_fini(void);

END_C_DECLS

#endif /* COLL_GPU_PRESENCE_H */
