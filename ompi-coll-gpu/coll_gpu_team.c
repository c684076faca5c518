/*
 * Transport teams: the node map and the bootstrap of shmem-transport over the
 * communicator's saved host collectives.
 */
#include "coll_gpu_team.h"

#include "ompi/group/group.h"
#include "opal/util/show_help.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The out-of-band allgather of shmem-transport: the previous module's allgather, which
 * never comes back through coll/gpu. */
typedef struct {
    mca_coll_gpu_module_t *module;
    struct ompi_communicator_t *comm;
} coll_gpu_team_oob_t;

static int coll_gpu_team_oob_allgather(const void *sbuf, void *rbuf, size_t len, void *ctx) {
    coll_gpu_team_oob_t *oob = ctx;

    if (len > INT_MAX) {
        return OMPI_ERR_BAD_PARAM;
    }
    return COLL_GPU_PREV(oob->module, allgather, sbuf, (int)len, MPI_BYTE, rbuf, (int)len,
                         MPI_BYTE, oob->comm);
}

static void coll_gpu_team_log(int level, const char *msg) {
    opal_output_verbose(level, mca_coll_gpu_component.output, "coll:gpu: shmem: %s", msg);
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

int coll_gpu_team_node_map(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                           int ranks_per_node, int *node_of_rank) {
    int size = ompi_comm_size(comm), zero = 0, rc, nnodes = 0;
    coll_gpu_team_oob_t oob = {.module = module, .comm = comm};
    ompi_communicator_t *local = NULL;
    coll_gpu_node_key_t mine, *keys;

    keys = malloc((size_t)size * sizeof(*keys));
    if (NULL == keys) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* The ranks of this node: Open MPI's own MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). */
    rc = ompi_comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, NULL, &local);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    rc = ompi_group_translate_ranks(local->c_local_group, 1, &zero, comm->c_local_group,
                                    &mine.leader);
    mine.sub_node = (ranks_per_node > 0) ? ompi_comm_rank(local) / ranks_per_node : 0;
    ompi_comm_free(&local);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    rc = coll_gpu_team_oob_allgather(&mine, keys, sizeof(mine), &oob);
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
    COLL_GPU_VERBOSE(20, "communicator %s: %d ranks on %d nodes (ranks_per_node %d)",
                     comm->c_name, size, nnodes, ranks_per_node);
out:
    free(keys);
    return rc;
}

int coll_gpu_team_get(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                      coll_gpu_team_t **team_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    coll_gpu_team_oob_t oob = {.module = module, .comm = comm};
    shmem_team_params_t params;
    coll_gpu_team_t *team;
    shmem_status_t status;
    int rc, ok;

    if (OPAL_LIKELY(NULL != module->team)) {
        *team_p = module->team;
        return OMPI_SUCCESS;
    }
    if (module->team_failed) {
        return OMPI_ERR_NOT_AVAILABLE;
    }

    team = calloc(1, sizeof(*team));
    if (NULL == team) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    team->rank = ompi_comm_rank(comm);
    team->size = ompi_comm_size(comm);
    team->node_of_rank = malloc((size_t)team->size * sizeof(int));
    team->local_ranks = malloc((size_t)team->size * sizeof(int));
    if ((NULL == team->node_of_rank) || (NULL == team->local_ranks)) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto err_free;
    }
    rc = coll_gpu_team_node_map(module, comm, c->ranks_per_node, team->node_of_rank);
    if (OMPI_SUCCESS != rc) {
        goto err_free;
    }
    team->node = team->node_of_rank[team->rank];
    for (int r = 0; r < team->size; ++r) {
        team->nnodes = (team->node_of_rank[r] + 1 > team->nnodes) ? team->node_of_rank[r] + 1
                                                                  : team->nnodes;
        if (team->node_of_rank[r] == team->node) {
            if (r == team->rank) {
                team->local_rank = team->local_size;
            }
            team->local_ranks[team->local_size++] = r;
        }
    }

    memset(&params, 0, sizeof(params));
    params.rank = team->rank;
    params.size = team->size;
    params.node_of_rank = team->node_of_rank;
    params.oob_allgather = coll_gpu_team_oob_allgather;
    params.oob_ctx = &oob;
    params.accel = c->accel;
    params.backends = c->transports;
    params.reg_cache_max = (size_t)c->registration_cache_size;
    params.timeout = c->transport_timeout;
    params.progress = (void (*)(void))opal_progress;
    params.net_devices = (NULL != c->net_devices && '\0' != c->net_devices[0]) ? c->net_devices
                                                                                : NULL;
    params.ucx_tls = (NULL != c->ucx_tls && '\0' != c->ucx_tls[0]) ? c->ucx_tls : NULL;
    params.log = coll_gpu_team_log;
    params.verbose = c->verbose;
    status = shmem_team_create(&params, &team->shmem);
    if (SHMEM_OK != status) {
        team->shmem = NULL;
        opal_show_help("help-mpi-coll-gpu.txt", "transport unavailable", true, COLL_GPU_HOSTNAME,
                       comm->c_name, team->rank, team->size, shmem_status_string(status),
                       shmem_last_error());
    }
    /* Every rank uses the team, or none does: a rank that falls back alone would run other
     * communication than its peers. */
    ok = (SHMEM_OK == status);
    rc = COLL_GPU_PREV(module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if ((OMPI_SUCCESS != rc) || !ok) {
        COLL_GPU_VERBOSE(1, "communicator %s: no transport team (%s): device collectives staged",
                         comm->c_name, (SHMEM_OK != status) ? shmem_last_error()
                                                            : "failed on another rank");
        rc = OMPI_ERR_NOT_AVAILABLE;
        goto err_destroy_shmem;
    }
    COLL_GPU_VERBOSE(1, "communicator %s: transport team of %d ranks on %d nodes, rank %d is %d "
                     "of %d on node %d",
                     comm->c_name, team->size, team->nnodes, team->rank, team->local_rank,
                     team->local_size, team->node);
    module->team = team;
    *team_p = team;
    return OMPI_SUCCESS;

err_destroy_shmem:
    if (NULL != team->shmem) {
        shmem_team_destroy(team->shmem);
    }
err_free:
    free(team->node_of_rank);
    free(team->local_ranks);
    free(team);
    module->team_failed = true;
    return rc;
}

void coll_gpu_team_destroy(coll_gpu_team_t *team) {
    if (NULL == team) {
        return;
    }
    if (NULL != team->shmem) {
        shmem_team_destroy(team->shmem);
    }
    free(team->node_of_rank);
    free(team->local_ranks);
    free(team);
}
