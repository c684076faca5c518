/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Native from a communicator's first nonblocking call: the call that finds the native context
 * not yet set up starts its setup as a task (coll_gpu_setup.h) and waits, with every call
 * posted on the communicator after it, in a queue that Open MPI's progress posts in post order
 * once the setup is done: natively where it succeeded, staged where it did not.  A post never
 * waits for a peer.  docs/nonblocking.md, "Native from the first call".
 */
#ifndef COLL_GPU_DEFERRAL_H
#define COLL_GPU_DEFERRAL_H

#include "coll_gpu_dispatch.h"

BEGIN_C_DECLS

typedef struct coll_gpu_deferral coll_gpu_deferral_t;

/* A nonblocking or persistent call (a->request): queued, *a->request a request of ours that
 * completes with the call posted later, true (*rc_p its result); false where the call is posted
 * now (nothing queued on its communicator, and it does not start the setup). */
bool coll_gpu_deferral_take(const coll_gpu_entry_t *entry, coll_gpu_args_t *a, bool on_device,
                            int *rc_p);

/* The nonblocking collectives without a buffer, which coll/gpu passes to the module below but
 * for their order behind queued calls (their messages are numbered by libnbc's counter of the
 * communicator, as a queued call's are where it is staged): X(id, mpi_name, name). */
#define COLL_GPU_FOREACH_ORDERED(X)                                                                \
    X(IBARRIER, "MPI_Ibarrier", ibarrier, NONE, NONE)                                              \
    X(BARRIER_INIT, "MPI_Barrier_init", barrier_init, NONE, NONE)
int mca_coll_gpu_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *base);
int mca_coll_gpu_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *base);

/* Before a blocking call: waits for the setup and posts every queued call (the peers' progress
 * runs their setups: they need not be in this call). */
void coll_gpu_deferral_flush(mca_coll_gpu_module_t *module);

END_C_DECLS

#endif /* COLL_GPU_DEFERRAL_H */
