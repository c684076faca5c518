/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, one-shot, device-driven: the whole call is one kernel (the accelerator's
 * allreduce_oneshot, accel.h): each rank's kernel copies its input into its area's half of the
 * call's parity, raises its ready flag at every peer, waits for theirs, reduces every rank's
 * half in rank order into the receive buffer (one_shot's order and bits) and raises its done
 * flags; the call counters live in the area (device memory), so the host launches and waits
 * once (coll_gpu_kernel_run).  Calls up to the area's half, in one node.
 */
#include "coll_gpu_algorithms.h"

accel_status_t coll_gpu_allreduce_device_one_shot_launch(const coll_gpu_native_call_t *call,
                                                         bool with_data) {
    return mca_coll_gpu_component.accel->allreduce_oneshot(
        &call->native->kernel_plan, with_data ? call->sbuf : NULL, with_data ? call->rbuf : NULL,
        call->count, call->dtype, call->op, call->stream);
}

bool coll_gpu_allreduce_device_one_shot_fits(const coll_gpu_alg_query_t *query, char *why,
                                             size_t why_len) {
    const coll_gpu_native_t *native = query->native;

    if ((COLL_GPU_NATIVE_DEVICE != query->kind) || native->kernel_unavailable ||
        !coll_gpu_native_kernel_team(native->team)) {
        COLL_GPU_WHY(why, why_len,
                     ": device_one_shot needs device memory and its area (one node, 2 to %d "
                     "ranks)",
                     ACCEL_ONESHOT_MAX_RANKS);
        return false;
    }
    if (query->nonblocking && (NULL == native->kernel_mem)) {
        /* its area is made by a blocking call (collective) */
        COLL_GPU_WHY(why, why_len, ": device_one_shot's area is made by a blocking call first");
        return false;
    }
    if (query->bytes > COLL_GPU_KERNEL_HALF) {
        COLL_GPU_WHY(why, why_len, ": %zu bytes > device_one_shot's %zu", query->bytes,
                     COLL_GPU_KERNEL_HALF);
        return false;
    }
    return true;
}
