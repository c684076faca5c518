/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/gpu module: one per communicator.  It saves the functions of the
 * module selected before it for every collective it wraps (retaining those
 * modules, as coll/cuda does in Open MPI 4.1) and releases them when the
 * communicator goes.
 */
#include "coll_gpu.h"

#include <string.h>

#include "coll_gpu_board.h"
#include "coll_gpu_deferral.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_native_async.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_presence.h"
#include "coll_gpu_setup.h"
#include "coll_gpu_team.h"
#include "ompi/runtime/mpiruntime.h"

/* Every collective coll/gpu wraps, by its field name in the coll tables. */

static void mca_coll_gpu_module_construct(mca_coll_gpu_module_t *module) {
    memset(&module->prev, 0, sizeof(module->prev));
    module->staging = NULL;
    module->stream = NULL;
    module->team = NULL;
    module->team_failed = false;
    module->native = NULL;
    module->native_unavailable = 0;
    module->setup_task = NULL;
    module->setup_tasks_everywhere = false;
    module->deferral = NULL;
    module->async = NULL;
    module->call_seq = 0;
    module->board_host_local = 0;
    module->board_host = &module->board_host_local;
    module->board_done = 0;
    module->board_outcome = 0;
    module->board = NULL;
    module->params_differ = false;
    module->params_told = false;
    module->kinds_promised = false;
    module->current_call = "MPI collective";
}

static void mca_coll_gpu_module_destruct(mca_coll_gpu_module_t *module) {
    /* a setup task retains the communicator, so it is done before the communicator goes;
     * except where Open MPI disables the module of a communicator it could not create */
    coll_gpu_setup_task_finish(module);
#define COLL_GPU_RELEASE_PREV(ID, mpi_name, name, FAMILY, FORM)                                    \
    if (NULL != module->prev.coll_##name##_module) {                                               \
        OBJ_RELEASE(module->prev.coll_##name##_module);                                            \
        module->prev.coll_##name##_module = NULL;                                                  \
    }
    COLL_GPU_FOREACH_COLL(COLL_GPU_RELEASE_PREV)
    COLL_GPU_FOREACH_ORDERED(COLL_GPU_RELEASE_PREV)
#undef COLL_GPU_RELEASE_PREV

    /* its queued native nonblocking calls run to the end first: they use the scratch */
    coll_gpu_native_async_destroy(module);
    coll_gpu_staging_destroy(module->staging);
    module->staging = NULL;
    coll_gpu_board_destroy(module);
    if (NULL != module->stream) {
        /* its device-driven calls' kernels are done with the peers' areas */
        (void)mca_coll_gpu_component.accel->stream_synchronize(module->stream);
    }
    /* the scratch is the team's memory: both go once the peers are done with them */
    coll_gpu_native_retire(module->native, module->team);
    module->native = NULL;
    module->team = NULL;
    if (NULL != module->stream) {
        (void)mca_coll_gpu_component.accel->stream_destroy(module->stream);
        module->stream = NULL;
    }
}

OBJ_CLASS_INSTANCE(mca_coll_gpu_module_t, mca_coll_base_module_t, mca_coll_gpu_module_construct,
                   mca_coll_gpu_module_destruct);

/* Every thread level is supported.  Under MPI_THREAD_MULTIPLE (enable_mpi_threads) the
 * process-wide state is locked or atomic (the team list and its progress callback, the
 * counters, the op cache, the accelerator's opening); a team that reaches peers over UCX
 * locks itself against the progress callback of other threads and runs its worker in
 * UCS_THREAD_MODE_MULTI.  Per-communicator state needs no lock: MPI orders the collectives
 * of one communicator. */
int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
    (void)enable_progress_threads;
    mca_coll_gpu_component.thread_multiple = enable_mpi_threads;
    mca_coll_gpu_component.thread_level =
        enable_mpi_threads ? MPI_THREAD_MULTIPLE : ompi_mpi_thread_provided;
    COLL_GPU_VERBOSE(10, "init: MPI_THREAD_MULTIPLE %s", enable_mpi_threads ? "yes" : "no");
    return OMPI_SUCCESS;
}

/* Says once per process, on rank 0 of the first communicator where it happens, that a member
 * does not run coll/gpu alike (coll_gpu_presence_alike): a fact of the job, not of one call.
 * (opal_output, not a help message: Open MPI 4.1's mpirun loses some of those sent inside
 * MPI_Init.) */
static void coll_gpu_presence_tell(struct ompi_communicator_t *comm, int peer, const char *why,
                                   bool params) {
    static bool told = false;

    COLL_GPU_VERBOSE(1,
                     "%s: rank %d does not run coll/gpu alike (%s): its device collectives "
                     "are staged, one host collective each",
                     comm->c_name, peer, why);
    if ((0 != ompi_comm_rank(comm)) || __atomic_exchange_n(&told, true, __ATOMIC_RELAXED)) {
        return;
    }
    if (params) {
        opal_output(0,
                    "coll:gpu: %s: the ranks were given different coll_gpu parameters or tuning "
                    "rules for the native algorithms: its device collectives are staged (rank %d's "
                    "differ from rank 0's; one host collective each; said once per process)",
                    comm->c_name, peer);
    } else {
        opal_output(0,
                    "coll:gpu: %s: rank %d does not run coll/gpu as this process does (%s): its "
                    "device collectives are staged, correct but slower (one host collective each; "
                    "said once per process)",
                    comm->c_name, peer, why);
    }
}

/*
 * Saves the previous module's function for every collective this module
 * wraps.  A collective nobody below implements (libnbc excluded, say) is left
 * to Open MPI: this module does not install a wrapper for it.
 */
static int mca_coll_gpu_module_enable(mca_coll_base_module_t *base,
                                      struct ompi_communicator_t *comm) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    const char *why = NULL;
    bool params = false;
    int peer = -1;

#define COLL_GPU_SAVE_PREV(ID, mpi_name, name, FAMILY, FORM)                                       \
    if (NULL != comm->c_coll->coll_##name && NULL != comm->c_coll->coll_##name##_module) {         \
        module->prev.coll_##name = comm->c_coll->coll_##name;                                      \
        module->prev.coll_##name##_module = comm->c_coll->coll_##name##_module;                    \
        OBJ_RETAIN(module->prev.coll_##name##_module);                                             \
    } else {                                                                                       \
        module->super.coll_##name = NULL;                                                          \
    }
    COLL_GPU_FOREACH_COLL(COLL_GPU_SAVE_PREV)
    COLL_GPU_FOREACH_ORDERED(COLL_GPU_SAVE_PREV)
#undef COLL_GPU_SAVE_PREV

    /* The memory-kind check and nothing else relies on allreduce below. */
    if (NULL == module->prev.coll_allreduce) {
        COLL_GPU_VERBOSE(1, "no allreduce below coll/gpu on communicator %s: not enabled",
                         comm->c_name);
        return OMPI_ERR_NOT_FOUND;
    }
    if (OMPI_COMM_IS_INTER(comm)) {
        /* (an intercommunicator's device calls are staged, each rank's alone: no board, no
         * native context) */
        return OMPI_SUCCESS;
    }
    if (!coll_gpu_presence_alike(comm, &peer, &why, &params)) {
        /* a member that would never answer the setup's messages, or would answer them with
         * another protocol: each device call is one host collective on staged copies, which
         * meets whatever that member calls */
        module->params_differ = true;
        coll_gpu_presence_tell(comm, peer, why, params);
        return OMPI_SUCCESS;
    }
    coll_gpu_native_setup_at_create(module, comm);
    return OMPI_SUCCESS;
}

static int mca_coll_gpu_module_disable(mca_coll_base_module_t *base,
                                       struct ompi_communicator_t *comm) {
    (void)comm;
    /* Idempotent: the destructor releases whatever is still held. */
    mca_coll_gpu_module_destruct((mca_coll_gpu_module_t *)base);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority) {
    mca_coll_gpu_module_t *module;
    bool host_only = false;

    if (!mca_coll_gpu_component.enable || mca_coll_gpu_component.priority < 0) {
        return NULL;
    }
    if (OMPI_SUCCESS != mca_coll_gpu_accel_open()) {
        /* No accelerator: no device buffers.  Host-buffer mode still runs the blocking
         * collectives that have a native algorithm; everything else stays Open MPI's
         * (intercommunicators': no native algorithm takes them). */
        host_only = mca_coll_gpu_component.host_buffers && !OMPI_COMM_IS_INTER(comm);
        if (!host_only) {
            return NULL;
        }
    }

    module = OBJ_NEW(mca_coll_gpu_module_t);
    if (NULL == module) {
        return NULL;
    }
    *priority = mca_coll_gpu_component.priority;
    module->super.coll_module_enable = mca_coll_gpu_module_enable;
    module->super.coll_module_disable = mca_coll_gpu_module_disable;

    if (host_only) {
        module->super.coll_allreduce = mca_coll_gpu_allreduce_host_only;
        module->super.coll_reduce_scatter_block = mca_coll_gpu_reduce_scatter_block_host_only;
        module->super.coll_allgather = mca_coll_gpu_allgather_host_only;
        module->super.coll_bcast = mca_coll_gpu_bcast_host_only;
        module->super.coll_reduce = mca_coll_gpu_reduce_host_only;
        module->super.coll_gather = mca_coll_gpu_gather_host_only;
        module->super.coll_scatter = mca_coll_gpu_scatter_host_only;
        module->super.coll_allgatherv = mca_coll_gpu_allgatherv_host_only;
        module->super.coll_reduce_scatter = mca_coll_gpu_reduce_scatter_host_only;
        module->super.coll_alltoall = mca_coll_gpu_alltoall_host_only;
        module->super.coll_alltoallv = mca_coll_gpu_alltoallv_host_only;
        return &module->super;
    }
#define COLL_GPU_INSTALL(ID, mpi_name, name, FAMILY, FORM)                                         \
    module->super.coll_##name = mca_coll_gpu_##name;
    COLL_GPU_FOREACH_COLL(COLL_GPU_INSTALL)
    COLL_GPU_FOREACH_ORDERED(COLL_GPU_INSTALL)
#undef COLL_GPU_INSTALL

    return &module->super;
}
