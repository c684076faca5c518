/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ucx backend of shmem-transport: one UCP context and worker per team,
 * endpoints to remote peers created on first use, memory mapped with
 * ucp_mem_map, rkeys packed for peers.  It knows nothing of the team core but
 * this interface; the core (shmem.c) calls it for peers on other nodes.
 *
 * Device memory: put/get go straight through UCX when the UCX build handles
 * CUDA memory (GPUDirect RDMA, UCP_ATTR_FIELD_MEMORY_TYPES); otherwise the
 * module pipelines them through pinned host bounce buffers.
 */
#ifndef SHMEM_UCX_H
#define SHMEM_UCX_H

#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shmem_ucx shmem_ucx_t;
typedef struct shmem_ucx_mem shmem_ucx_mem_t;   /* local mapping */
typedef struct shmem_ucx_rkey shmem_ucx_rkey_t; /* a peer's mapping */

/* Bytes of a packed rkey at most (shmem_ucx_mem_pack). */
#define SHMEM_UCX_PACKED_MAX 768

/* Collective over params->oob_allgather (worker addresses are exchanged); only
 * ranks with remote peers need an endpoint, all take part in the exchange. */
SHMEM_API shmem_status_t shmem_ucx_create(const shmem_team_params_t *params, shmem_ucx_t **ucx_p);
SHMEM_API void shmem_ucx_destroy(shmem_ucx_t *ucx);

/* ucp_mem_map of [ptr, ptr + len) of the given memory type.  ACCEL_MEM_DEVICE only where UCX
 * moves CUDA memory itself: SHMEM_ERR_UNSUPPORTED otherwise (emulated device memory always),
 * and the core maps host scratch for such peers (local device buffers are staged, remote ones
 * cannot be). */
SHMEM_API shmem_status_t shmem_ucx_mem_map(shmem_ucx_t *ucx, void *ptr, size_t len,
                                           accel_mem_type_t type, shmem_ucx_mem_t **mem_p);
SHMEM_API void shmem_ucx_mem_unmap(shmem_ucx_t *ucx, shmem_ucx_mem_t *mem);
/* rkey buffer plus base address and length, at most SHMEM_UCX_PACKED_MAX bytes. */
SHMEM_API shmem_status_t shmem_ucx_mem_pack(shmem_ucx_t *ucx, const shmem_ucx_mem_t *mem, void *buf,
                                            size_t *len_p);
/* Unpack on the endpoint to peer (created now if needed). */
SHMEM_API shmem_status_t shmem_ucx_rkey_unpack(shmem_ucx_t *ucx, int peer, const void *buf,
                                               size_t len, shmem_ucx_rkey_t **rkey_p);
SHMEM_API void shmem_ucx_rkey_release(shmem_ucx_t *ucx, shmem_ucx_rkey_t *rkey);
SHMEM_API size_t shmem_ucx_rkey_size(const shmem_ucx_rkey_t *rkey);

/* Issue a put/get at offset of the peer's mapping; local memory of any type. */
SHMEM_API shmem_status_t shmem_ucx_put(shmem_ucx_t *ucx, shmem_ucx_rkey_t *rkey, size_t offset,
                                       const void *src, size_t len);
SHMEM_API shmem_status_t shmem_ucx_get(shmem_ucx_t *ucx, void *dst, shmem_ucx_rkey_t *rkey,
                                       size_t offset, size_t len);
/* Write 8 bytes at offset (8-byte aligned) after every earlier put to that peer is visible
 * there; returns at once (the ordering, UCX fence or flush, is explained in shmem_ucx.c). */
SHMEM_API shmem_status_t shmem_ucx_put_signal(shmem_ucx_t *ucx, shmem_ucx_rkey_t *rkey,
                                              size_t offset, uint64_t value);
/* Complete what was issued to peer (-1: every peer), within the team's timeout. */
SHMEM_API shmem_status_t shmem_ucx_flush(shmem_ucx_t *ucx, int peer);
/* Progress the worker (the core calls it while waiting). */
SHMEM_API void shmem_ucx_progress(shmem_ucx_t *ucx);
/* True once the endpoint to peer reported an error. */
SHMEM_API bool shmem_ucx_peer_failed(const shmem_ucx_t *ucx, int peer);
/* Endpoints currently open (leak checks); ucx NULL: in the whole process, every context. */
SHMEM_API size_t shmem_ucx_endpoint_count(const shmem_ucx_t *ucx);
/* The network devices chosen ("mlx5_0:1" / "all"), for verbose output and tests. */
SHMEM_API const char *shmem_ucx_devices(const shmem_ucx_t *ucx);

/* The NIC(s) nearest to the accelerator's current device by hwloc, as a UCX_NET_DEVICES
 * value into buf; "" when no OpenFabrics device is found (UCX then uses what it finds). */
SHMEM_API shmem_status_t shmem_topo_nearest_nics(const accel_ops_t *accel, int device, char *buf,
                                                 size_t len);
/* The same, and in why (may be NULL) the reason in words: which HCAs and how near, or why
 * none ("no accelerator device", "hwloc finds no OpenFabrics device", ...). */
SHMEM_API shmem_status_t shmem_topo_nearest_nics_why(const accel_ops_t *accel, int device,
                                                     char *buf, size_t len, char *why,
                                                     size_t why_len);

/* What the last failing shmem_ucx_ call of this thread failed on, in words (the core copies it
 * into shmem_last_error()); also logged at level 2 through params->log. */
SHMEM_API const char *shmem_ucx_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_UCX_H */
