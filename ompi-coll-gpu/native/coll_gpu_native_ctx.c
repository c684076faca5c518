/* SPDX-License-Identifier: BSD-3-Clause */
/* A communicator's native context: its setup (parameters compared, team, scratch of each
 * kind), at its creation or its first native call; its retirement at MPI_Comm_free is
 * coll_gpu_native_retire.c. */
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_board.h"
#include "coll_gpu_setup.h"

#include <stdlib.h>

#define COLL_GPU_NATIVE_ALIGN 256

_Static_assert(COLL_GPU_FALLBACK_NUM <= COLL_GPU_MAX_FALLBACKS, "COLL_GPU_MAX_FALLBACKS too small");
const char *const coll_gpu_fallback_names[COLL_GPU_FALLBACK_NUM] = {
#define COLL_GPU_FALLBACK_NAME(id, name) name,
    COLL_GPU_FOREACH_FALLBACK(COLL_GPU_FALLBACK_NAME)
#undef COLL_GPU_FALLBACK_NAME
};

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

void coll_gpu_native_free(coll_gpu_native_t *native) {
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

void coll_gpu_native_kernel_stage_free(coll_gpu_native_t *native) {
    coll_gpu_team_t *team = native->team;

    for (int j = 0; (NULL != native->kernel_stage_peers) && (j < team->nnodes); ++j) {
        if (NULL != native->kernel_stage_peers[j]) {
            cgt_peer_unmap(team->cgt, native->kernel_stage_peers[j]);
        }
    }
    free(native->kernel_stage_peers);
    native->kernel_stage_peers = NULL;
    if (NULL != native->kernel_stage_reg) {
        cgt_deregister(team->cgt, native->kernel_stage_reg);
        native->kernel_stage_reg = NULL;
    }
    if (NULL != native->kernel_plan.stage) {
        (void)mca_coll_gpu_component.accel->mem_free(native->kernel_plan.stage);
        native->kernel_plan.stage = NULL;
    }
}

/* Across nodes (collective, ok: this rank's area so far): the plan's stage, registered, its
 * handle given to every rank and the other nodes' ranks of this index mapped; whether all of
 * it went (the caller agrees on it). */
static int coll_gpu_native_kernel_stage(struct ompi_communicator_t *comm, coll_gpu_native_t *native,
                                        int ok) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_team_t *team = native->team;
    accel_node_plan_t *plan = &native->kernel_plan;
    size_t bytes = accel_node_stage_bytes(plan->half, plan->nranks, plan->nnodes), len = 0;
    /* per rank: the handle's length, then the handle (length 0: none) */
    const size_t slot = sizeof(uint64_t) + CGT_PACKED_MAX;
    char *handles = calloc((size_t)team->size + 1, slot);
    void *stage = NULL;

    native->kernel_stage_peers = calloc((size_t)team->nnodes, sizeof(cgt_rmem_t *));
    ok = ok && (NULL != handles) && (NULL != native->kernel_stage_peers) &&
         (ACCEL_OK == accel->mem_alloc(ACCEL_MEM_HOST_PINNED, bytes, &stage));
    if (ok) {
        memset(stage, 0, bytes);
        plan->stage = stage;
        ok = (CGT_OK == cgt_register(team->cgt, stage, bytes, &native->kernel_stage_reg)) &&
             (CGT_OK ==
              cgt_reg_pack(team->cgt, native->kernel_stage_reg, handles + sizeof(uint64_t), &len));
    }
    if (NULL != handles) {
        uint64_t mine = ok ? (uint64_t)len : 0;

        memcpy(handles, &mine, sizeof(mine));
        /* every rank's handle (the exchange is collective: every rank makes it) */
        if (OMPI_SUCCESS != coll_gpu_setup_allgather(comm, handles, handles + slot, slot)) {
            ok = 0;
        }
        for (int j = 0; ok && (j < team->nnodes); ++j) {
            int peer = team->node_peers[j];
            const char *theirs = handles + slot * (size_t)(peer + 1);
            uint64_t theirs_len;

            memcpy(&theirs_len, theirs, sizeof(theirs_len));
            ok = (j == team->node) ||
                 ((0 != theirs_len) &&
                  (CGT_OK == cgt_peer_map(team->cgt, peer, theirs + sizeof(uint64_t),
                                          (size_t)theirs_len, &native->kernel_stage_peers[j])));
        }
    } else {
        /* no room for the handles: the exchange still takes this rank's part, an empty one
         * (no memory for that either: the agreement after it fails every rank) */
        char none[sizeof(uint64_t) + CGT_PACKED_MAX] = {0};
        char *all = calloc((size_t)team->size, sizeof(none));

        if (NULL != all) {
            (void)coll_gpu_setup_allgather(comm, none, all, sizeof(none));
        }
        free(all);
        ok = 0;
    }
    free(handles);
    return ok;
}

/* The device-driven rows' area (coll_gpu_native_t.kernel_plan), made by the first blocking call
 * that runs one (collective; every rank gets there alike): only communicators that use those
 * rows pay for it, and its flags are zeroed by that call, not by a setup running beside host
 * calls. */
static void coll_gpu_native_kernel_area_create(struct ompi_communicator_t *comm,
                                               coll_gpu_native_t *native) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_team_t *team = native->team;
    accel_node_plan_t *plan = &native->kernel_plan;
    size_t head = accel_node_head_bytes(team->local_size);
    void *zeros = calloc(1, head);
    int ok;

    if (!coll_gpu_native_kernel_team(team)) {
        free(zeros);
        return;
    }
    ok = (NULL != zeros) && (NULL != accel->node_collective) &&
         (CGT_OK == cgt_alloc(team->cgt, head + 2 * COLL_GPU_KERNEL_HALF, ACCEL_MEM_DEVICE,
                              &native->kernel_mem));
    if (!ok) {
        native->kernel_mem = NULL;
    }
    /* the node's ranks; across nodes the other nodes' proxies put into the area too, which
     * needs a transport that reaches device memory there, and the proxy's words */
    plan->nranks = team->local_size;
    plan->rank = team->local_rank;
    plan->half = COLL_GPU_KERNEL_HALF;
    plan->nnodes = team->nnodes;
    plan->node = team->node;
    plan->stage = NULL;
    for (int k = 0; ok && (k < team->local_size); ++k) {
        plan->areas[k] = cgt_rmem_ptr(cgt_mem_peer(native->kernel_mem, team->local_ranks[k]));
        ok = (NULL != plan->areas[k]);
    }
    if (team->nnodes > 1) {
        ok = coll_gpu_native_kernel_stage(comm, native, ok);
    }
    /* flags and call counters start at 0, on every rank before any kernel writes a peer's */
    ok = ok && (ACCEL_OK == accel->memcpy(plan->areas[plan->rank], zeros, head));
    free(zeros);
    if ((OMPI_SUCCESS != coll_gpu_native_agree(comm, &ok)) || !ok) {
        if (NULL != native->kernel_mem) {
            cgt_free(team->cgt, native->kernel_mem); /* no kernel ran in it */
            native->kernel_mem = NULL;
        }
        coll_gpu_native_kernel_stage_free(native);
        COLL_GPU_VERBOSE(1, "%s: no area for the device-driven algorithms", comm->c_name);
        return;
    }
    if (ACCEL_OK != accel->event_create(&native->kernel_event)) {
        native->kernel_event = NULL;
    }
    COLL_GPU_VERBOSE(1, "%s: device-driven algorithms' area 2 x %zu bytes", comm->c_name,
                     COLL_GPU_KERNEL_HALF);
}

bool coll_gpu_native_kernel_area(struct ompi_communicator_t *comm, coll_gpu_native_t *native) {
    if ((NULL == native->kernel_mem) && !native->kernel_unavailable) {
        coll_gpu_native_kernel_area_create(comm, native);
        native->kernel_unavailable = (NULL == native->kernel_mem);
    }
    return NULL != native->kernel_mem;
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

bool coll_gpu_native_undecided(const mca_coll_gpu_module_t *module) {
    const coll_gpu_native_t *native = module->native;

    if (module->params_differ) {
        return false;
    }
    return (NULL == native)
               ? (0 == module->native_unavailable)
               : (!native->broken && (NULL == native->scratch[COLL_GPU_NATIVE_DEVICE].mem) &&
                  !native->scratch[COLL_GPU_NATIVE_DEVICE].unavailable);
}

/* The native context and device scratch; with_area: the device-driven rows' area too (a
 * nonblocking call cannot make it). */
static void coll_gpu_native_setup_device(mca_coll_gpu_module_t *module,
                                         struct ompi_communicator_t *comm, bool with_area) {
    coll_gpu_fallback_t reason = COLL_GPU_FALLBACK_TEAM;
    coll_gpu_native_t *native;
    bool ready = coll_gpu_native_get(module, comm, COLL_GPU_NATIVE_DEVICE, &native, &reason);

    if (ready && with_area && coll_gpu_native_kernel_team(native->team)) {
        (void)coll_gpu_native_kernel_area(comm, native);
    }
    COLL_GPU_VERBOSE(1, "%s: native setup at its first nonblocking call: %s", comm->c_name,
                     ready ? "ready" : coll_gpu_fallback_names[reason]);
}

static void coll_gpu_native_setup_scratch(mca_coll_gpu_module_t *module,
                                          struct ompi_communicator_t *comm) {
    coll_gpu_native_setup_device(module, comm, false);
}

static void coll_gpu_native_setup_scratch_area(mca_coll_gpu_module_t *module,
                                               struct ompi_communicator_t *comm) {
    coll_gpu_native_setup_device(module, comm, true);
}

void coll_gpu_native_setup_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 bool with_area) {
    if (!coll_gpu_setup_task_start(module, comm,
                                   with_area ? coll_gpu_native_setup_scratch_area
                                             : coll_gpu_native_setup_scratch)) {
        /* no memory for the task's stack: the same collectives here (the peers' tasks meet
         * them) */
        coll_gpu_native_setup_device(module, comm, with_area);
    }
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
