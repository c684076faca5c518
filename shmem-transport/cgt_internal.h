/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport internals: the team, symmetric allocations, registrations and
 * peer mappings, shared by the core (cgt.c) and the node-local backends
 * (cgt_posix.c: shared segments and cross-memory attach, cgt_ipc.c:
 * accelerator IPC).  The ucx backend sees only cgt_ucx.h, plus the error and
 * log helpers at the end of this file.
 */
#ifndef CGT_INTERNAL_H
#define CGT_INTERNAL_H

#include "cgt.h"
#include "cgt_ucx.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Intrusive doubly linked list (LRU order: most recently used first). */
typedef struct cgt_list {
    struct cgt_list *prev;
    struct cgt_list *next;
} cgt_list_t;

static inline void cgt_list_init(cgt_list_t *head) { head->prev = head->next = head; }

static inline bool cgt_list_empty(const cgt_list_t *head) { return head->next == head; }

static inline void cgt_list_del(cgt_list_t *elem) {
    elem->prev->next = elem->next;
    elem->next->prev = elem->prev;
    elem->prev = elem->next = elem;
}

static inline void cgt_list_push_front(cgt_list_t *head, cgt_list_t *elem) {
    elem->next = head->next;
    elem->prev = head;
    head->next->prev = elem;
    head->next = elem;
}

#define cgt_container_of(_ptr, _type, _member)                                                     \
    ((_type *)(void *)((char *)(_ptr)-offsetof(_type, _member)))

/* Signal area: the user's num_signals slots, then one slot per round of the local barrier
 * (dissemination: ceil(log2(local ranks)) rounds). */
#define CGT_BARRIER_ROUNDS 32

/* How a put/get reaches a peer's memory. */
typedef enum {
    CGT_RMEM_NONE = 0, /* unreachable (put/get fail with CGT_ERR_UNSUPPORTED) */
    CGT_RMEM_SELF,     /* own memory */
    CGT_RMEM_POSIX,    /* host memory of a local peer, mapped: load/store */
    CGT_RMEM_IPC,      /* device memory of a local peer, imported: accelerator copies */
    CGT_RMEM_CMA,      /* host memory of a local peer, not mapped: process_vm_writev/readv */
    CGT_RMEM_UCX,      /* memory of a remote peer: UCX put/get */
} cgt_rmem_kind_t;

struct cgt_rmem {
    cgt_rmem_kind_t kind;
    int peer;
    void *ptr;   /* SELF, POSIX, IPC: mapped address of byte 0; CMA: address in the peer */
    size_t size; /* bytes reachable from ptr / the rkey */
    bool device; /* device memory: copies through the accelerator */
    pid_t pid;   /* CMA */
    cgt_ucx_rkey_t *rkey;
    bool cached; /* an entry of the peer-mapping cache (cgt_peer_map), not of a cgt_mem */
};

/* An imported accelerator allocation of a local peer, shared by the mappings
 * that fall in it; released with the last one. */
typedef struct cgt_ipc_import {
    cgt_list_t list;
    int peer;
    uint64_t buffer_id;
    uint64_t alloc_size;
    void *base;
    unsigned refcount;
} cgt_ipc_import_t;

/* Symmetric allocation: the local part and every peer's part. */
struct cgt_mem {
    cgt_list_t list; /* team->mems */
    uint64_t id;     /* per team, equal on every rank (allocation order) */
    size_t len;
    accel_mem_type_t type;
    bool device;
    void *local;
    bool local_is_segment;      /* local is a posix segment (munmap), else accelerator memory */
    cgt_rmem_t *peers;          /* team size entries */
    cgt_ipc_import_t **imports; /* team size entries, device memory of local peers */
    cgt_ucx_mem_t *ucx_mem;
};

/* How a registration is reached by local peers. */
typedef enum {
    CGT_REG_LOCAL_NONE = 0, /* no local path (no local peers, or none possible) */
    CGT_REG_LOCAL_SEGMENT,  /* host memory inside a symmetric host allocation */
    CGT_REG_LOCAL_CMA,      /* other host memory: cross-memory attach */
    CGT_REG_LOCAL_IPC,      /* device memory: accelerator IPC */
} cgt_reg_local_t;

struct cgt_reg {
    cgt_list_t lru; /* team->regs */
    unsigned refcount;
    uint64_t serial; /* unique in the process: keys the peers' mappings */
    void *ptr;
    size_t len;
    accel_mem_type_t type;
    uint64_t buffer_id; /* the accelerator's id of the allocation, 0 for host memory */
    cgt_reg_local_t local;
    uint64_t seg_id; /* SEGMENT: the allocation's id and where ptr lies in it */
    uint64_t seg_offset;
    accel_ipc_handle_t ipc; /* IPC */
    cgt_ucx_mem_t *ucx_mem;
};

/* A peer's registration mapped here (cgt_peer_map). */
typedef struct cgt_map {
    cgt_rmem_t rmem; /* what callers hold */
    cgt_list_t lru;  /* team->maps */
    unsigned refcount;
    /* key: the registration (peer, serial); the rest must match too */
    int peer;
    uint64_t serial;
    uint32_t local_kind; /* cgt_reg_local_t of the handle */
    uint64_t buffer_id;
    uint64_t addr;
    uint64_t len;
    cgt_ipc_import_t *import;
} cgt_map_t;

struct cgt_team {
    cgt_team_params_t params; /* node_of_rank points at the team's own copy */
    int rank;
    int size;
    int nnodes;
    int *node_of_rank;
    int nlocal;       /* ranks on this node, this one included */
    int local_index;  /* this rank's index among them */
    int *local_ranks; /* nlocal entries, ascending */
    uint64_t team_id; /* random, agreed at creation: packed handles carry it */
    unsigned backends;
    double timeout;
    size_t cache_max;

    /* Liveness of local peers: pid and start time (pid reuse), checked in waits. */
    pid_t *pids;
    uint64_t *start_times;
    bool *alive_checkable;
    double next_alive_check;
    int local_cpus;      /* CPUs the node's ranks may run on (union of their affinities) */
    unsigned wait_spins; /* polls a wait spins before it yields: 0 when nlocal > local_cpus */

    cgt_ucx_t *ucx;  /* NULL on a single node */
    bool ucx_device; /* UCX maps device memory (else remote peers reach host memory only) */

    uint64_t next_mem_id;
    cgt_list_t mems;
    unsigned num_signals; /* the user's slots per rank; the barrier's follow them */
    cgt_mem_t *signals;   /* num_signals + CGT_BARRIER_ROUNDS slots per rank */
    uint64_t barrier_epoch;

    cgt_list_t regs;
    size_t nregs;
    cgt_list_t maps;
    size_t nmaps;
    cgt_list_t imports;

    cgt_traffic_t traffic;      /* what this rank issued to other nodes (cgt_team_traffic) */
    uint64_t *received_by_node; /* size entries: traffic.bytes_received by the peer's node */

    void *bounce; /* CMA puts/gets of device memory go through it */
    size_t bounce_size;

    /* Under params.thread_multiple, a team with UCX peers is progressed (cgt_team_progress)
     * by any thread that waits in MPI, also while the thread that owns it runs a collective on
     * it: every call of cgt.h that touches the team holds this lock, progress only tries
     * it.  Recursive: a wait of the owner calls params.progress, which comes back into
     * cgt_team_progress on the same thread (as without threads).  Teams without UCX have
     * nothing that progress touches: they never lock. */
    pthread_mutex_t lock;
    bool lock_init;
    bool locking;
};

static inline void cgt_team_lock(cgt_team_t *team) {
    if ((team != NULL) && team->locking) {
        pthread_mutex_lock(&team->lock);
    }
}

/* cgt_team_lock unless another thread holds the lock: false then, and nothing taken. */
static inline bool cgt_team_trylock(cgt_team_t *team) {
    return (team == NULL) || !team->locking || (pthread_mutex_trylock(&team->lock) == 0);
}

static inline void cgt_team_unlock(cgt_team_t *team) {
    if ((team != NULL) && team->locking) {
        pthread_mutex_unlock(&team->lock);
    }
}

/* ---- errors and logs (cgt.c) -------------------------------------------------------------- */

/* Records the error of this thread (cgt_last_error) and logs it at level 2 when team (may be
 * NULL) has a log sink; returns status. */
CGT_API cgt_status_t cgt_error_set(const cgt_team_t *team, cgt_status_t status, const char *fmt,
                                   ...) __attribute__((format(printf, 3, 4)));
CGT_API void cgt_log(const cgt_team_t *team, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The accelerator's last error as a shmem error. */
CGT_API cgt_status_t cgt_error_accel(const cgt_team_t *team, accel_status_t status,
                                     const char *what);

/* ---- team helpers (cgt.c) ----------------------------------------------------------------- */

static inline bool cgt_team_is_local(const cgt_team_t *team, int peer) {
    return team->node_of_rank[peer] == team->node_of_rank[team->rank];
}

CGT_API cgt_status_t cgt_team_oob_allgather(cgt_team_t *team, const void *sbuf, void *rbuf,
                                            size_t len);
/* Every rank passes its status; returns its own if not OK, else the first failure of another
 * rank (recorded as such), else CGT_OK.  One OOB step: all ranks call it together. */
CGT_API cgt_status_t cgt_team_agree(cgt_team_t *team, cgt_status_t status, const char *what);
/* Device memory of this process (cheap for a host pointer outside the accelerator's range). */
CGT_API bool cgt_ptr_is_device(const cgt_team_t *team, const void *ptr);
/* Copy len bytes; through the accelerator when either side is device memory. */
CGT_API cgt_status_t cgt_copy(cgt_team_t *team, void *dst, const void *src, size_t len,
                              bool device);
CGT_API double cgt_time_now(void);

/* ---- posix backend (cgt_posix.c) ---------------------------------------------------------- */

/* Symmetric host memory: a segment per rank, mapped by the local peers, unlinked once all
 * have it.  Collective (two OOB steps). */
CGT_API cgt_status_t cgt_posix_mem_create(cgt_team_t *team, cgt_mem_t *mem);
CGT_API void cgt_posix_mem_destroy(cgt_team_t *team, cgt_mem_t *mem);
/* Cross-memory attach to a local peer's registered host memory. */
CGT_API cgt_status_t cgt_cma_probe(cgt_team_t *team, pid_t pid, uint64_t addr);
CGT_API cgt_status_t cgt_cma_put(cgt_team_t *team, cgt_rmem_t *dst, size_t offset, const void *src,
                                 size_t len);
CGT_API cgt_status_t cgt_cma_get(cgt_team_t *team, void *dst, cgt_rmem_t *src, size_t offset,
                                 size_t len);

/* ---- accelerator IPC backend (cgt_ipc.c) -------------------------------------------------- */

CGT_API bool cgt_ipc_available(const cgt_team_t *team);
/* Symmetric device memory: accelerator allocation exported to the local peers.  Collective. */
CGT_API cgt_status_t cgt_ipc_mem_create(cgt_team_t *team, cgt_mem_t *mem);
CGT_API void cgt_ipc_mem_destroy(cgt_team_t *team, cgt_mem_t *mem);
/* Import a local peer's allocation once per team (refcounted by (peer, buffer_id)). */
CGT_API cgt_status_t cgt_ipc_import_get(cgt_team_t *team, int peer,
                                        const accel_ipc_handle_t *handle,
                                        cgt_ipc_import_t **import_p);
CGT_API void cgt_ipc_import_put(cgt_team_t *team, cgt_ipc_import_t *import);

#endif /* CGT_INTERNAL_H */
