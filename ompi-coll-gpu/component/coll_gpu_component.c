/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/gpu component: its MCA parameters (declared in coll_gpu_params.h, registered by
 * coll_gpu_params.c), MPI_T performance variables and the accelerator backend, opened once per
 * process.
 */
#include "coll_gpu.h"
#include "coll_gpu_agreement.h"
#include "coll_gpu_alg.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_steps.h"
#include "coll_gpu_nonblocking.h"
#include "coll_gpu_presence.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_setup.h"

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

/* The traffic between nodes of the native calls (docs/algorithms.md, "Traffic between nodes"). */
static void coll_gpu_register_net_pvars(void) {
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
}

static int coll_gpu_register(void) {
    coll_gpu_register_net_pvars();
    coll_gpu_params_register(&mca_coll_gpu_component.super.collm_version);

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
    /* what the calls ask of the host, beside the device's work (per call: the difference over
     * a run of calls, divided by their number: gpucoll_perf prints it) */
    coll_gpu_register_pvar("device_submissions",
                           "Work this process put on accelerator streams: kernels, asynchronous "
                           "copies, stream memory operations, host functions, graph launches",
                           (void *)&accel_counts()->submissions, false);
    coll_gpu_register_pvar("host_stream_waits",
                           "Times this process waited on the host for accelerator work (stream "
                           "and event synchronizations, synchronous copies)",
                           (void *)&accel_counts()->host_waits, false);
    coll_gpu_register_pvar("host_signals",
                           "Signals this process sent to peers through the transport (native "
                           "steps, closing agreements, barriers)",
                           (void *)&cgt_counts()->signals, false);
    coll_gpu_register_pvar("host_peer_waits",
                           "Times this process waited on the host for a peer's transport signal",
                           (void *)&cgt_counts()->waits, false);
    coll_gpu_register_pvar("board_arrivals",
                           "Words this process gave on a call board and waited on its peers' for "
                           "(blocking device calls: which protocol the ranks run)",
                           &mca_coll_gpu_component.board_arrivals, false);
    coll_gpu_register_pvar("calls_deferred",
                           "Nonblocking and persistent calls posted while their communicator's "
                           "native setup ran (started by its first nonblocking call), queued and "
                           "posted in order once it was done",
                           &mca_coll_gpu_component.calls_deferred, false);
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
    if (mca_coll_gpu_component.staging_buffer_size < COLL_GPU_MIN_STAGING_BUFFER_SIZE) {
        snprintf(value, sizeof(value), "%zu", mca_coll_gpu_component.staging_buffer_size);
        opal_show_help("help-mpi-coll-gpu.txt", "invalid parameter", true,
                       "coll_gpu_staging_buffer_size", value, "below the minimum", "4096");
        mca_coll_gpu_component.staging_buffer_size = COLL_GPU_MIN_STAGING_BUFFER_SIZE;
    }
    /* after every parameter is final: the hash is of their values */
    coll_gpu_native_tuning_load();
    mca_coll_gpu_component.native_config_hash = coll_gpu_params_hash();
    /* before MPI_Init's modex fence: every peer reads it at its first communicator */
    if (coll_gpu_presence_possible()) {
        coll_gpu_role_t role = COLL_GPU_ROLE_OFF;
        const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;

        if (c->enable && (c->priority >= 0)) {
            /* the accelerator now rather than at the first communicator: the record says */
            if (OMPI_SUCCESS == mca_coll_gpu_accel_open()) {
                role = COLL_GPU_ROLE_DEVICE;
            } else if (c->host_buffers) {
                role = COLL_GPU_ROLE_HOST;
            }
        }
        if (!coll_gpu_presence_publish(role, c->native_config_hash)) {
            COLL_GPU_VERBOSE(1, "no modex record published: every communicator is staged");
        }
    }

    return OMPI_SUCCESS;
}

static int coll_gpu_close(void) {
    /* the retired teams' peers finalize too: their last announcements come */
    coll_gpu_teams_drain();
    coll_gpu_setup_fini();
    coll_gpu_nonblocking_fini();
    coll_gpu_native_tuning_free();
    coll_gpu_presence_fini();
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
