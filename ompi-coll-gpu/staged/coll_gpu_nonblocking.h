/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking and persistent calls' requests (coll_gpu_nonblocking.c): staged ones, native ones
 * run by the communicator's thread, persistent ones; and the staged path's one entry,
 * coll_gpu_staged_run, for the three forms.
 */
#ifndef COLL_GPU_NONBLOCKING_H
#define COLL_GPU_NONBLOCKING_H

#include "coll_gpu_staged.h"

BEGIN_C_DECLS

/* Set up and tear down what nonblocking staged calls share (component
 * open / close). */
void coll_gpu_nonblocking_init(void);
void coll_gpu_nonblocking_fini(void);

/* Progresses until every request of ours has completed (MPI_Finalize's first step). */
void coll_gpu_nonblocking_drain(void);

/* A nonblocking collective through host staging: inputs are copied at post,
 * outputs when the request completes. */
int coll_gpu_staged_icall(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                          coll_gpu_call_t *call, ompi_request_t **request);

/* The application's request for a native nonblocking call, completed (with the job's result)
 * by the progress callback once the communicator's thread has run the job; job NULL: a call
 * that already ran, with result rc. */
struct coll_gpu_async_job;
/* A persistent request whose every MPI_Start calls start(ctx, &inner) to post the call (its
 * nonblocking form, run natively or staged); it completes with inner, which it then frees.  ctx
 * is freed (free()) with the request. */
typedef int (*coll_gpu_persistent_start_fn_t)(void *ctx, ompi_request_t **inner);
int coll_gpu_nonblocking_persistent(struct ompi_communicator_t *comm, const char *mpi_call,
                                    coll_gpu_persistent_start_fn_t start, void *ctx,
                                    ompi_request_t **request);
int coll_gpu_nonblocking_native(struct ompi_communicator_t *comm, const char *mpi_call,
                                struct coll_gpu_async_job *job, int rc, ompi_request_t **request);

/* A call whose post waits (coll_gpu_deferral.h): its request now, for the application;
 * coll_gpu_nonblocking_posted() gives it the request the post made (inner, or its error rc) once
 * it is made.  A nonblocking call's (queue_start NULL) completes with inner's outcome.  A
 * persistent call's (inner: the init's request) starts inner at every MPI_Start, or, where
 * queue_start(ctx, later) queues the start (behind calls queued before it, its init's post
 * among them, holding a reference on later), once coll_gpu_nonblocking_start_later() is called
 * in the queue's order. */
typedef bool (*coll_gpu_queue_start_fn_t)(void *ctx, ompi_request_t *later);
ompi_request_t *coll_gpu_nonblocking_later(struct ompi_communicator_t *comm, const char *mpi_call,
                                           coll_gpu_queue_start_fn_t queue_start, void *ctx);
void coll_gpu_nonblocking_posted(ompi_request_t *later, ompi_request_t *inner, int rc);
int coll_gpu_nonblocking_start_later(ompi_request_t *later);

/* A persistent collective through host staging: the host copies and the previous module's
 * persistent request on them are made once, here; every MPI_Start copies the inputs in and
 * starts that request, its completion copies the results back. */
int coll_gpu_staged_init(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         coll_gpu_call_t *call, ompi_request_t **request);

/* coll_gpu_staged_call() for a blocking call (request NULL), coll_gpu_staged_init() for a
 * persistent one, else coll_gpu_staged_icall(). */
static inline int coll_gpu_staged_run(mca_coll_gpu_module_t *module,
                                      struct ompi_communicator_t *comm, coll_gpu_call_t *call,
                                      ompi_request_t **request, bool single_call) {
    if (NULL == request) {
        return coll_gpu_staged_call(module, comm, call, single_call);
    }
    return call->persistent ? coll_gpu_staged_init(module, comm, call, request)
                            : coll_gpu_staged_icall(module, comm, call, request);
}

END_C_DECLS

#endif /* COLL_GPU_NONBLOCKING_H */
