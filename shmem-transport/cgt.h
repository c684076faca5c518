/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport: symmetric memory per communicator, put/get and signals.
 *
 * A team is the transport's view of one communicator: every rank can reach
 * every other, inside a node by cuda_ipc (device memory, through the
 * accelerator's IPC export/import: CUDA IPC, or the emulated backend in tests)
 * or posix (host memory in shared segments), between nodes by ucx.  The
 * algorithms above see only this header: which backend carries a put is the
 * team's business.
 *
 * Two kinds of remote memory:
 *  - symmetric memory (shmem_alloc): collective; each rank allocates the same
 *    size, every peer's part is reachable.  Scratch buffers, signal areas.
 *  - registered memory (shmem_register): a local buffer (a user buffer) made
 *    reachable; its packed handle travels to peers however the caller likes,
 *    they map it (shmem_peer_map).  Both ends cache.
 * Either gives a shmem_rmem_t per peer, the target of put/get.
 *
 * Ordering: put/get are issued in order per peer; shmem_signal() makes the
 * puts issued before it to that peer visible before the signal (release),
 * shmem_wait() returns after the signal and makes them visible to the caller
 * (acquire).  shmem_quiet() completes every put/get issued so far (the source
 * of a put may then be reused, the destination of a get read).
 *
 * Errors: every call returns a shmem_status_t; shmem_last_error() says what
 * failed in words (thread local), for the caller's help message.
 *
 * Threads: one thread at a time calls a team (one team per communicator, MPI's rules);
 * different teams may be used by different threads at once.  With params.thread_multiple,
 * shmem_team_progress may also be called on a team by any thread at any time (a progress
 * loop walking every team): it then skips a team another thread is inside, and UCX runs in
 * UCS_THREAD_MODE_MULTI.
 */
#ifndef SHMEM_H
#define SHMEM_H

#include "accel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_API __attribute__((visibility("hidden")))

typedef enum {
    SHMEM_OK = 0,
    SHMEM_ERR_INVALID,     /* bad argument: a handle of another team, a range past a region */
    SHMEM_ERR_NO_MEMORY,   /* an allocation or a mapping failed */
    SHMEM_ERR_UNSUPPORTED, /* no backend can reach this peer / memory */
    SHMEM_ERR_TIMEOUT,     /* a wait lasted longer than the team's timeout */
    SHMEM_ERR_PEER_FAILED, /* a peer died or its connection broke */
    SHMEM_ERR_TRANSPORT,   /* UCX or the OS returned an error */
    SHMEM_ERR_ACCEL,       /* the accelerator returned an error (accel_last_error()) */
    SHMEM_ERR_BOOTSTRAP,   /* the out-of-band allgather failed */
} shmem_status_t;

typedef enum {
    SHMEM_BACKEND_POSIX = 1u << 0,
    SHMEM_BACKEND_CUDA_IPC = 1u << 1,
    SHMEM_BACKEND_UCX = 1u << 2,
    SHMEM_BACKEND_ALL = 0x7u,
} shmem_backend_t;

/* Out-of-band allgather of len bytes per rank (the communicator's host
 * collectives); 0 on success.  Every rank calls it with the same len. */
typedef int (*shmem_oob_allgather_fn_t)(const void *sbuf, void *rbuf, size_t len, void *ctx);

/* Log sink: level 1 what was chosen (backends, NIC), 2 errors on the way, 3+ details. */
typedef void (*shmem_log_fn_t)(int level, const char *msg);

typedef struct {
    int rank;
    int size;
    /* size entries: the node of every rank, 0 .. nnodes-1 (the caller decides what a
     * node is: MPI_COMM_TYPE_SHARED, or emulated nodes of coll_gpu_ranks_per_node). */
    const int *node_of_rank;
    shmem_oob_allgather_fn_t oob_allgather;
    void *oob_ctx;
    /* The accelerator (NULL: host memory only, no cuda_ipc). */
    const accel_ops_t *accel;
    unsigned backends;       /* shmem_backend_t mask the team may use (0: all) */
    size_t reg_cache_max;    /* registrations and peer mappings kept per team, LRU (0: 64) */
    double timeout;          /* seconds before a wait fails with SHMEM_ERR_TIMEOUT (<= 0: never) */
    void (*progress)(void);  /* called while waiting (opal_progress), may be NULL */
    const char *net_devices; /* UCX devices ("mlx5_0:1,mlx5_1:1"); NULL: nearest NIC */
    const char *ucx_tls;     /* UCX transports for the team's context (NULL: UCX's default) */
    unsigned num_signals;    /* signal slots per rank (0: SHMEM_DEFAULT_SIGNALS) */
    /* the host runs more processes than it has cores (the caller knows better than the team,
     * whose node may be one of several emulated on the host): waits yield at once */
    bool oversubscribed;
    shmem_log_fn_t log;
    int verbose;
    bool thread_multiple; /* shmem_team_progress may run on other threads (see above) */
} shmem_team_params_t;

typedef struct shmem_team shmem_team_t;
typedef struct shmem_mem shmem_mem_t;   /* symmetric allocation */
typedef struct shmem_reg shmem_reg_t;   /* local registration */
typedef struct shmem_rmem shmem_rmem_t; /* a peer's memory, target of put/get */

/* The team's signal slots per rank (64-bit counters) unless its params ask for more. */
#define SHMEM_DEFAULT_SIGNALS 64
/* Bytes of a packed registration handle, at most. */
#define SHMEM_PACKED_MAX 1024

/* Collective over params->oob_allgather: every rank of the team calls it. */
SHMEM_API shmem_status_t shmem_team_create(const shmem_team_params_t *params,
                                           shmem_team_t **team_p);
/* Local: frees everything the team holds (unmaps peers, releases UCX). */
SHMEM_API void shmem_team_destroy(shmem_team_t *team);

SHMEM_API int shmem_team_rank(const shmem_team_t *team);
SHMEM_API int shmem_team_size(const shmem_team_t *team);
SHMEM_API int shmem_team_nnodes(const shmem_team_t *team);
/* Signal slots per rank: valid idx of shmem_signal/shmem_wait are below it. */
SHMEM_API unsigned shmem_team_num_signals(const shmem_team_t *team);
SHMEM_API bool shmem_team_peer_is_local(const shmem_team_t *team, int peer);
/* The backend that carries puts to peer's memory of that type (0: none). */
SHMEM_API shmem_backend_t shmem_team_peer_backend(const shmem_team_t *team, int peer,
                                                  accel_mem_type_t type);

/* Symmetric memory: collective; len and type equal on every rank. */
SHMEM_API shmem_status_t shmem_alloc(shmem_team_t *team, size_t len, accel_mem_type_t type,
                                     shmem_mem_t **mem_p);
SHMEM_API void shmem_free(shmem_team_t *team, shmem_mem_t *mem);
SHMEM_API void *shmem_mem_local(const shmem_mem_t *mem);
/* peer's part as a put/get target (peer == own rank: the local part). */
SHMEM_API shmem_rmem_t *shmem_mem_peer(const shmem_mem_t *mem, int peer);

/* Registration: local and cached (the same buffer again is a lookup; a freed and
 * reallocated buffer is recognized).  Drop the reference with shmem_deregister. */
SHMEM_API shmem_status_t shmem_register(shmem_team_t *team, void *ptr, size_t len,
                                        shmem_reg_t **reg_p);
SHMEM_API void shmem_deregister(shmem_team_t *team, shmem_reg_t *reg);
/* The handle peers need: at most SHMEM_PACKED_MAX bytes into buf, length in *len_p. */
SHMEM_API shmem_status_t shmem_reg_pack(shmem_team_t *team, const shmem_reg_t *reg, void *buf,
                                        size_t *len_p);
/* Map what peer packed (cached per peer and buffer); release with shmem_peer_unmap. */
SHMEM_API shmem_status_t shmem_peer_map(shmem_team_t *team, int peer, const void *packed,
                                        size_t len, shmem_rmem_t **rmem_p);
SHMEM_API void shmem_peer_unmap(shmem_team_t *team, shmem_rmem_t *rmem);

/* Where a kernel or the host can load/store peer memory directly (cuda_ipc, posix),
 * NULL when only put/get reach it (ucx). */
SHMEM_API void *shmem_rmem_ptr(const shmem_rmem_t *rmem);
SHMEM_API size_t shmem_rmem_size(const shmem_rmem_t *rmem);

/* Data movement.  src/dst may be host or device memory of this process. */
SHMEM_API shmem_status_t shmem_put(shmem_team_t *team, shmem_rmem_t *dst, size_t dst_offset,
                                   const void *src, size_t len);
SHMEM_API shmem_status_t shmem_get(shmem_team_t *team, void *dst, shmem_rmem_t *src,
                                   size_t src_offset, size_t len);
/* Complete every put/get issued to peer (-1: to every peer). */
SHMEM_API shmem_status_t shmem_quiet(shmem_team_t *team, int peer);

/* Signals: slot idx < shmem_team_num_signals of every rank, a 64-bit counter.  signal
 * sets peer's slot to value after earlier puts to peer are visible there. */
SHMEM_API shmem_status_t shmem_signal(shmem_team_t *team, int peer, unsigned idx, uint64_t value);
/* Wait until own slot idx >= value (acquire); SHMEM_ERR_PEER_FAILED as soon as a peer is known
 * dead (its process gone, its UCX endpoint failed); SHMEM_ERR_TIMEOUT only after the team's
 * timeout, if it has one. */
SHMEM_API shmem_status_t shmem_wait(shmem_team_t *team, unsigned idx, uint64_t value);
/* shmem_wait's test without the wait: *reached_p says whether own slot idx >= value (acquire);
 * returns SHMEM_ERR_PEER_FAILED when not and a peer is known dead.  Progresses UCX once. */
SHMEM_API shmem_status_t shmem_test(shmem_team_t *team, unsigned idx, uint64_t value,
                                    bool *reached_p);
/* Address of own slot idx, for a kernel to poll (device-mapped when the team has an
 * accelerator), and its current value. */
SHMEM_API volatile uint64_t *shmem_signal_addr(shmem_team_t *team, unsigned idx);
/* Move the team's transfers on without waiting (UCX progress): a rank that waits elsewhere
 * (Open MPI's progress loop, another collective) calls it, because over UCX a signal of this
 * rank may leave only from progress, and over tcp/shared-memory transports a peer's put or get
 * completes only while this rank progresses.  Cheap when there is nothing to do. */
SHMEM_API void shmem_team_progress(shmem_team_t *team);
/* Barrier among the ranks of this rank's node (through the signals, not the OOB). */
SHMEM_API shmem_status_t shmem_barrier_local(shmem_team_t *team);

SHMEM_API const char *shmem_status_string(shmem_status_t status);
SHMEM_API const char *shmem_backend_string(shmem_backend_t backend);
/* What the last failing call of this thread failed on, in words. */
SHMEM_API const char *shmem_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_H */
