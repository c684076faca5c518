/* SPDX-License-Identifier: BSD-3-Clause */
/* A communicator's native context at MPI_Comm_free: one step more announced to every peer,
 * then the context and its team retired until the peers are done with them
 * (coll_gpu_native_retire, declared in coll_gpu_native_ctx.h). */
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_steps.h"

#include <stdlib.h>

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

    if (NULL != native->kernel_mem) {
        cgt_free(native->team->cgt, native->kernel_mem);
    }
    if (NULL != native->kernel_event) {
        (void)mca_coll_gpu_component.accel->event_destroy(native->kernel_event);
    }
    coll_gpu_native_kernel_stage_free(native);
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
    if (NULL != native->kernel_mem) {
        /* the device-driven calls have no closing agreement: the peers' kernels of the last one
         * may still read this rank's area */
        coll_gpu_kernel_quiesce(&native->kernel_plan);
    }
    /* Every call's agreement step already told this rank that no peer reads its scratch any
     * more; what a peer may still do is map this rank's memory and signal it (its own retiring
     * announcement): announcing one step more, and waiting for everyone's, lets the team go
     * once no peer will touch it (on every node).  Across nodes after device-driven calls too:
     * their proxies' puts and signals went over UCX (test_threads, dup and free in a loop:
     * without it a peer's endpoint failed). */
    if (((native->step > 0) || ((native->kernel_calls > 0) && (team->nnodes > 1))) &&
        !native->broken) {
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
