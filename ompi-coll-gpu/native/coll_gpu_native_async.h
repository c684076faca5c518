/* SPDX-License-Identifier: BSD-3-Clause */
/* Native nonblocking and stream-ordered calls: the communicator's thread that runs them, in the
 * order they were posted (coll_gpu_native_async.c, coll_gpu_native_stream.c). */
#ifndef COLL_GPU_NATIVE_ASYNC_H
#define COLL_GPU_NATIVE_ASYNC_H

#include "coll_gpu.h"
#include "coll_gpu_native_call.h"

BEGIN_C_DECLS

/* Native nonblocking calls (coll_gpu_native_async.c): a communicator's thread runs them in
 * the order they were posted. */
typedef struct coll_gpu_async coll_gpu_async_t;
typedef struct coll_gpu_async_job coll_gpu_async_job_t;
struct coll_gpu_sig_buf;
/* Queues call (with its packed send and receive buffers, NULL where none; the thread frees
 * their temporaries) on the module's thread, started with the first; NULL when no memory. */
coll_gpu_async_job_t *coll_gpu_native_async_submit(mca_coll_gpu_module_t *module,
                                                   struct ompi_communicator_t *comm,
                                                   const coll_gpu_native_call_t *call,
                                                   const struct coll_gpu_sig_buf *send,
                                                   const struct coll_gpu_sig_buf *recv);
/* Starts the module's thread now (a stream communicator's setup: its calls are posted where
 * no thread may be started); false when it cannot be started. */
bool coll_gpu_native_async_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm);
/* A stream-ordered call across nodes (coll_gpu_native_stream.c), made at the enqueue and
 * posted by coll_gpu_native_async_stream_post each time the application's stream reaches it:
 * the thread runs it, then stores 1 in *release (the flag that stream waits for, in memory the
 * host and the device reach), and first the number it was posted with in *failed when the call
 * failed (its outcome, the same on every rank).  The thread frees a job posted once; a
 * reusable one (captured into a graph: posted at every launch) is the caller's to free
 * (coll_gpu_native_async_free) once no launch can post it.  NULL when no memory. */
coll_gpu_async_job_t *coll_gpu_native_async_stream_job(mca_coll_gpu_module_t *module,
                                                       struct ompi_communicator_t *comm,
                                                       const coll_gpu_native_call_t *call,
                                                       volatile uint32_t *release, uint32_t *failed,
                                                       bool reusable);
/* Queues a stream job on its module's thread (started: coll_gpu_native_async_start).  Safe in
 * the accelerator's host functions: no allocation, no MPI, no accelerator call. */
void coll_gpu_native_async_stream_post(coll_gpu_async_job_t *job, uint32_t number);
/* A blocking device-driven call spanning nodes (coll_gpu_kernel_proxied): launched here, its
 * proxy on the module's thread, one host wait for both; its outcome. */
int coll_gpu_native_async_run(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              const coll_gpu_native_call_t *call);
/* Whether the thread finished the job (its result in *rc_p); frees a finished job. */
bool coll_gpu_native_async_done(coll_gpu_async_job_t *job, int *rc_p);
void coll_gpu_native_async_free(coll_gpu_async_job_t *job);
/* Waits until the module's thread has run every call queued so far. */
void coll_gpu_native_async_drain(mca_coll_gpu_module_t *module);
/* Runs what is queued, then ends the thread (the module's destruction). */
void coll_gpu_native_async_destroy(mca_coll_gpu_module_t *module);

END_C_DECLS

#endif /* COLL_GPU_NATIVE_ASYNC_H */
