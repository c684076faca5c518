/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native algorithms' common ground: context setup (node check, agreement, team, scratch),
 * signals, the ordered n-input reduction, errors, and the algorithm choice.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_agreement.h"
#include "coll_gpu_board.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_setup.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_staged.h"
#include "coll_gpu_tuning.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/show_help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLL_GPU_NATIVE_ALIGN 256

_Static_assert(COLL_GPU_FALLBACK_NUM <= COLL_GPU_MAX_FALLBACKS, "COLL_GPU_MAX_FALLBACKS too small");
_Static_assert(COLL_GPU_NCOLL_NUM <= COLL_GPU_MAX_NCOLLS, "COLL_GPU_MAX_NCOLLS too small");

const coll_gpu_alg_table_t *const coll_gpu_alg_tables[COLL_GPU_NCOLL_NUM] = {
    [COLL_GPU_NCOLL_REDUCE_SCATTER_BLOCK] = &coll_gpu_reduce_scatter_block_algs,
    [COLL_GPU_NCOLL_ALLGATHER] = &coll_gpu_allgather_algs,
    [COLL_GPU_NCOLL_BCAST] = &coll_gpu_bcast_algs,
    [COLL_GPU_NCOLL_REDUCE] = &coll_gpu_reduce_algs,
    [COLL_GPU_NCOLL_GATHER] = &coll_gpu_gather_algs,
    [COLL_GPU_NCOLL_SCATTER] = &coll_gpu_scatter_algs,
    [COLL_GPU_NCOLL_ALLGATHERV] = &coll_gpu_allgatherv_algs,
    [COLL_GPU_NCOLL_REDUCE_SCATTER] = &coll_gpu_reduce_scatter_algs,
    [COLL_GPU_NCOLL_ALLTOALL] = &coll_gpu_alltoall_algs,
    [COLL_GPU_NCOLL_ALLTOALLV] = &coll_gpu_alltoallv_algs,
    [COLL_GPU_NCOLL_ALLREDUCE] = &coll_gpu_allreduce_algs,
};

bool coll_gpu_alg_always(const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    (void)query;
    (void)why;
    (void)why_len;
    return true;
}

bool coll_gpu_alg_no_leaders(const coll_gpu_alg_query_t *query) {
    (void)query;
    return false;
}

/* The band rule applies to team's calls (min_bytes 0 where the rule has none); true where it is
 * a band rule's band without rails (the team has none and no parameter was set). */
static bool coll_gpu_alg_size_rule_band(const coll_gpu_alg_size_rule_t *rule,
                                        const coll_gpu_team_t *team, coll_gpu_band_t *band) {
    if ((NULL != rule->band) && !team->rails && !rule->band->params_set) {
        *band = rule->band->no_rails;
        return true;
    }
    band->min_nodes = *rule->min_nodes;
    band->min_bytes = (NULL != rule->min_bytes) ? *rule->min_bytes : 0;
    band->max_bytes = *rule->max_bytes;
    return false;
}

bool coll_gpu_alg_size_rule(const coll_gpu_alg_size_rule_t *rule,
                            const coll_gpu_alg_query_t *query) {
    const coll_gpu_team_t *team = query->native->team;
    size_t scale = rule->per_rank ? (size_t)team->size : 1;
    coll_gpu_band_t band;

    (void)coll_gpu_alg_size_rule_band(rule, team, &band);
    return (team->nnodes >= band.min_nodes) && (query->bytes <= band.max_bytes / scale) &&
           (query->bytes * scale >= band.min_bytes);
}

bool coll_gpu_alg_size_rule_why(const coll_gpu_alg_size_rule_t *rule,
                                const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;
    size_t bytes = query->bytes * (rule->per_rank ? (size_t)team->size : 1);
    coll_gpu_band_t band;

    if (coll_gpu_alg_size_rule_band(rule, team, &band)) {
        COLL_GPU_WHY(why, why_len,
                     "no rails, the cost model's band without them: %d nodes >= %d; %zu <= %zu "
                     "bytes%s <= %zu (coll_gpu_%s_* not set)",
                     team->nnodes, band.min_nodes, band.min_bytes, bytes, rule->bytes_what,
                     band.max_bytes, rule->param);
    } else if (NULL != rule->min_bytes) {
        COLL_GPU_WHY(why, why_len,
                     "%d nodes >= coll_gpu_%s_min_nodes=%d; coll_gpu_%s_min_bytes=%zu <= %zu "
                     "bytes%s <= coll_gpu_%s_max_bytes=%zu",
                     team->nnodes, rule->param, band.min_nodes, rule->param, band.min_bytes, bytes,
                     rule->bytes_what, rule->param, band.max_bytes);
    } else {
        COLL_GPU_WHY(
            why, why_len,
            "%d nodes >= coll_gpu_%s_min_nodes=%d; %zu bytes%s <= coll_gpu_%s_max_bytes=%zu",
            team->nnodes, rule->param, band.min_nodes, bytes, rule->bytes_what, rule->param,
            band.max_bytes);
    }
    return coll_gpu_alg_size_rule(rule, query);
}

bool coll_gpu_alg_direct_over_hierarchical(const coll_gpu_alg_query_t *query,
                                           bool (*hier_fits)(const coll_gpu_native_t *, size_t),
                                           size_t seg_min_bytes,
                                           const coll_gpu_alg_size_rule_t *hier_band, char *why,
                                           size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;

    if (1 == team->nnodes) {
        COLL_GPU_WHY(why, why_len, "one node");
        return true;
    }
    if ((team->nnodes == team->size) && ((team->nnodes < 3) || (query->bytes < seg_min_bytes))) {
        COLL_GPU_WHY(why, why_len, "%d nodes, one rank each", team->nnodes);
        return true;
    }
    if (!hier_fits(query->native, query->esize)) {
        COLL_GPU_WHY(why, why_len, "%d nodes; hierarchical does not fit the scratch", team->nnodes);
        return true;
    }
    if ((NULL != hier_band) && (team->nnodes < team->size)) {
        char band[256];

        if (!coll_gpu_alg_size_rule_why(hier_band, query, band, sizeof(band))) {
            COLL_GPU_WHY(why, why_len, "not hierarchical's band: %s", band);
            return true;
        }
    }
    return false;
}

bool coll_gpu_alg_hierarchical_fits(const coll_gpu_alg_query_t *query,
                                    bool (*hier_fits)(const coll_gpu_native_t *, size_t), char *why,
                                    size_t why_len) {
    if (hier_fits(query->native, query->esize)) {
        return true;
    }
    COLL_GPU_WHY(why, why_len, ": the scratch half (%zu bytes) cannot hold hierarchical's layout",
                 query->native->half);
    return false;
}

bool coll_gpu_alg_across_nodes(const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;

    if (team->nnodes == team->size) {
        COLL_GPU_WHY(why, why_len, "%d nodes, one rank each; %zu bytes: segments between nodes",
                     team->nnodes, query->bytes);
    } else {
        COLL_GPU_WHY(why, why_len, "%d nodes, some with several ranks", team->nnodes);
    }
    return true;
}

const char *coll_gpu_alg_name(coll_gpu_ncoll_t coll, int alg) {
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];

    if (alg >= COLL_GPU_ALG_FIRST_NATIVE && alg < COLL_GPU_ALG_FIRST_NATIVE + t->num_algs) {
        return t->algs[alg - COLL_GPU_ALG_FIRST_NATIVE].name;
    }
    return (COLL_GPU_ALG_STAGED == alg) ? "staged" : "auto";
}

/* The names a tuning rule may give: auto, staged and every table's rows (a rule stores its
 * index here), and what each is for each collective: its parameter value, or -1 where the
 * collective has no algorithm of that name (auto: -1 too, the rule is passed over). */
#define COLL_GPU_MAX_TUNING_NAMES (2 + COLL_GPU_NCOLL_NUM * COLL_GPU_MAX_ALGS)
static const char *coll_gpu_tuning_names[COLL_GPU_MAX_TUNING_NAMES];
static int coll_gpu_num_tuning_names;
static int8_t coll_gpu_tuning_alg[COLL_GPU_NCOLL_NUM][COLL_GPU_MAX_TUNING_NAMES];

static void coll_gpu_tuning_names_init(void) {
    coll_gpu_tuning_names[0] = "auto";
    coll_gpu_tuning_names[1] = "staged";
    coll_gpu_num_tuning_names = 2;
    memset(coll_gpu_tuning_alg, -1, sizeof(coll_gpu_tuning_alg));
    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {
        coll_gpu_tuning_alg[k][COLL_GPU_ALG_STAGED] = COLL_GPU_ALG_STAGED;
        for (int a = 0; a < coll_gpu_alg_tables[k]->num_algs; ++a) {
            const char *name = coll_gpu_alg_tables[k]->algs[a].name;
            int n = 0;

            while ((n < coll_gpu_num_tuning_names) &&
                   (0 != strcmp(coll_gpu_tuning_names[n], name))) {
                ++n;
            }
            if (n == coll_gpu_num_tuning_names) {
                coll_gpu_tuning_names[coll_gpu_num_tuning_names++] = name;
            }
            coll_gpu_tuning_alg[k][n] = (int8_t)(COLL_GPU_ALG_FIRST_NATIVE + a);
        }
    }
}

const char *const coll_gpu_fallback_names[COLL_GPU_FALLBACK_NUM] = {
#define COLL_GPU_FALLBACK_NAME(id, name) name,
    COLL_GPU_FOREACH_FALLBACK(COLL_GPU_FALLBACK_NAME)
#undef COLL_GPU_FALLBACK_NAME
};

/* Device: the accelerator's asynchronous operations on the module's stream. */
static accel_status_t coll_gpu_native_device_copy(void *dst, const void *src, size_t len,
                                                  accel_stream_h stream) {
    return mca_coll_gpu_component.accel->memcpy_async(dst, src, len, stream);
}

static accel_status_t coll_gpu_native_device_reduce(void *dst, const void *const *srcs, int n,
                                                    size_t count, accel_dtype_t dtype,
                                                    accel_op_t op, accel_stream_h stream) {
    return mca_coll_gpu_component.accel->reduce(dst, srcs, n, count, dtype, op, stream);
}

static accel_status_t coll_gpu_native_device_copy2d(void *dst, size_t dpitch, const void *src,
                                                    size_t spitch, size_t len, size_t rows,
                                                    accel_stream_h stream) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    accel_status_t status = ACCEL_OK;

    if ((dpitch == len) && (spitch == len)) {
        return accel->memcpy_async(dst, src, len * rows, stream);
    }
    if ((NULL != accel->memcpy2d_async) && (rows > 1)) {
        return accel->memcpy2d_async(dst, dpitch, src, spitch, len, rows, stream);
    }
    for (size_t r = 0; (r < rows) && (ACCEL_OK == status); ++r) {
        status = accel->memcpy_async((char *)dst + r * dpitch, (const char *)src + r * spitch, len,
                                     stream);
    }
    return status;
}

static accel_status_t coll_gpu_native_device_synchronize(accel_stream_h stream) {
    return mca_coll_gpu_component.accel->stream_synchronize(stream);
}

/* Host: done when the call returns. */
static accel_status_t coll_gpu_native_host_copy(void *dst, const void *src, size_t len,
                                                accel_stream_h stream) {
    (void)stream;
    memcpy(dst, src, len);
    return ACCEL_OK;
}

static accel_status_t coll_gpu_native_host_copy2d(void *dst, size_t dpitch, const void *src,
                                                  size_t spitch, size_t len, size_t rows,
                                                  accel_stream_h stream) {
    (void)stream;
    for (size_t r = 0; r < rows; ++r) {
        memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, len);
    }
    return ACCEL_OK;
}

static accel_status_t coll_gpu_native_host_reduce(void *dst, const void *const *srcs, int n,
                                                  size_t count, accel_dtype_t dtype, accel_op_t op,
                                                  accel_stream_h stream) {
    (void)stream;
    return accel_reduce_cpu(dst, srcs, n, count, dtype, op);
}

static accel_status_t coll_gpu_native_host_synchronize(accel_stream_h stream) {
    (void)stream;
    return ACCEL_OK;
}

const coll_gpu_native_mem_t coll_gpu_native_mems[COLL_GPU_NATIVE_KINDS] = {
    [COLL_GPU_NATIVE_DEVICE] = {.name = "device",
                                .type = ACCEL_MEM_DEVICE,
                                .copy = coll_gpu_native_device_copy,
                                .copy2d = coll_gpu_native_device_copy2d,
                                .reduce = coll_gpu_native_device_reduce,
                                .synchronize = coll_gpu_native_device_synchronize},
    [COLL_GPU_NATIVE_HOST] = {.name = "host",
                              .type = ACCEL_MEM_HOST,
                              .copy = coll_gpu_native_host_copy,
                              .copy2d = coll_gpu_native_host_copy2d,
                              .reduce = coll_gpu_native_host_reduce,
                              .synchronize = coll_gpu_native_host_synchronize},
};

struct coll_gpu_tuning_state {
    coll_gpu_tuning_t rules;
};

static void coll_gpu_native_tuning_log(int level, const char *msg, void *ctx) {
    (void)ctx;
    opal_show_help("help-mpi-coll-gpu.txt", "tuning file", true, (0 == level) ? "error" : "warning",
                   msg);
}

void coll_gpu_native_tuning_load(void) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    struct coll_gpu_tuning_state *state;

    c->tuning = NULL;
    coll_gpu_tuning_names_init();
    if ((NULL != c->tuning_file) && ('\0' != c->tuning_file[0])) {
        state = calloc(1, sizeof(*state));
        if ((NULL != state) &&
            (coll_gpu_tuning_load(&state->rules, c->tuning_file, coll_gpu_tuning_names,
                                  coll_gpu_num_tuning_names, coll_gpu_native_tuning_log,
                                  NULL) >= 0)) {
            c->tuning = state;
            COLL_GPU_VERBOSE(1, "tuning file %s: %d rules", c->tuning_file, state->rules.num_rules);
        } else {
            free(state);
        }
    }
}

uint64_t coll_gpu_native_tuning_hash(void) {
    return (NULL != mca_coll_gpu_component.tuning) ? mca_coll_gpu_component.tuning->rules.hash : 0;
}

void coll_gpu_native_tuning_free(void) {
    if (NULL != mca_coll_gpu_component.tuning) {
        coll_gpu_tuning_free(&mca_coll_gpu_component.tuning->rules);
        free(mca_coll_gpu_component.tuning);
        mca_coll_gpu_component.tuning = NULL;
    }
}

bool coll_gpu_native_nonblocking_ready(mca_coll_gpu_module_t *module) {
    const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_native_t *native;

    /* Only what needs no blocking step of its own, the same on every rank: the checks that
     * agree (counts, memory kinds) and the scratch's setup are collectives, which a
     * nonblocking call must not block in (another rank may post its calls on another
     * communicator first); and the promise that every rank passes device memory, which a
     * nonblocking call cannot learn (coll_gpu_memory_kinds_uniform). */
    if (!c->native || !c->native_nonblocking ||
        !(c->memory_kinds_uniform || module->kinds_promised) || c->check_counts ||
        c->check_memory_kinds) {
        return false;
    }
    /* the setup started at the communicator's creation: its outcome, the same on every rank,
     * decides (it waits for the peers' progress, not for their calls) */
    if (OPAL_UNLIKELY(NULL != module->setup_task)) {
        coll_gpu_setup_task_finish(module);
    }
    native = module->native;
    return (NULL != native) && !native->broken &&
           (NULL != native->scratch[COLL_GPU_NATIVE_DEVICE].mem);
}

void coll_gpu_native_block_arrays(coll_gpu_native_call_t *call, bool nonblocking, size_t **counts_p,
                                  size_t **displs_p, size_t **scounts_p, size_t **sdispls_p) {
    size_t size = (size_t)call->native->team->size;
    int narrays = (NULL != scounts_p) ? 4 : 2;

    if (!nonblocking) {
        *counts_p = call->native->counts;
        *displs_p = call->native->displs;
        if (NULL != scounts_p) {
            *scounts_p = call->native->send_counts;
            *sdispls_p = call->native->send_displs;
        }
        return;
    }
    call->posted_blocks = malloc((size_t)narrays * size * sizeof(size_t));
    if (NULL == call->posted_blocks) {
        /* the peers posted theirs */
        coll_gpu_out_of_host_memory((size_t)narrays * size * sizeof(size_t));
    }
    call->posted_arrays = narrays;
    *counts_p = call->posted_blocks;
    *displs_p = call->posted_blocks + size;
    if (NULL != scounts_p) {
        *scounts_p = call->posted_blocks + 2 * size;
        *sdispls_p = call->posted_blocks + 3 * size;
    }
}

/* Bytes of each parity half of the scratch: a one-shot message, or a two-shot chunk and its
 * reduced shard. */
static size_t coll_gpu_native_half_size(void) {
    size_t one_shot = mca_coll_gpu_component.allreduce_one_shot_max_bytes;
    size_t two_shot = 2 * mca_coll_gpu_component.native_chunk_size;
    size_t half = (one_shot > two_shot) ? one_shot : two_shot;

    half = (half + COLL_GPU_NATIVE_ALIGN - 1) & ~(size_t)(COLL_GPU_NATIVE_ALIGN - 1);
    return (half < 2 * COLL_GPU_NATIVE_ALIGN) ? 2 * COLL_GPU_NATIVE_ALIGN : half;
}

/* *ok = its minimum over the ranks */
static int coll_gpu_native_agree(struct ompi_communicator_t *comm, int *ok) {
    return coll_gpu_setup_allreduce(comm, ok, 1, MPI_INT, MPI_MIN);
}

static void coll_gpu_native_free(coll_gpu_native_t *native) {
    if (NULL != native) {
        free(native->srcs);
        free(native->counts); /* and the other size_t arrays */
        free(native->net_by_node_mark);
        free(native);
    }
}

/* Sets up the context; false with the reason when the communicator cannot have one. */
static bool coll_gpu_native_create(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                   coll_gpu_native_t **native_p, coll_gpu_fallback_t *reason_p) {
    int size = ompi_comm_size(comm), ok, rc;
    uint64_t hashes[2] = {mca_coll_gpu_component.native_config_hash,
                          ~mca_coll_gpu_component.native_config_hash};
    coll_gpu_native_t *native;
    coll_gpu_team_t *team;

    /* Every step below is collective and its outcome the same on every rank. */
    rc = coll_gpu_setup_allreduce(comm, hashes, 2, MPI_UINT64_T, MPI_MAX);
    if ((OMPI_SUCCESS != rc) || (hashes[0] != mca_coll_gpu_component.native_config_hash) ||
        (hashes[1] != ~mca_coll_gpu_component.native_config_hash)) {
        if (0 == ompi_comm_rank(comm)) {
            opal_output(0,
                        "coll:gpu: %s: the ranks were given different coll_gpu parameters or "
                        "tuning rules for the native algorithms: its device collectives are "
                        "staged",
                        comm->c_name);
        }
        *reason_p = COLL_GPU_FALLBACK_MISMATCH;
        return false;
    }
    if (OMPI_SUCCESS != coll_gpu_team_get(module, comm, &team)) {
        *reason_p = COLL_GPU_FALLBACK_TEAM;
        return false;
    }

    native = calloc(1, sizeof(*native));
    if (NULL != native) {
        native->agree_told_by = -1;
        native->srcs = calloc((size_t)size, sizeof(*native->srcs));
        native->counts = calloc(4 * (size_t)size, sizeof(size_t));
    }
    ok = (NULL != native) && (NULL != native->srcs) && (NULL != native->counts);
    if ((OMPI_SUCCESS != coll_gpu_native_agree(comm, &ok)) || !ok) {
        coll_gpu_native_free(native);
        *reason_p = COLL_GPU_FALLBACK_TEAM;
        return false;
    }
    native->displs = native->counts + size;
    native->send_counts = native->displs + size;
    native->send_displs = native->send_counts + size;
    native->team = team;
    native->half = coll_gpu_native_half_size();
    COLL_GPU_VERBOSE(1, "%s: native algorithms on %d ranks of %d node(s)", comm->c_name, size,
                     team->nnodes);
    *native_p = native;
    return true;
}

/* Allocates the scratch of kind (collective); false when some rank could not. */
static bool coll_gpu_native_scratch_create(struct ompi_communicator_t *comm,
                                           coll_gpu_native_t *native, coll_gpu_native_kind_t kind) {
    coll_gpu_native_scratch_t *scratch = &native->scratch[kind];
    cgt_team_t *cgt = native->team->cgt;
    int size = native->team->size, ok;
    cgt_mem_t *mem = NULL;
    cgt_status_t status;

    scratch->peer = calloc((size_t)size, sizeof(*scratch->peer));
    /* collective whatever this rank's allocation did: every rank allocates, then all agree */
    status = cgt_alloc(cgt, 2 * native->half, coll_gpu_native_mems[kind].type, &mem);
    ok = (CGT_OK == status) && (NULL != scratch->peer);
    if (CGT_OK == status) {
        if (ok) {
            scratch->mem = mem;
        } else {
            cgt_free(cgt, mem); /* nobody wrote to it */
        }
    }
    for (int p = 0; ok && p < size; ++p) {
        /* the algorithms load the scratch of the peers of their node directly: cuda_ipc
         * (device) or posix (host); other nodes' they fetch (coll_gpu_native_fetch) */
        if (coll_gpu_native_is_local(native, p)) {
            scratch->peer[p] = cgt_rmem_ptr(cgt_mem_peer(scratch->mem, p));
            ok = (NULL != scratch->peer[p]);
        }
    }
    if (CGT_OK != status) {
        COLL_GPU_VERBOSE(1, "%s: no %s scratch for the native algorithms: %s", comm->c_name,
                         coll_gpu_native_mems[kind].name, cgt_last_error());
    }
    if ((OMPI_SUCCESS != coll_gpu_native_agree(comm, &ok)) || !ok) {
        if (NULL != scratch->mem) {
            cgt_free(cgt, scratch->mem); /* nobody read it: no step ran in it */
            scratch->mem = NULL;
        }
        free(scratch->peer);
        scratch->peer = NULL;
        scratch->unavailable = true;
        return false;
    }
    COLL_GPU_VERBOSE(1, "%s: %s scratch 2 x %zu bytes for the native algorithms", comm->c_name,
                     coll_gpu_native_mems[kind].name, native->half);
    return true;
}

/* A device scratch other nodes cannot reach: the host scratch carries what they read
 * (collective; false when some rank could not allocate it). */
static bool coll_gpu_native_device_reach(struct ompi_communicator_t *comm,
                                         coll_gpu_native_t *native) {
    coll_gpu_team_t *team = native->team;
    int reachable = 1;

    for (int p = 0; p < team->size; ++p) {
        if (!coll_gpu_native_is_local(native, p) &&
            (0 == cgt_team_peer_backend(team->cgt, p, ACCEL_MEM_DEVICE))) {
            reachable = 0;
        }
    }
    if ((OMPI_SUCCESS != coll_gpu_native_agree(comm, &reachable))) {
        return false;
    }
    if (reachable) {
        return true;
    }
    native->device_via_host = true;
    COLL_GPU_VERBOSE(1, "%s: other nodes read device scratch through host scratch", comm->c_name);
    return (NULL != native->scratch[COLL_GPU_NATIVE_HOST].mem) ||
           (!native->scratch[COLL_GPU_NATIVE_HOST].unavailable &&
            coll_gpu_native_scratch_create(comm, native, COLL_GPU_NATIVE_HOST));
}

bool coll_gpu_native_get(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         coll_gpu_native_kind_t kind, coll_gpu_native_t **native_p,
                         coll_gpu_fallback_t *reason_p) {
    coll_gpu_native_t *native;
    bool created;

    /* the setup started at the communicator's creation decides first (a no-op inside it) */
    if (OPAL_UNLIKELY(NULL != module->setup_task)) {
        coll_gpu_setup_task_finish(module);
    }
    native = module->native;
    if (OPAL_UNLIKELY(module->params_differ)) {
        /* compared at the communicator's creation: the same on every rank */
        *reason_p = COLL_GPU_FALLBACK_MISMATCH;
        return false;
    }
    if (OPAL_LIKELY(NULL != native)) {
        if (OPAL_UNLIKELY(native->broken || native->scratch[kind].unavailable)) {
            *reason_p = COLL_GPU_FALLBACK_TEAM;
            return false;
        }
        if (OPAL_UNLIKELY(NULL == native->scratch[kind].mem)) {
            created = coll_gpu_native_scratch_create(comm, native, kind);
            if (created && (COLL_GPU_NATIVE_DEVICE == kind) && (native->team->nnodes > 1)) {
                created = coll_gpu_native_device_reach(comm, native);
                native->scratch[kind].unavailable = !created;
            }
            if (!created) {
                *reason_p = COLL_GPU_FALLBACK_TEAM;
                return false;
            }
        }
        *native_p = native;
        return true;
    }
    if (0 != module->native_unavailable) {
        *reason_p = (coll_gpu_fallback_t)(module->native_unavailable - 1);
        return false;
    }
    /* The setup's host collectives are point-to-point messages of its own (coll_gpu_setup.h):
     * none comes back through this component (nor creates a communicator: see the node map). */
    if (OPAL_UNLIKELY(mca_coll_gpu_component.transport_check) && (NULL == module->team) &&
        !module->team_failed) {
        (void)coll_gpu_team_check(module, comm);
    }
    created = coll_gpu_native_create(module, comm, &module->native, reason_p);
    if (created && coll_gpu_native_scratch_create(comm, module->native, kind) &&
        (COLL_GPU_NATIVE_DEVICE == kind) && (module->native->team->nnodes > 1) &&
        !coll_gpu_native_device_reach(comm, module->native)) {
        module->native->scratch[kind].unavailable = true;
    }
    if (created && module->native->scratch[kind].unavailable) {
        *reason_p = COLL_GPU_FALLBACK_TEAM;
        return false;
    }
    if (!created) {
        module->native = NULL;
        module->native_unavailable = 1 + (int)*reason_p;
        return false;
    }
    *native_p = module->native;
    return true;
}

/* The native setup at creation (coll_gpu_native_setup=create): decided alike on every rank,
 * from the parameters (which every rank must share) and the size, not the thread level (each
 * process asks for its own); a process without an accelerator runs host-buffer mode at most,
 * whose collectives are blocking.  Not MPI_COMM_WORLD: created in MPI_Init, before many
 * programs choose their GPU, the scratch would be allocated on the device current then; its
 * first blocking native call sets it up. */
static bool coll_gpu_native_setup_wanted(struct ompi_communicator_t *comm) {
    const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;

    return (COLL_GPU_NATIVE_SETUP_CREATE == c->native_setup) && c->native && (NULL != c->accel) &&
           ((struct ompi_communicator_t *)MPI_COMM_WORLD != comm);
}

/* The setup at creation, as a task or run at once: the same collectives either way.  The call
 * board first (every communicator of two ranks or more), then the native context if wanted. */
static void coll_gpu_native_setup_run(mca_coll_gpu_module_t *module,
                                      struct ompi_communicator_t *comm) {
    coll_gpu_fallback_t reason = COLL_GPU_FALLBACK_TEAM;
    coll_gpu_native_t *native;
    bool ready;

    coll_gpu_board_create(module, comm);
    if (!coll_gpu_native_setup_wanted(comm)) {
        if ((COLL_GPU_NATIVE_SETUP_CREATE == mca_coll_gpu_component.native_setup) &&
            ((struct ompi_communicator_t *)MPI_COMM_WORLD == comm)) {
            COLL_GPU_VERBOSE(1,
                             "%s: no native setup at its creation (in MPI_Init, the program's GPU "
                             "may not be chosen yet); its first blocking native call sets it up",
                             comm->c_name);
        }
        return;
    }
    ready = coll_gpu_native_get(module, comm, COLL_GPU_NATIVE_DEVICE, &native, &reason);
    COLL_GPU_VERBOSE(1, "%s: native setup at its creation (coll_gpu_native_setup=create): %s",
                     comm->c_name, ready ? "ready" : coll_gpu_fallback_names[reason]);
}

void coll_gpu_native_setup_at_create(mca_coll_gpu_module_t *module,
                                     struct ompi_communicator_t *comm) {
    if (ompi_comm_size(comm) < 2) {
        return; /* no peer: no board, nothing to set up */
    }
    coll_gpu_board_watch(module, comm);
    /* Inside Open MPI's activation of comm: the task returns at its first wait and goes on from
     * opal_progress (coll_gpu_setup.h says why it should not wait here) */
    if (coll_gpu_setup_task_possible() &&
        coll_gpu_setup_task_start(module, comm, coll_gpu_native_setup_run)) {
        return;
    }
    /* MPI_THREAD_SERIALIZED (or no memory for the task): the same setup, run here, waiting for
     * the peers inside the activation.  Still at creation, so that every rank sets up at the
     * same point whatever thread level each asked for (the peers' setups, task or not, are the
     * same messages); one thread in MPI at a time cannot meet the wait of two threads'
     * activations that excluded this under MPI_THREAD_MULTIPLE */
    COLL_GPU_VERBOSE(10, "%s: setup inside its creation (%s)", comm->c_name,
                     coll_gpu_setup_task_possible() ? "no task" : "MPI_THREAD_SERIALIZED");
    coll_gpu_native_setup_run(module, comm);
}

/* coll_gpu_team_retire's test: every peer announced the retiring step, or one is dead. */
static bool coll_gpu_native_retired(void *arg) {
    coll_gpu_native_t *native = arg;
    coll_gpu_team_t *team = native->team;
    bool reached;

    for (; (0 != native->retire_value) && (native->retire_peer < team->size);
         ++native->retire_peer) {
        if (native->retire_peer == team->rank) {
            continue;
        }
        if (CGT_OK != cgt_test(team->cgt, COLL_GPU_NATIVE_SLOT0 + (unsigned)native->retire_peer,
                               native->retire_value, &reached)) {
            return true; /* a peer is dead: nobody reads this scratch any more */
        }
        if (!reached) {
            return false;
        }
    }
    return true;
}

/* coll_gpu_team_retire's release: the scratch, then the context. */
static void coll_gpu_native_release(void *arg) {
    coll_gpu_native_t *native = arg;

    for (int k = 0; k < COLL_GPU_NATIVE_KINDS; ++k) {
        if (NULL != native->scratch[k].mem) {
            cgt_free(native->team->cgt, native->scratch[k].mem);
        }
        free(native->scratch[k].peer);
    }
    coll_gpu_native_free(native);
}

void coll_gpu_native_retire(coll_gpu_native_t *native, coll_gpu_team_t *team) {
    if (NULL == native) {
        coll_gpu_team_destroy(team);
        return;
    }
    native->retire_value = 0;
    native->retire_peer = 0;
    /* Every call's agreement step already told this rank that no peer reads its scratch any
     * more; what a peer may still do is map this rank's memory and signal it (its own retiring
     * announcement): announcing one step more, and waiting for everyone's, lets the team go
     * once no peer will touch it (on every node). */
    if ((native->step > 0) && !native->broken) {
        uint64_t last = ++native->step;
        if (CGT_OK == coll_gpu_native_signal_all(native, last, COLL_GPU_PHASE_READY)) {
            native->retire_value = COLL_GPU_NATIVE_SIGNAL_VALUE(last, COLL_GPU_PHASE_READY);
        }
    }
    if ((team->nnodes > 1) && (0 != native->retire_value)) {
        /* Across nodes the free still waits for the peers' announcements (or their death), as
         * before: a UCX worker destroyed later, from progress, left puts unacknowledged, and
         * UCX 1.18 aborts the peer that must acknowledge them. */
        (void)coll_gpu_native_wait_all(native, native->step, COLL_GPU_PHASE_READY);
        coll_gpu_native_release(native);
        coll_gpu_team_destroy(team);
        return;
    }
    coll_gpu_team_retire(team, coll_gpu_native_retired, coll_gpu_native_release, native);
}

/* A transport status of a get, split: an accelerator error of the transport's own staging (a
 * get into device memory through its host bounce buffers, whose requests it completed before
 * returning) is this rank's accelerator failure, not a broken link: the protocol goes on, and the
 * closing agreement gives every rank the error, as for any other accelerator error (an abort
 * would be what a transport failure needs, peers that cannot be told). */
static accel_status_t coll_gpu_native_get_status(cgt_status_t *status_p) {
    if (CGT_ERR_ACCEL != *status_p) {
        return ACCEL_OK;
    }
    *status_p = CGT_OK;
    return ACCEL_ERR_DEVICE;
}

accel_status_t coll_gpu_native_fetch(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                     int peer, uint64_t step, size_t offset, void *dst, size_t len,
                                     accel_stream_h stream, cgt_status_t *status_p) {
    coll_gpu_native_scratch_t *scratch = &native->scratch[kind];

    if (coll_gpu_native_is_local(native, peer)) {
        return coll_gpu_native_mems[kind].copy(
            dst, coll_gpu_native_theirs(native, kind, peer, step) + offset, len, stream);
    }
    if ((COLL_GPU_NATIVE_DEVICE == kind) && native->device_via_host) {
        scratch = &native->scratch[COLL_GPU_NATIVE_HOST];
    }
    if (++native->gets_in_flight > native->net_gets_in_flight_max) {
        native->net_gets_in_flight_max = native->gets_in_flight;
    }
    *status_p = cgt_get(native->team->cgt, dst, cgt_mem_peer(scratch->mem, peer),
                        (step & 1) * native->half + offset, len);
    return coll_gpu_native_get_status(status_p);
}

accel_status_t coll_gpu_native_publish(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                       uint64_t step, size_t offset, size_t len,
                                       accel_stream_h stream) {
    if ((COLL_GPU_NATIVE_DEVICE != kind) || !native->device_via_host || (0 == len)) {
        return ACCEL_OK;
    }
    return coll_gpu_native_device_copy(
        coll_gpu_native_mine(native, COLL_GPU_NATIVE_HOST, step) + offset,
        coll_gpu_native_mine(native, COLL_GPU_NATIVE_DEVICE, step) + offset, len, stream);
}

cgt_status_t coll_gpu_native_fetch_complete(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                            accel_stream_h stream, accel_status_t *astatus_p) {
    cgt_status_t status = CGT_OK;
    accel_status_t synced, staged = ACCEL_OK;

    if (native->gets_in_flight > 0) {
        native->gets_in_flight = 0;
        status = cgt_quiet(native->team->cgt, -1);
        staged = coll_gpu_native_get_status(&status);
    }
    synced = coll_gpu_native_mems[kind].synchronize(stream);
    *astatus_p = (ACCEL_OK != *astatus_p) ? *astatus_p : (ACCEL_OK != staged) ? staged : synced;
    return status;
}

cgt_status_t coll_gpu_native_signal(coll_gpu_native_t *native, int peer, uint64_t step,
                                    coll_gpu_phase_t phase) {
    return cgt_signal(native->team->cgt, peer, COLL_GPU_NATIVE_SLOT0 + (unsigned)native->team->rank,
                      COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase));
}

/* A wait for peer's signal: counted on the critical path between nodes when peer is on another
 * node.  A new round when this rank signalled another node since the current round began (what it
 * waits for may answer that signal); waits with no such signal between them wait for messages in
 * flight at the same time: one round. */
static inline void coll_gpu_native_net_wait(coll_gpu_native_t *native, int peer) {
    cgt_traffic_t traffic;

    if (coll_gpu_native_is_local(native, peer)) {
        return;
    }
    native->net_waits += 1;
    cgt_team_traffic(native->team->cgt, &traffic);
    if (traffic.signals != native->net_round_mark) {
        native->net_rounds += 1;
        native->net_round_mark = traffic.signals;
    }
}

cgt_status_t coll_gpu_native_wait(coll_gpu_native_t *native, int peer, uint64_t step,
                                  coll_gpu_phase_t phase) {
    coll_gpu_native_net_wait(native, peer);
    return cgt_wait(native->team->cgt, COLL_GPU_NATIVE_SLOT0 + (unsigned)peer,
                    COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase));
}

cgt_status_t coll_gpu_native_signal_all(coll_gpu_native_t *native, uint64_t step,
                                        coll_gpu_phase_t phase) {
    coll_gpu_team_t *team = native->team;
    uint64_t value = COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase);
    cgt_status_t status;

    for (int p = 0; p < team->size; ++p) {
        if (p == team->rank) {
            continue;
        }
        status = cgt_signal(team->cgt, p, COLL_GPU_NATIVE_SLOT0 + (unsigned)team->rank, value);
        if (CGT_OK != status) {
            return status;
        }
    }
    return CGT_OK;
}

cgt_status_t coll_gpu_native_wait_all(coll_gpu_native_t *native, uint64_t step,
                                      coll_gpu_phase_t phase) {
    coll_gpu_team_t *team = native->team;
    uint64_t value = COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase);
    cgt_status_t status;

    for (int p = 0; p < team->size; ++p) {
        if (p == team->rank) {
            continue;
        }
        coll_gpu_native_net_wait(native, p);
        status = cgt_wait(team->cgt, COLL_GPU_NATIVE_SLOT0 + (unsigned)p, value);
        if (CGT_OK != status) {
            return status;
        }
    }
    return CGT_OK;
}

unsigned long long coll_gpu_net_counters[COLL_GPU_NET_NUM];
unsigned long long coll_gpu_net_received_by_node[COLL_GPU_NET_MAX_NODES];
unsigned long long coll_gpu_net_gets_in_flight_max;

void coll_gpu_native_net_begin(const coll_gpu_native_call_t *call,
                               coll_gpu_native_net_mark_t *mark) {
    coll_gpu_native_t *native = call->native;

    cgt_team_traffic(native->team->cgt, &mark->traffic);
    if (NULL == native->net_by_node_mark) {
        native->net_by_node_mark = calloc((size_t)native->team->nnodes, sizeof(uint64_t));
    }
    if (NULL != native->net_by_node_mark) {
        memcpy(native->net_by_node_mark, cgt_team_received_by_node(native->team->cgt),
               (size_t)native->team->nnodes * sizeof(uint64_t));
    }
    mark->waits = native->net_waits;
    mark->rounds = native->net_rounds;
    native->net_gets_in_flight_max = 0;
    /* a call's first wait for another node starts a round of its own */
    native->net_round_mark = UINT64_MAX;
}

void coll_gpu_native_net_end(const coll_gpu_native_call_t *call, struct ompi_communicator_t *comm,
                             const coll_gpu_native_net_mark_t *mark) {
    coll_gpu_native_t *native = call->native;
    unsigned long long delta[COLL_GPU_NET_NUM];
    cgt_traffic_t now;

    cgt_team_traffic(native->team->cgt, &now);
    delta[COLL_GPU_NET_BYTES_SENT] = now.bytes_sent - mark->traffic.bytes_sent;
    delta[COLL_GPU_NET_BYTES_RECEIVED] = now.bytes_received - mark->traffic.bytes_received;
    delta[COLL_GPU_NET_MESSAGES] = now.messages - mark->traffic.messages;
    delta[COLL_GPU_NET_ROUNDS] = native->net_rounds - mark->rounds;
    delta[COLL_GPU_NET_WAITS] = native->net_waits - mark->waits;
    for (int i = 0; i < COLL_GPU_NET_NUM; ++i) {
        coll_gpu_count_add(&coll_gpu_net_counters[i], delta[i]);
    }
    coll_gpu_count_max(&coll_gpu_net_gets_in_flight_max, native->net_gets_in_flight_max);
    if (NULL != native->net_by_node_mark) {
        const uint64_t *by_node = cgt_team_received_by_node(native->team->cgt);

        /* (most calls get from a few nodes: no atomic add for the others) */
        for (int j = 0; j < native->team->nnodes; ++j) {
            int k = (j < COLL_GPU_NET_MAX_NODES) ? j : COLL_GPU_NET_MAX_NODES - 1;
            if (by_node[j] != native->net_by_node_mark[j]) {
                coll_gpu_count_add(&coll_gpu_net_received_by_node[k],
                                   by_node[j] - native->net_by_node_mark[j]);
            }
        }
    }
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                     "%s on %s: between nodes rank %d sent %llu bytes and received %llu bytes "
                     "in %llu messages, at most %u gets in flight; %llu rounds on its critical "
                     "path (%llu signals of other nodes waited for), %s",
                     call->mpi_call, comm->c_name, native->team->rank,
                     delta[COLL_GPU_NET_BYTES_SENT], delta[COLL_GPU_NET_BYTES_RECEIVED],
                     delta[COLL_GPU_NET_MESSAGES], native->net_gets_in_flight_max,
                     delta[COLL_GPU_NET_ROUNDS], delta[COLL_GPU_NET_WAITS], call->alg->name);
}

accel_status_t coll_gpu_native_reduce(const coll_gpu_native_mem_t *mem, void *dst,
                                      const void *const *srcs, int n, size_t count,
                                      accel_dtype_t dtype, accel_op_t op, accel_stream_h stream) {
    const void *chain[ACCEL_REDUCE_MAX_INPUTS];
    accel_status_t status;
    int done;

    if (1 == n) {
        return (dst == srcs[0]) ? ACCEL_OK
                                : mem->copy(dst, srcs[0], count * accel_dtype_size(dtype), stream);
    }
    done = (n < ACCEL_REDUCE_MAX_INPUTS) ? n : ACCEL_REDUCE_MAX_INPUTS;
    status = mem->reduce(dst, srcs, done, count, dtype, op, stream);
    /* the accumulated value stays the left operand: the order of a single n-input pass */
    while ((ACCEL_OK == status) && (done < n)) {
        int more = n - done;
        more = (more < ACCEL_REDUCE_MAX_INPUTS - 1) ? more : ACCEL_REDUCE_MAX_INPUTS - 1;
        chain[0] = dst;
        memcpy(&chain[1], &srcs[done], (size_t)more * sizeof(*srcs));
        status = mem->reduce(dst, chain, more + 1, count, dtype, op, stream);
        done += more;
    }
    return status;
}

static cgt_status_t coll_gpu_native_agree_word(coll_gpu_native_t *native, uint32_t payload,
                                               cgt_status_t status, uint32_t *all_p);

cgt_status_t coll_gpu_native_announce(const coll_gpu_native_call_t *call, uint64_t step,
                                      accel_status_t *astatus_p) {
    coll_gpu_native_t *native = call->native;
    cgt_status_t status;
    uint32_t unused;

    status = coll_gpu_native_fetch_complete(native, call->kind, call->stream, astatus_p);
    if ((CGT_OK == status) && (native->team->nnodes > 1)) {
        /* Across nodes the step's barrier is the closing agreement's (through node leaders,
         * O(log nnodes) messages), not a signal from every rank to every rank: what follows
         * needs only that every rank got to this step, never a peer's READY slot. */
        return coll_gpu_native_agree_word(native, 0, CGT_OK, &unused);
    }
    if (CGT_OK == status) {
        status = coll_gpu_native_signal_all(native, step, COLL_GPU_PHASE_READY);
    }
    if (CGT_OK == status) {
        status = coll_gpu_native_wait_all(native, step, COLL_GPU_PHASE_READY);
    }
    return status;
}

/*
 * The agreement that ends every native call (and coll_gpu_native_agree_max): every rank's
 * 24-bit payload, combined by max, reaches every rank, and no rank leaves before every rank
 * entered (a barrier: no peer reads this rank's scratch of the call any more).
 *
 * One node: every rank sends its word to every other, then waits for theirs.  Several nodes:
 * each node's first rank (its leader) gathers its node's words, the leaders exchange theirs by
 * dissemination of radix k (coll_gpu_agreement_radix): in round i a leader sends what it has
 * to the leaders of the nodes m k^i after its own (m = 1 .. k-1, m k^i < nnodes), then waits
 * for those m k^i before it; after ceil(log_k nnodes) rounds each has every node's (every
 * distance below nnodes is a sum of such terms, each used once), then it tells its node.  A
 * leader sends at most (k - 1) ceil(log_k nnodes) messages between nodes, every other rank
 * none: O(log nnodes) rounds and messages, where one step to every rank cost O(size) messages
 * per rank.  Every pair of ranks exchanges at most one word a way per agreement (distinct
 * distances, distinct directions), into the receiver's slot of the sender.
 *
 * A word is the agreement's number (from 1, the same on every rank) above a dead flag and the
 * payload: monotone per slot, as waits need.  Each slot has two parities: a peer may be one
 * agreement ahead (it finished this one, which needs only that this rank entered it) and write
 * its next word before this rank read this one, never two ahead.
 *
 * Failure: a wait that finds a peer dead (or any transport error) poisons this rank's word
 * (the dead flag), and the rank sends everything it still owes without waiting for anything
 * more; a rank that receives a poisoned word does the same.  Every rank either waits on the
 * dead one itself or hears from a rank that did (the dissemination reaches every rank from
 * every rank), so every rank returns CGT_ERR_PEER_FAILED, none waits for ever.
 */
typedef struct {
    coll_gpu_native_t *native;
    unsigned slot0; /* the senders' slots of this agreement's parity */
    uint64_t base;  /* the agreement's number, shifted: every word of it is at least this */
    uint64_t acc;   /* dead flag and payload: the largest seen so far */
    cgt_status_t status;
    int told_by; /* the peer whose poisoned word made this rank fail (-1: none) */
} coll_gpu_agree_t;

static void coll_gpu_agree_send(coll_gpu_agree_t *a, int peer) {
    coll_gpu_team_t *team = a->native->team;
    cgt_status_t status =
        cgt_signal(team->cgt, peer, a->slot0 + (unsigned)team->rank, a->base | a->acc);

    if ((CGT_OK != status) && (CGT_OK == a->status)) {
        a->status = status;
        a->acc |= COLL_GPU_AGREE_DEAD;
    }
}

static void coll_gpu_agree_recv(coll_gpu_agree_t *a, int peer) {
    coll_gpu_team_t *team = a->native->team;
    unsigned slot = a->slot0 + (unsigned)peer;
    uint64_t word;

    if (CGT_OK != a->status) {
        return; /* failed: owes its words, waits for nothing */
    }
    coll_gpu_native_net_wait(a->native, peer);
    a->status = cgt_wait(team->cgt, slot, a->base);
    if (CGT_OK != a->status) {
        a->acc |= COLL_GPU_AGREE_DEAD;
        return;
    }
    word = __atomic_load_n(cgt_signal_addr(team->cgt, slot), __ATOMIC_ACQUIRE) &
           (COLL_GPU_AGREE_DEAD | COLL_GPU_AGREE_PAYLOAD_MASK);
    a->acc = (word > a->acc) ? word : a->acc;
    if (0 != (a->acc & COLL_GPU_AGREE_DEAD)) {
        a->status = CGT_ERR_PEER_FAILED;
        a->told_by = peer;
    }
}

/* The leaders' dissemination (above, coll_gpu_agree_round), on node indices; nnodes > 1. */
static void coll_gpu_agree_leaders(coll_gpu_agree_t *a, int radix) {
    coll_gpu_team_t *team = a->native->team;
    int n = team->nnodes, j = team->node, count;
    long dists[COLL_GPU_AGREE_MAX_RADIX];

    for (int round = 0; 0 < (count = coll_gpu_agree_round(n, radix, round, dists)); ++round) {
        for (int i = 0; i < count; ++i) {
            coll_gpu_agree_send(a, coll_gpu_team_node_rank(team, (int)((j + dists[i]) % n), 0));
        }
        for (int i = 0; i < count; ++i) {
            coll_gpu_agree_recv(a, coll_gpu_team_node_rank(team, (int)((j - dists[i] + n) % n), 0));
        }
    }
}

/* Every rank's payload combined by max into *all_p (the same on every rank when CGT_OK).
 * status: this rank's call so far; an error poisons the agreement (and is returned). */
static cgt_status_t coll_gpu_native_agree_word(coll_gpu_native_t *native, uint32_t payload,
                                               cgt_status_t status, uint32_t *all_p) {
    coll_gpu_team_t *team = native->team;
    uint64_t number = ++native->agreements;
    coll_gpu_agree_t a = {
        .native = native,
        .slot0 =
            COLL_GPU_TEAM_SLOT_AGREE0(team->size) + (unsigned)(number & 1) * (unsigned)team->size,
        .base = coll_gpu_agree_base(number),
        .acc = (payload & COLL_GPU_AGREE_PAYLOAD_MASK) |
               ((CGT_OK != status) ? COLL_GPU_AGREE_DEAD : 0),
        .status = status,
        .told_by = -1,
    };
    int leader = coll_gpu_team_node_rank(team, team->node, 0);

    if (1 == team->nnodes) {
        for (int p = 0; p < team->size; ++p) {
            if (p != team->rank) {
                coll_gpu_agree_send(&a, p);
            }
        }
        for (int p = 0; p < team->size; ++p) {
            if (p != team->rank) {
                coll_gpu_agree_recv(&a, p);
            }
        }
    } else if (team->rank != leader) {
        coll_gpu_agree_send(&a, leader);
        coll_gpu_agree_recv(&a, leader);
    } else {
        for (int k = 1; k < team->local_size; ++k) {
            coll_gpu_agree_recv(&a, coll_gpu_team_node_rank(team, team->node, k));
        }
        coll_gpu_agree_leaders(&a, mca_coll_gpu_component.agreement_radix);
        for (int k = 1; k < team->local_size; ++k) {
            coll_gpu_agree_send(&a, coll_gpu_team_node_rank(team, team->node, k));
        }
    }
    native->agree_told_by = a.told_by;
    *all_p = (uint32_t)(a.acc & COLL_GPU_AGREE_PAYLOAD_MASK);
    return a.status;
}

/* coll_gpu_native_finish's agreement: my_class MPI_SUCCESS when the call succeeded here, status
 * its transport's outcome.  On return *peer_p is the lowest rank whose call failed (-1: none, or
 * this rank), *class_p its error class. */
static cgt_status_t coll_gpu_native_agree_outcome(coll_gpu_native_t *native, cgt_status_t status,
                                                  int my_class, int *peer_p, int *class_p) {
    coll_gpu_team_t *team = native->team;
    uint32_t all = 0;
    int failed, failed_class;

    *peer_p = -1;
    *class_p = MPI_SUCCESS;
    /* (a step of the communicator's count too, as every agreement was: steps stay in line) */
    ++native->step;
    status = coll_gpu_native_agree_word(
        native, coll_gpu_agree_failure_payload(team->rank, my_class), status, &all);
    if ((CGT_OK == status) && (0 != all)) {
        coll_gpu_agree_failure_decode(all, &failed, &failed_class);
        if (failed != team->rank) {
            *peer_p = failed;
            *class_p = failed_class;
        }
    }
    return status;
}

cgt_status_t coll_gpu_native_agree_max(coll_gpu_native_t *native, uint64_t mine, uint64_t *max_p) {
    uint32_t code = 0;
    cgt_status_t status;

    /* the codes are monotone in the values: the largest code is the largest value's */
    ++native->step;
    status = coll_gpu_native_agree_word(native, coll_gpu_value_encode(mine), CGT_OK, &code);
    *max_p = coll_gpu_value_decode(code);
    return status;
}

int coll_gpu_native_finish(const coll_gpu_native_call_t *call, struct ompi_communicator_t *comm,
                           cgt_status_t status, accel_status_t astatus) {
    coll_gpu_native_t *native = call->native;
    const char *mpi_call = call->mpi_call;
    accel_status_t ignored = ACCEL_OK;
    int rc = OMPI_SUCCESS, peer = -1, peer_class = MPI_SUCCESS;

    if (CGT_OK == status) {
        status = coll_gpu_native_fetch_complete(native, call->kind, call->stream, &astatus);
    } else {
        (void)coll_gpu_native_fetch_complete(native, call->kind, call->stream, &ignored);
    }
    if ((CGT_OK == status) && (ACCEL_OK == astatus) && (NULL != call->unpack)) {
        /* the algorithm's copies and gets into the packed buffer are done: unpack it */
        astatus = coll_gpu_sig_buf_unpack(call, call->unpack);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != astatus)) {
        rc = coll_gpu_accel_failed(astatus, mpi_call, comm);
    }
    if (OPAL_UNLIKELY(CGT_OK != status)) {
        /* This rank stopped short of the algorithm's signals.  Peers of the targeted-signal
         * algorithms may wait on it alone (not on the dead peer): the largest value in its step
         * slot at each ends every such wait, and the agreement, poisoned, then fails them all. */
        for (int p = 0; p < native->team->size; ++p) {
            if (p != native->team->rank) {
                (void)cgt_signal(native->team->cgt, p,
                                 COLL_GPU_NATIVE_SLOT0 + (unsigned)native->team->rank, UINT64_MAX);
            }
        }
    }
    status = coll_gpu_native_agree_outcome(native, status, rc, &peer, &peer_class);
    if (OPAL_UNLIKELY(CGT_OK != status)) {
        return coll_gpu_native_transport_failed(native, status, mpi_call, comm);
    }
    if (OPAL_UNLIKELY((OMPI_SUCCESS == rc) && (peer >= 0))) {
        coll_gpu_count_add(&mca_coll_gpu_component.peer_errors, 1);
        opal_show_help("help-mpi-coll-gpu.txt", "peer error", true, COLL_GPU_HOSTNAME, mpi_call,
                       ompi_comm_rank(comm), ompi_comm_size(comm), peer, peer_class);
        rc = peer_class;
    }
    return rc;
}

int coll_gpu_native_transport_failed(coll_gpu_native_t *native, cgt_status_t status,
                                     const char *mpi_call, struct ompi_communicator_t *comm) {
    if (CGT_ERR_TIMEOUT == status) {
        /* Only a user-set coll_gpu_transport_timeout ends a wait on a live peer. */
        opal_show_help("help-mpi-coll-gpu.txt", "transport timeout", true, COLL_GPU_HOSTNAME,
                       mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm), cgt_last_error());
        ompi_mpi_abort(comm, MPI_ERR_OTHER);
    }
    char told[160];

    if (native->agree_told_by >= 0) {
        /* this rank saw no error itself: a peer of the agreement passed one on */
        snprintf(told, sizeof(told),
                 "rank %d passed on, in the agreement that ends the call, that a rank of the "
                 "communicator could not be reached (its own message names which)",
                 native->agree_told_by);
    }
    opal_show_help("help-mpi-coll-gpu.txt", "native transport error", true, COLL_GPU_HOSTNAME,
                   mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm), cgt_status_string(status),
                   (native->agree_told_by >= 0) ? told : cgt_last_error(),
                   (CGT_ERR_PEER_FAILED == status)
                       ? "The call returns MPI_ERR_OTHER; its receive buffer is undefined.  Later\n"
                         "device-buffer collectives of this communicator are staged."
                       : "Its peers cannot be told: the job is aborted, on every rank alike.");
    if (CGT_ERR_PEER_FAILED != status) {
        ompi_mpi_abort(comm, MPI_ERR_OTHER);
    }
    native->broken = true;
    return MPI_ERR_OTHER;
}

int coll_gpu_native_check_counts(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 const char *mpi_call, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op) {
    int size = ompi_comm_size(comm), bad = -1, rc;
    unsigned long long mine[3], *all;
    size_t tsize = 0;

    (void)ompi_datatype_type_size(dtype, &tsize);
    mine[0] = (unsigned long long)count;
    mine[1] = (unsigned long long)tsize;
    if (NULL == op) {
        /* data movement: ranks may pass different datatypes of one signature; its bytes match */
        mine[0] = (unsigned long long)coll_gpu_signature_bytes(count, dtype);
        mine[1] = 1;
    }
    mine[2] = (NULL != op) ? (unsigned long long)op->o_f_to_c_index : ~0ULL;
    all = malloc((size_t)size * sizeof(mine));
    if (NULL == all) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = COLL_GPU_PREV(module, allgather, mine, 3, MPI_UNSIGNED_LONG_LONG, all, 3,
                       MPI_UNSIGNED_LONG_LONG, comm);
    for (int r = 1; (OMPI_SUCCESS == rc) && (r < size) && (bad < 0); ++r) {
        if (0 != memcmp(&all[3 * r], &all[0], sizeof(mine))) {
            bad = r;
        }
    }
    if (bad >= 0) {
        if (0 == ompi_comm_rank(comm)) {
            opal_show_help("help-mpi-coll-gpu.txt", "count mismatch", true, COLL_GPU_HOSTNAME,
                           mpi_call, size, 0, all[0], all[1], (long long)all[2], bad, all[3 * bad],
                           all[3 * bad + 1], (long long)all[3 * bad + 2]);
        }
        rc = MPI_ERR_COUNT;
    }
    free(all);
    return rc;
}

/* Block p of counts in the unit the ranks compare: bytes of the type signature for data
 * movement (the ranks may pass different datatypes of one signature), elements for a
 * reduction (one datatype everywhere). */
static int64_t coll_gpu_block_units(const int *counts, int p, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op) {
    if ((NULL != op) || (counts[p] < 0)) {
        return counts[p];
    }
    return (int64_t)coll_gpu_signature_bytes(counts[p], dtype);
}

bool coll_gpu_native_check_blocks(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                  coll_gpu_ncoll_t coll, const int *counts,
                                  struct ompi_datatype_t *dtype, const int *peer_counts,
                                  struct ompi_datatype_t *peer_dtype, struct ompi_op_t *op,
                                  int *rc_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm), bad = -1;
    int64_t mine[3] = {-1, 0, 0}, *ours, *theirs, *all;

    /* where coll_gpu_native_eligible compares counts: the same parameters on every rank */
    if (OPAL_LIKELY(!c->check_counts) || !c->native ||
        (COLL_GPU_ALG_STAGED == c->algorithm[coll])) {
        return false;
    }
    ours = calloc(2 * (size_t)size, sizeof(int64_t));
    all = malloc(3 * (size_t)size * sizeof(int64_t));
    if ((NULL == ours) || (NULL == all)) {
        free(ours);
        free(all);
        *rc_p = OMPI_ERR_OUT_OF_RESOURCE;
        return true;
    }
    theirs = ours + size;
    for (int p = 0; p < size; ++p) {
        ours[p] = coll_gpu_block_units(counts, p, dtype, op);
    }
    if (NULL == peer_counts) {
        /* theirs: rank 0's counts */
        memcpy(theirs, ours, (size_t)size * sizeof(int64_t));
        *rc_p = COLL_GPU_PREV(module, bcast, theirs, size, MPI_INT64_T, 0, comm);
    } else {
        /* theirs[p]: what p sends this rank; ours[p] then: what this rank receives from p */
        *rc_p = COLL_GPU_PREV(module, alltoall, ours, 1, MPI_INT64_T, theirs, 1, MPI_INT64_T, comm);
        for (int p = 0; p < size; ++p) {
            ours[p] = coll_gpu_block_units(peer_counts, p, peer_dtype, op);
        }
    }
    for (int p = 0; (OMPI_SUCCESS == *rc_p) && (p < size) && (mine[0] < 0); ++p) {
        if (ours[p] != theirs[p]) {
            mine[0] = p;
            mine[1] = ours[p];
            mine[2] = theirs[p];
        }
    }
    if (OMPI_SUCCESS == *rc_p) {
        *rc_p = COLL_GPU_PREV(module, allgather, mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, comm);
    }
    for (int r = 0; (OMPI_SUCCESS == *rc_p) && (r < size) && (bad < 0); ++r) {
        bad = (all[3 * r] >= 0) ? r : -1;
    }
    if (bad >= 0) {
        int p = (int)all[3 * bad];
        const char *unit = (NULL == op) ? "bytes" : "elements";
        if (0 == rank) {
            /* same counts: rank bad's recvcounts[p] against rank 0's; transposed: rank bad's
             * recvcounts[p] against rank p's sendcounts[bad] */
            opal_show_help("help-mpi-coll-gpu.txt", "block count mismatch", true, COLL_GPU_HOSTNAME,
                           t->mpi_call, size, bad, "recvcounts", p, (long long)all[3 * bad + 1],
                           unit, (NULL == peer_counts) ? 0 : p,
                           (NULL == peer_counts) ? "recvcounts" : "sendcounts",
                           (NULL == peer_counts) ? p : bad, (long long)all[3 * bad + 2], unit);
        }
        *rc_p = MPI_ERR_COUNT;
    }
    free(ours);
    free(all);
    if (OMPI_SUCCESS == *rc_p) {
        /* the blocks agree: element size and op, as for the other collectives */
        *rc_p = coll_gpu_native_check_counts(module, comm, t->mpi_call, 0, dtype, op);
    }
    return OMPI_SUCCESS != *rc_p;
}

/*
 * The parameter value that runs a call of coll (COLL_GPU_ALG_STAGED or a row's): the parameter
 * when it forces one, else the first tuning rule that matches and names staged or one of the
 * collective's algorithms (rules naming another collective's are ignored; auto falls through),
 * else the first row, in table order, that prefers the call.  *chunk_p: the rule's chunk, else
 * coll_gpu_native_chunk_size.  why: a sentence for the verbose log.
 */
static int coll_gpu_alg_choose(coll_gpu_ncoll_t coll, const coll_gpu_alg_query_t *query,
                               size_t *chunk_p, char *why, size_t why_len) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];
    const coll_gpu_team_t *team = query->native->team;
    const coll_gpu_tuning_rule_t *rule = NULL;
    int alg = c->algorithm[coll];

    *chunk_p = c->native_chunk_size;
    if (COLL_GPU_ALG_AUTO != alg) {
        COLL_GPU_WHY(why, why_len, "coll_gpu_%s_algorithm=%s", t->name,
                     coll_gpu_alg_name(coll, alg));
        return alg;
    }
    if (NULL != c->tuning) {
        rule = coll_gpu_tuning_find(&c->tuning->rules, t->name, (uint64_t)team->size,
                                    (uint64_t)team->local_size, (uint64_t)query->bytes);
    }
    if ((NULL != rule) && (coll_gpu_tuning_alg[coll][rule->algorithm] >= 0)) {
        if (0 != rule->chunk) {
            *chunk_p = rule->chunk;
        }
        COLL_GPU_WHY(why, why_len, "rule at %s:%d", c->tuning_file, rule->line);
        return coll_gpu_tuning_alg[coll][rule->algorithm];
    }
    COLL_GPU_WHY(why, why_len, "coll_gpu_%s_algorithm=auto", t->name);
    for (int a = 0; a < t->num_algs; ++a) {
        const coll_gpu_alg_desc_t *desc = &t->algs[a];

        if ((desc->multi_node || (1 == team->nnodes)) && (NULL != desc->preferred) &&
            desc->preferred(query, why, why_len)) {
            return COLL_GPU_ALG_FIRST_NATIVE + a;
        }
    }
    return COLL_GPU_ALG_STAGED;
}

/* Whether every buffer of this rank is of kind's memory. */
static bool coll_gpu_native_buffers_fit(coll_gpu_native_kind_t kind, const void *const *bufs,
                                        int nbufs) {
    const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    bool ok = true;

    for (int b = 0; ok && (b < nbufs); ++b) {
        if (COLL_GPU_NATIVE_HOST == kind) {
            ok = (NULL == c->accel) || !coll_gpu_on_device(bufs[b]);
        } else {
            ok = coll_gpu_on_device(bufs[b]);
        }
    }
    return ok;
}

bool coll_gpu_native_arrive(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                            coll_gpu_native_kind_t kind, const void *const *bufs, int nbufs) {
    coll_gpu_board_status_t status =
        (COLL_GPU_NATIVE_HOST == kind) ? COLL_GPU_BOARD_HOST : COLL_GPU_BOARD_DEVICE;

    if (!coll_gpu_native_buffers_fit(kind, bufs, nbufs)) {
        status = COLL_GPU_BOARD_CANNOT;
    }
    return coll_gpu_board_uniform(module, comm, status);
}

bool coll_gpu_native_eligible(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              coll_gpu_ncoll_t coll, coll_gpu_native_kind_t kind, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              const void *const *bufs, int nbufs, bool kinds_mixed,
                              bool nonblocking, coll_gpu_native_call_t *call, int *rc_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];
    coll_gpu_fallback_t reason = COLL_GPU_FALLBACK_MEMORY; /* of buffers this rank refuses */
    coll_gpu_alg_query_t query;
    accel_status_t status;
    ptrdiff_t lb, extent;
    size_t tsize = 0;
    char why[256] = "";
    /* the verbose log's reasons of a native call: formatted only when the log is on */
    size_t why_len = (c->verbose >= COLL_GPU_VERBOSE_CALLS) ? sizeof(why) : 0;
    int ok = 1, alg;

    *rc_p = OMPI_SUCCESS;
    memset(call, 0, sizeof(*call));
    if (!c->native) {
        reason = COLL_GPU_FALLBACK_DISABLED;
        goto fallback;
    }
    if (COLL_GPU_ALG_STAGED == c->algorithm[coll]) {
        reason = COLL_GPU_FALLBACK_ALGORITHM;
        snprintf(why, sizeof(why), ": coll_gpu_%s_algorithm=staged", t->name);
        goto fallback;
    }
    if (nonblocking) {
        if ((COLL_GPU_NATIVE_DEVICE != kind) || !coll_gpu_native_nonblocking_ready(module)) {
            reason = COLL_GPU_FALLBACK_NONBLOCKING;
            goto fallback;
        }
    } else {
        /* they run on the same scratch */
        coll_gpu_native_async_drain(module);
    }
    call->dtype = ACCEL_DT_COUNT;
    call->op = ACCEL_OP_SUM;
    call->entry_status = ACCEL_OK;
    if (NULL == op) {
        /* data movement: the type signature's bytes decide, the same on every rank whatever
         * datatype each passes (a rank whose layout is not dense packs: coll_gpu_signature.h) */
        tsize = coll_gpu_signature_bytes(count, dtype);
        call->esize = 1;
        if (0 == tsize) {
            reason = COLL_GPU_FALLBACK_DATATYPE_OP; /* nothing to move, on every rank */
            goto fallback;
        }
        query.bytes = tsize;
        tsize = 1;
    } else if ((count <= 0) || !coll_gpu_reduce_op_lookup(dtype, op, &call->dtype, &call->op) ||
               (OMPI_SUCCESS != ompi_datatype_get_extent(dtype, &lb, &extent)) || (0 != lb) ||
               ((size_t)extent != accel_dtype_size(call->dtype))) {
        /* a reduction: MPI requires the same count, datatype and op on every rank; the kernels
         * take the predefined types and coll_gpu_ext.h's, contiguous */
        reason = COLL_GPU_FALLBACK_DATATYPE_OP;
        goto fallback;
    } else {
        tsize = (size_t)extent;
        call->esize = tsize;
        query.bytes = (size_t)count * tsize;
    }
    if (kinds_mixed) {
        /* the ranks agreed on it already, and the host ones have gone to Open MPI */
        reason = COLL_GPU_FALLBACK_MEMORY;
        goto fallback;
    }
    if (!nonblocking && !coll_gpu_native_arrive(module, comm, kind, bufs, nbufs)) {
        if (OPAL_UNLIKELY(COLL_GPU_BOARD_DEAD == module->board_outcome)) {
            /* a rank of the call is gone: every rank that waits for it fails the call (a host
             * collective would wait for it for ever) */
            char detail[128] = "a rank of the communicator died before it reached the call";
            int dead, pid;

            if (coll_gpu_board_dead_peer(module, &dead, &pid)) {
                snprintf(detail, sizeof(detail), "rank %d (pid %d, on this node) has died", dead,
                         pid);
            }
            opal_show_help("help-mpi-coll-gpu.txt", "native transport error", true,
                           COLL_GPU_HOSTNAME, t->mpi_call, ompi_comm_rank(comm),
                           ompi_comm_size(comm), cgt_status_string(CGT_ERR_PEER_FAILED), detail,
                           "The call returns MPI_ERR_OTHER; its receive buffer is undefined.");
            *rc_p = MPI_ERR_OTHER;
            return true;
        }
        /* another rank passes other memory, or this one does (coll_gpu_board.h) */
        reason = COLL_GPU_FALLBACK_MEMORY;
        snprintf(why, sizeof(why), ": not every rank can run it natively");
        goto fallback;
    }
    if (OPAL_UNLIKELY(c->check_counts) && t->uniform_count && !nonblocking) {
        *rc_p = coll_gpu_native_check_counts(module, comm, t->mpi_call, count, dtype, op);
        if (OMPI_SUCCESS != *rc_p) {
            return true; /* the call failed: no fallback */
        }
    }
    ok = coll_gpu_native_buffers_fit(kind, bufs, nbufs);
    if (c->check_memory_kinds) {
        /* not only "some device memory on every rank" (the staged path's agreement): all of
         * it, everywhere */
        int mine = ok;

        if (OMPI_SUCCESS !=
            COLL_GPU_PREV(module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm)) {
            ok = 0;
        }
        if (mine && !ok) {
            /* another rank's memory or datatype */
            reason = COLL_GPU_FALLBACK_MEMORY;
            snprintf(why, sizeof(why), ": another rank cannot run it natively");
        }
    }
    if (!ok) {
        goto fallback;
    }
    if (!coll_gpu_native_get(module, comm, kind, &call->native, &reason)) {
        goto fallback;
    }
    if ((size_t)(t->per_rank_blocks ? call->native->team->size : 1) *
            (((NULL != op) && (call->native->team->nnodes > 1)) ? 2 : 1) * tsize >
        call->native->half) {
        /* a step must hold an element of every block, and a reduction spanning nodes as many
         * fetched from the other nodes */
        reason = COLL_GPU_FALLBACK_TEAM;
        goto fallback;
    }
    query.native = call->native;
    query.esize = call->esize;
    alg = coll_gpu_alg_choose(coll, &query, &call->chunk_bytes, why, why_len);
    if (COLL_GPU_ALG_STAGED == alg) {
        reason = COLL_GPU_FALLBACK_ALGORITHM;
        goto fallback;
    }
    call->alg = &t->algs[alg - COLL_GPU_ALG_FIRST_NATIVE];
    if ((call->native->team->nnodes > 1) && !call->alg->multi_node) {
        /* it loads every peer's scratch directly */
        reason = COLL_GPU_FALLBACK_MULTI_NODE;
        snprintf(why, sizeof(why), ": %s needs one node (%d nodes)", call->alg->name,
                 call->native->team->nnodes);
        goto fallback;
    }
    if ((NULL != call->alg->fits) && !call->alg->fits(&query, why, sizeof(why))) {
        reason = COLL_GPU_FALLBACK_TEAM;
        goto fallback;
    }
    if ((COLL_GPU_NCOLL_ALLTOALLV == coll) && nonblocking) {
        /* its blocks' lengths are agreed by the algorithm (coll_gpu_alltoall.c) */
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "%s (nonblocking, on the communicator's thread) "
                         "on %s: blocks agreed in the call, %s memory: %s (%s)",
                         t->mpi_call, comm->c_name, coll_gpu_native_mems[kind].name,
                         call->alg->name, why);
    } else {
        /* elements as the algorithm moves them: a data movement's signature bytes one by one */
        COLL_GPU_VERBOSE(
            COLL_GPU_VERBOSE_CALLS, "%s%s on %s: %zu x %zu bytes, %s memory: %s (%s)", t->mpi_call,
            nonblocking ? " (nonblocking, on the communicator's thread)" : "", comm->c_name,
            query.bytes / tsize, tsize, coll_gpu_native_mems[kind].name, call->alg->name, why);
    }
    call->kind = kind;
    call->mem = &coll_gpu_native_mems[kind];
    call->stream = NULL;
    call->mpi_call = t->mpi_call;
    coll_gpu_count_add(&c->algorithm_calls[coll][alg], 1);
    if (COLL_GPU_NATIVE_DEVICE == kind) {
        /* a stream this rank alone could not create: the algorithm still runs the protocol */
        status = coll_gpu_module_stream(module, &call->stream);
        if (OPAL_UNLIKELY(ACCEL_OK != status)) {
            call->entry_status = status;
            call->stream = NULL;
        }
    }
    return true;

fallback:
    coll_gpu_count_add(&c->native_fallbacks[reason], 1);
    if (COLL_GPU_NATIVE_DEVICE == kind) {
        coll_gpu_count_add(&c->algorithm_calls[coll][COLL_GPU_ALG_STAGED], 1);
    }
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "%s on %s: %d elements: %s (%s%s)", t->mpi_call,
                     comm->c_name, count,
                     (COLL_GPU_NATIVE_DEVICE == kind) ? "staged" : "host buffers to Open MPI",
                     coll_gpu_fallback_names[reason], why);
    return false;
}
