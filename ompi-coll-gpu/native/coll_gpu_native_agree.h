/* SPDX-License-Identifier: BSD-3-Clause */
/* The agreement that ends every native call (its outcome on every rank, or the transport's
 * failure), and the step handshake across nodes built on it. */
#ifndef COLL_GPU_NATIVE_AGREE_H
#define COLL_GPU_NATIVE_AGREE_H

#include "coll_gpu.h"
#include "coll_gpu_native_ctx.h"

#include "cgt.h"

BEGIN_C_DECLS

struct coll_gpu_native_call; /* coll_gpu_native_call.h */

/*
 * An agreement inside a call, on the native protocol (no collective of Open MPI: a nonblocking
 * call's thread may run it): the agreement that ends every call (coll_gpu_native_finish;
 * across nodes through node leaders and a dissemination between them,
 * coll_gpu_agreement_radix) carrying every rank's value; *max_p the largest, rounded up to the
 * 24-bit code the words carry (exact below 2^18, at most 2^-17 more above), the same on every
 * rank.  The ranks' alltoallv blocks set a nonblocking call's steps this way.
 */
cgt_status_t coll_gpu_native_agree_max(coll_gpu_native_t *native, uint64_t mine, uint64_t *max_p);

/*
 * The collectives' step handshake (struct coll_gpu_native_call: coll_gpu_native_call.h): completes
 * this rank's copies into its half and its fetches of the previous step, then a barrier of every
 * rank: on one node READY of step to every peer and every peer's; across nodes the closing
 * agreement's (through node leaders, O(log nnodes) messages between nodes, none for the other
 * ranks), so a peer's READY slot does not show the step there.  An accelerator error in *astatus_p
 * skips nothing of the handshake: peers finish the call.
 */
cgt_status_t coll_gpu_native_announce(const struct coll_gpu_native_call *call, uint64_t step,
                                      accel_status_t *astatus_p);
/*
 * The end of every native algorithm, whatever failed: completes its fetches and copies (nothing
 * lands in the caller's buffers or the scratch after it returns), unpacks the receive buffer
 * (call->unpack, whose failure is the call's too), then agrees with every peer on the call's
 * outcome (coll_gpu_native_agree.c, "The agreement": on one node every rank tells every rank;
 * across nodes through the node leaders, O(log nnodes) messages and rounds): a rank whose call
 * failed (astatus, including an error before it started, entry_status) puts its rank and error
 * class in its word, and the agreement's max leaves the lowest failing rank's.  So an error reaches
 * every rank of the call: the failing rank returns it with the help message naming the cause, its
 * peers the same error class with a message naming that rank, and no rank returns a result a peer's
 * failure made undefined as MPI_SUCCESS.  The step is also the barrier after which no peer reads
 * this rank's scratch of the call.  A transport error (status) goes to
 * coll_gpu_native_transport_failed instead.  Returns OMPI_SUCCESS or the MPI error.
 */
int coll_gpu_native_finish(const struct coll_gpu_native_call *call,
                           struct ompi_communicator_t *comm, cgt_status_t status,
                           accel_status_t astatus);

/*
 * A transport error of a native collective.  Evidence that a peer is gone (its process, its
 * endpoint): help message naming the call and cgt_last_error(), the context marked broken
 * (the job is failing; later calls stage and meet Open MPI's own error handling), returns
 * MPI_ERR_OTHER.  Any other transport error (a wait past a user-set coll_gpu_transport_timeout,
 * a put UCX refused) leaves this rank unable to tell its peers, which are in the call or past
 * it: the one outcome every rank shares is the job's end (help message, ompi_mpi_abort).
 */
int coll_gpu_native_transport_failed(coll_gpu_native_t *native, cgt_status_t status,
                                     const char *mpi_call, struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* COLL_GPU_NATIVE_AGREE_H */
