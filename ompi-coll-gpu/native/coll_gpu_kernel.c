/* SPDX-License-Identifier: BSD-3-Clause */
/* The device-driven rows' run (coll_gpu_kernel.h). */
#include "coll_gpu_kernel.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_team.h"

#include "opal/util/show_help.h"

#include <time.h>

/* A failure slot's word: the call's number and the error class. */
#define COLL_GPU_KERNEL_FAILED_WORD(c, cls) (((uint64_t)(c) << 8) | (uint64_t)(cls))

static unsigned coll_gpu_kernel_slot(const coll_gpu_team_t *team, int rank, uint64_t c) {
    return COLL_GPU_TEAM_SLOT_KERNEL_FAILED0(team->size) + (unsigned)((c & 1) * team->size) +
           (unsigned)rank;
}

/* Stores call c's failure in this rank's slot at every peer. */
static void coll_gpu_kernel_tell(const coll_gpu_team_t *team, uint64_t c, int cls) {
    unsigned slot = coll_gpu_kernel_slot(team, team->rank, c);

    for (int p = 0; p < team->size; ++p) {
        if (p != team->rank) {
            (void)cgt_signal(team->cgt, p, slot, COLL_GPU_KERNEL_FAILED_WORD(c, cls));
        }
    }
}

/* The lowest rank whose slot here says call c failed there (and its class), -1: none. */
static int coll_gpu_kernel_peer_failed(const coll_gpu_team_t *team, uint64_t c, int *cls_p) {
    for (int p = 0; p < team->size; ++p) {
        uint64_t word;

        if (p == team->rank) {
            continue;
        }
        word = __atomic_load_n(cgt_signal_addr(team->cgt, coll_gpu_kernel_slot(team, p, c)),
                               __ATOMIC_ACQUIRE);
        if ((word >> 8) == c) {
            *cls_p = (int)(word & 0xff);
            return p;
        }
    }
    return -1;
}

void coll_gpu_kernel_start(const coll_gpu_native_call_t *call, coll_gpu_kernel_started_t *started) {
    coll_gpu_native_t *native = call->native;

    started->number = ++native->kernel_calls;
    started->status = call->entry_status;
    if (OPAL_LIKELY(ACCEL_OK == started->status)) {
        started->status = call->alg->launch(call, true);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != started->status)) {
        coll_gpu_kernel_tell(native->team, started->number,
                             (ACCEL_ERR_NO_MEMORY == started->status) ? MPI_ERR_NO_MEM
                                                                      : MPI_ERR_OTHER);
        (void)call->alg->launch(call, false);
    }
}

int coll_gpu_kernel_finish(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                           const coll_gpu_kernel_started_t *started, accel_status_t waited) {
    accel_status_t status = (ACCEL_OK != started->status) ? started->status : waited;
    int peer, peer_class = MPI_SUCCESS;

    if ((ACCEL_OK == status) && (NULL != call->unpack)) {
        status = coll_gpu_sig_buf_unpack(call, call->unpack);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != status)) {
        return coll_gpu_accel_failed(status, call->mpi_call, comm);
    }
    peer = coll_gpu_kernel_peer_failed(call->native->team, started->number, &peer_class);
    if (OPAL_UNLIKELY(peer >= 0)) {
        coll_gpu_count_add(&mca_coll_gpu_component.peer_errors, 1);
        opal_show_help("help-mpi-coll-gpu.txt", "peer error", true, COLL_GPU_HOSTNAME,
                       call->mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm), peer,
                       peer_class);
        return peer_class;
    }
    return OMPI_SUCCESS;
}

int coll_gpu_kernel_run(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_kernel_started_t started;

    coll_gpu_kernel_start(call, &started);
    /* the call's one host wait */
    return coll_gpu_kernel_finish(comm, call, &started,
                                  mca_coll_gpu_component.accel->stream_synchronize(call->stream));
}

bool coll_gpu_kernel_peers_done(const accel_oneshot_t *plan) {
    int n = plan->nranks, me = plan->rank;
    /* a copy of this rank's flags and counters (the most ranks' worth: nothing to allocate) */
    uint32_t head[ACCEL_ONESHOT_FLAG_WORDS(ACCEL_ONESHOT_MAX_RANKS)];
    char *mine = (char *)head;

    if (ACCEL_OK != mca_coll_gpu_component.accel->memcpy(
                        head, plan->areas[me], ACCEL_ONESHOT_FLAG_WORDS(n) * sizeof(uint32_t))) {
        return true; /* nothing better to do than to go on */
    }
    for (int l = 0; l < ACCEL_ONESHOT_LANES; ++l) {
        uint32_t calls = *accel_oneshot_counter(mine, n, l);

        for (int p = 0; p < n; ++p) {
            if ((p != me) && ((int32_t)(*accel_oneshot_done(mine, n, l, p) - calls) < 0)) {
                return false;
            }
        }
    }
    return true;
}

void coll_gpu_kernel_quiesce(const accel_oneshot_t *plan) {
    struct timespec pause = {0, 10000};

    while (!coll_gpu_kernel_peers_done(plan)) {
        nanosleep(&pause, NULL);
    }
}
