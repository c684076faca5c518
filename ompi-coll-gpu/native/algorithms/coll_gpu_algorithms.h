/* SPDX-License-Identifier: BSD-3-Clause */
/* The native algorithms (native/algorithms/, one file each), with what each takes of the call:
 * the functions and _fits tests the collectives' tables name. */
#ifndef COLL_GPU_ALGORITHMS_H
#define COLL_GPU_ALGORITHMS_H

#include "coll_gpu.h"
#include "coll_gpu_native_call.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_tree.h"

BEGIN_C_DECLS

/* The algorithms (coll_gpu_*_native.c, coll_gpu_allreduce_*.c), with what they take of call.
 * allreduce: sbuf (rbuf when in place), rbuf, count, chunk_bytes */
int coll_gpu_allreduce_one_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call);
int coll_gpu_allreduce_two_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call);
/* Device-driven (coll_gpu_kernel.h): one kernel per call, in one node; one-shot up to
 * COLL_GPU_DEVICE_ONE_SHOT_MAX, two-shot any size. */
bool coll_gpu_allreduce_device_one_shot_fits(const coll_gpu_alg_query_t *query, char *why,
                                             size_t why_len);
/* Whether a call fits the device-driven rows: device memory, one node of 2 to
 * ACCEL_NODE_MAX_RANKS ranks, their area (made by the first blocking call). */
bool coll_gpu_device_rows_fit(const coll_gpu_alg_query_t *query, char *why, size_t why_len);
/* Allreduce device_hierarchical: device memory, several nodes of as many ranks each (the
 * area's team, coll_gpu_native_kernel_team), the area made. */
bool coll_gpu_allreduce_device_hierarchical_fits(const coll_gpu_alg_query_t *query, char *why,
                                                 size_t why_len);
/* The v-forms' device rows: never (their blocks differ). */
bool coll_gpu_device_rows_never(const coll_gpu_alg_query_t *query, char *why, size_t why_len);
/* Any communicator, spanning nodes or not: reads only the left neighbour's scratch, by
 * coll_gpu_native_fetch when it is on another node. */
int coll_gpu_allreduce_ring(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* Communicators spanning nodes (any on one node too): node reduce-scatter, the shards'
 * allreduce between nodes, node allgather (coll_gpu_allreduce_hierarchical.c). */
int coll_gpu_allreduce_hierarchical(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call);
/* Small messages on any communicator: log2(n) rounds with one partner each. */
int coll_gpu_allreduce_recursive_doubling(struct ompi_communicator_t *comm,
                                          const coll_gpu_native_call_t *call);
/* Small messages across nodes: the node's inputs reduced by its leader, recursive doubling
 * between the leaders, the result handed to the node (coll_gpu_allreduce_hierarchical_doubling.c).
 */
int coll_gpu_allreduce_hierarchical_doubling(struct ompi_communicator_t *comm,
                                             const coll_gpu_native_call_t *call);
/* Large messages across many nodes: node reduce-scatter, Rabenseifner's allreduce (recursive
 * halving and doubling) of each shard among its owners, node allgather
 * (coll_gpu_allreduce_hierarchical_rabenseifner.c); _fits as hierarchical's. */
int coll_gpu_allreduce_hierarchical_rabenseifner(struct ompi_communicator_t *comm,
                                                 const coll_gpu_native_call_t *call);
bool coll_gpu_allreduce_hierarchical_rabenseifner_fits(const coll_gpu_native_t *native,
                                                       size_t esize);
/* Whether a chunk of one element of esize bytes fits hierarchical's layout in a scratch half
 * (the same answer on every rank). */
bool coll_gpu_allreduce_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce_scatter_block: sbuf size * count elements (rbuf when in place), rbuf count elements (its
 * start) */
int coll_gpu_reduce_scatter_block_direct(struct ompi_communicator_t *comm,
                                         const coll_gpu_native_call_t *call);
/* reduce_scatter(_block) across nodes: each node sends one partial of each other node's block
 * (coll_gpu_reduce_scatter_hierarchical.c); the same arguments as direct's.  _fits: whether a
 * chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_reduce_scatter_block_hierarchical(struct ompi_communicator_t *comm,
                                               const coll_gpu_native_call_t *call);
int coll_gpu_reduce_scatter_hierarchical(struct ompi_communicator_t *comm,
                                         const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_scatter_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce_scatter(_block) across many nodes: each node's partial to its leader, recursive
 * halving between the leaders (coll_gpu_reduce_scatter_hierarchical_halving.c); the same
 * arguments as direct's.  _fits: whether two elements of every rank fit a scratch half. */
int coll_gpu_reduce_scatter_block_hierarchical_halving(struct ompi_communicator_t *comm,
                                                       const coll_gpu_native_call_t *call);
int coll_gpu_reduce_scatter_hierarchical_halving(struct ompi_communicator_t *comm,
                                                 const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_scatter_halving_fits(const coll_gpu_native_t *native, size_t esize);
/* allgather: sbuf count elements, NULL when in place (the block already at rbuf + rank * count) */
int coll_gpu_allgather_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* allgather(v) across nodes: every block crosses to each other node once, fetched by one rank
 * of the node (coll_gpu_allgather_hierarchical.c); the same arguments as direct's.  _fits:
 * whether a chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_allgather_hierarchical(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call);
int coll_gpu_allgatherv_hierarchical(struct ompi_communicator_t *comm,
                                     const coll_gpu_native_call_t *call);
bool coll_gpu_allgather_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* allgather(v) across many nodes, small messages: each node's chunks to its leader, recursive
 * doubling between the leaders, the leader's result to its node
 * (coll_gpu_allgather_hierarchical_doubling.c); the same arguments.  _fits: an element of every
 * rank fits a scratch half. */
int coll_gpu_allgather_hierarchical_doubling(struct ompi_communicator_t *comm,
                                             const coll_gpu_native_call_t *call);
int coll_gpu_allgatherv_hierarchical_doubling(struct ompi_communicator_t *comm,
                                              const coll_gpu_native_call_t *call);
bool coll_gpu_allgather_doubling_fits(const coll_gpu_native_t *native, size_t esize);
/* bcast: rbuf count elements at every rank, root */
int coll_gpu_bcast_pipelined(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_bcast_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* A bcast down a tree of the node leaders (coll_gpu_bcast_tree.c, coll_gpu_tree.h):
 * binomial's, or pipelined's chain for large messages on 3 nodes or more.  Its chunks: a
 * scratch half at most, an eighth of the message at least COLL_GPU_BCAST_CHUNK_MIN bytes. */
#define COLL_GPU_BCAST_CHUNK_MIN 65536
int coll_gpu_bcast_tree(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                        coll_gpu_tree_t shape);
size_t coll_gpu_bcast_chunk_elems(const coll_gpu_native_t *native, size_t count, size_t esize);
/* allgatherv: block p is counts[p] elements at rbuf + displs[p]; sbuf counts[rank] elements,
 * NULL when in place (counts, displs may be native->counts, ->displs) */
int coll_gpu_allgatherv_direct(struct ompi_communicator_t *comm,
                               const coll_gpu_native_call_t *call);
/* reduce_scatter: sbuf the blocks (counts) one after the other (rbuf when in place); rbuf
 * counts[rank] elements (its start) */
int coll_gpu_reduce_scatter_direct(struct ompi_communicator_t *comm,
                                   const coll_gpu_native_call_t *call);
/* alltoallv: send block d (scounts, sdispls) goes to rank d, receive block p (counts, displs)
 * comes from rank p; sbuf NULL when in place (rbuf's blocks sent, scounts/sdispls ignored);
 * largest.  alltoall: count elements per block, sbuf NULL in place. */
int coll_gpu_alltoallv_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_alltoall_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_alltoall_hierarchical(struct ompi_communicator_t *comm,
                                   const coll_gpu_native_call_t *call);
bool coll_gpu_alltoall_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce: sbuf count elements (rbuf at the root when in place); rbuf count elements, the
 * root's only */
int coll_gpu_reduce_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* reduce across nodes: each node reduces its ranks' inputs into one partial, the root fetches
 * one per node (coll_gpu_reduce_hierarchical.c); the same arguments as direct's.  _fits:
 * whether a chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_reduce_hierarchical(struct ompi_communicator_t *comm,
                                 const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce binomial: the node leaders reduce up a binomial tree to the root
 * (coll_gpu_reduce_binomial.c); _fits: an input, a partial and ceil(log2 nnodes) landing slots
 * of one element in a scratch half. */
int coll_gpu_reduce_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_binomial_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce hierarchical segments its network step from this size on, on 3 nodes or more */
#define COLL_GPU_REDUCE_SEGMENTED_MIN_BYTES (64 * 1024)
/* gather: sbuf count elements, NULL at the root in place (its block already at
 * rbuf + root * count); rbuf size * count elements, the root's only */
int coll_gpu_gather_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* scatter: sbuf size * count elements, the root's only; rbuf count elements, NULL at the root
 * in place (its block stays at sbuf + root * count) */
int coll_gpu_scatter_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* gather and scatter across nodes: the root exchanges one message per other node with the
 * node's leader (coll_gpu_gather_scatter_hierarchical.c); the same arguments as direct's.
 * _fits: whether a chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_gather_hierarchical(struct ompi_communicator_t *comm,
                                 const coll_gpu_native_call_t *call);
int coll_gpu_scatter_hierarchical(struct ompi_communicator_t *comm,
                                  const coll_gpu_native_call_t *call);
bool coll_gpu_gather_scatter_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* gather and scatter across many nodes: the node leaders pass their subtrees' blocks along a
 * binomial tree rooted at the root (coll_gpu_gather_scatter_binomial.c); the same arguments as
 * direct's, hierarchical's _fits (a slot per rank in a scratch half). */
int coll_gpu_gather_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_scatter_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);

END_C_DECLS

#endif /* COLL_GPU_ALGORITHMS_H */
