/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ucx backend of shmem-transport: one UCP context and worker per team,
 * endpoints to remote peers created on first use, memory mapped with
 * ucp_mem_map, rkeys packed for peers.  It knows nothing of the team core but
 * this interface; the core (cgt.c) calls it for peers on other nodes.
 *
 * Device memory: put/get go straight through UCX when the UCX build handles
 * CUDA memory (GPUDirect RDMA, UCP_ATTR_FIELD_MEMORY_TYPES); otherwise the
 * module pipelines them through pinned host bounce buffers.
 */
#ifndef CGT_UCX_H
#define CGT_UCX_H

#include "cgt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cgt_ucx cgt_ucx_t;
typedef struct cgt_ucx_mem cgt_ucx_mem_t;   /* local mapping */
typedef struct cgt_ucx_rkey cgt_ucx_rkey_t; /* a peer's mapping */

/* Bytes of a packed rkey at most (cgt_ucx_mem_pack). */
#define CGT_UCX_PACKED_MAX 768

/* Collective over params->oob_allgather (worker addresses are exchanged); only
 * ranks with remote peers need an endpoint, all take part in the exchange. */
CGT_API cgt_status_t cgt_ucx_create(const cgt_team_params_t *params, cgt_ucx_t **ucx_p);
CGT_API void cgt_ucx_destroy(cgt_ucx_t *ucx);

/* ucp_mem_map of [ptr, ptr + len) of the given memory type.  ACCEL_MEM_DEVICE only where UCX
 * moves CUDA memory itself: CGT_ERR_UNSUPPORTED otherwise (emulated device memory always),
 * and the core maps host scratch for such peers (local device buffers are staged, remote ones
 * cannot be). */
CGT_API cgt_status_t cgt_ucx_mem_map(cgt_ucx_t *ucx, void *ptr, size_t len, accel_mem_type_t type,
                                     cgt_ucx_mem_t **mem_p);
CGT_API void cgt_ucx_mem_unmap(cgt_ucx_t *ucx, cgt_ucx_mem_t *mem);
/* rkey buffer plus base address and length, at most CGT_UCX_PACKED_MAX bytes. */
CGT_API cgt_status_t cgt_ucx_mem_pack(cgt_ucx_t *ucx, const cgt_ucx_mem_t *mem, void *buf,
                                      size_t *len_p);
/* Unpack on the endpoint to peer (created now if needed). */
CGT_API cgt_status_t cgt_ucx_rkey_unpack(cgt_ucx_t *ucx, int peer, const void *buf, size_t len,
                                         cgt_ucx_rkey_t **rkey_p);
CGT_API void cgt_ucx_rkey_release(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey);
CGT_API size_t cgt_ucx_rkey_size(const cgt_ucx_rkey_t *rkey);

/* Issue a put/get at offset of the peer's mapping; local memory of any type. */
CGT_API cgt_status_t cgt_ucx_put(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey, size_t offset,
                                 const void *src, size_t len);
CGT_API cgt_status_t cgt_ucx_get(cgt_ucx_t *ucx, void *dst, cgt_ucx_rkey_t *rkey, size_t offset,
                                 size_t len);
/* Write 8 bytes at offset (8-byte aligned) after every earlier put to that peer is visible
 * there; returns at once (the ordering, UCX fence or flush, is explained in cgt_ucx.c). */
CGT_API cgt_status_t cgt_ucx_put_signal(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey, size_t offset,
                                        uint64_t value);
/* Complete what was issued to peer (-1: every peer), within the team's timeout. */
CGT_API cgt_status_t cgt_ucx_flush(cgt_ucx_t *ucx, int peer);
/* Progress the worker (the core calls it while waiting). */
CGT_API void cgt_ucx_progress(cgt_ucx_t *ucx);
/* True once the endpoint to peer reported an error. */
CGT_API bool cgt_ucx_peer_failed(const cgt_ucx_t *ucx, int peer);
/* Endpoints currently open (leak checks); ucx NULL: in the whole process, every context. */
CGT_API size_t cgt_ucx_endpoint_count(const cgt_ucx_t *ucx);
/* The network devices chosen ("mlx5_0:1" / "all"), for verbose output and tests. */
CGT_API const char *cgt_ucx_devices(const cgt_ucx_t *ucx);

/* The NIC(s) nearest to the accelerator's current device by hwloc, as a UCX_NET_DEVICES
 * value into buf; "" when no OpenFabrics device is found (UCX then uses what it finds). */
CGT_API cgt_status_t cgt_topo_nearest_nics(const accel_ops_t *accel, int device, char *buf,
                                           size_t len);
/* The same, and in why (may be NULL) the reason in words: which HCAs and how near, or why
 * none ("no accelerator device", "hwloc finds no OpenFabrics device", ...). */
CGT_API cgt_status_t cgt_topo_nearest_nics_why(const accel_ops_t *accel, int device, char *buf,
                                               size_t len, char *why, size_t why_len);

/* What the last failing cgt_ucx_ call of this thread failed on, in words (the core copies it
 * into cgt_last_error()); also logged at level 2 through params->log. */
CGT_API const char *cgt_ucx_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* CGT_UCX_H */
