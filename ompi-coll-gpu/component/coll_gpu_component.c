/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/gpu component: MCA parameters, MPI_T performance variables and the
 * accelerator backend, opened once per process.
 */
#include "coll_gpu.h"
#include "coll_gpu_model_defaults.h"
#include "coll_gpu_native.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_setup.h"
#include "coll_gpu_staged.h"

#include "cgt.h"

#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/show_help.h"

#define COLL_GPU_DEFAULT_PRIORITY 80
#define COLL_GPU_DEFAULT_STAGING_BUFFER_SIZE (4UL << 20)
#define COLL_GPU_MIN_STAGING_BUFFER_SIZE 4096UL

static int coll_gpu_register(void);
static int coll_gpu_open(void);
static int coll_gpu_close(void);

COLL_GPU_EXPORT mca_coll_gpu_component_t mca_coll_gpu_component = {
    .super =
        {
            .collm_version =
                {
                    COLL_GPU_COLL_BASE_VERSION,
                    .mca_component_name = "gpu",
                    MCA_BASE_MAKE_VERSION(component, COLL_GPU_VERSION_MAJOR, COLL_GPU_VERSION_MINOR,
                                          COLL_GPU_VERSION_RELEASE),
                    .mca_open_component = coll_gpu_open,
                    .mca_close_component = coll_gpu_close,
                    .mca_register_component_params = coll_gpu_register,
                },
            .collm_data =
                {
                    /* GPU state cannot be checkpointed */
                    MCA_BASE_METADATA_PARAM_NONE,
                },
            .collm_init_query = mca_coll_gpu_init_query,
            .collm_comm_query = mca_coll_gpu_comm_query,
        },
    .output = -1,
};

static const mca_base_var_enum_value_t coll_gpu_accelerator_values[] = {
    {COLL_GPU_ACCELERATOR_AUTO, "auto"},
    {COLL_GPU_ACCELERATOR_CUDA, "cuda"},
    {COLL_GPU_ACCELERATOR_EMULATED, "emulated"},
    {0, NULL},
};

static const mca_base_var_enum_value_t coll_gpu_tree_rails_values[] = {
    {COLL_GPU_RAILS_AUTO, "auto"},
    {COLL_GPU_RAILS_OFF, "off"},
    {COLL_GPU_RAILS_ON, "on"},
    {0, NULL},
};

static const mca_base_var_enum_value_t coll_gpu_native_setup_values[] = {
    {COLL_GPU_NATIVE_SETUP_FIRST_CALL, "first_call"},
    {COLL_GPU_NATIVE_SETUP_CREATE, "create"},
    {0, NULL},
};

static int coll_gpu_pvar_collective_count(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event,
                                          void *obj, int *count) {
    (void)pvar;
    (void)obj;
    if (MCA_BASE_PVAR_HANDLE_BIND == event) {
        *count = COLL_GPU_NUM_COLLS;
    }
    return OPAL_SUCCESS;
}

static int coll_gpu_pvar_read_collectives(const struct mca_base_pvar_t *pvar, void *value,
                                          void *obj) {
    (void)obj;
    memcpy(value, pvar->ctx, COLL_GPU_NUM_COLLS * sizeof(unsigned long long));
    return OPAL_SUCCESS;
}

/* Array pvars of another length than the collectives': ctx points at one of these. */
typedef struct {
    unsigned long long *values;
    int count;
} coll_gpu_pvar_array_t;

static coll_gpu_pvar_array_t coll_gpu_pvar_algorithms[COLL_GPU_NCOLL_NUM];
static coll_gpu_pvar_array_t coll_gpu_pvar_fallbacks = {mca_coll_gpu_component.native_fallbacks,
                                                        COLL_GPU_FALLBACK_NUM};
static coll_gpu_pvar_array_t coll_gpu_pvar_net_by_node = {coll_gpu_net_received_by_node,
                                                          COLL_GPU_NET_MAX_NODES};

static int coll_gpu_pvar_array_count(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event,
                                     void *obj, int *count) {
    (void)obj;
    if (MCA_BASE_PVAR_HANDLE_BIND == event) {
        *count = ((const coll_gpu_pvar_array_t *)pvar->ctx)->count;
    }
    return OPAL_SUCCESS;
}

static int coll_gpu_pvar_array_read(const struct mca_base_pvar_t *pvar, void *value, void *obj) {
    const coll_gpu_pvar_array_t *array = pvar->ctx;

    (void)obj;
    memcpy(value, array->values, (size_t)array->count * sizeof(unsigned long long));
    return OPAL_SUCCESS;
}

static void coll_gpu_register_pvar_array(const char *name, const char *description,
                                         coll_gpu_pvar_array_t *array) {
    (void)mca_base_component_pvar_register(
        &mca_coll_gpu_component.super.collm_version, name, description, OPAL_INFO_LVL_4,
        MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        coll_gpu_pvar_array_read, NULL, coll_gpu_pvar_array_count, array);
}

static void coll_gpu_register_pvar(const char *name, const char *description, void *counter,
                                   bool per_collective) {
    (void)mca_base_component_pvar_register(
        &mca_coll_gpu_component.super.collm_version, name, description, OPAL_INFO_LVL_4,
        MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        per_collective ? coll_gpu_pvar_read_collectives : NULL, NULL,
        per_collective ? coll_gpu_pvar_collective_count : NULL, counter);
}

/* Help files live where make install put them, or, for a component run from
 * its build tree, next to the .libs directory holding it. */
static void coll_gpu_add_help_dirs(void) {
    Dl_info info;
    char path[4096];

    opal_show_help_add_dir(COLL_GPU_HELP_DIR);
    if (0 != dladdr(&mca_coll_gpu_component, &info) && NULL != info.dli_fname) {
        snprintf(path, sizeof(path), "%s", info.dli_fname);
        char *dir = dirname(path);
        opal_show_help_add_dir(dir);
        strncat(path, "/..", sizeof(path) - strlen(path) - 1);
        opal_show_help_add_dir(path);
    }
}

/* coll_gpu_transports: the shmem-transport backends a team may use. */
static const mca_base_var_enum_value_flag_t coll_gpu_transport_flags[] = {
    {.flag = CGT_BACKEND_POSIX, .string = "posix", .conflicting_flag = 0},
    {.flag = CGT_BACKEND_CUDA_IPC, .string = "cuda_ipc", .conflicting_flag = 0},
    {.flag = CGT_BACKEND_UCX, .string = "ucx", .conflicting_flag = 0},
    {.flag = 0, .string = NULL, .conflicting_flag = 0},
};

static void coll_gpu_register_transport(const mca_base_component_t *c) {
    mca_base_var_enum_flag_t *transports_enum;

    mca_coll_gpu_component.ranks_per_node = 0;
    (void)mca_base_component_var_register(
        c, "ranks_per_node",
        "Split every node into emulated nodes of this many ranks (consecutive ranks of the "
        "node, in communicator order), so that the inter-node algorithms and the ucx transport "
        "run between processes of one machine.  0: nodes are what "
        "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds.  For testing",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.ranks_per_node);

    mca_coll_gpu_component.transports = CGT_BACKEND_ALL;
    (void)mca_base_var_enum_create_flag("coll_gpu_transports", coll_gpu_transport_flags,
                                        &transports_enum);
    (void)mca_base_component_var_register(
        c, "transports",
        "Comma-separated transports the native algorithms may use: posix (host memory of ranks "
        "on the same node, shared segments), cuda_ipc (device memory of ranks on the same "
        "node, CUDA IPC), ucx (ranks on other nodes: InfiniBand/RoCE, or TCP)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &transports_enum->super, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_gpu_component.transports);
    OBJ_RELEASE(transports_enum);

    mca_coll_gpu_component.transport_timeout = 0.0;
    (void)mca_base_component_var_register(
        c, "transport_timeout",
        "Hang detector, off by default (0): seconds a native collective may wait for a live peer "
        "(or a UCX flush) before the job is aborted with a message naming the call.  A slow "
        "peer is never an error otherwise; a dead one is found without a timeout (its process "
        "gone, its UCX endpoint failed, Open MPI's runtime)",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.transport_timeout);

    mca_coll_gpu_component.registration_cache_size = 64;
    (void)mca_base_component_var_register(
        c, "registration_cache_size",
        "Registered buffers and mapped peer buffers each communicator keeps for reuse (least "
        "recently used evicted beyond it)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.registration_cache_size);

    mca_coll_gpu_component.net_devices = NULL;
    (void)mca_base_component_var_register(
        c, "net_devices",
        "Network devices for the ucx transport, as UCX_NET_DEVICES takes them "
        "(\"mlx5_0:1,mlx5_1:1\").  Empty: the HCA(s) nearest to the rank's GPU, chosen with "
        "hwloc (printed at coll_gpu_verbose 1)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.net_devices);

    mca_coll_gpu_component.transport_check = false;
    (void)mca_base_component_var_register(
        c, "transport_check",
        "Debug: on the first blocking collective on device buffers of each communicator, set "
        "up its transport (as the native algorithms do on their first call) and check that "
        "every rank reaches every other through it: puts into host and device scratch, "
        "signals, the node-local barrier.  The result is printed at coll_gpu_verbose 1, a "
        "failure with a help message.  Every rank must pass device memory to that call",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.transport_check);

    mca_coll_gpu_component.ucx_tls = NULL;
    (void)mca_base_component_var_register(
        c, "ucx_tls",
        "UCX transports for the ucx transport's context, as UCX_TLS takes them "
        "(\"rc,cuda_copy\", \"tcp\").  Empty: UCX's own choice",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.ucx_tls);
}

/* coll_gpu_<coll>_algorithm of every collective with native algorithms, from its table: the
 * values auto, staged and the rows, and ompi_info's text naming what each does. */
static void coll_gpu_register_algorithms(const mca_base_component_t *c) {
    /* static: an enum may keep the values it was given */
    static mca_base_var_enum_value_t values[COLL_GPU_NCOLL_NUM][COLL_GPU_MAX_ALGS + 1];
    mca_base_var_enum_t *alg_enum;
    char help[2048], var[64], enum_name[96];

    /* traffic between nodes of the native calls (docs/design.md, "Traffic between nodes") */
    coll_gpu_register_pvar("net_bytes_sent",
                           "Bytes this rank sent to ranks on other nodes in native calls (its "
                           "puts, and 8 per signal), counted where the transport issues them",
                           &coll_gpu_net_counters[COLL_GPU_NET_BYTES_SENT], false);
    coll_gpu_register_pvar("net_bytes_received",
                           "Bytes this rank received from ranks on other nodes in native calls "
                           "(its gets), counted where the transport issues them",
                           &coll_gpu_net_counters[COLL_GPU_NET_BYTES_RECEIVED], false);
    coll_gpu_register_pvar("net_messages",
                           "Puts, gets and signals this rank issued to ranks on other nodes in "
                           "native calls",
                           &coll_gpu_net_counters[COLL_GPU_NET_MESSAGES], false);
    coll_gpu_register_pvar("net_rounds",
                           "Messages on the critical path between nodes: the inter-node rounds "
                           "this rank waited through in native calls (a wait for another node's "
                           "signal after this rank signalled another node since its previous "
                           "round; a call's first such wait starts one)",
                           &coll_gpu_net_counters[COLL_GPU_NET_ROUNDS], false);
    coll_gpu_register_pvar("net_waits",
                           "Signals of ranks on other nodes this rank waited for in native calls",
                           &coll_gpu_net_counters[COLL_GPU_NET_WAITS], false);
    (void)mca_base_component_pvar_register(
        &mca_coll_gpu_component.super.collm_version, "net_gets_in_flight_max",
        "The most gets from ranks on other nodes one native call of this process had in flight "
        "at once (alltoall: bounded by coll_gpu_alltoall_max_outstanding)",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_HIGHWATERMARK, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
        NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
        &coll_gpu_net_gets_in_flight_max);
    coll_gpu_register_pvar_array(
        "net_bytes_received_by_node",
        "net_bytes_received by the node that sent them: element j is node j of the call's "
        "communicator (nodes numbered by their lowest rank), the last element every node from it "
        "on (64 elements)",
        &coll_gpu_pvar_net_by_node);

    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {
        const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[k];
        int n = 0, len;

        values[k][0] = (mca_base_var_enum_value_t){COLL_GPU_ALG_AUTO, "auto"};
        values[k][1] = (mca_base_var_enum_value_t){COLL_GPU_ALG_STAGED, "staged"};
        len = snprintf(help, sizeof(help),
                       "Algorithm of blocking %s on device buffers (and host buffers under "
                       "host_buffers): auto (the tuning file's rule, else %s), staged (through "
                       "host memory and Open MPI's %s)",
                       t->mpi_call, t->auto_help, t->mpi_call);
        for (int a = 0; a < t->num_algs; ++a) {
            const coll_gpu_alg_desc_t *alg = &t->algs[a];

            values[k][COLL_GPU_ALG_FIRST_NATIVE + a] =
                (mca_base_var_enum_value_t){COLL_GPU_ALG_FIRST_NATIVE + a, alg->name};
            n += !alg->multi_node;
            len += snprintf(help + len, sizeof(help) - (size_t)len, ", %s (%s%s)", alg->name,
                            alg->help, alg->multi_node ? "" : "; one node");
        }
        values[k][COLL_GPU_ALG_FIRST_NATIVE + t->num_algs] = (mca_base_var_enum_value_t){0, NULL};
        snprintf(help + len, sizeof(help) - (size_t)len, ".%s%s%s%s", (NULL != t->note) ? "  " : "",
                 (NULL != t->note) ? t->note : "", (NULL != t->note) ? "." : "",
                 (n > 0) ? "  An algorithm of one node forced on a communicator spanning nodes "
                           "is staged."
                         : "");
        snprintf(var, sizeof(var), "%s_algorithm", t->name);
        snprintf(enum_name, sizeof(enum_name), "coll_gpu_%s_algorithms", t->name);
        mca_coll_gpu_component.algorithm[k] = COLL_GPU_ALG_AUTO;
        (void)mca_base_var_enum_create(enum_name, values[k], &alg_enum);
        (void)mca_base_component_var_register(c, var, help, MCA_BASE_VAR_TYPE_INT, alg_enum, 0, 0,
                                              OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                                              &mca_coll_gpu_component.algorithm[k]);
        OBJ_RELEASE(alg_enum);
    }
}

/* auto's rule for coll's binomial row: coll_gpu_<coll>_binomial_{min_nodes,min_bytes,max_bytes},
 * defaults the cost model's least-loss rule (coll_gpu_model_defaults.h); what: what the row
 * does, small_why and large_why: why it loses below min_bytes and above max_bytes. */
/* The cost model's bands of a rule (coll_gpu_model_defaults.h: NAME BCAST_BINOMIAL,
 * GATHER_HIERARCHICAL, ...): with rails, without. */
#define COLL_GPU_MODEL_BAND(NAME)                                                                  \
    (coll_gpu_band_t) {                                                                            \
        COLL_GPU_MODEL_##NAME##_MIN_NODES, COLL_GPU_MODEL_##NAME##_MIN_BYTES,                      \
            COLL_GPU_MODEL_##NAME##_MAX_BYTES                                                      \
    }
#define COLL_GPU_MODEL_BAND_NO_RAILS(NAME)                                                         \
    (coll_gpu_band_t) {                                                                            \
        COLL_GPU_MODEL_##NAME##_NO_RAILS_MIN_NODES, COLL_GPU_MODEL_##NAME##_NO_RAILS_MIN_BYTES,    \
            COLL_GPU_MODEL_##NAME##_NO_RAILS_MAX_BYTES                                             \
    }

/* coll_gpu_<coll>_<alg>_{min_nodes,min_bytes,max_bytes}: the band auto runs alg on (binomial;
 * gather's, scatter's and alltoall's hierarchical, direct elsewhere), defaults the model's with
 * rails; the model's band without rails beside them. */
static void coll_gpu_register_band_rule(const mca_base_component_t *c, const char *coll,
                                        const char *alg, const char *bytes_what,
                                        coll_gpu_band_rule_t *rule, coll_gpu_band_t rails,
                                        coll_gpu_band_t no_rails, const char *what,
                                        const char *small_why, const char *large_why) {
    struct {
        const char *suffix;
        mca_base_var_type_t type;
        void *storage;
    } vars[] = {{"min_nodes", MCA_BASE_VAR_TYPE_INT, &rule->params.min_nodes},
                {"min_bytes", MCA_BASE_VAR_TYPE_SIZE_T, &rule->params.min_bytes},
                {"max_bytes", MCA_BASE_VAR_TYPE_SIZE_T, &rule->params.max_bytes}};
    char name[64], help[1536];

    rule->params = rails;
    rule->no_rails = no_rails;
    rule->params_set = false;
    for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); ++k) {
        mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
        int index;

        snprintf(name, sizeof(name), "%s_%s_%s", coll, alg, vars[k].suffix);
        if (0 == k) {
            snprintf(help, sizeof(help),
                     "With %s_algorithm auto and no tuning rule: from this many nodes on, calls "
                     "from %s_%s_min_bytes to %s_%s_max_bytes run %s (%s).  The default is the "
                     "cost model's, with the other two: the rule that loses least on nodes of 8 "
                     "H200 with rails (coll_gpu_tree_rails; perf/cost_model --crossovers; its "
                     "tuning file gives each layout its own band).  A communicator without rails "
                     "(nodes of one rank, or whose ranks share their network devices) takes the "
                     "model's band without them where none of the three is set (from %d nodes, "
                     "%zu to %zu bytes: coll_gpu_verbose 10 says so)",
                     coll, coll, alg, coll, alg, alg, what, no_rails.min_nodes, no_rails.min_bytes,
                     no_rails.max_bytes);
        } else {
            snprintf(help, sizeof(help),
                     "With %s_algorithm auto and no tuning rule, from %s_%s_min_nodes nodes on: "
                     "the %s %s that runs %s (%s).  %sThe default is the cost model's (with "
                     "rails; see %s_%s_min_nodes)",
                     coll, coll, alg, (1 == k) ? "smallest" : "largest", bytes_what, alg,
                     (1 == k) ? small_why : large_why, (1 == k) ? "" : "0: never.  ", coll, alg);
        }
        /* (the name and description are copied by the MCA base) */
        index = mca_base_component_var_register(c, name, help, vars[k].type, NULL, 0, 0,
                                                OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                                                vars[k].storage);
        /* set by the user (command line, environment, a parameter file), whatever the value */
        if ((index >= 0) && (OPAL_SUCCESS == mca_base_var_get_value(index, NULL, &source, NULL)) &&
            (MCA_BASE_VAR_SOURCE_DEFAULT != source)) {
            rule->params_set = true;
        }
    }
}

/* The native algorithms' selection: algorithm, threshold, chunk, tuning file. */
static void coll_gpu_register_native(const mca_base_component_t *c) {
    mca_base_var_enum_t *rails_enum;

    coll_gpu_register_algorithms(c);

    /* the defaults of the crossovers: the cost model's (coll_gpu_model_defaults.h) */
    mca_coll_gpu_component.allreduce_one_shot_max_bytes = COLL_GPU_MODEL_ONE_SHOT_MAX_BYTES;
    (void)mca_base_component_var_register(
        c, "allreduce_one_shot_max_bytes",
        "With allreduce_algorithm auto and no tuning rule: the largest message (bytes per "
        "rank) run one-shot; larger ones run two-shot.  Also sizes the device scratch.  The "
        "default is the cost model's crossover on one node of 8 H200 (perf/cost_model "
        "--crossovers prints it for other layouts and machines, and a tuning file of them)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.allreduce_one_shot_max_bytes);

    mca_coll_gpu_component.allreduce_ring_min_bytes = COLL_GPU_MODEL_RING_MIN_BYTES;
    (void)mca_base_component_var_register(
        c, "allreduce_ring_min_bytes",
        "With allreduce_algorithm auto and no tuning rule, across nodes of one rank each: the "
        "smallest message (bytes per rank) run on the ring (2 (nodes - 1) steps); smaller ones "
        "run hierarchical (one exchange with every node each way, 3 rounds on the critical "
        "path).  The default is the cost model's crossover on 8 nodes of one H200 "
        "(perf/cost_model --crossovers: other node counts and machines, a tuning file of them)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.allreduce_ring_min_bytes);

    mca_coll_gpu_component.allreduce_doubling_min_nodes = COLL_GPU_MODEL_DOUBLING_MIN_NODES;
    (void)mca_base_component_var_register(
        c, "allreduce_doubling_min_nodes",
        "With allreduce_algorithm auto and no tuning rule: from this many nodes on, messages up "
        "to allreduce_doubling_max_bytes run hierarchical_doubling (each node reduced by its "
        "leader, recursive doubling between the leaders: log2(nodes) rounds of one message each "
        "way, where hierarchical's shard owners each exchange with every node).  The default is "
        "the cost model's on nodes of 8 H200: the smallest node count from which it wins at "
        "every larger one (perf/cost_model --crossovers; its tuning file also takes it on 2 and 4 "
        "nodes, where it wins too)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.allreduce_doubling_min_nodes);

    mca_coll_gpu_component.allreduce_doubling_max_bytes = COLL_GPU_MODEL_DOUBLING_MAX_BYTES;
    (void)mca_base_component_var_register(
        c, "allreduce_doubling_max_bytes",
        "With allreduce_algorithm auto and no tuning rule, from allreduce_doubling_min_nodes "
        "nodes on: the largest message (bytes per rank) run hierarchical_doubling (it moves the "
        "whole message in each of its log2(nodes) rounds); larger ones run hierarchical or the "
        "ring.  0: never.  The default is the cost model's crossover on nodes of 8 H200 at "
        "allreduce_doubling_min_nodes nodes (more nodes only raise it)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.allreduce_doubling_max_bytes);

    mca_coll_gpu_component.allreduce_rabenseifner_min_nodes = COLL_GPU_MODEL_RABENSEIFNER_MIN_NODES;
    (void)mca_base_component_var_register(
        c, "allreduce_rabenseifner_min_nodes",
        "With allreduce_algorithm auto and no tuning rule: from this many nodes on, messages "
        "hierarchical_doubling does not take run hierarchical_rabenseifner (recursive halving "
        "and doubling of each shard between its owners: 2 log2(nodes) rounds of one partner, "
        "where hierarchical's owners each exchange with every node per chunk).  The default is "
        "the cost model's on nodes of 8 H200: the smallest node count from which it is faster "
        "than hierarchical at every larger size and node count",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.allreduce_rabenseifner_min_nodes);

    mca_coll_gpu_component.allgather_doubling_min_nodes =
        COLL_GPU_MODEL_ALLGATHER_DOUBLING_MIN_NODES;
    (void)mca_base_component_var_register(
        c, "allgather_doubling_min_nodes",
        "With allgather_algorithm / allgatherv_algorithm auto and no tuning rule: from this many "
        "nodes on, calls that gather at most allgather_doubling_max_bytes run "
        "hierarchical_doubling (each node's blocks to its leader, recursive doubling between "
        "the leaders: log2(nodes) rounds of one message, where hierarchical exchanges with "
        "every node).  The default is the cost model's on nodes of one rank and of 8 H200: the "
        "smallest node count from which it wins at every larger one (perf/cost_model "
        "--crossovers; its tuning file also takes it on fewer nodes where it wins there)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.allgather_doubling_min_nodes);

    mca_coll_gpu_component.allgather_doubling_max_bytes =
        COLL_GPU_MODEL_ALLGATHER_DOUBLING_MAX_BYTES;
    (void)mca_base_component_var_register(
        c, "allgather_doubling_max_bytes",
        "With allgather(v)_algorithm auto and no tuning rule, from allgather_doubling_min_nodes "
        "nodes on: the most bytes a call gathers (its largest block x the ranks) run "
        "hierarchical_doubling (a step holds a chunk of every rank: larger calls take more "
        "steps than hierarchical's); larger ones run hierarchical or direct.  0: never.  The "
        "default is the cost model's: the size that loses least over its layouts from "
        "allgather_doubling_min_nodes nodes on",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.allgather_doubling_max_bytes);

    mca_coll_gpu_component.reduce_scatter_halving_min_nodes =
        COLL_GPU_MODEL_REDUCE_SCATTER_HALVING_MIN_NODES;
    (void)mca_base_component_var_register(
        c, "reduce_scatter_halving_min_nodes",
        "With reduce_scatter_algorithm / reduce_scatter_block_algorithm auto and no tuning "
        "rule: from this many nodes on, calls of at most reduce_scatter_halving_max_bytes run "
        "hierarchical_halving (each node's partial to its leader, recursive halving between the "
        "leaders: log2(nodes) rounds of one message, where hierarchical exchanges with every "
        "node).  The default is the cost model's on nodes of one rank and of 8 H200: the "
        "smallest node count from which it wins at every larger one (perf/cost_model "
        "--crossovers; its tuning file also takes it on fewer nodes where it wins there)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.reduce_scatter_halving_min_nodes);

    mca_coll_gpu_component.reduce_scatter_halving_max_bytes =
        COLL_GPU_MODEL_REDUCE_SCATTER_HALVING_MAX_BYTES;
    (void)mca_base_component_var_register(
        c, "reduce_scatter_halving_max_bytes",
        "With reduce_scatter(_block)_algorithm auto and no tuning rule, from "
        "reduce_scatter_halving_min_nodes nodes on: the most bytes of a call (its largest block "
        "x the ranks) run hierarchical_halving (a step holds a chunk of every rank: larger calls "
        "take more steps than hierarchical's); larger ones run hierarchical or direct.  0: "
        "never.  The default is the cost model's: the size that loses least over its layouts "
        "from reduce_scatter_halving_min_nodes nodes on",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.reduce_scatter_halving_max_bytes);

    coll_gpu_register_band_rule(
        c, "bcast", "binomial", "message", &mca_coll_gpu_component.bcast_binomial,
        COLL_GPU_MODEL_BAND(BCAST_BINOMIAL), COLL_GPU_MODEL_BAND_NO_RAILS(BCAST_BINOMIAL),
        "a binomial tree of the node leaders: ceil(log2(nodes)) gets deep, no barrier per chunk, "
        "where pipelined's two-level leaders all get from the root and its chain is nodes - 1 "
        "deep",
        "each of its ceil(log2(nodes)) levels costs a round trip, a copy and a synchronization: "
        "below, pipelined's fewer rounds are faster",
        "the root's node sends each chunk to each of its ceil(log2(nodes)) children: larger ones "
        "run pipelined, whose chain sends it once");
    coll_gpu_register_band_rule(
        c, "reduce", "binomial", "message", &mca_coll_gpu_component.reduce_binomial,
        COLL_GPU_MODEL_BAND(REDUCE_BINOMIAL), COLL_GPU_MODEL_BAND_NO_RAILS(REDUCE_BINOMIAL),
        "the node leaders reduce up a binomial tree to the root: ceil(log2(nodes)) gets deep, "
        "where hierarchical's root gets a partial from every node",
        "each of its ceil(log2(nodes)) levels costs a round trip, a copy and a synchronization: "
        "below, hierarchical or direct's fewer rounds are faster",
        "the root's node receives it from each of its ceil(log2(nodes)) children: larger ones "
        "run hierarchical, segmented between the nodes");
    coll_gpu_register_band_rule(
        c, "gather", "binomial", "gathered message (the block x ranks)",
        &mca_coll_gpu_component.gather_binomial, COLL_GPU_MODEL_BAND(GATHER_BINOMIAL),
        COLL_GPU_MODEL_BAND_NO_RAILS(GATHER_BINOMIAL),
        "the node leaders pass their subtrees' blocks up a binomial tree to the root: "
        "ceil(log2(nodes)) messages at the root per step, where hierarchical's root gets one "
        "from every node",
        "each of its ceil(log2(nodes)) levels costs a round trip and a synchronization: below, "
        "hierarchical or direct's single round is faster",
        "its inner leaders forward their subtrees' blocks once more: larger ones run "
        "hierarchical or direct, whose blocks cross the network once");
    coll_gpu_register_band_rule(
        c, "scatter", "binomial", "scattered message (the block x ranks)",
        &mca_coll_gpu_component.scatter_binomial, COLL_GPU_MODEL_BAND(SCATTER_BINOMIAL),
        COLL_GPU_MODEL_BAND_NO_RAILS(SCATTER_BINOMIAL),
        "the root's blocks go down a binomial tree of the node leaders, each getting its "
        "subtree's blocks from its parent: ceil(log2(nodes)) messages from the root per step, "
        "where hierarchical's every node leader gets from the root",
        "each of its ceil(log2(nodes)) levels costs a round trip and a synchronization: below, "
        "hierarchical or direct's single round is faster",
        "its inner leaders forward their subtrees' blocks once more: larger ones run "
        "hierarchical or direct, whose blocks cross the network once");
    coll_gpu_register_band_rule(
        c, "gather", "hierarchical", "gathered message (the block x ranks)",
        &mca_coll_gpu_component.gather_hierarchical, COLL_GPU_MODEL_BAND(GATHER_HIERARCHICAL),
        COLL_GPU_MODEL_BAND_NO_RAILS(GATHER_HIERARCHICAL),
        "across nodes where a node has several ranks; elsewhere direct: each node's leader (or "
        "with rails its carrier) collects its node's blocks, the root gets one message per node, "
        "where direct's root gets every remote rank's block",
        "its hop inside the node and its leaders' synchronization cost more than direct's extra "
        "messages on few nodes",
        "the larger ones run direct, whose blocks cross once, straight into the root's buffer");
    coll_gpu_register_band_rule(
        c, "scatter", "hierarchical", "scattered message (the block x ranks)",
        &mca_coll_gpu_component.scatter_hierarchical, COLL_GPU_MODEL_BAND(SCATTER_HIERARCHICAL),
        COLL_GPU_MODEL_BAND_NO_RAILS(SCATTER_HIERARCHICAL),
        "across nodes where a node has several ranks; elsewhere direct: one rank of each node "
        "gets its node's blocks from the root's node (with rails from its carrier), where "
        "direct's every remote rank gets its block from the root",
        "its hop inside the node and its leaders' synchronization cost more than direct's extra "
        "messages below",
        "the larger ones run direct");

    mca_coll_gpu_component.tree_rails = COLL_GPU_RAILS_AUTO;
    (void)mca_base_var_enum_create("coll_gpu_tree_rails", coll_gpu_tree_rails_values, &rails_enum);
    (void)mca_base_component_var_register(
        c, "tree_rails",
        "The trees of nodes of the rooted collectives (MPI_Bcast's binomial and its pipelined "
        "chain above 64 KiB on 3 nodes or more, MPI_Reduce's binomial): stripe a call's chunks "
        "over the ranks of each node, chunk k carried by the rank at the root's index + k of "
        "every node (modulo its size), so that with a network interface per GPU every interface "
        "of a node carries its share of the message (same-rail peers exchange; on the root's node "
        "a chunk passes between the root and its carrier inside the node).  off: the rank at "
        "the root's index carries every chunk.  MPI_Gather's and MPI_Scatter's hierarchical "
        "too: the other nodes are shared out among the root's node's ranks in turn, each node's "
        "run crossing between its leader and its carrier on the same rail (off: the root "
        "carries every node).  auto: on when, on every node of several ranks, the ranks use "
        "more than one network interface (their UCX_NET_DEVICES: coll_gpu_net_devices, the "
        "environment's, or the interfaces hwloc finds nearest each GPU), else off (one "
        "interface: the carriers' extra hop inside the node buys nothing).  The same on every "
        "rank",
        MCA_BASE_VAR_TYPE_INT, rails_enum, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.tree_rails);
    OBJ_RELEASE(rails_enum);

    coll_gpu_register_band_rule(
        c, "alltoall", "hierarchical", "block (bytes per pair of ranks)",
        &mca_coll_gpu_component.alltoall_hierarchical, COLL_GPU_MODEL_BAND(ALLTOALL_HIERARCHICAL),
        COLL_GPU_MODEL_BAND_NO_RAILS(ALLTOALL_HIERARCHICAL),
        "across nodes where a node has several ranks; elsewhere direct: node-aggregated, the "
        "blocks between two nodes travel in one message each way carried by ranks on one rail, "
        "where direct's every rank gets its block from every remote rank",
        "none smaller by default: aggregation gains most on the smallest blocks, whose messages "
        "cost more than their bytes",
        "its carriers copy every block twice more inside the nodes: larger blocks run direct, "
        "whose messages then cost less than those copies");
    {
        /* its name before the band (the largest block; from any node count) */
        int index = mca_base_var_find("ompi", "coll", "gpu", "alltoall_hierarchical_max_bytes");

        if (index >= 0) {
            (void)mca_base_var_register_synonym(index, "ompi", "coll", "gpu",
                                                "alltoall_aggregate_max_bytes",
                                                MCA_BASE_VAR_SYN_FLAG_DEPRECATED);
        }
    }

    mca_coll_gpu_component.alltoall_max_outstanding = 8;
    (void)mca_base_component_var_register(
        c, "alltoall_max_outstanding",
        "The most gets from other nodes a rank of a native alltoall(v) keeps in flight: direct "
        "gets its blocks in pairwise order (step k from rank + k) and completes them in batches "
        "of this many; hierarchical bounds its gets between nodes the same way.  0: no bound",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.alltoall_max_outstanding);

    mca_coll_gpu_component.agreement_radix = 8;
    (void)mca_base_component_var_register(
        c, "agreement_radix",
        "Across nodes, the agreement that ends every native call (its outcome, the barrier after "
        "which no peer reads a rank's scratch) goes through each node's first rank, and those "
        "exchange it by dissemination: each round a leader tells this many - 1 others, so "
        "ceil(log_radix nodes) rounds and at most (radix - 1) per round messages between nodes per "
        "leader, none for the other ranks.  2 (rounds of one message) to 256; at least the "
        "number of nodes: one round, every leader telling every other.  The same on every rank",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.agreement_radix);

    mca_coll_gpu_component.native_chunk_size = 4 * 1024 * 1024;
    (void)mca_base_component_var_register(
        c, "native_chunk_size",
        "Pipeline chunk of the native two-shot, ring and hierarchical algorithms (bytes; ring: "
        "each step moves chunk / ranks).  Each communicator allocates scratch of 2 x "
        "max(allreduce_one_shot_max_bytes, 2 x this) bytes per rank and memory kind on its "
        "first native collective of that kind; a tuning rule's chunk is capped by it",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.native_chunk_size);

    mca_coll_gpu_component.tuning_file = NULL;
    (void)mca_base_component_var_register(
        c, "tuning_file",
        "File of rules choosing the native algorithm and chunk by collective, communicator "
        "size, ranks per node and message size (format in the README); the first matching "
        "rule wins, a forced allreduce_algorithm overrides it.  A malformed line is reported "
        "with its number and the file ignored; a rule naming an unknown algorithm is skipped "
        "with a warning.  Every rank must read the same rules",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.tuning_file);

    mca_coll_gpu_component.host_buffers = false;
    (void)mca_base_component_var_register(
        c, "host_buffers",
        "Also run the blocking collectives that have native algorithms (those with a "
        "<coll>_algorithm parameter) on host buffers with the native algorithms (chosen as for "
        "device buffers) when every rank passes host memory and the datatype (and op) are ones "
        "the native algorithms take, inside a node or across nodes: host scratch in shared "
        "segments (other nodes read it with UCX gets) and the CPU reduction.  The component "
        "then stays active without an accelerator, for these calls only.  Other host-buffer "
        "calls go to Open MPI as before.  Every rank must set the same value",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.host_buffers);
}

static int coll_gpu_register(void) {
    const mca_base_component_t *c = &mca_coll_gpu_component.super.collm_version;
    mca_base_var_enum_t *accelerator_enum, *native_setup_enum;

    mca_coll_gpu_component.priority = COLL_GPU_DEFAULT_PRIORITY;
    (void)mca_base_component_var_register(
        c, "priority",
        "Priority of the coll gpu component.  It must be above the components it wraps "
        "(tuned 30, han 35, self 75, cuda 78) so that it sits in front of them and hands "
        "them host-buffer calls",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.priority);

    mca_coll_gpu_component.verbose = 0;
    (void)mca_base_component_var_register(
        c, "verbose",
        "Verbosity of the coll gpu component: 1 says which accelerator backend was chosen or "
        "why the component is disabled, 10 logs every staged call",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_gpu_component.verbose);

    mca_coll_gpu_component.enable = true;
    (void)mca_base_component_var_register(
        c, "enable",
        "Whether coll gpu takes part in collective selection at all (false: Open MPI runs as "
        "if the component were not installed)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.enable);

    mca_coll_gpu_component.accelerator = COLL_GPU_ACCELERATOR_AUTO;
    (void)mca_base_var_enum_create("coll_gpu_accelerator", coll_gpu_accelerator_values,
                                   &accelerator_enum);
    (void)mca_base_component_var_register(
        c, "accelerator",
        "Accelerator backend: auto (CUDA when a driver and a device are present, otherwise "
        "the component stays out of the way), cuda, or emulated (CPU memory that the "
        "component treats as device memory; for testing without a GPU)",
        MCA_BASE_VAR_TYPE_INT, accelerator_enum, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.accelerator);
    OBJ_RELEASE(accelerator_enum);

    mca_coll_gpu_component.staging_buffer_size = COLL_GPU_DEFAULT_STAGING_BUFFER_SIZE;
    (void)mca_base_component_var_register(
        c, "staging_buffer_size",
        "Bytes of pinned host memory each communicator allocates, on its first collective on "
        "device buffers, to stage them through host memory.  Larger messages are pipelined in "
        "chunks of a quarter of it (see staged_pipeline) or use temporary host buffers. "
        "Minimum 4096",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.staging_buffer_size);

    mca_coll_gpu_component.staged_pipeline = true;
    (void)mca_base_component_var_register(
        c, "staged_pipeline",
        "Pipeline the staging of allreduce, reduce, bcast, scan, exscan and reduce_local on "
        "contiguous device data: chunks overlap the device-to-host copy, the host collective "
        "and the host-to-device copy.  This issues one host collective per chunk, so every "
        "rank must pass the same kind of memory (all device, or all host) to a given call "
        "(datatypes may differ if their type signature is the same: bcast cuts in signature "
        "bytes); set it to false, or set check_memory_kinds, otherwise",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.staged_pipeline);

    mca_coll_gpu_component.native = true;
    (void)mca_base_component_var_register(
        c, "native",
        "Run device-buffer collectives with coll/gpu's own kernels and native algorithms where "
        "it has them (MPI_Reduce_local and every collective with a coll_gpu_<coll>_algorithm "
        "parameter); false: stage every device-buffer collective through host memory and Open "
        "MPI's own collectives (a baseline for benchmarks, a fallback)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.native);

    mca_coll_gpu_component.native_nonblocking = true;
    (void)mca_base_component_var_register(
        c, "native_nonblocking",
        "Run nonblocking collectives on device memory with the blocking form's native algorithm, "
        "on a thread of the communicator's own, so that they progress while the application "
        "computes: MPI_Iallreduce, MPI_Ireduce_scatter(_block), MPI_Iallgather(v), MPI_Ibcast, "
        "MPI_Ireduce, MPI_Igather, MPI_Iscatter and MPI_Ialltoall, and their persistent forms, "
        "once the communicator's native scratch is set up (coll_gpu_native_setup); every rank "
        "must pass device memory, as for the blocking calls.  "
        "Communicators spanning nodes then lock their UCX worker.  false: every "
        "nonblocking call is staged (inputs copied at post, results when the request completes)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.native_nonblocking);

    mca_coll_gpu_component.memory_kinds_uniform = false;
    (void)mca_base_component_var_register(
        c, "memory_kinds_uniform",
        "A promise of the program: whenever one rank passes device memory to a nonblocking or "
        "persistent collective, every rank of the call does (no host buffer at a root, say).  "
        "Lets those calls run natively (coll_gpu_native_nonblocking); a program that breaks the "
        "promise hangs.  false (the default): they are staged, right for any program, since a "
        "nonblocking call cannot wait to learn its peers' memory kinds; blocking calls learn them "
        "on the call board and need no promise",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.memory_kinds_uniform);

    mca_coll_gpu_component.native_setup = COLL_GPU_NATIVE_SETUP_FIRST_CALL;
    (void)mca_base_var_enum_create("coll_gpu_native_setup", coll_gpu_native_setup_values,
                                   &native_setup_enum);
    (void)mca_base_component_var_register(
        c, "native_setup",
        "When a communicator's native context is set up (its node map, transport team and "
        "device scratch: a few host collectives and device memory of 2 x the larger of "
        "allreduce_one_shot_max_bytes and 2 x native_chunk_size per rank): first_call, by its "
        "first blocking native collective on device memory (communicators that never see one "
        "cost nothing; until then its nonblocking and persistent collectives on device memory "
        "are staged, since they must not block in a setup of their own); create, when the "
        "program creates the communicator (MPI_Comm_dup, MPI_Comm_split, MPI_Comm_idup ...; "
        "not MPI_COMM_WORLD, created in MPI_Init before many programs choose their GPU: it "
        "keeps first_call): the setup starts there and goes on in the background, from any MPI "
        "call of the process, until the communicator's first collective on device memory "
        "completes it; its nonblocking and persistent collectives run natively from the first "
        "call, and every such communicator of more than one rank pays the setup, on the device "
        "current at its creation (under MPI_THREAD_MULTIPLE the setup runs on a thread of its "
        "own; under MPI_THREAD_SERIALIZED inside the creation, waiting for the peers there).  "
        "Every rank must give the same value",
        MCA_BASE_VAR_TYPE_INT, native_setup_enum, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_gpu_component.native_setup);
    OBJ_RELEASE(native_setup_enum);

    mca_coll_gpu_component.native_thread_spin = -1;
    (void)mca_base_component_var_register(
        c, "native_thread_spin",
        "Microseconds a communicator's thread (native nonblocking, persistent and stream-ordered "
        "calls across nodes) polls for the next call after finishing one, before it sleeps: a "
        "call posted meanwhile starts without waking a sleeping thread (a system call and a "
        "context switch, most of a post's host time).  -1: 50 where the node has two CPUs per "
        "local process and the process may run on more than one, else 0 (the thread would poll "
        "on a core the application needs: a rank bound to one core shares it with the thread); "
        "0: sleep at once",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.native_thread_spin);

    mca_coll_gpu_component.check_memory_kinds = false;
    (void)mca_base_component_var_register(
        c, "check_memory_kinds",
        "Before every collective the ranks agree on whether they pass device memory and on "
        "whether each can run the native algorithms (one small allreduce); a mix is run "
        "correctly through the staged path.  Needed by programs whose ranks pass different "
        "memory kinds to one call (datatypes that differ across ranks need nothing: calls are "
        "decided on the type signature).  Costs a collective per call",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.check_memory_kinds);

    mca_coll_gpu_component.check_counts = false;
    (void)mca_base_component_var_register(
        c, "check_counts",
        "Debug: before the native algorithms of a call are chosen, the ranks compare what they "
        "passed (count, element size, op; one small allgather per call); a mismatch, which "
        "makes the program erroneous, is reported with a help message naming a rank that "
        "disagrees, and every rank returns MPI_ERR_COUNT.  Without it such a program reads "
        "wrong data or times out, but never writes outside its buffers.  The v-variants "
        "compare their count arrays: allgatherv's and reduce_scatter's recvcounts against "
        "rank 0's, alltoallv's sendcounts against the receivers' recvcounts",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_gpu_component.check_counts);

    coll_gpu_register_transport(c);
    coll_gpu_register_native(c);

    coll_gpu_register_pvar("calls_passthrough",
                           "Calls handed straight to the previous module because every buffer "
                           "was in host memory, per collective (order of coll_gpu_colls.h)",
                           mca_coll_gpu_component.calls_passthrough, true);
    coll_gpu_register_pvar("calls_staged",
                           "Calls on device buffers run through host staging, per collective "
                           "(order of coll_gpu_colls.h)",
                           mca_coll_gpu_component.calls_staged, true);
    coll_gpu_register_pvar("calls_native",
                           "Calls on device buffers run by coll/gpu's own kernels and algorithms, "
                           "per collective (order of coll_gpu_colls.h)",
                           mca_coll_gpu_component.calls_native, true);
    coll_gpu_register_pvar("native_bytes",
                           "Bytes of this rank's receive buffers that native calls filled, per "
                           "collective (order of coll_gpu_colls.h)",
                           mca_coll_gpu_component.native_bytes, true);
    coll_gpu_register_pvar("staged_bytes", "Bytes copied between device and host by staging",
                           &mca_coll_gpu_component.staged_bytes, false);
    coll_gpu_register_pvar("staged_chunks",
                           "Host collectives issued by pipelined staging (one per chunk)",
                           &mca_coll_gpu_component.staged_chunks, false);
    coll_gpu_register_pvar("pageable_fallbacks",
                           "Staging buffers that are pageable because pinning host memory "
                           "failed",
                           &mca_coll_gpu_component.pageable_fallbacks, false);
    coll_gpu_register_pvar("teams_created",
                           "Transport teams set up (one per communicator that ran a native "
                           "collective or a transport check)",
                           &mca_coll_gpu_component.teams_created, false);
    (void)mca_base_component_pvar_register(
        &mca_coll_gpu_component.super.collm_version, "teams_retiring",
        "Transport teams of freed communicators not destroyed yet: they wait for their peers to "
        "be done with this rank's memory (MPI_Comm_free does not wait; MPI_Finalize does)",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_LEVEL, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        NULL, NULL, NULL, &mca_coll_gpu_component.teams_retiring);
    coll_gpu_register_pvar("accelerator_errors",
                           "Collectives that failed because an accelerator operation failed",
                           &mca_coll_gpu_component.accelerator_errors, false);
    coll_gpu_register_pvar("peer_errors",
                           "Native collectives that returned an error because the call failed on "
                           "another rank of the communicator (every rank of the call returns it)",
                           &mca_coll_gpu_component.peer_errors, false);

    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {
        const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[k];
        char help[512], name[64];
        int len;

        len = snprintf(help, sizeof(help),
                       "Blocking %s calls on device buffers (and native ones on host buffers) "
                       "per algorithm: auto (always 0), staged",
                       t->mpi_call);
        for (int a = 0; a < t->num_algs; ++a) {
            len += snprintf(help + len, sizeof(help) - (size_t)len, ", %s", t->algs[a].name);
        }
        snprintf(name, sizeof(name), "%s_algorithm_calls", t->name);
        coll_gpu_pvar_algorithms[k].values = mca_coll_gpu_component.algorithm_calls[k];
        coll_gpu_pvar_algorithms[k].count = COLL_GPU_ALG_FIRST_NATIVE + t->num_algs;
        coll_gpu_register_pvar_array(name, help, &coll_gpu_pvar_algorithms[k]);
    }
    coll_gpu_register_pvar_array("native_fallbacks",
                                 "Blocking device-buffer calls staged instead of run natively, "
                                 "per reason: native_disabled, algorithm_staged, memory, "
                                 "datatype_op, multi_node, team, config_mismatch",
                                 &coll_gpu_pvar_fallbacks);

    coll_gpu_add_help_dirs();
    return OMPI_SUCCESS;
}

static void coll_gpu_log(int level, const char *msg) {
    opal_output_verbose(level, mca_coll_gpu_component.output, "coll:gpu: %s", msg);
}

static int coll_gpu_open(void) {
    char value[32];

    mca_coll_gpu_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_gpu_component.output, mca_coll_gpu_component.verbose);
    accel_set_log(coll_gpu_log, mca_coll_gpu_component.verbose);
    coll_gpu_nonblocking_init();
    coll_gpu_reduce_op_init();
    if ((mca_coll_gpu_component.agreement_radix < 2) ||
        (mca_coll_gpu_component.agreement_radix > COLL_GPU_AGREE_MAX_RADIX)) {
        int use = (mca_coll_gpu_component.agreement_radix < 2) ? 2 : COLL_GPU_AGREE_MAX_RADIX;
        char used[16];

        snprintf(value, sizeof(value), "%d", mca_coll_gpu_component.agreement_radix);
        snprintf(used, sizeof(used), "%d", use);
        opal_show_help("help-mpi-coll-gpu.txt", "invalid parameter", true,
                       "coll_gpu_agreement_radix", value, "outside 2 .. 256", used);
        mca_coll_gpu_component.agreement_radix = use;
    }
    /* (after every parameter is final: it hashes them) */
    coll_gpu_native_tuning_load();

    if (mca_coll_gpu_component.staging_buffer_size < COLL_GPU_MIN_STAGING_BUFFER_SIZE) {
        snprintf(value, sizeof(value), "%zu", mca_coll_gpu_component.staging_buffer_size);
        opal_show_help("help-mpi-coll-gpu.txt", "invalid parameter", true,
                       "coll_gpu_staging_buffer_size", value, "below the minimum", "4096");
        mca_coll_gpu_component.staging_buffer_size = COLL_GPU_MIN_STAGING_BUFFER_SIZE;
    }
    return OMPI_SUCCESS;
}

static int coll_gpu_close(void) {
    /* the retired teams' peers finalize too: their last announcements come */
    coll_gpu_teams_drain();
    coll_gpu_setup_fini();
    coll_gpu_nonblocking_fini();
    coll_gpu_native_tuning_free();
    if (mca_coll_gpu_component.accel_opened) {
        if (NULL != mca_coll_gpu_component.accel) {
            accel_finalize();
        }
        mca_coll_gpu_component.accel = NULL;
        mca_coll_gpu_component.accel_opened = false;
    }
    if (mca_coll_gpu_component.output >= 0) {
        opal_output_close(mca_coll_gpu_component.output);
        mca_coll_gpu_component.output = -1;
    }
    return OMPI_SUCCESS;
}

/* Opens the accelerator backend on first use: MPI_Init's first communicator,
 * not ompi_info, pays for loading a driver. */
/* Communicators may be created on several threads at once (MPI_THREAD_MULTIPLE): one
 * opens the backend, the others wait for its answer. */
static pthread_mutex_t coll_gpu_accel_open_lock = PTHREAD_MUTEX_INITIALIZER;

static int coll_gpu_accel_open_locked(void);

int mca_coll_gpu_accel_open(void) {
    int rc;

    if (__atomic_load_n(&mca_coll_gpu_component.accel_opened, __ATOMIC_ACQUIRE)) {
        return (NULL != mca_coll_gpu_component.accel) ? OMPI_SUCCESS : OMPI_ERR_NOT_AVAILABLE;
    }
    pthread_mutex_lock(&coll_gpu_accel_open_lock);
    rc = coll_gpu_accel_open_locked();
    pthread_mutex_unlock(&coll_gpu_accel_open_lock);
    return rc;
}

static int coll_gpu_accel_open_locked(void) {
    static const char *const backend_names[] = {"auto", "cuda", "emulated"};
    accel_status_t status;
    const char *reason = NULL;

    if (mca_coll_gpu_component.accel_opened) {
        return (NULL != mca_coll_gpu_component.accel) ? OMPI_SUCCESS : OMPI_ERR_NOT_AVAILABLE;
    }
    status = accel_init((accel_backend_kind_t)mca_coll_gpu_component.accelerator,
                        &mca_coll_gpu_component.accel, &reason);
    if (ACCEL_OK != status) {
        mca_coll_gpu_component.accel = NULL;
        mca_coll_gpu_component.accel_unavailable_reason =
            (NULL != reason) ? reason : accel_status_string(status);
    }
    /* published once accel (or the reason) is set: readers that see it take no lock */
    __atomic_store_n(&mca_coll_gpu_component.accel_opened, true, __ATOMIC_RELEASE);
    if (ACCEL_OK != status) {
        COLL_GPU_VERBOSE(1, "disabled: %s", mca_coll_gpu_component.accel_unavailable_reason);
        if (COLL_GPU_ACCELERATOR_AUTO != mca_coll_gpu_component.accelerator) {
            opal_show_help("help-mpi-coll-gpu.txt", "accelerator unavailable", true,
                           backend_names[mca_coll_gpu_component.accelerator], COLL_GPU_HOSTNAME,
                           mca_coll_gpu_component.accel_unavailable_reason);
        }
        return OMPI_ERR_NOT_AVAILABLE;
    }
    COLL_GPU_VERBOSE(1, "accelerator backend %s selected (%d device%s)",
                     mca_coll_gpu_component.accel->name,
                     mca_coll_gpu_component.accel->device_count(),
                     1 == mca_coll_gpu_component.accel->device_count() ? "" : "s");
    return OMPI_SUCCESS;
}
