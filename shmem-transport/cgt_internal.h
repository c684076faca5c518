/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport internals: the team, symmetric allocations, registrations and
 * peer mappings, shared by the core (shmem.c) and the node-local backends
 * (shmem_posix.c: shared segments and cross-memory attach, shmem_ipc.c:
 * accelerator IPC).  The ucx backend sees only shmem_ucx.h, plus the error and
 * log helpers at the end of this file.
 */
#ifndef SHMEM_INTERNAL_H
#define SHMEM_INTERNAL_H

#include "shmem.h"
#include "shmem_ucx.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Intrusive doubly linked list (LRU order: most recently used first). */
typedef struct shmem_list {
    struct shmem_list *prev;
    struct shmem_list *next;
} shmem_list_t;

static inline void shmem_list_init(shmem_list_t *head) { head->prev = head->next = head; }

static inline bool shmem_list_empty(const shmem_list_t *head) { return head->next == head; }

static inline void shmem_list_del(shmem_list_t *elem) {
    elem->prev->next = elem->next;
    elem->next->prev = elem->prev;
    elem->prev = elem->next = elem;
}

static inline void shmem_list_push_front(shmem_list_t *head, shmem_list_t *elem) {
    elem->next = head->next;
    elem->prev = head;
    head->next->prev = elem;
    head->next = elem;
}

#define shmem_container_of(_ptr, _type, _member)                                                   \
    ((_type *)(void *)((char *)(_ptr)-offsetof(_type, _member)))

/* Signal area: the user's num_signals slots, then one slot per round of the local barrier
 * (dissemination: ceil(log2(local ranks)) rounds). */
#define SHMEM_BARRIER_ROUNDS 32

/* How a put/get reaches a peer's memory. */
typedef enum {
    SHMEM_RMEM_NONE = 0, /* unreachable (put/get fail with SHMEM_ERR_UNSUPPORTED) */
    SHMEM_RMEM_SELF,     /* own memory */
    SHMEM_RMEM_POSIX,    /* host memory of a local peer, mapped: load/store */
    SHMEM_RMEM_IPC,      /* device memory of a local peer, imported: accelerator copies */
    SHMEM_RMEM_CMA,      /* host memory of a local peer, not mapped: process_vm_writev/readv */
    SHMEM_RMEM_UCX,      /* memory of a remote peer: UCX put/get */
} shmem_rmem_kind_t;

struct shmem_rmem {
    shmem_rmem_kind_t kind;
    int peer;
    void *ptr;   /* SELF, POSIX, IPC: mapped address of byte 0; CMA: address in the peer */
    size_t size; /* bytes reachable from ptr / the rkey */
    bool device; /* device memory: copies through the accelerator */
    pid_t pid;   /* CMA */
    shmem_ucx_rkey_t *rkey;
    bool cached; /* an entry of the peer-mapping cache (shmem_peer_map), not of a shmem_mem */
};

/* An imported accelerator allocation of a local peer, shared by the mappings
 * that fall in it; released with the last one. */
typedef struct shmem_ipc_import {
    shmem_list_t list;
    int peer;
    uint64_t buffer_id;
    uint64_t alloc_size;
    void *base;
    unsigned refcount;
} shmem_ipc_import_t;

/* Symmetric allocation: the local part and every peer's part. */
struct shmem_mem {
    shmem_list_t list; /* team->mems */
    uint64_t id;       /* per team, equal on every rank (allocation order) */
    size_t len;
    accel_mem_type_t type;
    bool device;
    void *local;
    bool local_is_segment;        /* local is a posix segment (munmap), else accelerator memory */
    shmem_rmem_t *peers;          /* team size entries */
    shmem_ipc_import_t **imports; /* team size entries, device memory of local peers */
    shmem_ucx_mem_t *ucx_mem;
};

/* How a registration is reached by local peers. */
typedef enum {
    SHMEM_REG_LOCAL_NONE = 0, /* no local path (no local peers, or none possible) */
    SHMEM_REG_LOCAL_SEGMENT,  /* host memory inside a symmetric host allocation */
    SHMEM_REG_LOCAL_CMA,      /* other host memory: cross-memory attach */
    SHMEM_REG_LOCAL_IPC,      /* device memory: accelerator IPC */
} shmem_reg_local_t;

struct shmem_reg {
    shmem_list_t lru; /* team->regs */
    unsigned refcount;
    uint64_t serial; /* unique in the process: keys the peers' mappings */
    void *ptr;
    size_t len;
    accel_mem_type_t type;
    uint64_t buffer_id; /* the accelerator's id of the allocation, 0 for host memory */
    shmem_reg_local_t local;
    uint64_t seg_id; /* SEGMENT: the allocation's id and where ptr lies in it */
    uint64_t seg_offset;
    accel_ipc_handle_t ipc; /* IPC */
    shmem_ucx_mem_t *ucx_mem;
};

/* A peer's registration mapped here (shmem_peer_map). */
typedef struct shmem_map {
    shmem_rmem_t rmem; /* what callers hold */
    shmem_list_t lru;  /* team->maps */
    unsigned refcount;
    /* key: the registration (peer, serial); the rest must match too */
    int peer;
    uint64_t serial;
    uint32_t local_kind; /* shmem_reg_local_t of the handle */
    uint64_t buffer_id;
    uint64_t addr;
    uint64_t len;
    shmem_ipc_import_t *import;
} shmem_map_t;

struct shmem_team {
    shmem_team_params_t params; /* node_of_rank points at the team's own copy */
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

    shmem_ucx_t *ucx; /* NULL on a single node */
    bool ucx_device;  /* UCX maps device memory (else remote peers reach host memory only) */

    uint64_t next_mem_id;
    shmem_list_t mems;
    unsigned num_signals; /* the user's slots per rank; the barrier's follow them */
    shmem_mem_t *signals; /* num_signals + SHMEM_BARRIER_ROUNDS slots per rank */
    uint64_t barrier_epoch;

    shmem_list_t regs;
    size_t nregs;
    shmem_list_t maps;
    size_t nmaps;
    shmem_list_t imports;

    void *bounce; /* CMA puts/gets of device memory go through it */
    size_t bounce_size;

    /* Under params.thread_multiple, a team with UCX peers is progressed (shmem_team_progress)
     * by any thread that waits in MPI, also while the thread that owns it runs a collective on
     * it: every call of shmem.h that touches the team holds this lock, progress only tries
     * it.  Recursive: a wait of the owner calls params.progress, which comes back into
     * shmem_team_progress on the same thread (as without threads).  Teams without UCX have
     * nothing that progress touches: they never lock. */
    pthread_mutex_t lock;
    bool lock_init;
    bool locking;
};

static inline void shmem_team_lock(shmem_team_t *team) {
    if ((team != NULL) && team->locking) {
        pthread_mutex_lock(&team->lock);
    }
}

static inline void shmem_team_unlock(shmem_team_t *team) {
    if ((team != NULL) && team->locking) {
        pthread_mutex_unlock(&team->lock);
    }
}

/* ---- errors and logs (shmem.c) -------------------------------------------------------------- */

/* Records the error of this thread (shmem_last_error) and logs it at level 2 when team (may be
 * NULL) has a log sink; returns status. */
SHMEM_API shmem_status_t shmem_error_set(const shmem_team_t *team, shmem_status_t status,
                                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
SHMEM_API void shmem_log(const shmem_team_t *team, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The accelerator's last error as a shmem error. */
SHMEM_API shmem_status_t shmem_error_accel(const shmem_team_t *team, accel_status_t status,
                                           const char *what);

/* ---- team helpers (shmem.c) ----------------------------------------------------------------- */

static inline bool shmem_team_is_local(const shmem_team_t *team, int peer) {
    return team->node_of_rank[peer] == team->node_of_rank[team->rank];
}

SHMEM_API shmem_status_t shmem_team_oob_allgather(shmem_team_t *team, const void *sbuf, void *rbuf,
                                                  size_t len);
/* Every rank passes its status; returns its own if not OK, else the first failure of another
 * rank (recorded as such), else SHMEM_OK.  One OOB step: all ranks call it together. */
SHMEM_API shmem_status_t shmem_team_agree(shmem_team_t *team, shmem_status_t status,
                                          const char *what);
/* Device memory of this process (cheap for a host pointer outside the accelerator's range). */
SHMEM_API bool shmem_ptr_is_device(const shmem_team_t *team, const void *ptr);
/* Copy len bytes; through the accelerator when either side is device memory. */
SHMEM_API shmem_status_t shmem_copy(shmem_team_t *team, void *dst, const void *src, size_t len,
                                    bool device);
SHMEM_API double shmem_time_now(void);

/* ---- posix backend (shmem_posix.c) ---------------------------------------------------------- */

/* Symmetric host memory: a segment per rank, mapped by the local peers, unlinked once all
 * have it.  Collective (two OOB steps). */
SHMEM_API shmem_status_t shmem_posix_mem_create(shmem_team_t *team, shmem_mem_t *mem);
SHMEM_API void shmem_posix_mem_destroy(shmem_team_t *team, shmem_mem_t *mem);
/* Cross-memory attach to a local peer's registered host memory. */
SHMEM_API shmem_status_t shmem_cma_probe(shmem_team_t *team, pid_t pid, uint64_t addr);
SHMEM_API shmem_status_t shmem_cma_put(shmem_team_t *team, shmem_rmem_t *dst, size_t offset,
                                       const void *src, size_t len);
SHMEM_API shmem_status_t shmem_cma_get(shmem_team_t *team, void *dst, shmem_rmem_t *src,
                                       size_t offset, size_t len);
/* Whether process pid still runs and is the one that started at start_time. */
SHMEM_API bool shmem_proc_alive(pid_t pid, uint64_t start_time);
SHMEM_API uint64_t shmem_proc_start_time(pid_t pid);

/* ---- accelerator IPC backend (shmem_ipc.c) -------------------------------------------------- */

SHMEM_API bool shmem_ipc_available(const shmem_team_t *team);
/* Symmetric device memory: accelerator allocation exported to the local peers.  Collective. */
SHMEM_API shmem_status_t shmem_ipc_mem_create(shmem_team_t *team, shmem_mem_t *mem);
SHMEM_API void shmem_ipc_mem_destroy(shmem_team_t *team, shmem_mem_t *mem);
/* Import a local peer's allocation once per team (refcounted by (peer, buffer_id)). */
SHMEM_API shmem_status_t shmem_ipc_import_get(shmem_team_t *team, int peer,
                                              const accel_ipc_handle_t *handle,
                                              shmem_ipc_import_t **import_p);
SHMEM_API void shmem_ipc_import_put(shmem_team_t *team, shmem_ipc_import_t *import);

#endif /* SHMEM_INTERNAL_H */
