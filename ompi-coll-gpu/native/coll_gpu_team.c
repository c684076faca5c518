/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport teams: the node map and the bootstrap of shmem-transport over the
 * communicator's setup collectives (coll_gpu_setup.h).
 */
#include "coll_gpu_team.h"
#include "coll_gpu_hash.h"

#include "ompi/group/group.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* The out-of-band allgather of shmem-transport (ctx: the communicator): the setup's
 * (coll_gpu_setup.h). */
static int coll_gpu_team_oob_allgather(const void *sbuf, void *rbuf, size_t len, void *ctx) {
    return coll_gpu_setup_allgather(ctx, sbuf, rbuf, len);
}

/* Live teams.  Their transport moves data also while the rank is inside another MPI call
 * (a UCX signal queued behind a flush, a peer's get served over tcp): opal_progress
 * progresses them.  The callback is registered with the first team.  Under
 * MPI_THREAD_MULTIPLE opal_progress runs on every thread that waits in MPI, while others
 * create and free communicators: the list is locked, the callback only tries the lock (a
 * thread that finds it taken leaves the walk to its holder), and a team busy on another
 * thread is skipped by cgt_team_progress itself. */
static coll_gpu_team_t *coll_gpu_teams;
static bool coll_gpu_teams_progress_registered;
static pthread_mutex_t coll_gpu_teams_lock = PTHREAD_MUTEX_INITIALIZER;

static void coll_gpu_team_free(coll_gpu_team_t *team);

/* Set on a communicator's thread (coll_gpu_team_thread_skips_progress). */
static __thread bool coll_gpu_team_no_progress;

void coll_gpu_team_thread_skips_progress(void) { coll_gpu_team_no_progress = true; }

/* (coll_gpu_setup_pause is Open MPI's progress, or inside a setup task the thread back.) */
void coll_gpu_team_wait_progress(void) {
    if (!coll_gpu_team_no_progress) {
        coll_gpu_setup_pause();
    }
}

/* Progresses the live teams, and destroys the retired ones whose peers are done. */
static int coll_gpu_teams_progress(void) {
    coll_gpu_team_t *done = NULL, *team, **link;

    if (mca_coll_gpu_component.thread_multiple) {
        if (NULL == __atomic_load_n(&coll_gpu_teams, __ATOMIC_RELAXED) ||
            (0 != pthread_mutex_trylock(&coll_gpu_teams_lock))) {
            return 0;
        }
    }
    link = &coll_gpu_teams;
    while (NULL != (team = *link)) {
        cgt_team_progress(team->cgt);
        if ((NULL != team->retire_test) && team->retire_test(team->retire_arg)) {
            __atomic_store_n(link, team->next, __ATOMIC_RELAXED);
            team->next = done;
            done = team;
        } else {
            link = &team->next;
        }
    }
    if (mca_coll_gpu_component.thread_multiple) {
        pthread_mutex_unlock(&coll_gpu_teams_lock);
    }
    /* outside the lock; the callback stays registered (it is running) */
    while (NULL != (team = done)) {
        done = team->next;
        __atomic_sub_fetch(&mca_coll_gpu_component.teams_retiring, 1, __ATOMIC_RELAXED);
        team->retire_release(team->retire_arg);
        coll_gpu_team_free(team);
    }
    return 0;
}

static void coll_gpu_teams_lock_take(void) {
    if (mca_coll_gpu_component.thread_multiple) {
        pthread_mutex_lock(&coll_gpu_teams_lock);
    }
}

static void coll_gpu_teams_lock_release(void) {
    if (mca_coll_gpu_component.thread_multiple) {
        pthread_mutex_unlock(&coll_gpu_teams_lock);
    }
}

static void coll_gpu_teams_add(coll_gpu_team_t *team) {
    coll_gpu_teams_lock_take();
    team->next = coll_gpu_teams;
    __atomic_store_n(&coll_gpu_teams, team, __ATOMIC_RELAXED);
    if (!coll_gpu_teams_progress_registered) {
        opal_progress_register(coll_gpu_teams_progress);
        coll_gpu_teams_progress_registered = true;
    }
    coll_gpu_teams_lock_release();
}

/* After it returns no thread progresses the team: a walk holds the lock throughout. */
static void coll_gpu_teams_remove(coll_gpu_team_t *team) {
    coll_gpu_teams_lock_take();
    for (coll_gpu_team_t **link = &coll_gpu_teams; NULL != *link; link = &(*link)->next) {
        if (*link == team) {
            __atomic_store_n(link, team->next, __ATOMIC_RELAXED);
            break;
        }
    }
    if ((NULL == coll_gpu_teams) && coll_gpu_teams_progress_registered) {
        opal_progress_unregister(coll_gpu_teams_progress);
        coll_gpu_teams_progress_registered = false;
    }
    coll_gpu_teams_lock_release();
}

static void coll_gpu_team_log(int level, const char *msg) {
    opal_output_verbose(level, mca_coll_gpu_component.output, "coll:gpu: %s", msg);
}

/* Where each rank's emulated node sits: (its real node's lowest rank, its sub-node). */
typedef struct {
    int leader;
    int sub_node;
} coll_gpu_node_key_t;

static int coll_gpu_node_key_cmp(const coll_gpu_node_key_t *a, const coll_gpu_node_key_t *b) {
    if (a->leader != b->leader) {
        return (a->leader < b->leader) ? -1 : 1;
    }
    return (a->sub_node > b->sub_node) - (a->sub_node < b->sub_node);
}

/*
 * node_of_rank of a communicator: nodes as MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds
 * them (Open MPI's locality of each peer, which that split reads too), each split into
 * emulated nodes of ranks_per_node ranks when that is > 0 (coll_gpu_ranks_per_node).  Node
 * indices follow the lowest communicator rank of each node.  Collective (one setup allgather)
 * and creates no communicator: it may run while Open MPI creates
 * this one (coll_gpu_native_setup=create), when a communicator's creation inside it would wait
 * for the creation it is part of.  keys: size entries of scratch, freed here.
 */
static int coll_gpu_team_node_map(struct ompi_communicator_t *comm, int ranks_per_node,
                                  int *node_of_rank, coll_gpu_node_key_t *keys) {
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm), rc, nnodes = 0, local_index = 0;
    coll_gpu_node_key_t mine = {.leader = me, .sub_node = 0};

    /* The node's leader: its lowest rank; this rank's place among the node's ranks */
    for (int r = 0; r < me; ++r) {
        if (OPAL_PROC_ON_LOCAL_NODE(ompi_comm_peer_lookup(comm, r)->super.proc_flags)) {
            mine.leader = (0 == local_index++) ? r : mine.leader;
        }
    }
    mine.sub_node = (ranks_per_node > 0) ? local_index / ranks_per_node : 0;
    rc = coll_gpu_setup_allgather(comm, &mine, keys, sizeof(mine));
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    /* Node index: the number of distinct keys smaller than the rank's own.  O(size^2) once
     * per communicator; every rank computes the same map. */
    for (int r = 0; r < size; ++r) {
        int index = 0;
        for (int s = 0; s < size; ++s) {
            bool first = true; /* s is the lowest rank of its key: count each key once */
            for (int t = 0; t < s && first; ++t) {
                first = (0 != coll_gpu_node_key_cmp(&keys[t], &keys[s]));
            }
            index += first && (coll_gpu_node_key_cmp(&keys[s], &keys[r]) < 0);
        }
        node_of_rank[r] = index;
        nnodes = (index + 1 > nnodes) ? index + 1 : nnodes;
    }
    COLL_GPU_VERBOSE(20, "communicator %s: %d ranks on %d nodes (ranks_per_node %d)", comm->c_name,
                     size, nnodes, ranks_per_node);
out:
    free(keys);
    return rc;
}

/* node_sizes, node_first, node_ranks, node_order, min_local_size and node_peers, from
 * node_of_rank and this rank's local_rank. */
static void coll_gpu_team_node_peers(coll_gpu_team_t *team) {
    for (int j = 0; j < team->nnodes; ++j) {
        team->node_sizes[j] = 0;
        team->node_peers[j] = -1;
    }
    for (int r = 0; r < team->size; ++r) {
        int j = team->node_of_rank[r];

        if (team->node_sizes[j]++ == team->local_rank) {
            team->node_peers[j] = r;
        }
    }
    /* node_ranks: each node's ranks in rank order, node after node (node_first[j] used as
     * node j's cursor, then shifted back to its start) */
    team->node_first[0] = 0;
    for (int j = 0; j < team->nnodes; ++j) {
        team->node_first[j + 1] = team->node_first[j] + team->node_sizes[j];
    }
    for (int r = 0; r < team->size; ++r) {
        int at = team->node_first[team->node_of_rank[r]]++;

        team->node_ranks[at] = r;
        team->node_order[r] = at;
    }
    for (int j = team->nnodes; j > 0; --j) {
        team->node_first[j] = team->node_first[j - 1];
    }
    team->node_first[0] = 0;
    team->min_local_size = team->size;
    for (int j = 0; j < team->nnodes; ++j) {
        team->min_local_size = (team->node_sizes[j] < team->min_local_size) ? team->node_sizes[j]
                                                                            : team->min_local_size;
    }
}

/* coll_gpu_tree_rails auto: rails pay where a node's ranks reach the network through several
 * interfaces (their UCX_NET_DEVICES differ); through one, a carrier other than the leader adds
 * a hop inside the node and moves no byte over another link.  On only where every node of
 * several ranks has more than one: every rank computes it from the same allgather.  Collective
 * (every rank of the team calls it, whatever its parameter says); all: size entries of
 * scratch. */
static int coll_gpu_team_rails(coll_gpu_team_t *team, uint64_t *all, const char **why_p) {
    const char *devices = cgt_team_net_devices(team->cgt);
    uint64_t mine = coll_gpu_hash_bytes(COLL_GPU_HASH_SEED, devices, strlen(devices));
    bool several = true, shared = false;
    int rc;

    team->rails = false;
    *why_p = "one node";
    if (team->nnodes < 2) {
        return OMPI_SUCCESS;
    }
    rc = coll_gpu_setup_allgather(team->comm, &mine, all, sizeof(mine));
    for (int j = 0; (OMPI_SUCCESS == rc) && (j < team->nnodes); ++j) {
        bool differ = false;

        for (int k = 1; k < team->node_sizes[j]; ++k) {
            differ = differ || (all[coll_gpu_team_node_rank(team, j, k)] !=
                                all[coll_gpu_team_node_rank(team, j, 0)]);
        }
        shared = shared || (team->node_sizes[j] > 1);
        several = several && (differ || (team->node_sizes[j] < 2));
    }
    if (!shared) {
        *why_p = "one rank per node";
    } else {
        team->rails = several;
        *why_p = several ? "the ranks of every node use different network devices"
                         : "the ranks of a node use the same network devices";
    }
    return rc;
}

int coll_gpu_team_get(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                      coll_gpu_team_t **team_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    cgt_team_params_t params;
    const char *rails_why;
    coll_gpu_node_key_t *keys;
    uint64_t *hashes; /* each rank's network devices (coll_gpu_team_rails) */
    coll_gpu_team_t *team;
    cgt_status_t status;
    int rc, ok;

    if (OPAL_LIKELY(NULL != module->team)) {
        *team_p = module->team;
        return OMPI_SUCCESS;
    }
    if (module->team_failed) {
        return OMPI_ERR_NOT_AVAILABLE;
    }

    /* Host memory for the team, agreed before its first collective: a rank that failed alone
     * would leave its peers waiting in the node map's. */
    team = calloc(1, sizeof(*team));
    keys = malloc((size_t)ompi_comm_size(comm) * sizeof(*keys));
    hashes = malloc((size_t)ompi_comm_size(comm) * sizeof(*hashes));
    ok = (NULL != team) && (NULL != keys) && (NULL != hashes);
    if (NULL == team) {
        rc = coll_gpu_setup_allreduce(comm, &ok, 1, MPI_INT, MPI_MIN);
        free(keys);
        free(hashes);
        module->team_failed = true;
        return (OMPI_SUCCESS != rc) ? rc : OMPI_ERR_OUT_OF_RESOURCE;
    }
    team->rank = ompi_comm_rank(comm);
    team->size = ompi_comm_size(comm);
    team->node_of_rank = malloc((size_t)team->size * sizeof(int));
    team->local_ranks = malloc((size_t)team->size * sizeof(int));
    /* nnodes <= size entries */
    team->node_sizes = malloc((size_t)team->size * sizeof(int));
    team->node_peers = malloc((size_t)team->size * sizeof(int));
    team->node_first = malloc(((size_t)team->size + 1) * sizeof(int));
    team->node_ranks = malloc((size_t)team->size * sizeof(int));
    team->node_order = malloc((size_t)team->size * sizeof(int));
    ok = ok && (NULL != team->node_of_rank) && (NULL != team->local_ranks) &&
         (NULL != team->node_sizes) && (NULL != team->node_peers) && (NULL != team->node_first) &&
         (NULL != team->node_ranks) && (NULL != team->node_order);
    rc = coll_gpu_setup_allreduce(comm, &ok, 1, MPI_INT, MPI_MIN);
    if ((OMPI_SUCCESS != rc) || !ok) {
        free(keys);
        rc = (OMPI_SUCCESS != rc) ? rc : OMPI_ERR_OUT_OF_RESOURCE;
        goto err_free;
    }
    rc = coll_gpu_team_node_map(comm, c->ranks_per_node, team->node_of_rank, keys);
    if (OMPI_SUCCESS != rc) {
        goto err_free;
    }
    team->node = team->node_of_rank[team->rank];
    for (int r = 0; r < team->size; ++r) {
        team->nnodes =
            (team->node_of_rank[r] + 1 > team->nnodes) ? team->node_of_rank[r] + 1 : team->nnodes;
        if (team->node_of_rank[r] == team->node) {
            if (r == team->rank) {
                team->local_rank = team->local_size;
            }
            team->local_ranks[team->local_size++] = r;
        }
    }
    coll_gpu_team_node_peers(team);

    memset(&params, 0, sizeof(params));
    params.rank = team->rank;
    params.size = team->size;
    params.node_of_rank = team->node_of_rank;
    team->comm = comm;
    params.oob_allgather = coll_gpu_team_oob_allgather;
    params.oob_ctx = comm;
    params.accel = c->accel;
    params.backends = c->transports;
    params.reg_cache_max = (size_t)c->registration_cache_size;
    params.timeout = c->transport_timeout;
    params.progress = coll_gpu_team_wait_progress;
    params.net_devices =
        (NULL != c->net_devices && '\0' != c->net_devices[0]) ? c->net_devices : NULL;
    params.ucx_tls = (NULL != c->ucx_tls && '\0' != c->ucx_tls[0]) ? c->ucx_tls : NULL;
    params.num_signals = COLL_GPU_TEAM_NUM_SLOTS(team->size, team->nnodes);
    params.log = coll_gpu_team_log;
    params.verbose = c->verbose;
    params.thread_multiple = coll_gpu_team_threads();
    /* Open MPI's runtime knows the whole host (emulated nodes share it): it asks idle
     * processes to yield when the host holds more of them than cores */
    params.oversubscribed = opal_progress_yield_when_idle;
    status = cgt_team_create(&params, &team->cgt);
    if (CGT_OK != status) {
        team->cgt = NULL;
        opal_show_help("help-mpi-coll-gpu.txt", "transport unavailable", true, COLL_GPU_HOSTNAME,
                       comm->c_name, team->rank, team->size, cgt_status_string(status),
                       cgt_last_error());
    }
    /* Every rank uses the team, or none does: a rank that falls back alone would run other
     * communication than its peers. */
    ok = (CGT_OK == status);
    rc = coll_gpu_setup_allreduce(comm, &ok, 1, MPI_INT, MPI_MIN);
    if ((OMPI_SUCCESS != rc) || !ok) {
        COLL_GPU_VERBOSE(1, "communicator %s: no transport team (%s): device collectives staged",
                         comm->c_name,
                         (CGT_OK != status) ? cgt_last_error() : "failed on another rank");
        rc = OMPI_ERR_NOT_AVAILABLE;
        goto err_free;
    }
    rc = coll_gpu_team_rails(team, hashes, &rails_why);
    if (OMPI_SUCCESS != rc) {
        goto err_free; /* the allgather failed: Open MPI's error, the same everywhere */
    }
    free(hashes);
    if (COLL_GPU_RAILS_AUTO != c->tree_rails) {
        team->rails = (COLL_GPU_RAILS_ON == c->tree_rails);
        rails_why = "coll_gpu_tree_rails";
    }
    COLL_GPU_VERBOSE(1,
                     "communicator %s: transport team of %d ranks on %d nodes, rank %d is %d "
                     "of %d on node %d, network devices %s, rails %s (%s)",
                     comm->c_name, team->size, team->nnodes, team->rank, team->local_rank,
                     team->local_size, team->node, cgt_team_net_devices(team->cgt),
                     team->rails ? "on" : "off", rails_why);
    module->team = team;
    coll_gpu_teams_add(team);
    coll_gpu_count_add(&mca_coll_gpu_component.teams_created, 1);
    *team_p = team;
    return OMPI_SUCCESS;

err_free:
    free(hashes);
    coll_gpu_team_free(team); /* and its cgt team, where made */
    module->team_failed = true;
    return rc;
}

/* A barrier: the setup's allreduce. */
static int coll_gpu_team_host_barrier(struct ompi_communicator_t *comm) {
    int one = 1;
    return coll_gpu_setup_allreduce(comm, &one, 1, MPI_INT, MPI_MIN);
}

/* Every rank writes (its rank + 1) into slot [its rank] of every peer's scratch of that
 * memory type, then checks its own scratch; peers without a path for that type are
 * skipped (and their slots not checked).  Returns the number of peers reached. */
static int coll_gpu_team_check_mem(struct ompi_communicator_t *comm, coll_gpu_team_t *team,
                                   accel_mem_type_t type, const char **what_p) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    size_t len = (size_t)team->size * sizeof(uint64_t);
    uint64_t value = (uint64_t)team->rank + 1, *slots = NULL;
    cgt_mem_t *mem = NULL;
    cgt_status_t status;
    int reached = 0, rc;

    status = cgt_alloc(team->cgt, len, type, &mem);
    if (CGT_OK != status) {
        *what_p = "cgt_alloc";
        return -1;
    }
    for (int p = 0; p < team->size; ++p) {
        if ((p == team->rank) || (0 == cgt_team_peer_backend(team->cgt, p, type))) {
            continue;
        }
        status = cgt_put(team->cgt, cgt_mem_peer(mem, p), (size_t)team->rank * sizeof(value),
                         &value, sizeof(value));
        if (CGT_OK != status) {
            *what_p = "cgt_put";
            goto out;
        }
        ++reached;
    }
    status = cgt_quiet(team->cgt, -1);
    if (CGT_OK != status) {
        *what_p = "cgt_quiet";
        goto out;
    }
    rc = coll_gpu_team_host_barrier(comm);
    if (OMPI_SUCCESS != rc) {
        status = CGT_ERR_BOOTSTRAP;
        *what_p = "host barrier";
        goto out;
    }
    slots = malloc(len);
    if ((NULL == slots) || (ACCEL_OK != accel->memcpy(slots, cgt_mem_local(mem), len))) {
        status = CGT_ERR_NO_MEMORY;
        *what_p = "reading the scratch";
        goto out;
    }
    for (int p = 0; p < team->size; ++p) {
        if ((p != team->rank) && (0 != cgt_team_peer_backend(team->cgt, p, type)) &&
            (slots[p] != (uint64_t)p + 1)) {
            status = CGT_ERR_TRANSPORT;
            *what_p = "the data a peer put";
            goto out;
        }
    }
out:
    free(slots);
    /* Nobody frees scratch a peer may still write to. */
    (void)coll_gpu_team_host_barrier(comm);
    cgt_free(team->cgt, mem);
    return (CGT_OK == status) ? reached : -1;
}

int coll_gpu_team_check(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm) {
    coll_gpu_team_t *team;
    const char *what = "";
    int rc, host_peers, device_peers = 0, next, ok;
    cgt_status_t status = CGT_OK;

    rc = coll_gpu_team_get(module, comm, &team);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    host_peers = coll_gpu_team_check_mem(comm, team, ACCEL_MEM_HOST, &what);
    if ((host_peers >= 0) && (NULL != mca_coll_gpu_component.accel)) {
        device_peers = coll_gpu_team_check_mem(comm, team, ACCEL_MEM_DEVICE, &what);
    }
    if ((host_peers >= 0) && (device_peers >= 0)) {
        /* a signal around the ring, then the local barrier */
        next = (team->rank + 1) % team->size;
        what = "cgt_signal";
        status = cgt_signal(team->cgt, next, COLL_GPU_TEAM_SLOT_CHECK, 1);
        if (CGT_OK == status) {
            what = "cgt_wait";
            status = cgt_wait(team->cgt, COLL_GPU_TEAM_SLOT_CHECK, 1);
        }
        if (CGT_OK == status) {
            what = "cgt_barrier_local";
            status = cgt_barrier_local(team->cgt);
        }
    } else {
        status = CGT_ERR_TRANSPORT;
    }
    ok = (CGT_OK == status);
    (void)coll_gpu_setup_allreduce(comm, &ok, 1, MPI_INT, MPI_MIN);
    if (CGT_OK != status) {
        opal_show_help("help-mpi-coll-gpu.txt", "transport check failed", true, COLL_GPU_HOSTNAME,
                       comm->c_name, team->rank, team->size, what, cgt_last_error());
        return OMPI_ERROR;
    }
    COLL_GPU_VERBOSE(1,
                     "transport check on %s: %s (rank %d of %d ranks on %d nodes, node %d; "
                     "host memory reached on %d peers, device memory on %d)",
                     comm->c_name, ok ? "ok" : "failed on another rank", team->rank, team->size,
                     team->nnodes, team->node, host_peers, device_peers);
    return ok ? OMPI_SUCCESS : OMPI_ERROR;
}

void coll_gpu_team_destroy(coll_gpu_team_t *team) {
    if (NULL == team) {
        return;
    }
    coll_gpu_teams_remove(team);
    coll_gpu_team_free(team);
}

/* A few tries before the team is left to opal_progress: no clock, a count of yields. */
#define COLL_GPU_TEAM_RETIRE_TRIES 256

void coll_gpu_team_retire(coll_gpu_team_t *team, bool (*test)(void *arg),
                          void (*release)(void *arg), void *arg) {
    for (int i = 0; i < COLL_GPU_TEAM_RETIRE_TRIES; ++i) {
        if (test(arg)) {
            release(arg);
            coll_gpu_team_destroy(team);
            return;
        }
        sched_yield();
    }
    COLL_GPU_VERBOSE(10, "team of %d ranks retired: destroyed once its peers are done with it",
                     team->size);
    __atomic_add_fetch(&mca_coll_gpu_component.teams_retiring, 1, __ATOMIC_RELAXED);
    coll_gpu_teams_lock_take();
    team->retire_release = release;
    team->retire_arg = arg;
    __atomic_store_n(&team->retire_test, test, __ATOMIC_RELEASE);
    coll_gpu_teams_lock_release();
}

void coll_gpu_teams_drain(void) {
    bool retired = true;

    while (retired) {
        retired = false;
        coll_gpu_teams_lock_take();
        for (coll_gpu_team_t *team = coll_gpu_teams; NULL != team; team = team->next) {
            retired = retired || (NULL != team->retire_test);
        }
        coll_gpu_teams_lock_release();
        if (retired) {
            (void)coll_gpu_teams_progress();
            sched_yield();
        }
    }
    coll_gpu_teams_lock_take();
    if ((NULL == coll_gpu_teams) && coll_gpu_teams_progress_registered) {
        opal_progress_unregister(coll_gpu_teams_progress);
        coll_gpu_teams_progress_registered = false;
    }
    coll_gpu_teams_lock_release();
}

static void coll_gpu_team_free(coll_gpu_team_t *team) {
    if (NULL != team->cgt) {
        cgt_team_destroy(team->cgt);
    }
    free(team->node_of_rank);
    free(team->local_ranks);
    free(team->node_sizes);
    free(team->node_peers);
    free(team->node_first);
    free(team->node_ranks);
    free(team->node_order);
    free(team);
}
