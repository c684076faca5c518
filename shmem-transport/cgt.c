/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport core: teams, symmetric allocations, the registration and
 * peer-mapping caches, put/get dispatch, signals and waits.
 *
 * Which path carries a put is decided when the target is mapped (cgt_rmem_t
 * kind), so put/get are one switch: load/store into a posix segment, an
 * accelerator copy into an imported allocation, cross-memory attach for other
 * host memory of local peers, UCX for remote peers.
 *
 * Collective steps (team creation, cgt_alloc) end with an agreement over the
 * OOB allgather, so that a failure on one rank fails the call on every rank
 * instead of leaving the others in the next allgather.
 */
/* sched_getaffinity, CPU_COUNT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cgt_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#ifndef COLL_GPU_HAVE_UCX
#define COLL_GPU_HAVE_UCX 0
#endif

#define CGT_DEFAULT_CACHE_MAX 64
/* Local peers' liveness is read from /proc at most this often while waiting. */
#define CGT_ALIVE_CHECK_INTERVAL 0.005
/* Waits spin this many times before they yield the CPU (not at all on an oversubscribed node:
 * more local ranks than CPUs), and sleep after SLEEP_AFTER s. */
#define CGT_WAIT_SPINS 1024
#define CGT_WAIT_SLEEP_AFTER 0.05

/* A packed registration: this header, then ucx_len bytes of UCX rkey. */
#define CGT_PACKED_MAGIC 0x484d4853u /* "SHMH" */
#define CGT_PACKED_VERSION 1
typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t local_kind; /* cgt_reg_local_t */
    uint64_t team_id;
    int32_t rank;
    int32_t pid;
    uint32_t mem_type;
    uint32_t ucx_len;
    uint64_t serial; /* the registration, unique in its process and team */
    uint64_t addr;
    uint64_t len;
    uint64_t buffer_id;
    uint64_t seg_id;
    uint64_t seg_offset;
    accel_ipc_handle_t ipc;
} cgt_packed_t;

_Static_assert(sizeof(cgt_packed_t) + CGT_UCX_PACKED_MAX <= CGT_PACKED_MAX,
               "a packed handle must fit CGT_PACKED_MAX");

/* What every rank says of itself at team creation. */
typedef struct {
    uint64_t team_id; /* candidate: rank 0's is the team's */
    uint64_t params_hash;
    uint64_t start_time;
    int32_t pid;
    int32_t status;
} cgt_team_info_t;

static __thread char cgt_error_buf[512];
static uint64_t cgt_reg_serial;

/* ---- errors and logs ------------------------------------------------------------------------ */

static void cgt_log_va(const cgt_team_t *team, int level, const char *fmt, va_list ap) {
    char msg[512];

    if (team == NULL || team->params.log == NULL || team->params.verbose < level) {
        return;
    }
    vsnprintf(msg, sizeof(msg), fmt, ap);
    team->params.log(level, msg);
}

void cgt_log(const cgt_team_t *team, int level, const char *fmt, ...) {
    va_list ap;

    va_start(ap, fmt);
    cgt_log_va(team, level, fmt, ap);
    va_end(ap);
}

cgt_status_t cgt_error_set(const cgt_team_t *team, cgt_status_t status, const char *fmt, ...) {
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cgt_error_buf, sizeof(cgt_error_buf), fmt, ap);
    va_end(ap);
    cgt_log(team, 2, "shmem: %s: %s", cgt_status_string(status), cgt_error_buf);
    return status;
}

cgt_status_t cgt_error_accel(const cgt_team_t *team, accel_status_t status, const char *what) {
    const accel_error_t *err = accel_last_error();

    if (status == ACCEL_ERR_UNSUPPORTED) {
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED, "%s: the accelerator cannot (%s)", what,
                             accel_status_string(status));
    }
    if (status == ACCEL_ERR_NO_MEMORY) {
        return cgt_error_set(team, CGT_ERR_NO_MEMORY, "%s: out of accelerator memory", what);
    }
    return cgt_error_set(team, CGT_ERR_ACCEL, "%s: %s (%s %s)", what, accel_status_string(status),
                         err->call ? err->call : "-", err->error ? err->error : "-");
}

const char *cgt_last_error(void) { return cgt_error_buf; }

#if COLL_GPU_HAVE_UCX
/* The ucx module keeps its own last error: make it this thread's shmem error. */
static cgt_status_t cgt_ucx_status(const cgt_team_t *team, cgt_status_t status) {
    if (status != CGT_OK) {
        cgt_error_set(team, status, "%s", cgt_ucx_last_error());
    }
    return status;
}
#endif

const char *cgt_status_string(cgt_status_t status) {
    switch (status) {
    case CGT_OK:
        return "success";
    case CGT_ERR_INVALID:
        return "invalid argument";
    case CGT_ERR_NO_MEMORY:
        return "out of memory";
    case CGT_ERR_UNSUPPORTED:
        return "unsupported";
    case CGT_ERR_TIMEOUT:
        return "timed out";
    case CGT_ERR_PEER_FAILED:
        return "peer failed";
    case CGT_ERR_TRANSPORT:
        return "transport error";
    case CGT_ERR_ACCEL:
        return "accelerator error";
    case CGT_ERR_BOOTSTRAP:
        return "bootstrap (out-of-band) error";
    }
    return "unknown status";
}

const char *cgt_backend_string(cgt_backend_t backend) {
    switch (backend) {
    case CGT_BACKEND_POSIX:
        return "posix";
    case CGT_BACKEND_CUDA_IPC:
        return "cuda_ipc";
    case CGT_BACKEND_UCX:
        return "ucx";
    case CGT_BACKEND_ALL:
        return "all";
    }
    return "none";
}

/* ---- small helpers -------------------------------------------------------------------------- */

double cgt_time_now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t cgt_hash(uint64_t h, const void *buf, size_t len) {
    const unsigned char *p = buf;

    /* FNV-1a: only to compare what ranks were given */
    for (size_t i = 0; i < len; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

bool cgt_ptr_is_device(const cgt_team_t *team, const void *ptr) {
    const accel_ops_t *accel = team->params.accel;
    accel_mem_attr_t attr;

    return accel != NULL && accel_may_be_device(accel, ptr) &&
           accel->mem_query(ptr, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE;
}

cgt_status_t cgt_copy(cgt_team_t *team, void *dst, const void *src, size_t len, bool device) {
    accel_status_t astatus;

    if (device || cgt_ptr_is_device(team, dst) || cgt_ptr_is_device(team, src)) {
        if (team->params.accel == NULL) {
            return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                                 "copy of device memory in a team without an accelerator");
        }
        astatus = team->params.accel->memcpy(dst, src, len);
        if (astatus != ACCEL_OK) {
            return cgt_error_accel(team, astatus, "copy to/from a peer");
        }
        return CGT_OK;
    }
    memcpy(dst, src, len);
    return CGT_OK;
}

cgt_status_t cgt_team_oob_allgather(cgt_team_t *team, const void *sbuf, void *rbuf, size_t len) {
    if (team->params.oob_allgather(sbuf, rbuf, len, team->params.oob_ctx) != 0) {
        return cgt_error_set(team, CGT_ERR_BOOTSTRAP, "out-of-band allgather of %zu bytes failed",
                             len);
    }
    return CGT_OK;
}

cgt_status_t cgt_team_agree(cgt_team_t *team, cgt_status_t status, const char *what) {
    int32_t mine = (int32_t)status;
    int32_t *all;
    cgt_status_t ret = status;

    all = malloc(sizeof(*all) * (size_t)team->size);
    if (all == NULL) {
        /* still take part: the others wait for this rank */
        mine = CGT_ERR_NO_MEMORY;
        team->params.oob_allgather(&mine, &mine, 0, team->params.oob_ctx);
        return cgt_error_set(team, CGT_ERR_NO_MEMORY, "%s: out of host memory", what);
    }
    if (cgt_team_oob_allgather(team, &mine, all, sizeof(mine)) != CGT_OK) {
        ret = CGT_ERR_BOOTSTRAP;
        goto out_free;
    }
    if (status != CGT_OK) {
        goto out_free;
    }
    for (int r = 0; r < team->size; ++r) {
        if (all[r] != CGT_OK) {
            ret = cgt_error_set(team, (cgt_status_t)all[r], "%s failed on rank %d (%s)", what, r,
                                cgt_status_string((cgt_status_t)all[r]));
            break;
        }
    }
out_free:
    free(all);
    return ret;
}

/* ---- teams ---------------------------------------------------------------------------------- */

void cgt_team_traffic(const cgt_team_t *team, cgt_traffic_t *traffic) { *traffic = team->traffic; }

const uint64_t *cgt_team_received_by_node(const cgt_team_t *team) { return team->received_by_node; }

/* An operation of len bytes issued to peer: counted when peer is on another node. */
static inline void cgt_team_count(cgt_team_t *team, int peer, size_t sent, size_t received,
                                  bool signal) {
    if (!cgt_team_is_local(team, peer)) {
        team->traffic.bytes_sent += sent;
        team->traffic.bytes_received += received;
        team->received_by_node[team->node_of_rank[peer]] += received;
        team->traffic.messages += 1;
        team->traffic.signals += signal ? 1 : 0;
    }
}

int cgt_team_rank(const cgt_team_t *team) { return team->rank; }
int cgt_team_size(const cgt_team_t *team) { return team->size; }
int cgt_team_nnodes(const cgt_team_t *team) { return team->nnodes; }

unsigned cgt_team_num_signals(const cgt_team_t *team) { return team->num_signals; }

const char *cgt_team_net_devices(const cgt_team_t *team) {
#if COLL_GPU_HAVE_UCX
    return cgt_ucx_devices(team->ucx);
#else
    (void)team;
    return "";
#endif
}

bool cgt_team_peer_is_local(const cgt_team_t *team, int peer) {
    return peer >= 0 && peer < team->size && cgt_team_is_local(team, peer);
}

cgt_backend_t cgt_team_peer_backend(const cgt_team_t *team, int peer, accel_mem_type_t type) {
    if (peer < 0 || peer >= team->size) {
        return 0;
    }
    if (!cgt_team_is_local(team, peer)) {
        return team->ucx != NULL && (type != ACCEL_MEM_DEVICE || team->ucx_device) ? CGT_BACKEND_UCX
                                                                                   : 0;
    }
    if (type == ACCEL_MEM_DEVICE) {
        return cgt_ipc_available(team) ? CGT_BACKEND_CUDA_IPC : 0;
    }
    if (type == ACCEL_MEM_MANAGED) {
        return 0;
    }
    return (team->backends & CGT_BACKEND_POSIX) ? CGT_BACKEND_POSIX : 0;
}

static cgt_status_t cgt_mem_create(cgt_team_t *team, size_t len, accel_mem_type_t type,
                                   bool internal, cgt_mem_t **mem_p);
static void cgt_mem_destroy(cgt_team_t *team, cgt_mem_t *mem);
static void cgt_map_destroy(cgt_team_t *team, cgt_map_t *map);
static void cgt_reg_destroy(cgt_team_t *team, cgt_reg_t *reg);

/* What must be equal on every rank: size, nodes, backends. */
static uint64_t cgt_team_params_hash(const cgt_team_t *team) {
    uint64_t h = 0xcbf29ce484222325ULL;

    h = cgt_hash(h, &team->size, sizeof(team->size));
    h = cgt_hash(h, team->node_of_rank, sizeof(int) * (size_t)team->size);
    h = cgt_hash(h, &team->backends, sizeof(team->backends));
    return h;
}

/*
 * CPUs the node's ranks of this team may run on: the union of their affinity masks (peers in
 * another pid namespace are not seen: this rank's mask stands for them), the online CPUs if
 * this rank's mask cannot be read.  A node with more ranks than CPUs has ranks descheduled
 * while a peer waits for them: there, waits yield from the first poll instead of spinning.
 */
static int cgt_team_local_cpus(const cgt_team_t *team) {
    cpu_set_t all, one;
    long online;

    CPU_ZERO(&all);
    if (sched_getaffinity(0, sizeof(all), &all) != 0) {
        online = sysconf(_SC_NPROCESSORS_ONLN);
        return online > 0 ? (int)online : 1;
    }
    for (int i = 0; i < team->nlocal; ++i) {
        int r = team->local_ranks[i];
        CPU_ZERO(&one);
        if (team->alive_checkable[r] && sched_getaffinity(team->pids[r], sizeof(one), &one) == 0) {
            CPU_OR(&all, &all, &one);
        }
    }
    return CPU_COUNT(&all) > 0 ? CPU_COUNT(&all) : 1;
}

/* Nodes and local ranks from node_of_rank; CGT_ERR_INVALID when out of range. */
static cgt_status_t cgt_team_init_nodes(cgt_team_t *team) {
    int mynode = team->node_of_rank[team->rank];

    team->nnodes = 0;
    team->nlocal = 0;
    for (int r = 0; r < team->size; ++r) {
        if (team->node_of_rank[r] < 0 || team->node_of_rank[r] >= team->size) {
            return cgt_error_set(team, CGT_ERR_INVALID, "node_of_rank[%d] = %d is not in [0, %d)",
                                 r, team->node_of_rank[r], team->size);
        }
        if (team->node_of_rank[r] + 1 > team->nnodes) {
            team->nnodes = team->node_of_rank[r] + 1;
        }
        if (team->node_of_rank[r] == mynode) {
            if (r == team->rank) {
                team->local_index = team->nlocal;
            }
            team->local_ranks[team->nlocal++] = r;
        }
    }
    return CGT_OK;
}

static cgt_status_t cgt_team_exchange_info(cgt_team_t *team) {
    cgt_team_info_t mine = {0}, *all;
    cgt_status_t status = CGT_OK;

    all = calloc((size_t)team->size, sizeof(*all));
    if (all == NULL) {
        return cgt_error_set(team, CGT_ERR_NO_MEMORY, "team creation: out of host memory");
    }
    if (getrandom(&mine.team_id, sizeof(mine.team_id), 0) != sizeof(mine.team_id)) {
        /* not secret: only tells teams apart */
        mine.team_id = (uint64_t)getpid() << 32 ^ (uint64_t)(cgt_time_now() * 1e9);
    }
    mine.params_hash = cgt_team_params_hash(team);
    mine.pid = (int32_t)getpid();
    mine.start_time = cgt_proc_start_time(getpid());
    mine.status = cgt_team_init_nodes(team);

    status = cgt_team_oob_allgather(team, &mine, all, sizeof(mine));
    if (status != CGT_OK) {
        goto out_free;
    }
    status = (cgt_status_t)mine.status;
    for (int r = 0; r < team->size && status == CGT_OK; ++r) {
        if (all[r].status != CGT_OK) {
            status = cgt_error_set(team, (cgt_status_t)all[r].status,
                                   "team creation: rank %d was given invalid parameters", r);
        } else if (all[r].params_hash != mine.params_hash) {
            status = cgt_error_set(team, CGT_ERR_INVALID,
                                   "team creation: rank %d was given another size, node map or "
                                   "backend mask than rank %d",
                                   r, team->rank);
        }
    }
    if (status != CGT_OK) {
        goto out_free;
    }
    team->team_id = all[0].team_id;
    for (int r = 0; r < team->size; ++r) {
        team->pids[r] = all[r].pid;
        team->start_times[r] = all[r].start_time;
        /* a local peer in another pid namespace cannot be watched: its pid means nothing here */
        team->alive_checkable[r] = r != team->rank && cgt_team_is_local(team, r) &&
                                   all[r].start_time != 0 &&
                                   cgt_proc_start_time(all[r].pid) == all[r].start_time;
        if (r != team->rank && cgt_team_is_local(team, r) && !team->alive_checkable[r]) {
            cgt_log(team, 1,
                    "shmem: cannot watch local rank %d (pid %d): its death is seen "
                    "only by the job's runtime (or the timeout)",
                    r, all[r].pid);
        }
    }
out_free:
    free(all);
    return status;
}

static cgt_status_t cgt_team_create_ucx(cgt_team_t *team) {
    cgt_status_t status = CGT_OK;

    if (!(team->backends & CGT_BACKEND_UCX)) {
        status = cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                               "the team spans %d nodes but the ucx backend is not allowed",
                               team->nnodes);
    }
#if COLL_GPU_HAVE_UCX
    const accel_ops_t *accel = team->params.accel;
    cgt_ucx_mem_t *probe_mem;
    void *probe;

    if (status == CGT_OK) {
        status = cgt_ucx_status(team, cgt_ucx_create(&team->params, &team->ucx));
        status = cgt_team_agree(team, status, "UCX initialization");
    }
    /* whether UCX reaches device memory: cgt_team_peer_backend says so to the algorithms */
    if (status == CGT_OK && accel != NULL &&
        accel->mem_alloc(ACCEL_MEM_DEVICE, 4096, &probe) == ACCEL_OK) {
        if (cgt_ucx_mem_map(team->ucx, probe, 4096, ACCEL_MEM_DEVICE, &probe_mem) == CGT_OK) {
            team->ucx_device = true;
            cgt_ucx_mem_unmap(team->ucx, probe_mem);
        }
        accel->mem_free(probe);
    }
    return status;
#else
    if (status == CGT_OK) {
        status = cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                               "the team spans %d nodes but coll/gpu was built without UCX "
                               "(configure --with-ucx): no transport between nodes",
                               team->nnodes);
    }
#endif
    return status;
}

static cgt_status_t cgt_team_lock_init(cgt_team_t *team) {
    pthread_mutexattr_t attr;
    int rc;

    if (pthread_mutexattr_init(&attr) != 0) {
        return cgt_error_set(NULL, CGT_ERR_NO_MEMORY, "pthread_mutexattr_init failed");
    }
    rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    if (rc == 0) {
        rc = pthread_mutex_init(&team->lock, &attr);
    }
    pthread_mutexattr_destroy(&attr);
    if (rc != 0) {
        return cgt_error_set(NULL, CGT_ERR_NO_MEMORY, "pthread_mutex_init: %s", strerror(rc));
    }
    team->lock_init = true;
    return CGT_OK;
}

cgt_status_t cgt_team_create(const cgt_team_params_t *params, cgt_team_t **team_p) {
    cgt_team_t *team;
    cgt_status_t status;
    size_t n;

    if (params == NULL || team_p == NULL || params->size < 1 || params->rank < 0 ||
        params->rank >= params->size || params->node_of_rank == NULL ||
        params->oob_allgather == NULL) {
        return cgt_error_set(NULL, CGT_ERR_INVALID,
                             "cgt_team_create: missing parameters or rank out of range");
    }
    team = calloc(1, sizeof(*team));
    if (team == NULL) {
        return cgt_error_set(NULL, CGT_ERR_NO_MEMORY, "cgt_team_create: out of memory");
    }
    n = (size_t)params->size;
    team->params = *params;
    team->rank = params->rank;
    team->size = params->size;
    team->backends = params->backends ? params->backends : CGT_BACKEND_ALL;
    team->timeout = params->timeout; /* <= 0: no deadline */
    team->cache_max = params->reg_cache_max ? params->reg_cache_max : CGT_DEFAULT_CACHE_MAX;
    team->num_signals = params->num_signals ? params->num_signals : CGT_DEFAULT_SIGNALS;
    team->next_alive_check = 0;
    cgt_list_init(&team->mems);
    cgt_list_init(&team->regs);
    cgt_list_init(&team->maps);
    cgt_list_init(&team->imports);
    team->node_of_rank = malloc(sizeof(int) * n);
    team->local_ranks = malloc(sizeof(int) * n);
    team->pids = calloc(n, sizeof(pid_t));
    team->start_times = calloc(n, sizeof(uint64_t));
    team->alive_checkable = calloc(n, sizeof(bool));
    team->received_by_node = calloc(n, sizeof(uint64_t));
    if (team->node_of_rank == NULL || team->local_ranks == NULL || team->pids == NULL ||
        team->start_times == NULL || team->alive_checkable == NULL ||
        team->received_by_node == NULL) {
        /* the others are in the first allgather: a rank out of memory cannot help them */
        status = cgt_error_set(NULL, CGT_ERR_NO_MEMORY, "cgt_team_create: out of memory");
        goto err_destroy;
    }
    if (cgt_team_lock_init(team) != CGT_OK) {
        status = CGT_ERR_NO_MEMORY;
        goto err_destroy;
    }
    memcpy(team->node_of_rank, params->node_of_rank, sizeof(int) * n);
    team->params.node_of_rank = team->node_of_rank;
    /* net_devices, ucx_tls: the caller's strings, needed only during creation */
    team->params.net_devices = NULL;
    team->params.ucx_tls = NULL;

    status = cgt_team_exchange_info(team);
    if (status != CGT_OK) {
        goto err_destroy;
    }
    team->local_cpus = cgt_team_local_cpus(team);
    team->wait_spins =
        (params->oversubscribed || (team->nlocal > team->local_cpus)) ? 0 : CGT_WAIT_SPINS;
    team->params.oversubscribed = (0 == team->wait_spins); /* the UCX waits yield too */
    if (team->nnodes > 1) {
        team->params.net_devices = params->net_devices;
        team->params.ucx_tls = params->ucx_tls;
        status = cgt_team_create_ucx(team);
        team->params.net_devices = NULL;
        team->params.ucx_tls = NULL;
        if (status != CGT_OK) {
            goto err_destroy;
        }
    }
    /* before anyone but the creator can see the team */
    team->locking = params->thread_multiple && (team->ucx != NULL);
    /* the signal area: host memory whatever the backend mask says (posix inside the node) */
    status = cgt_mem_create(team, sizeof(uint64_t) * (team->num_signals + CGT_BARRIER_ROUNDS),
                            ACCEL_MEM_HOST, true, &team->signals);
    if (status != CGT_OK) {
        goto err_destroy;
    }
    cgt_log(team, 1,
            "shmem: team %016" PRIx64 " rank %d/%d, %d nodes, %d local ranks on %d CPUs "
            "(waits %s), backends%s%s%s",
            team->team_id, team->rank, team->size, team->nnodes, team->nlocal, team->local_cpus,
            team->wait_spins ? "spin, then yield" : "yield at once",
            (team->backends & CGT_BACKEND_POSIX) ? " posix" : "",
            cgt_ipc_available(team) ? " cuda_ipc" : "", team->ucx ? " ucx" : "");
    *team_p = team;
    return CGT_OK;

err_destroy:
    cgt_team_destroy(team);
    return status;
}

void cgt_team_destroy(cgt_team_t *team) {
    cgt_list_t *elem;

    if (team == NULL) {
        return;
    }
    /* mappings first: they hold imports and rkeys of the UCX context */
    while (!cgt_list_empty(&team->maps)) {
        elem = team->maps.next;
        cgt_map_destroy(team, cgt_container_of(elem, cgt_map_t, lru));
    }
    while (!cgt_list_empty(&team->regs)) {
        elem = team->regs.next;
        cgt_reg_destroy(team, cgt_container_of(elem, cgt_reg_t, lru));
    }
#if COLL_GPU_HAVE_UCX
    /* UCX before the symmetric memory: its progress while closing may still run a late
     * peer's put into it (a peer that timed out, or that a failed call left behind), which
     * must land in mapped memory; after the worker is gone nothing arrives.  It releases the
     * memory's keys and mappings itself. */
    if (team->ucx != NULL) {
        cgt_ucx_destroy(team->ucx);
        team->ucx = NULL;
    }
#endif
    while (!cgt_list_empty(&team->mems)) {
        elem = team->mems.next;
        cgt_mem_destroy(team, cgt_container_of(elem, cgt_mem_t, list));
    }
    team->signals = NULL;
    free(team->bounce);
    free(team->alive_checkable);
    free(team->start_times);
    free(team->pids);
    free(team->local_ranks);
    free(team->node_of_rank);
    free(team->received_by_node);
    if (team->lock_init) {
        pthread_mutex_destroy(&team->lock);
    }
    free(team);
}

/* ---- symmetric memory ----------------------------------------------------------------------- */

/* Map the memory for the remote peers: UCX keys of every rank, unpacked for the remote ones. */
static cgt_status_t cgt_mem_ucx_exchange(cgt_team_t *team, cgt_mem_t *mem) {
#if COLL_GPU_HAVE_UCX
    typedef struct {
        int32_t status;
        uint32_t len;
        uint8_t buf[CGT_UCX_PACKED_MAX];
    } cgt_ucx_info_t;
    cgt_ucx_info_t *mine, *all;
    cgt_status_t status;
    size_t len;

    mine = calloc((size_t)team->size + 1, sizeof(*mine));
    if (mine == NULL) {
        return cgt_team_agree(team, CGT_ERR_NO_MEMORY, "symmetric allocation (UCX keys)");
    }
    all = mine + 1;
    status = cgt_ucx_mem_map(team->ucx, mem->local, mem->len, mem->type, &mem->ucx_mem);
    if (status == CGT_ERR_UNSUPPORTED && mem->device) {
        /* UCX without device memory support: no remote path to this memory (len 0); the
         * caller sees it in cgt_team_peer_backend and uses host memory between nodes */
        status = CGT_OK;
        mem->ucx_mem = NULL;
    } else if (status == CGT_OK) {
        len = sizeof(mine->buf);
        status = cgt_ucx_mem_pack(team->ucx, mem->ucx_mem, mine->buf, &len);
        mine->len = (uint32_t)len;
    }
    cgt_ucx_status(team, status);
    mine->status = status;
    if (cgt_team_oob_allgather(team, mine, all, sizeof(*mine)) != CGT_OK) {
        status = CGT_ERR_BOOTSTRAP;
        goto out_free;
    }
    for (int r = 0; r < team->size && status == CGT_OK; ++r) {
        if (all[r].status != CGT_OK) {
            status = cgt_error_set(team, (cgt_status_t)all[r].status,
                                   "symmetric allocation: UCX mapping failed on rank %d", r);
        }
    }
    if (status != CGT_OK) {
        goto out_free; /* every rank saw the same statuses: no agreement needed */
    }
    for (int r = 0; r < team->size && status == CGT_OK; ++r) {
        if (cgt_team_is_local(team, r) || all[r].len == 0) {
            continue;
        }
        status = cgt_ucx_status(
            team, cgt_ucx_rkey_unpack(team->ucx, r, all[r].buf, all[r].len, &mem->peers[r].rkey));
        if (status == CGT_OK) {
            mem->peers[r].kind = CGT_RMEM_UCX;
            mem->peers[r].size = mem->len;
        }
    }
    status = cgt_team_agree(team, status, "symmetric allocation (UCX keys)");
out_free:
    free(mine);
    return status;
#else
    (void)team;
    (void)mem;
    return CGT_OK;
#endif
}

static cgt_status_t cgt_mem_create(cgt_team_t *team, size_t len, accel_mem_type_t type,
                                   bool internal, cgt_mem_t **mem_p) {
    bool device = type == ACCEL_MEM_DEVICE;
    bool shared_node = team->nlocal > 1;
    cgt_status_t status;
    cgt_mem_t *mem;

    /* checks on what every rank was given alike: all fail together, before any OOB step */
    if (len == 0) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_alloc of 0 bytes");
    }
    if (type == ACCEL_MEM_MANAGED) {
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                             "cgt_alloc: managed memory cannot be shared between processes");
    }
    if (device && team->params.accel == NULL) {
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                             "cgt_alloc of device memory in a team without an accelerator");
    }
    if (device && !(team->backends & CGT_BACKEND_CUDA_IPC)) {
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                             "cgt_alloc of device memory: the cuda_ipc backend is not allowed");
    }
    if (!device && !internal && !(team->backends & CGT_BACKEND_POSIX)) {
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                             "cgt_alloc of host memory: the posix backend is not allowed");
    }
    mem = calloc(1, sizeof(*mem));
    if (mem != NULL) {
        mem->peers = calloc((size_t)team->size, sizeof(*mem->peers));
        mem->imports = calloc((size_t)team->size, sizeof(*mem->imports));
    }
    if (mem == NULL || mem->peers == NULL || mem->imports == NULL) {
        /* the backends' first step is an allgather: tell the others */
        status = cgt_team_agree(team, CGT_ERR_NO_MEMORY, "symmetric allocation");
        status = cgt_error_set(team, status, "cgt_alloc: out of host memory");
        if (mem != NULL) {
            free(mem->imports);
            free(mem->peers);
            free(mem);
        }
        return status;
    }
    cgt_list_init(&mem->list);
    mem->id = team->next_mem_id++;
    mem->len = len;
    mem->type = type;
    mem->device = device;
    (void)shared_node;

    status = device ? cgt_ipc_mem_create(team, mem) : cgt_posix_mem_create(team, mem);
    if (status != CGT_OK) {
        goto err_destroy;
    }
    mem->peers[team->rank].kind = CGT_RMEM_SELF;
    mem->peers[team->rank].ptr = mem->local;
    mem->peers[team->rank].size = len;
    mem->peers[team->rank].device = device;
    for (int r = 0; r < team->size; ++r) {
        mem->peers[r].peer = r;
        mem->peers[r].device = device;
    }
    if (team->ucx != NULL) {
        status = cgt_mem_ucx_exchange(team, mem);
        if (status != CGT_OK) {
            goto err_destroy;
        }
    }
    cgt_list_push_front(&team->mems, &mem->list);
    *mem_p = mem;
    return CGT_OK;

err_destroy:
    cgt_mem_destroy(team, mem);
    return status;
}

/* Mappings into mem (registrations of memory inside it, seen by peers) die with it. */
static void cgt_mem_forget_maps(cgt_team_t *team, cgt_mem_t *mem) {
    cgt_list_t *elem, *next;
    cgt_map_t *map;

    for (elem = team->maps.next; elem != &team->maps; elem = next) {
        next = elem->next;
        map = cgt_container_of(elem, cgt_map_t, lru);
        if (map->local_kind != CGT_REG_LOCAL_SEGMENT || map->rmem.kind != CGT_RMEM_POSIX ||
            mem->peers[map->peer].ptr == NULL ||
            (char *)map->rmem.ptr < (char *)mem->peers[map->peer].ptr ||
            (char *)map->rmem.ptr >= (char *)mem->peers[map->peer].ptr + mem->len) {
            continue;
        }
        if (map->refcount == 0) {
            cgt_map_destroy(team, map);
        } else {
            /* still held by the caller: later puts fail cleanly instead of writing */
            map->rmem.kind = CGT_RMEM_NONE;
            map->rmem.ptr = NULL;
        }
    }
}

static void cgt_mem_destroy(cgt_team_t *team, cgt_mem_t *mem) {
    cgt_list_del(&mem->list);
    if (!mem->device) {
        cgt_mem_forget_maps(team, mem);
    }
#if COLL_GPU_HAVE_UCX
    /* (no UCX left: cgt_team_destroy released the keys and mappings with it) */
    for (int r = 0; (team->ucx != NULL) && (r < team->size); ++r) {
        if (mem->peers[r].rkey != NULL) {
            cgt_ucx_rkey_release(team->ucx, mem->peers[r].rkey);
        }
    }
    if ((team->ucx != NULL) && (mem->ucx_mem != NULL)) {
        cgt_ucx_mem_unmap(team->ucx, mem->ucx_mem);
    }
#endif
    if (mem->device) {
        cgt_ipc_mem_destroy(team, mem);
    } else {
        cgt_posix_mem_destroy(team, mem);
    }
    free(mem->imports);
    free(mem->peers);
    free(mem);
}

static cgt_status_t cgt_alloc_unlocked(cgt_team_t *team, size_t len, accel_mem_type_t type,
                                       cgt_mem_t **mem_p) {
    if (team == NULL || mem_p == NULL) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_alloc: NULL argument");
    }
    return cgt_mem_create(team, len, type, false, mem_p);
}

cgt_status_t cgt_alloc(cgt_team_t *team, size_t len, accel_mem_type_t type, cgt_mem_t **mem_p) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_alloc_unlocked(team, len, type, mem_p);
    cgt_team_unlock(team);
    return status;
}

static void cgt_free_unlocked(cgt_team_t *team, cgt_mem_t *mem) {
    if (team == NULL || mem == NULL || mem == team->signals) {
        return;
    }
    cgt_mem_destroy(team, mem);
}

void cgt_free(cgt_team_t *team, cgt_mem_t *mem) {
    cgt_team_lock(team);
    cgt_free_unlocked(team, mem);
    cgt_team_unlock(team);
}

void *cgt_mem_local(const cgt_mem_t *mem) { return mem->local; }

cgt_rmem_t *cgt_mem_peer(const cgt_mem_t *mem, int peer) { return &mem->peers[peer]; }

/* ---- registration --------------------------------------------------------------------------- */

static void cgt_reg_destroy(cgt_team_t *team, cgt_reg_t *reg) {
    cgt_list_del(&reg->lru);
    --team->nregs;
#if COLL_GPU_HAVE_UCX
    if (reg->ucx_mem != NULL) {
        cgt_ucx_mem_unmap(team->ucx, reg->ucx_mem);
    }
#endif
    free(reg);
}

/* Evict unreferenced registrations, least recently used first, down to the bound. */
static void cgt_reg_cache_trim(cgt_team_t *team) {
    cgt_list_t *elem = team->regs.prev, *prev;
    cgt_reg_t *reg;

    while (team->nregs > team->cache_max && elem != &team->regs) {
        prev = elem->prev;
        reg = cgt_container_of(elem, cgt_reg_t, lru);
        if (reg->refcount == 0) {
            cgt_reg_destroy(team, reg);
        }
        elem = prev;
    }
}

/* The symmetric host allocation that holds [ptr, ptr + len), if any. */
static cgt_mem_t *cgt_mem_find_host(cgt_team_t *team, const void *ptr, size_t len) {
    cgt_list_t *elem;
    cgt_mem_t *mem;

    for (elem = team->mems.next; elem != &team->mems; elem = elem->next) {
        mem = cgt_container_of(elem, cgt_mem_t, list);
        if (!mem->device && (const char *)ptr >= (const char *)mem->local && len <= mem->len &&
            (size_t)((const char *)ptr - (char *)mem->local) <= mem->len - len) {
            return mem;
        }
    }
    return NULL;
}

static cgt_status_t cgt_register_unlocked(cgt_team_t *team, void *ptr, size_t len,
                                          cgt_reg_t **reg_p) {
    const accel_ops_t *accel = team != NULL ? team->params.accel : NULL;
    accel_mem_attr_t attr = {.type = ACCEL_MEM_HOST, .device = -1};
    cgt_list_t *elem, *next;
    accel_status_t astatus;
    cgt_status_t status;
    cgt_mem_t *seg;
    cgt_reg_t *reg;

    if (team == NULL || ptr == NULL || len == 0 || reg_p == NULL) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_register: NULL pointer or zero length");
    }
    if (accel != NULL && accel_may_be_device(accel, ptr)) {
        astatus = accel->mem_query(ptr, &attr);
        if (astatus != ACCEL_OK) {
            return cgt_error_accel(team, astatus, "cgt_register: classifying the buffer");
        }
    }
    if (attr.size != 0 && ((uintptr_t)ptr < attr.base || len > attr.size ||
                           (uintptr_t)ptr - attr.base > attr.size - len)) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "cgt_register: %zu bytes at %p run past the end of their "
                             "allocation (%zu bytes at 0x%" PRIxPTR ")",
                             len, ptr, attr.size, attr.base);
    }

    /* lookup; an entry at the same address of another allocation is stale: drop it */
    for (elem = team->regs.next; elem != &team->regs; elem = next) {
        next = elem->next;
        reg = cgt_container_of(elem, cgt_reg_t, lru);
        if (reg->ptr != ptr) {
            continue;
        }
        if (reg->len == len && reg->buffer_id == attr.buffer_id && reg->type == attr.type) {
            ++reg->refcount;
            cgt_list_del(&reg->lru);
            cgt_list_push_front(&team->regs, &reg->lru);
            *reg_p = reg;
            return CGT_OK;
        }
        if (reg->refcount == 0 && reg->buffer_id != attr.buffer_id) {
            cgt_reg_destroy(team, reg);
        }
    }

    reg = calloc(1, sizeof(*reg));
    if (reg == NULL) {
        return cgt_error_set(team, CGT_ERR_NO_MEMORY, "cgt_register: out of host memory");
    }
    cgt_list_init(&reg->lru);
    reg->ptr = ptr;
    reg->len = len;
    reg->type = attr.type;
    reg->buffer_id = attr.buffer_id;
    reg->serial = __atomic_add_fetch(&cgt_reg_serial, 1, __ATOMIC_RELAXED);
    reg->local = CGT_REG_LOCAL_NONE;
    if (team->nlocal > 1) {
        if (attr.type == ACCEL_MEM_DEVICE) {
            if (cgt_ipc_available(team)) {
                astatus = accel->ipc_export(ptr, &reg->ipc);
                if (astatus != ACCEL_OK) {
                    status = cgt_error_accel(team, astatus, "cgt_register: IPC export");
                    goto err_free;
                }
                reg->local = CGT_REG_LOCAL_IPC;
            }
        } else if (team->backends & CGT_BACKEND_POSIX) {
            seg = cgt_mem_find_host(team, ptr, len);
            if (seg != NULL) {
                reg->local = CGT_REG_LOCAL_SEGMENT;
                reg->seg_id = seg->id;
                reg->seg_offset = (uint64_t)((char *)ptr - (char *)seg->local);
            } else {
                reg->local = CGT_REG_LOCAL_CMA;
            }
        }
    }
#if COLL_GPU_HAVE_UCX
    if (team->ucx != NULL) {
        status = cgt_ucx_mem_map(team->ucx, ptr, len, attr.type, &reg->ucx_mem);
        if (status == CGT_ERR_UNSUPPORTED && attr.type == ACCEL_MEM_DEVICE) {
            /* UCX cannot reach device memory: remote peers get no key and fail to map */
            reg->ucx_mem = NULL;
        } else if (status != CGT_OK) {
            cgt_ucx_status(team, status);
            goto err_free;
        }
    }
#endif
    reg->refcount = 1;
    cgt_list_push_front(&team->regs, &reg->lru);
    ++team->nregs;
    cgt_reg_cache_trim(team);
    *reg_p = reg;
    return CGT_OK;

err_free:
    free(reg);
    return status;
}

cgt_status_t cgt_register(cgt_team_t *team, void *ptr, size_t len, cgt_reg_t **reg_p) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_register_unlocked(team, ptr, len, reg_p);
    cgt_team_unlock(team);
    return status;
}

static void cgt_deregister_unlocked(cgt_team_t *team, cgt_reg_t *reg) {
    if (team == NULL || reg == NULL || reg->refcount == 0) {
        return;
    }
    --reg->refcount;
    cgt_reg_cache_trim(team);
}

void cgt_deregister(cgt_team_t *team, cgt_reg_t *reg) {
    cgt_team_lock(team);
    cgt_deregister_unlocked(team, reg);
    cgt_team_unlock(team);
}

static cgt_status_t cgt_reg_pack_unlocked(cgt_team_t *team, const cgt_reg_t *reg, void *buf,
                                          size_t *len_p) {
    cgt_packed_t *packed = buf;
    size_t ucx_len = 0;

    if (team == NULL || reg == NULL || buf == NULL || len_p == NULL) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_reg_pack: NULL argument");
    }
    memset(packed, 0, sizeof(*packed));
    packed->magic = CGT_PACKED_MAGIC;
    packed->version = CGT_PACKED_VERSION;
    packed->local_kind = (uint16_t)reg->local;
    packed->team_id = team->team_id;
    packed->rank = team->rank;
    packed->pid = (int32_t)getpid();
    packed->mem_type = (uint32_t)reg->type;
    /* the serial keys the peers' caches: a registration made again after eviction (a new
     * UCX key, a new export) is never served an old mapping */
    packed->serial = reg->serial;
    packed->addr = (uint64_t)(uintptr_t)reg->ptr;
    packed->len = reg->len;
    packed->buffer_id = reg->buffer_id;
    packed->seg_id = reg->seg_id;
    packed->seg_offset = reg->seg_offset;
    packed->ipc = reg->ipc;
#if COLL_GPU_HAVE_UCX
    if (reg->ucx_mem != NULL) {
        cgt_status_t status;

        ucx_len = CGT_UCX_PACKED_MAX;
        status = cgt_ucx_mem_pack(team->ucx, reg->ucx_mem, packed + 1, &ucx_len);
        if (status != CGT_OK) {
            return cgt_ucx_status(team, status);
        }
    }
#endif
    packed->ucx_len = (uint32_t)ucx_len;
    *len_p = sizeof(*packed) + ucx_len;
    return CGT_OK;
}

cgt_status_t cgt_reg_pack(cgt_team_t *team, const cgt_reg_t *reg, void *buf, size_t *len_p) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_reg_pack_unlocked(team, reg, buf, len_p);
    cgt_team_unlock(team);
    return status;
}

/* ---- peer mappings -------------------------------------------------------------------------- */

static void cgt_map_destroy(cgt_team_t *team, cgt_map_t *map) {
    cgt_list_del(&map->lru);
    --team->nmaps;
    if (map->import != NULL) {
        cgt_ipc_import_put(team, map->import);
    }
#if COLL_GPU_HAVE_UCX
    if (map->rmem.rkey != NULL) {
        cgt_ucx_rkey_release(team->ucx, map->rmem.rkey);
    }
#endif
    free(map);
}

static void cgt_map_cache_trim(cgt_team_t *team) {
    cgt_list_t *elem = team->maps.prev, *prev;
    cgt_map_t *map;

    while (team->nmaps > team->cache_max && elem != &team->maps) {
        prev = elem->prev;
        map = cgt_container_of(elem, cgt_map_t, lru);
        if (map->refcount == 0) {
            cgt_map_destroy(team, map);
        }
        elem = prev;
    }
}

/* A handle is bytes from elsewhere: check everything before trusting any of it. */
static cgt_status_t cgt_packed_unpack(cgt_team_t *team, int peer, const void *buf, size_t len,
                                      cgt_packed_t *packed) {
    if (buf == NULL || len < sizeof(*packed) || len > CGT_PACKED_MAX) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "cgt_peer_map: %zu bytes are not a packed handle", len);
    }
    memcpy(packed, buf, sizeof(*packed)); /* buf may be unaligned */
    if (packed->magic != CGT_PACKED_MAGIC || packed->version != CGT_PACKED_VERSION) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "cgt_peer_map: not a packed handle (bad magic or version)");
    }
    if (packed->team_id != team->team_id) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "cgt_peer_map: the handle belongs to another team (communicator): "
                             "team %016" PRIx64 ", this team %016" PRIx64,
                             packed->team_id, team->team_id);
    }
    if (packed->rank != peer) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "cgt_peer_map: rank %d packed the handle, not peer %d", packed->rank,
                             peer);
    }
    if (packed->ucx_len > len - sizeof(*packed) || packed->len == 0 ||
        packed->addr + packed->len < packed->addr || packed->local_kind > CGT_REG_LOCAL_IPC) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_peer_map: corrupt handle from rank %d",
                             peer);
    }
    return CGT_OK;
}

static cgt_mem_t *cgt_mem_find_id(cgt_team_t *team, uint64_t id) {
    cgt_list_t *elem;
    cgt_mem_t *mem;

    for (elem = team->mems.next; elem != &team->mems; elem = elem->next) {
        mem = cgt_container_of(elem, cgt_mem_t, list);
        if (mem->id == id) {
            return mem;
        }
    }
    return NULL;
}

/* How a local peer's registration is reached from here. */
static cgt_status_t cgt_map_local(cgt_team_t *team, cgt_map_t *map, const cgt_packed_t *packed) {
    int peer = map->peer;
    cgt_status_t status;
    cgt_mem_t *mem;

    switch ((cgt_reg_local_t)packed->local_kind) {
    case CGT_REG_LOCAL_SEGMENT:
        mem = cgt_mem_find_id(team, packed->seg_id);
        if (mem == NULL || mem->device || mem->peers[peer].ptr == NULL ||
            packed->seg_offset > mem->len || packed->len > mem->len - packed->seg_offset) {
            return cgt_error_set(team, CGT_ERR_INVALID,
                                 "cgt_peer_map: rank %d's handle names a symmetric "
                                 "allocation this rank does not have (freed?)",
                                 peer);
        }
        map->rmem.kind = CGT_RMEM_POSIX;
        map->rmem.ptr = (char *)mem->peers[peer].ptr + packed->seg_offset;
        return CGT_OK;
    case CGT_REG_LOCAL_CMA:
        if (packed->pid != team->pids[peer]) {
            return cgt_error_set(team, CGT_ERR_INVALID,
                                 "cgt_peer_map: handle of pid %d, but rank %d is pid %d",
                                 packed->pid, peer, (int)team->pids[peer]);
        }
        status = cgt_cma_probe(team, team->pids[peer], packed->addr);
        if (status != CGT_OK) {
            return status;
        }
        map->rmem.kind = CGT_RMEM_CMA;
        map->rmem.ptr = (void *)(uintptr_t)packed->addr;
        map->rmem.pid = team->pids[peer];
        return CGT_OK;
    case CGT_REG_LOCAL_IPC:
        if (!cgt_ipc_available(team)) {
            return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                                 "cgt_peer_map: rank %d's device memory needs accelerator "
                                 "IPC, which this rank does not have",
                                 peer);
        }
        if (packed->ipc.offset > packed->ipc.alloc_size ||
            packed->len > packed->ipc.alloc_size - packed->ipc.offset) {
            return cgt_error_set(team, CGT_ERR_INVALID,
                                 "cgt_peer_map: rank %d's handle runs past its allocation", peer);
        }
        status = cgt_ipc_import_get(team, peer, &packed->ipc, &map->import);
        if (status != CGT_OK) {
            return status;
        }
        map->rmem.kind = CGT_RMEM_IPC;
        map->rmem.ptr = (char *)map->import->base + packed->ipc.offset;
        map->rmem.device = true;
        return CGT_OK;
    case CGT_REG_LOCAL_NONE:
        break;
    }
    return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                         "cgt_peer_map: rank %d's registration cannot be reached from its "
                         "node (no posix / cuda_ipc path for that memory)",
                         peer);
}

static cgt_status_t cgt_map_remote(cgt_team_t *team, cgt_map_t *map, const cgt_packed_t *packed,
                                   const void *buf) {
    if (team->ucx == NULL || packed->ucx_len == 0) {
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                             "cgt_peer_map: rank %d is on another node and its handle "
                             "carries no UCX key",
                             map->peer);
    }
#if COLL_GPU_HAVE_UCX
    cgt_status_t status;

    status = cgt_ucx_rkey_unpack(team->ucx, map->peer, (const char *)buf + sizeof(*packed),
                                 packed->ucx_len, &map->rmem.rkey);
    if (status != CGT_OK) {
        return cgt_ucx_status(team, status);
    }
    map->rmem.kind = CGT_RMEM_UCX;
    return CGT_OK;
#else
    (void)buf;
    return CGT_ERR_UNSUPPORTED;
#endif
}

static cgt_status_t cgt_peer_map_unlocked(cgt_team_t *team, int peer, const void *buf, size_t len,
                                          cgt_rmem_t **rmem_p) {
    cgt_list_t *elem, *next;
    cgt_packed_t packed;
    cgt_status_t status;
    cgt_map_t *map;

    if (team == NULL || rmem_p == NULL || peer < 0 || peer >= team->size) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "cgt_peer_map: peer %d is not a rank of the team", peer);
    }
    status = cgt_packed_unpack(team, peer, buf, len, &packed);
    if (status != CGT_OK) {
        return status;
    }
    for (elem = team->maps.next; elem != &team->maps; elem = next) {
        next = elem->next;
        map = cgt_container_of(elem, cgt_map_t, lru);
        if (map->peer != peer || map->addr != packed.addr) {
            continue;
        }
        if (map->serial == packed.serial && map->len == packed.len &&
            map->rmem.kind != CGT_RMEM_NONE) {
            ++map->refcount;
            cgt_list_del(&map->lru);
            cgt_list_push_front(&team->maps, &map->lru);
            *rmem_p = &map->rmem;
            return CGT_OK;
        }
        /* the peer registered that address anew (freed and reallocated, or evicted there):
         * the old mapping is stale */
        if (map->refcount == 0) {
            cgt_map_destroy(team, map);
        }
    }

    map = calloc(1, sizeof(*map));
    if (map == NULL) {
        return cgt_error_set(team, CGT_ERR_NO_MEMORY, "cgt_peer_map: out of host memory");
    }
    cgt_list_init(&map->lru);
    map->peer = peer;
    map->serial = packed.serial;
    map->local_kind = packed.local_kind;
    map->buffer_id = packed.buffer_id;
    map->addr = packed.addr;
    map->len = packed.len;
    map->rmem.peer = peer;
    map->rmem.size = packed.len;
    map->rmem.cached = true;
    map->rmem.device = packed.mem_type == ACCEL_MEM_DEVICE;
    if (peer == team->rank) {
        map->rmem.kind = CGT_RMEM_SELF;
        map->rmem.ptr = (void *)(uintptr_t)packed.addr;
    } else if (cgt_team_is_local(team, peer)) {
        status = cgt_map_local(team, map, &packed);
    } else {
        status = cgt_map_remote(team, map, &packed, buf);
    }
    if (status != CGT_OK) {
        if (map->import != NULL) {
            cgt_ipc_import_put(team, map->import);
        }
        free(map);
        return status;
    }
    map->refcount = 1;
    cgt_list_push_front(&team->maps, &map->lru);
    ++team->nmaps;
    cgt_map_cache_trim(team);
    *rmem_p = &map->rmem;
    return CGT_OK;
}

cgt_status_t cgt_peer_map(cgt_team_t *team, int peer, const void *buf, size_t len,
                          cgt_rmem_t **rmem_p) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_peer_map_unlocked(team, peer, buf, len, rmem_p);
    cgt_team_unlock(team);
    return status;
}

static void cgt_peer_unmap_unlocked(cgt_team_t *team, cgt_rmem_t *rmem) {
    cgt_map_t *map;

    /* the parts of a symmetric allocation live as long as it */
    if (team == NULL || rmem == NULL || !rmem->cached) {
        return;
    }
    map = cgt_container_of(rmem, cgt_map_t, rmem);
    if (map->refcount > 0) {
        --map->refcount;
    }
    cgt_map_cache_trim(team);
}

void cgt_peer_unmap(cgt_team_t *team, cgt_rmem_t *rmem) {
    cgt_team_lock(team);
    cgt_peer_unmap_unlocked(team, rmem);
    cgt_team_unlock(team);
}

void *cgt_rmem_ptr(const cgt_rmem_t *rmem) {
    switch (rmem->kind) {
    case CGT_RMEM_SELF:
    case CGT_RMEM_POSIX:
    case CGT_RMEM_IPC:
        return rmem->ptr;
    default:
        return NULL;
    }
}

size_t cgt_rmem_size(const cgt_rmem_t *rmem) { return rmem->size; }

/* ---- data movement -------------------------------------------------------------------------- */

static cgt_status_t cgt_rmem_check(cgt_team_t *team, const cgt_rmem_t *rmem, size_t offset,
                                   size_t len, const void *buf, const char *op) {
    if (team == NULL || rmem == NULL || (buf == NULL && len != 0)) {
        return cgt_error_set(team, CGT_ERR_INVALID, "%s: NULL argument", op);
    }
    if (rmem->kind == CGT_RMEM_NONE) {
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                             "%s: rank %d's memory is not mapped here (freed, or no backend "
                             "reaches it)",
                             op, rmem->peer);
    }
    if (offset > rmem->size || len > rmem->size - offset) {
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "%s: %zu bytes at offset %zu run past the %zu bytes of rank %d's "
                             "region",
                             op, len, offset, rmem->size, rmem->peer);
    }
    return CGT_OK;
}

static cgt_status_t cgt_put_unlocked(cgt_team_t *team, cgt_rmem_t *dst, size_t dst_offset,
                                     const void *src, size_t len) {
    cgt_status_t status;

    status = cgt_rmem_check(team, dst, dst_offset, len, src, "cgt_put");
    if (status != CGT_OK || len == 0) {
        return status;
    }
    switch (dst->kind) {
    case CGT_RMEM_SELF:
    case CGT_RMEM_POSIX:
    case CGT_RMEM_IPC:
        return cgt_copy(team, (char *)dst->ptr + dst_offset, src, len, dst->device);
    case CGT_RMEM_CMA:
        return cgt_cma_put(team, dst, dst_offset, src, len);
#if COLL_GPU_HAVE_UCX
    case CGT_RMEM_UCX:
        cgt_team_count(team, dst->peer, len, 0, false);
        return cgt_ucx_status(team, cgt_ucx_put(team->ucx, dst->rkey, dst_offset, src, len));
#endif
    default:
        break;
    }
    return cgt_error_set(team, CGT_ERR_UNSUPPORTED, "cgt_put: no path to rank %d", dst->peer);
}

cgt_status_t cgt_put(cgt_team_t *team, cgt_rmem_t *dst, size_t dst_offset, const void *src,
                     size_t len) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_put_unlocked(team, dst, dst_offset, src, len);
    cgt_team_unlock(team);
    return status;
}

static cgt_status_t cgt_get_unlocked(cgt_team_t *team, void *dst, cgt_rmem_t *src,
                                     size_t src_offset, size_t len) {
    cgt_status_t status;

    status = cgt_rmem_check(team, src, src_offset, len, dst, "cgt_get");
    if (status != CGT_OK || len == 0) {
        return status;
    }
    switch (src->kind) {
    case CGT_RMEM_SELF:
    case CGT_RMEM_POSIX:
    case CGT_RMEM_IPC:
        return cgt_copy(team, dst, (char *)src->ptr + src_offset, len, src->device);
    case CGT_RMEM_CMA:
        return cgt_cma_get(team, dst, src, src_offset, len);
#if COLL_GPU_HAVE_UCX
    case CGT_RMEM_UCX:
        cgt_team_count(team, src->peer, 0, len, false);
        return cgt_ucx_status(team, cgt_ucx_get(team->ucx, dst, src->rkey, src_offset, len));
#endif
    default:
        break;
    }
    return cgt_error_set(team, CGT_ERR_UNSUPPORTED, "cgt_get: no path to rank %d", src->peer);
}

cgt_status_t cgt_get(cgt_team_t *team, void *dst, cgt_rmem_t *src, size_t src_offset, size_t len) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_get_unlocked(team, dst, src, src_offset, len);
    cgt_team_unlock(team);
    return status;
}

static cgt_status_t cgt_quiet_unlocked(cgt_team_t *team, int peer) {
    if (team == NULL || peer < -1 || peer >= team->size) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_quiet: peer %d out of range", peer);
    }
    /* node-local puts and gets complete before they return: only UCX has work in flight */
#if COLL_GPU_HAVE_UCX
    if (team->ucx != NULL && (peer == -1 || !cgt_team_is_local(team, peer))) {
        return cgt_ucx_status(team, cgt_ucx_flush(team->ucx, peer));
    }
#endif
    return CGT_OK;
}

cgt_status_t cgt_quiet(cgt_team_t *team, int peer) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_quiet_unlocked(team, peer);
    cgt_team_unlock(team);
    return status;
}

/* ---- signals and waits ---------------------------------------------------------------------- */

static uint64_t *cgt_signal_slot(const cgt_team_t *team, unsigned slot) {
    return (uint64_t *)team->signals->local + slot;
}

/* Every team's signals and waits of this process (cgt_counts_t). */
static cgt_counts_t cgt_process_counts;

const cgt_counts_t *cgt_counts(void) { return &cgt_process_counts; }

/* Store value into peer's slot, after the puts issued before to peer (release). */
static cgt_status_t cgt_signal_store(cgt_team_t *team, int peer, unsigned slot, uint64_t value) {
    cgt_rmem_t *rmem = &team->signals->peers[peer];

    __atomic_add_fetch(&cgt_process_counts.signals, 1, __ATOMIC_RELAXED);

    switch (rmem->kind) {
    case CGT_RMEM_SELF:
    case CGT_RMEM_POSIX:
        /* local puts are complete when they return (CPU stores, synchronous accelerator
         * copies, process_vm_writev): a release store orders them before the flag */
        __atomic_store_n((uint64_t *)rmem->ptr + slot, value, __ATOMIC_RELEASE);
        return CGT_OK;
#if COLL_GPU_HAVE_UCX
    case CGT_RMEM_UCX:
        cgt_team_count(team, peer, sizeof(value), 0, true);
        return cgt_ucx_status(
            team, cgt_ucx_put_signal(team->ucx, rmem->rkey, slot * sizeof(uint64_t), value));
#endif
    default:
        break;
    }
    return cgt_error_set(team, CGT_ERR_UNSUPPORTED, "cgt_signal: no path to rank %d", peer);
}

/* CGT_ERR_PEER_FAILED when a local peer's process is gone or a remote peer's endpoint failed. */
static int cgt_team_dead_peer_unlocked(cgt_team_t *team) {
    for (int i = 0; i < team->nlocal; ++i) {
        int peer = team->local_ranks[i];

        if (team->alive_checkable[peer] &&
            !cgt_proc_alive(team->pids[peer], team->start_times[peer])) {
            cgt_error_set(team, CGT_ERR_PEER_FAILED, "rank %d (pid %d, on this node) has died",
                          peer, (int)team->pids[peer]);
            return peer;
        }
    }
#if COLL_GPU_HAVE_UCX
    if (team->ucx != NULL) {
        for (int peer = 0; peer < team->size; ++peer) {
            if (!cgt_team_is_local(team, peer) && cgt_ucx_peer_failed(team->ucx, peer)) {
                cgt_error_set(team, CGT_ERR_PEER_FAILED,
                              "rank %d (node %d) is unreachable: its UCX endpoint failed", peer,
                              team->node_of_rank[peer]);
                return peer;
            }
        }
    }
#endif
    return -1;
}

static cgt_status_t cgt_team_check_peers(cgt_team_t *team) {
    return (cgt_team_dead_peer_unlocked(team) >= 0) ? CGT_ERR_PEER_FAILED : CGT_OK;
}

int cgt_team_dead_peer(cgt_team_t *team) {
    int peer;

    /* Busy on another thread (a proxy's flush, which watches the peers itself): not now.  A
     * kernel's waiter blocked here could not progress the process, which that flush may need. */
    if (!cgt_team_trylock(team)) {
        return -1;
    }
    peer = cgt_team_dead_peer_unlocked(team);
    cgt_team_unlock(team);
    return peer;
}

/* Wait until *slot >= value: spin, then yield, then sleep; progress the caller and UCX, watch
 * the peers, give up after the team's timeout if it has one. */
static cgt_status_t cgt_team_wait_slot(cgt_team_t *team, const uint64_t *slot, uint64_t value,
                                       const char *what) {
    double start = 0, now;
    cgt_status_t status;
    struct timespec nap = {0, 20000};

    __atomic_add_fetch(&cgt_process_counts.waits, 1, __ATOMIC_RELAXED);

    for (unsigned spins = 0;; ++spins) {
        if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) >= value) {
            return CGT_OK;
        }
        if (spins < team->wait_spins) {
            if ((spins & 63) == 63 && team->ucx != NULL) {
#if COLL_GPU_HAVE_UCX
                cgt_ucx_progress(team->ucx);
#endif
            }
            cgt_cpu_relax();
            continue;
        }
        if (team->params.progress != NULL) {
            team->params.progress();
        }
#if COLL_GPU_HAVE_UCX
        if (team->ucx != NULL) {
            cgt_ucx_progress(team->ucx);
        }
#endif
        now = cgt_time_now();
        if (start == 0) {
            start = now;
        }
        if (now >= team->next_alive_check) {
            status = cgt_team_check_peers(team);
            if (status != CGT_OK) {
                return status;
            }
            team->next_alive_check = now + CGT_ALIVE_CHECK_INTERVAL;
        }
        if ((team->timeout > 0) && (now - start > team->timeout)) {
            return cgt_error_set(team, CGT_ERR_TIMEOUT,
                                 "%s: waited %.1f s for the value %" PRIu64 " (it holds %" PRIu64
                                 ")",
                                 what, now - start, value, __atomic_load_n(slot, __ATOMIC_ACQUIRE));
        }
        if (now - start > CGT_WAIT_SLEEP_AFTER) {
            nanosleep(&nap, NULL);
        } else {
            sched_yield();
        }
    }
}

void cgt_team_progress(cgt_team_t *team) {
#if COLL_GPU_HAVE_UCX
    if (team == NULL || team->ucx == NULL) {
        return;
    }
    /* Busy on another thread: that thread progresses it.  The lock is recursive, so a wait of
     * this thread on this team (which calls params.progress) gets here and progresses it. */
    if (cgt_team_trylock(team)) {
        cgt_ucx_progress(team->ucx);
        cgt_team_unlock(team);
    }
#else
    (void)team;
#endif
}

static cgt_status_t cgt_signal_unlocked(cgt_team_t *team, int peer, unsigned idx, uint64_t value) {
    if (team == NULL || peer < 0 || peer >= team->size || idx >= team->num_signals) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_signal: peer %d or slot %u out of range",
                             peer, idx);
    }
    return cgt_signal_store(team, peer, idx, value);
}

cgt_status_t cgt_signal(cgt_team_t *team, int peer, unsigned idx, uint64_t value) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_signal_unlocked(team, peer, idx, value);
    cgt_team_unlock(team);
    return status;
}

static cgt_status_t cgt_wait_unlocked(cgt_team_t *team, unsigned idx, uint64_t value) {
    if (team == NULL || idx >= team->num_signals) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_wait: slot %u out of range", idx);
    }
    return cgt_team_wait_slot(team, cgt_signal_slot(team, idx), value, "cgt_wait");
}

cgt_status_t cgt_wait(cgt_team_t *team, unsigned idx, uint64_t value) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_wait_unlocked(team, idx, value);
    cgt_team_unlock(team);
    return status;
}

cgt_status_t cgt_test(cgt_team_t *team, unsigned idx, uint64_t value, bool *reached_p) {
    cgt_status_t status = CGT_OK;
    double now;

    *reached_p = false;
    if (team == NULL || idx >= team->num_signals) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_test: slot %u out of range", idx);
    }
    cgt_team_lock(team);
#if COLL_GPU_HAVE_UCX
    if (team->ucx != NULL) {
        cgt_ucx_progress(team->ucx);
    }
#endif
    *reached_p = __atomic_load_n(cgt_signal_slot(team, idx), __ATOMIC_ACQUIRE) >= value;
    if (*reached_p) {
        /* a wait done by polling: counted once, where it ends */
        __atomic_add_fetch(&cgt_process_counts.waits, 1, __ATOMIC_RELAXED);
    }
    now = cgt_time_now();
    if (!*reached_p && (now >= team->next_alive_check)) {
        status = cgt_team_check_peers(team);
        team->next_alive_check = now + CGT_ALIVE_CHECK_INTERVAL;
    }
    cgt_team_unlock(team);
    return status;
}

volatile uint64_t *cgt_signal_addr(cgt_team_t *team, unsigned idx) {
    /* accel.h has no host-register op: the slot is host memory; a kernel can poll it only
     * where the device reaches host memory (the emulated backend, CUDA's HMM/ATS systems) */
    if (team == NULL || idx >= team->num_signals) {
        cgt_error_set(team, CGT_ERR_INVALID, "cgt_signal_addr: slot %u out of range", idx);
        return NULL;
    }
    return cgt_signal_slot(team, idx);
}

static cgt_status_t cgt_barrier_local_unlocked(cgt_team_t *team) {
    unsigned round = 0;
    cgt_status_t status;
    uint64_t epoch;
    int partner;

    if (team == NULL) {
        return cgt_error_set(team, CGT_ERR_INVALID, "cgt_barrier_local: NULL team");
    }
    if (team->nlocal == 1) {
        return CGT_OK;
    }
    /* dissemination: in round k signal the rank 2^k ahead, wait for the one 2^k behind; the
     * slots only grow, so a fast rank already in the next barrier cannot confuse this one */
    epoch = ++team->barrier_epoch;
    for (int dist = 1; dist < team->nlocal; dist <<= 1, ++round) {
        partner = team->local_ranks[(team->local_index + dist) % team->nlocal];
        status = cgt_signal_store(team, partner, team->num_signals + round, epoch);
        if (status != CGT_OK) {
            return status;
        }
        status = cgt_team_wait_slot(team, cgt_signal_slot(team, team->num_signals + round), epoch,
                                    "cgt_barrier_local");
        if (status != CGT_OK) {
            return status;
        }
    }
    return CGT_OK;
}

cgt_status_t cgt_barrier_local(cgt_team_t *team) {
    cgt_status_t status;

    cgt_team_lock(team);
    status = cgt_barrier_local_unlocked(team);
    cgt_team_unlock(team);
    return status;
}
