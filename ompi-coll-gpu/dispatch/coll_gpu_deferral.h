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

#include "coll_gpu.h"

BEGIN_C_DECLS

typedef struct coll_gpu_deferral coll_gpu_deferral_t;

/* Posts a queued call (call: the bytes take copied), as the application posted it: *inner the
 * request the post made, or an error. */
typedef int (*coll_gpu_deferral_post_fn_t)(void *call, ompi_request_t **inner);

/* Whether a nonblocking call on device memory with a native form starts a queue on comm: no
 * call decided its native context yet and every rank can run the setup as a task (alike on
 * every rank: the parameters, the setup's outcome, the board's exchange at creation; a task
 * still running from the creation lets the queue wait for what that exchange tells). */
bool coll_gpu_deferral_may_start(const mca_coll_gpu_module_t *module,
                                 struct ompi_communicator_t *comm);

/* A nonblocking or persistent call (name, persistent): queued behind the calls already queued
 * on comm, or, where none is and starts (the caller's call could start a queue:
 * coll_gpu_deferral_may_start decides), behind the native setup it starts; *request a request
 * of ours that takes the outcome of post(copy of len bytes of call) once the queue is posted
 * (request NULL: none, post completes what it posts).  False where the call is to be posted now
 * (nothing queued on comm, or this thread is posting its queue). */
bool coll_gpu_deferral_take(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                            bool starts, coll_gpu_deferral_post_fn_t post, const void *call,
                            size_t len, const char *name, bool persistent,
                            ompi_request_t **request);

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
