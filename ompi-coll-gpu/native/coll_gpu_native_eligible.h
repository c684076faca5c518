/* SPDX-License-Identifier: BSD-3-Clause */
/* Whether a call runs natively (its checks: counts, blocks, memory kinds, the call board) and
 * the call it builds when it does. */
#ifndef COLL_GPU_NATIVE_ELIGIBLE_H
#define COLL_GPU_NATIVE_ELIGIBLE_H

#include "coll_gpu.h"
#include "coll_gpu_alg.h"
#include "coll_gpu_native_call.h"
#include "coll_gpu_native_mem.h"

BEGIN_C_DECLS

/* Whether the parameters let the communicator's nonblocking calls run natively at all (the
 * same on every rank). */
bool coll_gpu_native_nonblocking_allowed(const mca_coll_gpu_module_t *module);
/* Whether the communicator's native nonblocking calls may run now (parameters, its device
 * scratch set up, not broken): the same on every rank.  A call still has to be eligible. */
bool coll_gpu_native_nonblocking_ready(mca_coll_gpu_module_t *module);

/* Where a v-collective writes its receive blocks (counts, displs; team size entries each) and,
 * unless scounts_p is NULL, its send blocks (the alltoalls): the context's arrays for a blocking
 * call, arrays of the call's own for a nonblocking one (freed with it: coll_gpu_native_launch
 * and the communicator's thread). */
void coll_gpu_native_block_arrays(coll_gpu_native_call_t *call, bool nonblocking, size_t **counts_p,
                                  size_t **displs_p, size_t **scounts_p, size_t **sdispls_p);

/*
 * Whether a blocking call runs natively; fills call when it does.  count elements of dtype per
 * rank (block; the v-variants: the largest block, the same on every rank); op: the reduction
 * (reduce_scatter_block) or NULL.  A data-movement call (op NULL) is decided on its type
 * signature alone, the same on every rank whatever datatype each passes: call->esize is then 1,
 * and the algorithm runs on bytes (coll_gpu_signature.h).  bufs: this rank's nbufs buffers
 * (MPI_IN_PLACE ones left out); kinds_mixed: the ranks agreed their memory kinds differ;
 * nonblocking: a nonblocking call (run by the communicator's thread when it is native: only on
 * one node, device memory, a collective of uniform counts, the scratch already set up, no
 * blocking agreement asked for); a blocking call first waits for the communicator's queued
 * nonblocking calls.  On false
 * the reason was counted and logged: the caller stages (device) or hands the call to Open MPI
 * (host).  *rc_p is set on true only when the call already failed.
 */
/* A blocking call's word on the call board (coll_gpu_board.h): this rank can run it in kind's
 * memory when all of bufs are of that kind.  Whether every rank can (then it runs natively
 * everywhere; else every rank meets the ranks that passed it to Open MPI). */
bool coll_gpu_native_arrive(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                            coll_gpu_native_kind_t kind, const void *const *bufs, int nbufs);

bool coll_gpu_native_eligible(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              coll_gpu_ncoll_t coll, coll_gpu_native_kind_t kind, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              const void *const *bufs, int nbufs, bool kinds_mixed,
                              bool nonblocking, coll_gpu_native_call_t *call, int *rc_p);

/*
 * coll_gpu_check_counts: the ranks compare count, element size and op (op NULL: none) of a
 * call (collective, over the saved host allgather).  OMPI_SUCCESS when every rank passed the
 * same; else rank 0 shows a help message naming the first rank that differs from it and
 * every rank returns MPI_ERR_COUNT.
 */
int coll_gpu_native_check_counts(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 const char *mpi_call, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op);

/*
 * coll_gpu_check_counts for the v-collectives, where the uniform count of
 * coll_gpu_native_check_counts does not apply: with peer_counts NULL every rank must pass the
 * same counts of dtype (size entries: allgatherv's and reduce_scatter's recvcounts); else counts
 * of dtype are this rank's sendcounts and peer_counts of peer_dtype its recvcounts, and what rank
 * p sends rank q must be what q receives from p (alltoallv).  Blocks compare in bytes of the type
 * signature when op is NULL (data movement: datatypes may differ, signatures may not), else in
 * elements.  Then element size and op must match.  Does nothing and returns false unless the
 * parameters ask for the check and allow coll natively (the same on every rank); else collective,
 * and true when the call must fail with *rc_p (MPI_ERR_COUNT after rank 0's help message naming
 * the first rank that differs).
 */
bool coll_gpu_native_check_blocks(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                  coll_gpu_ncoll_t coll, const int *counts,
                                  struct ompi_datatype_t *dtype, const int *peer_counts,
                                  struct ompi_datatype_t *peer_dtype, struct ompi_op_t *op,
                                  int *rc_p);

END_C_DECLS

#endif /* COLL_GPU_NATIVE_ELIGIBLE_H */
