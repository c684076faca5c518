/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cgt, the coll/gpu transport (folder shmem-transport/, library libcgt.la): symmetric
 * memory per communicator, put/get and signals.  Every name carries the cgt_ / CGT_
 * prefix (not shmem_: that is OpenSHMEM's API, which an application may link too).
 *
 * A team is the transport's view of one communicator: every rank can reach
 * every other, inside a node by cuda_ipc (device memory, through the
 * accelerator's IPC export/import: CUDA IPC, or the emulated backend in tests)
 * or posix (host memory in shared segments), between nodes by ucx.  The
 * algorithms above see only this header: which backend carries a put is the
 * team's business.
 *
 * Two kinds of remote memory:
 *  - symmetric memory (cgt_alloc): collective; each rank allocates the same
 *    size, every peer's part is reachable.  Scratch buffers, signal areas.
 *  - registered memory (cgt_register): a local buffer (a user buffer) made
 *    reachable; its packed handle travels to peers however the caller likes,
 *    they map it (cgt_peer_map).  Both ends cache.
 * Either gives a cgt_rmem_t per peer, the target of put/get.
 *
 * Ordering: put/get are issued in order per peer; cgt_signal() makes the
 * puts issued before it to that peer visible before the signal (release),
 * cgt_wait() returns after the signal and makes them visible to the caller
 * (acquire).  cgt_quiet() completes every put/get issued so far (the source
 * of a put may then be reused, the destination of a get read).
 *
 * Errors: every call returns a cgt_status_t; cgt_last_error() says what
 * failed in words (thread local), for the caller's help message.
 *
 * Threads: one thread at a time calls a team (one team per communicator, MPI's rules);
 * different teams may be used by different threads at once.  With params.thread_multiple,
 * cgt_team_progress may also be called on a team by any thread at any time (a progress
 * loop walking every team): it then skips a team another thread is inside, and UCX runs in
 * UCS_THREAD_MODE_MULTI.
 */
#ifndef CGT_H
#define CGT_H

#include "accel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CGT_API __attribute__((visibility("hidden")))

typedef enum {
    CGT_OK = 0,
    CGT_ERR_INVALID,     /* bad argument: a handle of another team, a range past a region */
    CGT_ERR_NO_MEMORY,   /* an allocation or a mapping failed */
    CGT_ERR_UNSUPPORTED, /* no backend can reach this peer / memory */
    CGT_ERR_TIMEOUT,     /* a wait lasted longer than the team's timeout */
    CGT_ERR_PEER_FAILED, /* a peer died or its connection broke */
    CGT_ERR_TRANSPORT,   /* UCX or the OS returned an error */
    CGT_ERR_ACCEL,       /* the accelerator returned an error (accel_last_error()) */
    CGT_ERR_BOOTSTRAP,   /* the out-of-band allgather failed */
} cgt_status_t;

typedef enum {
    CGT_BACKEND_POSIX = 1u << 0,
    CGT_BACKEND_CUDA_IPC = 1u << 1,
    CGT_BACKEND_UCX = 1u << 2,
    CGT_BACKEND_ALL = 0x7u,
} cgt_backend_t;

/* Out-of-band allgather of len bytes per rank (the communicator's host
 * collectives); 0 on success.  Every rank calls it with the same len. */
typedef int (*cgt_oob_allgather_fn_t)(const void *sbuf, void *rbuf, size_t len, void *ctx);

/* Log sink: level 1 what was chosen (backends, NIC), 2 errors on the way, 3+ details. */
typedef void (*cgt_log_fn_t)(int level, const char *msg);

typedef struct {
    int rank;
    int size;
    /* size entries: the node of every rank, 0 .. nnodes-1 (the caller decides what a
     * node is: MPI_COMM_TYPE_SHARED, or emulated nodes of coll_gpu_ranks_per_node). */
    const int *node_of_rank;
    cgt_oob_allgather_fn_t oob_allgather;
    void *oob_ctx;
    /* The accelerator (NULL: host memory only, no cuda_ipc). */
    const accel_ops_t *accel;
    unsigned backends;       /* cgt_backend_t mask the team may use (0: all) */
    size_t reg_cache_max;    /* registrations and peer mappings kept per team, LRU (0: 64) */
    double timeout;          /* seconds before a wait fails with CGT_ERR_TIMEOUT (<= 0: never) */
    void (*progress)(void);  /* called while waiting (opal_progress), may be NULL */
    const char *net_devices; /* UCX devices ("mlx5_0:1,mlx5_1:1"); NULL: nearest NIC */
    const char *ucx_tls;     /* UCX transports for the team's context (NULL: UCX's default) */
    unsigned num_signals;    /* signal slots per rank (0: CGT_DEFAULT_SIGNALS) */
    /* the host runs more processes than it has cores (the caller knows better than the team,
     * whose node may be one of several emulated on the host): waits yield at once */
    bool oversubscribed;
    cgt_log_fn_t log;
    int verbose;
    bool thread_multiple; /* cgt_team_progress may run on other threads (see above) */
} cgt_team_params_t;

typedef struct cgt_team cgt_team_t;
typedef struct cgt_mem cgt_mem_t;   /* symmetric allocation */
typedef struct cgt_reg cgt_reg_t;   /* local registration */
typedef struct cgt_rmem cgt_rmem_t; /* a peer's memory, target of put/get */

/* The team's signal slots per rank (64-bit counters) unless its params ask for more. */
#define CGT_DEFAULT_SIGNALS 64
/* Bytes of a packed registration handle, at most. */
#define CGT_PACKED_MAX 1024

/* What a polling loop issues between two reads of memory another thread or process writes:
 * x86's pause, aarch64's yield (a sibling hardware thread gets the core meanwhile). */
static inline void cgt_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A host segment shared by this host's processes outside any team (the component's call
 * board): a name no other process can have, which names its creator (a segment whose creator
 * died before unlinking it is swept by a later creator), mapped; errno says why not.  The
 * creator unlinks the name once every peer has attached. */
#define CGT_SHM_NAME_LEN 96
CGT_API cgt_status_t cgt_shm_create(size_t len, char *name, void **ptr_p);
CGT_API cgt_status_t cgt_shm_attach(const char *name, size_t len, void **ptr_p);
CGT_API void cgt_shm_unlink(const char *name);
CGT_API void cgt_shm_unmap(void *ptr, size_t len);
/* Whether process pid still runs and is the one that started at start_time (a pid reused
 * since is another process). */
CGT_API bool cgt_proc_alive(pid_t pid, uint64_t start_time);
CGT_API uint64_t cgt_proc_start_time(pid_t pid);

/* Collective over params->oob_allgather: every rank of the team calls it. */
CGT_API cgt_status_t cgt_team_create(const cgt_team_params_t *params, cgt_team_t **team_p);
/* Local: frees everything the team holds (unmaps peers, releases UCX). */
CGT_API void cgt_team_destroy(cgt_team_t *team);

CGT_API int cgt_team_rank(const cgt_team_t *team);
CGT_API int cgt_team_size(const cgt_team_t *team);
CGT_API int cgt_team_nnodes(const cgt_team_t *team);
/* Signal slots per rank: valid idx of cgt_signal/cgt_wait are below it. */
CGT_API unsigned cgt_team_num_signals(const cgt_team_t *team);
CGT_API bool cgt_team_peer_is_local(const cgt_team_t *team, int peer);
/* The network interfaces this rank's UCX context was given (UCX_NET_DEVICES: a list, or "all");
 * "" on a team of one node, which has none. */
CGT_API const char *cgt_team_net_devices(const cgt_team_t *team);
/* The backend that carries puts to peer's memory of that type (0: none). */
CGT_API cgt_backend_t cgt_team_peer_backend(const cgt_team_t *team, int peer,
                                            accel_mem_type_t type);

/* Symmetric memory: collective; len and type equal on every rank. */
CGT_API cgt_status_t cgt_alloc(cgt_team_t *team, size_t len, accel_mem_type_t type,
                               cgt_mem_t **mem_p);
CGT_API void cgt_free(cgt_team_t *team, cgt_mem_t *mem);
CGT_API void *cgt_mem_local(const cgt_mem_t *mem);
/* peer's part as a put/get target (peer == own rank: the local part). */
CGT_API cgt_rmem_t *cgt_mem_peer(const cgt_mem_t *mem, int peer);

/* Registration: local and cached (the same buffer again is a lookup; a freed and
 * reallocated buffer is recognized).  Drop the reference with cgt_deregister. */
CGT_API cgt_status_t cgt_register(cgt_team_t *team, void *ptr, size_t len, cgt_reg_t **reg_p);
CGT_API void cgt_deregister(cgt_team_t *team, cgt_reg_t *reg);
/* The handle peers need: at most CGT_PACKED_MAX bytes into buf, length in *len_p. */
CGT_API cgt_status_t cgt_reg_pack(cgt_team_t *team, const cgt_reg_t *reg, void *buf, size_t *len_p);
/* Map what peer packed (cached per peer and buffer); release with cgt_peer_unmap. */
CGT_API cgt_status_t cgt_peer_map(cgt_team_t *team, int peer, const void *packed, size_t len,
                                  cgt_rmem_t **rmem_p);
CGT_API void cgt_peer_unmap(cgt_team_t *team, cgt_rmem_t *rmem);

/* Where a kernel or the host can load/store peer memory directly (cuda_ipc, posix),
 * NULL when only put/get reach it (ucx). */
CGT_API void *cgt_rmem_ptr(const cgt_rmem_t *rmem);
CGT_API size_t cgt_rmem_size(const cgt_rmem_t *rmem);

/* Data movement.  src/dst may be host or device memory of this process. */
CGT_API cgt_status_t cgt_put(cgt_team_t *team, cgt_rmem_t *dst, size_t dst_offset, const void *src,
                             size_t len);
CGT_API cgt_status_t cgt_get(cgt_team_t *team, void *dst, cgt_rmem_t *src, size_t src_offset,
                             size_t len);
/* Complete every put/get issued to peer (-1: to every peer). */
CGT_API cgt_status_t cgt_quiet(cgt_team_t *team, int peer);

/* Signals: slot idx < cgt_team_num_signals of every rank, a 64-bit counter.  signal
 * sets peer's slot to value after earlier puts to peer are visible there. */
CGT_API cgt_status_t cgt_signal(cgt_team_t *team, int peer, unsigned idx, uint64_t value);
/* Wait until own slot idx >= value (acquire); CGT_ERR_PEER_FAILED as soon as a peer is known
 * dead (its process gone, its UCX endpoint failed); CGT_ERR_TIMEOUT only after the team's
 * timeout, if it has one. */
CGT_API cgt_status_t cgt_wait(cgt_team_t *team, unsigned idx, uint64_t value);
/* cgt_wait's test without the wait: *reached_p says whether own slot idx >= value (acquire);
 * returns CGT_ERR_PEER_FAILED when not and a peer is known dead.  Progresses UCX once. */
CGT_API cgt_status_t cgt_test(cgt_team_t *team, unsigned idx, uint64_t value, bool *reached_p);
/* Address of own slot idx, for a kernel to poll (device-mapped when the team has an
 * accelerator), and its current value. */
CGT_API volatile uint64_t *cgt_signal_addr(cgt_team_t *team, unsigned idx);
/* A peer known dead (its process gone, on this node; its UCX endpoint failed), its error set
 * (cgt_last_error); -1: none, or the team busy on another thread (ask again later: it never
 * blocks).  For a wait that is not the transport's (a kernel's flags). */
CGT_API int cgt_team_dead_peer(cgt_team_t *team);
/* Move the team's transfers on without waiting (UCX progress): a rank that waits elsewhere
 * (Open MPI's progress loop, another collective) calls it, because over UCX a signal of this
 * rank may leave only from progress, and over tcp/shared-memory transports a peer's put or get
 * completes only while this rank progresses.  Cheap when there is nothing to do. */
CGT_API void cgt_team_progress(cgt_team_t *team);
/* Barrier among the ranks of this rank's node (through the signals, not the OOB). */
CGT_API cgt_status_t cgt_barrier_local(cgt_team_t *team);

/*
 * Traffic between nodes: what this rank issued through the team to ranks on other nodes since
 * the team was created, counted where cgt hands each operation to the backend that crosses
 * nodes (ucx; emulated nodes of one host count as nodes).  One-sided, so each byte is counted
 * once, by the rank that issues it: a put's bytes as sent, a get's as received (the peer's NIC
 * sends them, but the peer's counters never see them); the sum over ranks is what crossed the
 * network.  A signal is a message of 8 bytes sent.  One operation is one message, however the
 * backend carries it (a staged device put goes through bounce buffers in pieces).
 */
typedef struct {
    uint64_t bytes_sent;     /* puts and signals to other nodes */
    uint64_t bytes_received; /* gets from other nodes */
    uint64_t messages;       /* puts, gets and signals to or from other nodes */
    uint64_t signals;        /* of which signals */
} cgt_traffic_t;

/* The counters above (a copy; cheap: the algorithms read them around every call). */
CGT_API void cgt_team_traffic(const cgt_team_t *team, cgt_traffic_t *traffic);
/* bytes_received by the node of the peer they came from: cgt_team_nnodes entries.  Gets are
 * counted by the getter; these say whose network interface sent them. */
CGT_API const uint64_t *cgt_team_received_by_node(const cgt_team_t *team);

/* Every team's signal round trips of this process since it loaded the library: signals sent
 * (cgt_signal, and those of cgt_barrier_local) and waits for a peer's signal (cgt_wait, a
 * barrier's, and a cgt_test that found it reached).  What a collective asks of the host beside
 * the device's work; updated atomically, read as they are (MPI_T). */
typedef struct {
    unsigned long long signals;
    unsigned long long waits;
} cgt_counts_t;

CGT_API const cgt_counts_t *cgt_counts(void);

CGT_API const char *cgt_status_string(cgt_status_t status);
CGT_API const char *cgt_backend_string(cgt_backend_t backend);
/* What the last failing call of this thread failed on, in words. */
CGT_API const char *cgt_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* CGT_H */
