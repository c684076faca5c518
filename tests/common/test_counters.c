/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The coll/gpu component's counters and configuration, and the checks of the path a call took,
 * for the MPI tests: see test_counters.h.
 */
#include "test_counters.h"
#include "coll_gpu_model_defaults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_buffers.h"
#include "test_cases.h"
#include "test_mpit.h"
#include "test_report.h"

/* ------------------------------------------------------------------------------------------ */
/* Counters                                                                                   */
/* ------------------------------------------------------------------------------------------ */

struct tu_counter_vars {
    bool available;
    tu_pvar_t passthrough, staged, native, bytes, chunks, fallbacks, errors;
};
static struct tu_counter_vars tu_ctr;

bool tu_counters_open(bool required) {
    static const struct {
        const char *name;
        size_t offset;
        int count;
    } vars[] = {
        {"coll_gpu_calls_passthrough", offsetof(struct tu_counter_vars, passthrough),
         COLL_GPU_NUM_COLLS},
        {"coll_gpu_calls_staged", offsetof(struct tu_counter_vars, staged), COLL_GPU_NUM_COLLS},
        {"coll_gpu_calls_native", offsetof(struct tu_counter_vars, native), COLL_GPU_NUM_COLLS},
        {"coll_gpu_staged_bytes", offsetof(struct tu_counter_vars, bytes), 1},
        {"coll_gpu_staged_chunks", offsetof(struct tu_counter_vars, chunks), 1},
        {"coll_gpu_pageable_fallbacks", offsetof(struct tu_counter_vars, fallbacks), 1},
        {"coll_gpu_accelerator_errors", offsetof(struct tu_counter_vars, errors), 1},
    };
    bool all = true;

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        tu_pvar_t *pvar = (tu_pvar_t *)((char *)&tu_ctr + vars[i].offset);
        if (0 != tu_pvar_open(vars[i].name, pvar)) {
            all = false;
            if (required) {
                tu_fail("MPI_T pvar %s not found: the coll/gpu component was not loaded "
                        "(mca_base_component_path?)",
                        vars[i].name);
            }
        } else if (pvar->count != vars[i].count) {
            all = false;
            tu_fail("MPI_T pvar %s has %d elements, expected %d (coll_gpu_colls.h)", vars[i].name,
                    pvar->count, vars[i].count);
        }
    }
    tu_ctr.available = all;
    return all;
}

bool tu_counters_available(void) { return tu_ctr.available; }

void tu_counters_read(tu_counters_t *counters) {
    memset(counters, 0, sizeof(*counters));
    if (tu_ctr.available) {
        tu_pvar_read(&tu_ctr.passthrough, counters->passthrough, COLL_GPU_NUM_COLLS);
        tu_pvar_read(&tu_ctr.staged, counters->staged, COLL_GPU_NUM_COLLS);
        tu_pvar_read(&tu_ctr.native, counters->native, COLL_GPU_NUM_COLLS);
        tu_pvar_read(&tu_ctr.bytes, &counters->staged_bytes, 1);
        tu_pvar_read(&tu_ctr.chunks, &counters->staged_chunks, 1);
        tu_pvar_read(&tu_ctr.fallbacks, &counters->pageable_fallbacks, 1);
        tu_pvar_read(&tu_ctr.errors, &counters->accelerator_errors, 1);
    }
    if (NULL != tu_accel && ACCEL_BACKEND_EMULATED == tu_accel_backend) {
        counters->emu_copies = accel_emulated_copy_count();
        counters->emu_copy_bytes = accel_emulated_copy_bytes();
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Configuration                                                                              */
/* ------------------------------------------------------------------------------------------ */

typedef enum { TU_CVAR_BOOL, TU_CVAR_INT, TU_CVAR_LONG_LONG } tu_cvar_type_t;

/* One cvar into a field of tu_gpu_config_t; coll's binomial rule, three of them. */
#define TU_CVAR(name, field, cvar_type, value)                                                     \
    {                                                                                              \
        .cvar = name, .offset = offsetof(tu_gpu_config_t, field), .type = cvar_type,               \
        .default_value = value                                                                     \
    }
#define TU_BAND_CVARS(rule, NAME)                                                                  \
    TU_CVAR("coll_gpu_" #rule "_min_nodes", rule.min_nodes, TU_CVAR_INT,                           \
            COLL_GPU_MODEL_##NAME##_MIN_NODES),                                                    \
        TU_CVAR("coll_gpu_" #rule "_min_bytes", rule.min_bytes, TU_CVAR_LONG_LONG,                 \
                (long long)COLL_GPU_MODEL_##NAME##_MIN_BYTES),                                     \
        TU_CVAR("coll_gpu_" #rule "_max_bytes", rule.max_bytes, TU_CVAR_LONG_LONG,                 \
                (long long)COLL_GPU_MODEL_##NAME##_MAX_BYTES)

/* A band rule's band without rails (the header's), and whether its parameters were set. */
static void tu_band_no_rails(tu_binomial_rule_t *rule, const char *name, int min_nodes,
                             unsigned long min_bytes, unsigned long max_bytes) {
    static const char *const suffixes[] = {"min_nodes", "min_bytes", "max_bytes"};
    char var[96];

    rule->no_rails_min_nodes = min_nodes;
    rule->no_rails_min_bytes = (long long)min_bytes;
    rule->no_rails_max_bytes = (long long)max_bytes; /* SIZE_MAX: -1, as the cvar reads it */
    rule->set = false;
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); ++k) {
        snprintf(var, sizeof(var), "OMPI_MCA_coll_gpu_%s_%s", name, suffixes[k]);
        rule->set = rule->set || (NULL != getenv(var));
    }
}
#define TU_BAND_NO_RAILS(config, rule, NAME)                                                       \
    tu_band_no_rails(&(config)->rule, #rule, COLL_GPU_MODEL_##NAME##_NO_RAILS_MIN_NODES,           \
                     COLL_GPU_MODEL_##NAME##_NO_RAILS_MIN_BYTES,                                   \
                     COLL_GPU_MODEL_##NAME##_NO_RAILS_MAX_BYTES)

/* Whether a call of bytes (x ranks where the rule's bytes are gathered) on comm_size ranks is
 * in rule's band: its parameters', or its band without rails where the communicator has none and
 * no parameter was set. */
static bool tu_band_takes(const tu_gpu_config_t *config, const tu_binomial_rule_t *rule,
                          int comm_size, size_t bytes, size_t ranks) {
    bool no_rails = (1 != config->tree_rails) && !rule->set;
    int min_nodes = no_rails ? rule->no_rails_min_nodes : rule->min_nodes;
    long long min_bytes = no_rails ? rule->no_rails_min_bytes : rule->min_bytes;
    long long max_bytes = no_rails ? rule->no_rails_max_bytes : rule->max_bytes;

    return (tu_emulated_node(config, comm_size - 1) + 1 >= min_nodes) &&
           ((long long)(bytes * ranks) >= min_bytes) && (bytes <= (size_t)max_bytes / ranks);
}

/* The component's parameters but the per-collective algorithms (in the collective table):
 * where tu_gpu_config_t keeps each, and the contract's default when the cvar is absent. */
static const struct {
    const char *cvar;
    size_t offset;
    tu_cvar_type_t type;
    long long default_value;
} tu_config_cvars[] = {
    {.cvar = "coll_gpu_staging_buffer_size",
     .offset = offsetof(tu_gpu_config_t, staging_buffer_size),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 4 << 20},
    {.cvar = "coll_gpu_staged_pipeline",
     .offset = offsetof(tu_gpu_config_t, pipeline),
     .type = TU_CVAR_BOOL,
     .default_value = 1},
    {.cvar = "coll_gpu_check_memory_kinds",
     .offset = offsetof(tu_gpu_config_t, check_memory_kinds),
     .type = TU_CVAR_BOOL,
     .default_value = 0},
    {.cvar = "coll_gpu_native",
     .offset = offsetof(tu_gpu_config_t, native),
     .type = TU_CVAR_BOOL,
     .default_value = 1},
    {.cvar = "coll_gpu_native_nonblocking",
     .offset = offsetof(tu_gpu_config_t, native_nonblocking),
     .type = TU_CVAR_BOOL,
     .default_value = 1},
    /* (absent from a component older than the parameter: false, staged nonblocking calls) */
    {.cvar = "coll_gpu_memory_kinds_uniform",
     .offset = offsetof(tu_gpu_config_t, memory_kinds_uniform),
     .type = TU_CVAR_BOOL,
     .default_value = 0},
    {.cvar = "coll_gpu_ranks_per_node",
     .offset = offsetof(tu_gpu_config_t, ranks_per_node),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 0},
    {.cvar = "coll_gpu_allreduce_one_shot_max_bytes",
     .offset = offsetof(tu_gpu_config_t, one_shot_max_bytes),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 2097152}, /* coll_gpu_model_defaults.h */
#define TU_STAGED_CVARS(coll, MODEL)                                                               \
    {.cvar = "coll_gpu_" #coll "_staged_max_bytes",                                                \
     .offset = offsetof(tu_gpu_config_t, coll##_staged.max_bytes),                                 \
     .type = TU_CVAR_LONG_LONG,                                                                    \
     .default_value = COLL_GPU_MODEL_##MODEL##STAGED_MAX_BYTES},                                   \
    {                                                                                              \
        .cvar = "coll_gpu_" #coll "_staged_nodes_max_bytes",                                       \
        .offset = offsetof(tu_gpu_config_t, coll##_staged.nodes_max_bytes),                        \
        .type = TU_CVAR_LONG_LONG, .default_value = COLL_GPU_MODEL_##MODEL##STAGED_NODES_MAX_BYTES \
    }
    TU_STAGED_CVARS(allreduce, ),
    TU_STAGED_CVARS(bcast, BCAST_),
    TU_STAGED_CVARS(reduce, REDUCE_),
    TU_STAGED_CVARS(gather, GATHER_),
    TU_STAGED_CVARS(scatter, SCATTER_),
    TU_STAGED_CVARS(alltoall, ALLTOALL_),
    TU_STAGED_CVARS(allgather, ALLGATHER_),
    TU_STAGED_CVARS(reduce_scatter, REDUCE_SCATTER_),
    {.cvar = "coll_gpu_native_chunk_size",
     .offset = offsetof(tu_gpu_config_t, native_chunk_size),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 4194304},
    {.cvar = "coll_gpu_allreduce_ring_min_bytes",
     .offset = offsetof(tu_gpu_config_t, ring_min_bytes),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 6291456}, /* coll_gpu_model_defaults.h */
    {.cvar = "coll_gpu_allreduce_doubling_max_bytes",
     .offset = offsetof(tu_gpu_config_t, doubling_max_bytes),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 131072}, /* coll_gpu_model_defaults.h */
    {.cvar = "coll_gpu_allreduce_doubling_min_nodes",
     .offset = offsetof(tu_gpu_config_t, doubling_min_nodes),
     .type = TU_CVAR_INT,
     .default_value = 64}, /* coll_gpu_model_defaults.h */
    {.cvar = "coll_gpu_allreduce_rabenseifner_min_nodes",
     .offset = offsetof(tu_gpu_config_t, rabenseifner_min_nodes),
     .type = TU_CVAR_INT,
     .default_value = 256}, /* coll_gpu_model_defaults.h */
    {.cvar = "coll_gpu_allgather_doubling_min_nodes",
     .offset = offsetof(tu_gpu_config_t, allgather_doubling_min_nodes),
     .type = TU_CVAR_INT,
     .default_value = 16}, /* coll_gpu_model_defaults.h */
    {.cvar = "coll_gpu_allgather_doubling_max_bytes",
     .offset = offsetof(tu_gpu_config_t, allgather_doubling_max_bytes),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 8388608}, /* coll_gpu_model_defaults.h */
    {.cvar = "coll_gpu_reduce_scatter_halving_min_nodes",
     .offset = offsetof(tu_gpu_config_t, rs_halving_min_nodes),
     .type = TU_CVAR_INT,
     .default_value = 32}, /* coll_gpu_model_defaults.h */
    {.cvar = "coll_gpu_reduce_scatter_halving_max_bytes",
     .offset = offsetof(tu_gpu_config_t, rs_halving_max_bytes),
     .type = TU_CVAR_LONG_LONG,
     .default_value = 41943040}, /* coll_gpu_model_defaults.h */
    TU_BAND_CVARS(bcast_binomial, BCAST_BINOMIAL),
    TU_BAND_CVARS(reduce_binomial, REDUCE_BINOMIAL),
    TU_BAND_CVARS(gather_binomial, GATHER_BINOMIAL),
    TU_BAND_CVARS(scatter_binomial, SCATTER_BINOMIAL),
    TU_BAND_CVARS(gather_hierarchical, GATHER_HIERARCHICAL),
    TU_BAND_CVARS(scatter_hierarchical, SCATTER_HIERARCHICAL),
    TU_BAND_CVARS(alltoall_hierarchical, ALLTOALL_HIERARCHICAL),
    {.cvar = "coll_gpu_tree_rails",
     .offset = offsetof(tu_gpu_config_t, tree_rails),
     .type = TU_CVAR_INT,
     .default_value = -1},
    {.cvar = "coll_gpu_host_buffers",
     .offset = offsetof(tu_gpu_config_t, host_buffers),
     .type = TU_CVAR_BOOL,
     .default_value = 0},
    {.cvar = "coll_gpu_native_setup", /* first_call 0, create 1 */
     .offset = offsetof(tu_gpu_config_t, native_setup_create),
     .type = TU_CVAR_BOOL,
     .default_value = 0},
};

/* The cvar `name` into the field at `offset` of config, `default_value` when it is absent. */
static void tu_config_read_one(tu_gpu_config_t *config, const char *name, size_t offset,
                               tu_cvar_type_t type, long long default_value) {
    char *field = (char *)config + offset;
    long long value;

    if (0 != tu_cvar_read_int(name, &value)) {
        value = default_value;
    }
    switch (type) {
    case TU_CVAR_BOOL:
        *(bool *)field = 0 != value;
        break;
    case TU_CVAR_INT:
        *(int *)field = (int)value;
        break;
    default:
        *(long long *)field = value;
        break;
    }
}

/* config->host_of_world_rank where the world spans several hosts: Open MPI's local size (the
 * same answer on every rank) says whether; then an allgather of processor names' hashes (on one
 * host none: the tests' first calls stay theirs). */
static void tu_world_hosts(tu_gpu_config_t *config) {
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
    unsigned hash = 2166136261u;
    int size, len = 0;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((NULL == local) || (atoi(local) == size)) {
        return;
    }
    MPI_Get_processor_name(name, &len);
    for (int i = 0; i < len; ++i) {
        hash = (hash ^ (unsigned char)name[i]) * 16777619u;
    }
    config->host_of_world_rank = calloc((size_t)size, sizeof(unsigned));
    if ((NULL == config->host_of_world_rank) ||
        (MPI_SUCCESS != MPI_Allgather(&hash, 1, MPI_UNSIGNED, config->host_of_world_rank, 1,
                                      MPI_UNSIGNED, MPI_COMM_WORLD))) {
        free(config->host_of_world_rank);
        config->host_of_world_rank = NULL;
    }
}

void tu_gpu_config_read(tu_gpu_config_t *config) {
    long long value;

    memset(config, 0, sizeof(*config)); /* nonblocking_contexts: the test's to set */
    tu_world_hosts(config);
    /* the component's parameters are there: its staging buffer size, which every version has */
    config->found = 0 == tu_cvar_read_int("coll_gpu_staging_buffer_size", &value);
    for (size_t i = 0; i < sizeof(tu_config_cvars) / sizeof(tu_config_cvars[0]); i++) {
        tu_config_read_one(config, tu_config_cvars[i].cvar, tu_config_cvars[i].offset,
                           tu_config_cvars[i].type, tu_config_cvars[i].default_value);
    }
    TU_BAND_NO_RAILS(config, bcast_binomial, BCAST_BINOMIAL);
    TU_BAND_NO_RAILS(config, reduce_binomial, REDUCE_BINOMIAL);
    TU_BAND_NO_RAILS(config, gather_binomial, GATHER_BINOMIAL);
    TU_BAND_NO_RAILS(config, scatter_binomial, SCATTER_BINOMIAL);
    TU_BAND_NO_RAILS(config, gather_hierarchical, GATHER_HIERARCHICAL);
    TU_BAND_NO_RAILS(config, scatter_hierarchical, SCATTER_HIERARCHICAL);
    TU_BAND_NO_RAILS(config, alltoall_hierarchical, ALLTOALL_HIERARCHICAL);
    /* coll_gpu_<coll>_algorithm of every blocking collective that has one */
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        const tu_coll_info_t *info = tu_coll_info(coll);
        if (tu_coll_is_blocking(coll) && NULL != info && NULL != info->algorithm_cvar) {
            tu_config_read_one(config, info->algorithm_cvar, info->algorithm_offset, TU_CVAR_INT,
                               TU_ALG_AUTO);
        }
    }
}

int tu_emulated_node(const tu_gpu_config_t *config, int comm_rank) {
    return (config->ranks_per_node > 0) ? comm_rank / (int)config->ranks_per_node : 0;
}

bool tu_multi_node(const tu_gpu_config_t *config, int comm_size) {
    /* emulated nodes: a communicator larger than ranks_per_node spans several (the tests run
     * on one machine, so every communicator's ranks share one real node) */
    return config->ranks_per_node > 0 && comm_size > config->ranks_per_node;
}

int tu_native_alg_slot(const tu_gpu_config_t *config, int coll, int comm_size, size_t bytes) {
    const tu_coll_info_t *info = tu_coll_info(coll);
    int forced = (NULL != info && NULL != info->algorithm_cvar)
                     ? *(const int *)((const char *)config + info->algorithm_offset)
                     : TU_ALG_AUTO;
    bool has_hierarchical = COLL_GPU_ALLGATHER == coll || COLL_GPU_ALLGATHERV == coll ||
                            COLL_GPU_REDUCE_SCATTER == coll ||
                            COLL_GPU_REDUCE_SCATTER_BLOCK == coll || COLL_GPU_REDUCE == coll ||
                            COLL_GPU_GATHER == coll || COLL_GPU_SCATTER == coll;

    if (forced > TU_ALG_STAGED) {
        /* the device-driven row takes calls on one node of 2 ranks or more */
        if ((NULL != info) && (forced == info->device_row) &&
            ((comm_size < 2) || tu_multi_node(config, comm_size))) {
            return TU_ALG_STAGED;
        }
        return forced;
    }
    /* allgather(v): hierarchical_doubling from coll_gpu_allgather_doubling_min_nodes nodes on
     * for calls gathering up to coll_gpu_allgather_doubling_max_bytes */
    if ((COLL_GPU_ALLGATHER == coll || COLL_GPU_ALLGATHERV == coll) &&
        tu_multi_node(config, comm_size) &&
        (tu_emulated_node(config, comm_size - 1) + 1 >= config->allgather_doubling_min_nodes) &&
        (config->allgather_doubling_max_bytes >= 0) &&
        (bytes <= (size_t)config->allgather_doubling_max_bytes / (size_t)comm_size)) {
        return TU_ALG_AUTO + 4;
    }
    /* reduce_scatter(_block): hierarchical_halving likewise */
    if ((COLL_GPU_REDUCE_SCATTER == coll || COLL_GPU_REDUCE_SCATTER_BLOCK == coll) &&
        tu_multi_node(config, comm_size) &&
        (tu_emulated_node(config, comm_size - 1) + 1 >= config->rs_halving_min_nodes) &&
        (config->rs_halving_max_bytes >= 0) &&
        (bytes <= (size_t)config->rs_halving_max_bytes / (size_t)comm_size)) {
        return TU_ALG_AUTO + 4;
    }
    /* bcast, reduce (the message's bytes), gather, scatter (bytes x comm_size): binomial
     * likewise, for calls from coll_gpu_<coll>_binomial_min_bytes up to _max_bytes (SIZE_MAX,
     * read as -1 here, is the size_t compared: no bound) */
    {
        const tu_binomial_rule_t *rule = (COLL_GPU_BCAST == coll)     ? &config->bcast_binomial
                                         : (COLL_GPU_REDUCE == coll)  ? &config->reduce_binomial
                                         : (COLL_GPU_GATHER == coll)  ? &config->gather_binomial
                                         : (COLL_GPU_SCATTER == coll) ? &config->scatter_binomial
                                                                      : NULL;
        size_t ranks =
            (COLL_GPU_GATHER == coll || COLL_GPU_SCATTER == coll) ? (size_t)comm_size : 1;

        if ((NULL != rule) && tu_multi_node(config, comm_size) &&
            tu_band_takes(config, rule, comm_size, bytes, ranks)) {
            /* bcast's rows: pipelined, binomial; the others' direct, hierarchical, binomial */
            return (COLL_GPU_BCAST == coll) ? TU_ALG_AUTO + 3 : TU_ALG_AUTO + 4;
        }
    }
    /* gather, scatter: on nodes of several ranks hierarchical only on its band */
    if (((COLL_GPU_GATHER == coll) || (COLL_GPU_SCATTER == coll)) &&
        tu_multi_node(config, comm_size) && (config->ranks_per_node > 1)) {
        const tu_binomial_rule_t *band = (COLL_GPU_GATHER == coll) ? &config->gather_hierarchical
                                                                   : &config->scatter_hierarchical;

        return tu_band_takes(config, band, comm_size, bytes, (size_t)comm_size) ? TU_ALG_AUTO + 3
                                                                                : TU_ALG_AUTO + 2;
    }
    /* (emulated nodes are communicator rank / ranks_per_node: beyond one node, the first has
     * ranks_per_node ranks); reduce segments its messages from 64 KiB on 3 nodes or more, where
     * auto takes hierarchical on nodes of one rank too */
    if (has_hierarchical && tu_multi_node(config, comm_size) &&
        ((config->ranks_per_node > 1) ||
         ((COLL_GPU_REDUCE == coll) && (comm_size >= 3) && (bytes >= 65536)))) {
        return TU_ALG_AUTO + 3;
    }
    /* alltoall: node-aggregated across nodes of several ranks on its band of blocks (bytes) */
    if ((COLL_GPU_ALLTOALL == coll) && tu_multi_node(config, comm_size) &&
        (config->ranks_per_node > 1) &&
        tu_band_takes(config, &config->alltoall_hierarchical, comm_size, bytes, 1)) {
        return TU_ALG_AUTO + 3;
    }
    return TU_ALG_AUTO + 2;
}

bool tu_allreduce_doubling_auto(const tu_gpu_config_t *config, int comm_size, size_t bytes) {
    return tu_multi_node(config, comm_size) &&
           (tu_emulated_node(config, comm_size - 1) + 1 >= config->doubling_min_nodes) &&
           ((long long)bytes <= config->doubling_max_bytes);
}

bool tu_comm_multi_node(const tu_gpu_config_t *config, const tu_comm_t *comm) {
    if (tu_multi_node(config, comm->size)) {
        return true;
    }
    for (int m = 1; (NULL != config->host_of_world_rank) && (m < comm->size); ++m) {
        if (config->host_of_world_rank[comm->world_ranks[m]] !=
            config->host_of_world_rank[comm->world_ranks[0]]) {
            return true;
        }
    }
    return false;
}

bool tu_staged_auto(const tu_gpu_config_t *config, int coll, const tu_comm_t *comm, size_t bytes) {
    const tu_staged_rule_t *rule =
        (COLL_GPU_ALLREDUCE == coll)                                  ? &config->allreduce_staged
        : (COLL_GPU_BCAST == coll)                                    ? &config->bcast_staged
        : (COLL_GPU_REDUCE == coll)                                   ? &config->reduce_staged
        : (COLL_GPU_GATHER == coll)                                   ? &config->gather_staged
        : (COLL_GPU_SCATTER == coll)                                  ? &config->scatter_staged
        : (COLL_GPU_ALLTOALL == coll || COLL_GPU_ALLTOALLV == coll)   ? &config->alltoall_staged
        : (COLL_GPU_ALLGATHER == coll || COLL_GPU_ALLGATHERV == coll) ? &config->allgather_staged
        : (COLL_GPU_REDUCE_SCATTER_BLOCK == coll || COLL_GPU_REDUCE_SCATTER == coll)
            ? &config->reduce_scatter_staged
            : NULL;
    const tu_coll_info_t *info = tu_coll_info(coll);
    long long max;

    if ((NULL == rule) || (NULL == info) || (NULL == info->algorithm_cvar) ||
        (TU_ALG_AUTO != *(const int *)((const char *)config + info->algorithm_offset))) {
        return false;
    }
    max = tu_comm_multi_node(config, comm) ? rule->nodes_max_bytes : rule->max_bytes;
    return (long long)bytes <= max;
}

bool tu_allreduce_rabenseifner_auto(const tu_gpu_config_t *config, int comm_size, size_t bytes) {
    return tu_multi_node(config, comm_size) &&
           (tu_emulated_node(config, comm_size - 1) + 1 >= config->rabenseifner_min_nodes) &&
           !tu_allreduce_doubling_auto(config, comm_size, bytes);
}

bool tu_allreduce_hierarchical_expected(const tu_gpu_config_t *config, int comm_size,
                                        size_t bytes) {
    return tu_multi_node(config, comm_size) && config->ranks_per_node > 1 &&
           (TU_ALG_HIERARCHICAL == config->allreduce_algorithm ||
            (TU_ALG_AUTO == config->allreduce_algorithm &&
             !tu_allreduce_doubling_auto(config, comm_size, bytes) &&
             !tu_allreduce_rabenseifner_auto(config, comm_size, bytes)));
}

bool tu_uniform_nodes(const tu_gpu_config_t *config, int comm_size) {
    return tu_multi_node(config, comm_size) && (0 == comm_size % config->ranks_per_node) &&
           (config->ranks_per_node <= 32) && (comm_size / config->ranks_per_node <= 64);
}

bool tu_allreduce_native_expected(const tu_gpu_config_t *config, int comm_size) {
    /* one_shot and two_shot load every peer's scratch: one node only */
    bool one_node_only = TU_ALG_ONE_SHOT == config->allreduce_algorithm ||
                         TU_ALG_TWO_SHOT == config->allreduce_algorithm ||
                         TU_ALG_DEVICE_ONE_SHOT == config->allreduce_algorithm ||
                         TU_ALG_DEVICE_TWO_SHOT == config->allreduce_algorithm;
    /* device_hierarchical: nodes of as many ranks each */
    bool nodes_only = TU_ALG_DEVICE_HIERARCHICAL == config->allreduce_algorithm;
    return config->native && TU_ALG_STAGED != config->allreduce_algorithm &&
           !(one_node_only && tu_multi_node(config, comm_size)) &&
           !(nodes_only && !tu_uniform_nodes(config, comm_size));
}

bool tu_coll_native_expected(const tu_gpu_config_t *config, int coll, int comm_size) {
    const tu_coll_info_t *info;

    if (COLL_GPU_ALLREDUCE == coll) {
        return tu_allreduce_native_expected(config, comm_size);
    }
    /* a nonblocking call: the blocking form's algorithm, by the communicator's thread, once the
     * test set the scratch up and the user promised every rank the same memory kind
     * (coll_gpu_memory_kinds_uniform: a nonblocking call cannot agree on them); a persistent one
     * where its nonblocking form is (every start posts that), counted once per start */
    if (coll >= 0 && coll < COLL_GPU_NUM_COLLS && tu_coll_is_persistent(coll)) {
        coll = tu_coll_nonblocking(coll);
    }
    if (coll >= 0 && coll < COLL_GPU_NUM_COLLS && tu_coll_is_nonblocking(coll)) {
        info = tu_coll_info(coll);
        /* set up by the test's blocking call, at the communicator's creation, or by the first
         * nonblocking call itself (queued behind the setup: coll_gpu_calls_deferred) */
        bool contexts = config->nonblocking_contexts || (comm_size > 1);
        if (!config->native_nonblocking || !config->memory_kinds_uniform || !contexts ||
            config->check_memory_kinds || NULL == info) {
            return false;
        }
        coll = tu_coll_blocking(coll);
    }
    if (COLL_GPU_ALLREDUCE == coll) {
        return tu_allreduce_native_expected(config, comm_size);
    }
    /* every native algorithm but allreduce's one-node ones spans nodes: the blocking
     * collectives with an algorithm parameter, unless it says staged */
    if (coll < 0 || coll >= COLL_GPU_NUM_COLLS || !tu_coll_is_blocking(coll) ||
        NULL == (info = tu_coll_info(coll)) || NULL == info->algorithm_cvar) {
        return false;
    }
    return config->native &&
           TU_ALG_STAGED != *(const int *)((const char *)config + info->algorithm_offset);
}

const char *tu_path_name(tu_path_t path) {
    switch (path) {
    case TU_PATH_PASSTHROUGH:
        return "passthrough";
    case TU_PATH_STAGED:
        return "staged";
    case TU_PATH_NATIVE:
        return "native";
    case TU_PATH_EITHER:
        return "any-path";
    case TU_PATH_STAGED_OR_NATIVE:
        return "staged-or-native";
    default:
        return "not-reached-or-either";
    }
}

/* Calls of coll on each path between two snapshots. */
static void tu_calls_delta(const tu_counters_t *before, const tu_counters_t *after, int coll,
                           uint64_t *pass_p, uint64_t *staged_p, uint64_t *native_p) {
    *pass_p = after->passthrough[coll] - before->passthrough[coll];
    *staged_p = after->staged[coll] - before->staged[coll];
    *native_p = after->native[coll] - before->native[coll];
}

/* The checks of one call and of a group of calls alike: pipelined chunks (none, or some,
 * expected) and no accelerator error. */
static void tu_check_chunks_and_errors(const tu_counters_t *before, const tu_counters_t *after,
                                       bool no_chunks, bool some_chunks) {
    uint64_t chunks = after->staged_chunks - before->staged_chunks;
    uint64_t errors = after->accelerator_errors - before->accelerator_errors;

    if (no_chunks && 0 != chunks) {
        tu_fail("staged_chunks +%llu, expected no pipelined chunks", (unsigned long long)chunks);
    } else if (some_chunks && 0 == chunks) {
        tu_fail("staged_chunks +0: a pipelined staging was expected");
    }
    if (0 != errors) {
        tu_fail("accelerator_errors +%llu", (unsigned long long)errors);
    }
}

void tu_check_counters(const tu_counters_t *before, const tu_counters_t *after,
                       coll_gpu_coll_t coll, int ncalls, const tu_expect_t *expect) {
    uint64_t pass, staged, native, bytes, chunks, emu;

    if (!tu_ctr.available) {
        return;
    }
    tu_calls_delta(before, after, coll, &pass, &staged, &native);
    bytes = after->staged_bytes - before->staged_bytes;
    chunks = after->staged_chunks - before->staged_chunks;
    emu = after->emu_copies - before->emu_copies;

    switch (expect->path) {
    case TU_PATH_PASSTHROUGH:
        if (pass != (uint64_t)ncalls || 0 != staged || 0 != native) {
            tu_fail("expected passthrough: calls_passthrough[%s] +%llu, calls_staged +%llu, "
                    "calls_native +%llu (expected +%d, +0, +0)",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)native, ncalls);
        }
        if (0 != bytes || 0 != emu) {
            tu_fail("passthrough call copied device data: staged_bytes +%llu, emulated copies "
                    "+%llu",
                    (unsigned long long)bytes, (unsigned long long)emu);
        }
        break;
    case TU_PATH_STAGED:
        if (staged != (uint64_t)ncalls || 0 != pass || 0 != native) {
            tu_fail("expected staged: calls_staged[%s] +%llu, calls_passthrough +%llu, "
                    "calls_native +%llu (expected +%d, +0, +0)",
                    tu_coll_name(coll), (unsigned long long)staged, (unsigned long long)pass,
                    (unsigned long long)native, ncalls);
        }
        if (expect->device_payload > 0 && 0 == bytes) {
            tu_fail("staged call with %zu bytes of device data: staged_bytes +0",
                    expect->device_payload);
        }
        break;
    case TU_PATH_NATIVE:
        if (native != (uint64_t)ncalls || 0 != pass || 0 != staged) {
            tu_fail("expected native: calls_native[%s] +%llu, calls_passthrough +%llu, "
                    "calls_staged +%llu (expected +%d, +0, +0)",
                    tu_coll_name(coll), (unsigned long long)native, (unsigned long long)pass,
                    (unsigned long long)staged, ncalls);
        }
        if (0 != bytes) {
            tu_fail("native call staged %llu bytes", (unsigned long long)bytes);
        }
        break;
    case TU_PATH_STAGED_OR_NATIVE:
        if (staged + native != (uint64_t)ncalls || 0 != pass) {
            tu_fail("expected staged or native: calls_staged[%s] +%llu, calls_native +%llu, "
                    "calls_passthrough +%llu (expected +%d in all, +0 passed through)",
                    tu_coll_name(coll), (unsigned long long)staged, (unsigned long long)native,
                    (unsigned long long)pass, ncalls);
        }
        if (native == (uint64_t)ncalls && 0 != bytes) {
            tu_fail("native call staged %llu bytes", (unsigned long long)bytes);
        }
        if (staged == (uint64_t)ncalls && expect->device_payload > 0 && 0 == bytes) {
            tu_fail("staged call with %zu bytes of device data: staged_bytes +0",
                    expect->device_payload);
        }
        break;
    case TU_PATH_EITHER:
        if (pass + staged + native != (uint64_t)ncalls) {
            tu_fail("calls_passthrough[%s] +%llu + calls_staged +%llu + calls_native +%llu != "
                    "%d calls",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)native, ncalls);
        }
        break;
    default:
        if (pass + staged + native > (uint64_t)ncalls || 0 != bytes) {
            tu_fail("zero-count call: calls_passthrough[%s] +%llu, calls_staged +%llu, "
                    "staged_bytes +%llu (expected at most %d call, no bytes)",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)bytes, ncalls);
        }
        break;
    }
    tu_check_chunks_and_errors(before, after, TU_CHUNKS_NONE == expect->chunks,
                               TU_CHUNKS_SOME == expect->chunks);
    if (tu_verbose >= 3) {
        printf("     [rank %d] %s: passthrough +%llu staged +%llu bytes +%llu chunks +%llu\n",
               tu_world_rank, tu_coll_name(coll), (unsigned long long)pass,
               (unsigned long long)staged, (unsigned long long)bytes, (unsigned long long)chunks);
    }
}

void tu_check_counters_group(const tu_counters_t *before, const tu_counters_t *after, int ncalls,
                             const coll_gpu_coll_t *colls, const tu_expect_t *expects) {
    bool all_passthrough = true, staged_payload = false, all_no_chunks = true, some_chunks = false;
    uint64_t bytes, emu;

    if (!tu_ctr.available) {
        return;
    }
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        uint64_t want_pass = 0, want_staged = 0, want_native = 0, want_either = 0, want_maybe = 0;
        uint64_t want_not_pass = 0; /* staged or native */
        uint64_t pass, staged, native;
        for (int i = 0; i < ncalls; i++) {
            if ((int)colls[i] != coll) {
                continue;
            }
            switch (expects[i].path) {
            case TU_PATH_PASSTHROUGH:
                want_pass++;
                break;
            case TU_PATH_STAGED:
                want_staged++;
                break;
            case TU_PATH_NATIVE:
                want_native++;
                break;
            case TU_PATH_EITHER:
                want_either++;
                break;
            case TU_PATH_STAGED_OR_NATIVE:
                want_not_pass++;
                break;
            default:
                want_maybe++;
                break;
            }
        }
        tu_calls_delta(before, after, coll, &pass, &staged, &native);
        if (pass < want_pass || staged < want_staged || native < want_native ||
            staged + native < want_staged + want_native + want_not_pass ||
            pass > want_pass + want_either + want_maybe ||
            pass + staged + native <
                want_pass + want_staged + want_native + want_not_pass + want_either ||
            pass + staged + native >
                want_pass + want_staged + want_native + want_not_pass + want_either + want_maybe) {
            tu_fail("%s: calls_passthrough +%llu, calls_staged +%llu, calls_native +%llu; "
                    "expected %llu passthrough, %llu staged, %llu native, %llu staged or native, "
                    "%llu any way, %llu zero-count",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)native, (unsigned long long)want_pass,
                    (unsigned long long)want_staged, (unsigned long long)want_native,
                    (unsigned long long)want_not_pass, (unsigned long long)want_either,
                    (unsigned long long)want_maybe);
        }
    }
    for (int i = 0; i < ncalls; i++) {
        all_passthrough = all_passthrough && TU_PATH_PASSTHROUGH == expects[i].path;
        staged_payload =
            staged_payload || (TU_PATH_STAGED == expects[i].path && expects[i].device_payload > 0);
        all_no_chunks = all_no_chunks && TU_CHUNKS_NONE == expects[i].chunks;
        some_chunks = some_chunks || TU_CHUNKS_SOME == expects[i].chunks;
    }
    bytes = after->staged_bytes - before->staged_bytes;
    emu = after->emu_copies - before->emu_copies;
    if (all_passthrough && (0 != bytes || 0 != emu)) {
        tu_fail("host-only calls copied device data: staged_bytes +%llu, emulated copies +%llu",
                (unsigned long long)bytes, (unsigned long long)emu);
    }
    if (staged_payload && 0 == bytes) {
        tu_fail("staged calls with device data: staged_bytes +0");
    }
    tu_check_chunks_and_errors(before, after, all_no_chunks, some_chunks);
}

void tu_native_scratch_setup(const MPI_Comm *comms, int n, tu_gpu_config_t *config) {
    if (NULL == tu_accel) {
        return;
    }
    for (int c = 0; c < n; c++) {
        void *one;

        if (0 != tu_mem_alloc(TU_MEM_DEVICE, sizeof(int), &one) ||
            MPI_SUCCESS != MPI_Allreduce(MPI_IN_PLACE, one, 1, MPI_INT, MPI_SUM, comms[c])) {
            fprintf(stderr, "[rank %d] cannot set the native scratch up\n", tu_world_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        tu_mem_free(TU_MEM_DEVICE, one);
    }
    /* where the allreduce ran natively (inside a node, where nonblocking calls can) */
    config->nonblocking_contexts = config->native && TU_ALG_STAGED != config->allreduce_algorithm;
}
