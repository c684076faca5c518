/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device-driven rows (docs/allreduce.md, docs/collectives.md): the whole call is one kernel
 * per rank (the accelerator's node_collective, accel.h; the kernels in accel_node_kernels.h),
 * flags and step counters in the communicator's area (device memory), so the host launches and
 * waits once (coll_gpu_kernel_run).  Allreduce device_one_shot: every rank folds every input,
 * calls up to COLL_GPU_DEVICE_ONE_SHOT_MAX bytes (one_shot's bits); device_two_shot: each rank
 * folds its part and gathers the others', any size, in steps of the area's half inside the
 * kernel (the same bits).  MPI_Bcast, MPI_Reduce, MPI_Allgather and MPI_Reduce_scatter_block:
 * row `device`, in steps alike (direct's bits).  One node; allreduce device_hierarchical across
 * nodes (its kernel's proxy: coll_gpu_kernel.h).
 */
#include "coll_gpu_algorithms.h"

bool coll_gpu_device_rows_fit(const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    const coll_gpu_native_t *native = query->native;

    if ((COLL_GPU_NATIVE_DEVICE != query->kind) || native->kernel_unavailable ||
        !coll_gpu_native_kernel_team(native->team)) {
        COLL_GPU_WHY(why, why_len,
                     ": the device-driven rows need device memory and their area (one node of 2 "
                     "to %d ranks; device_hierarchical: up to %d nodes of as many ranks each)",
                     ACCEL_NODE_MAX_RANKS, ACCEL_NODE_MAX_NODES);
        return false;
    }
    if (query->nonblocking && (NULL == native->kernel_mem)) {
        /* the area is made by a blocking call (collective) */
        COLL_GPU_WHY(why, why_len, ": the device-driven rows' area is made by a blocking call");
        return false;
    }
    return true;
}

bool coll_gpu_allreduce_device_one_shot_fits(const coll_gpu_alg_query_t *query, char *why,
                                             size_t why_len) {
    if (!coll_gpu_device_rows_fit(query, why, why_len)) {
        return false;
    }
    if (query->bytes > COLL_GPU_DEVICE_ONE_SHOT_MAX) {
        COLL_GPU_WHY(why, why_len, ": %zu bytes > device_one_shot's %zu", query->bytes,
                     COLL_GPU_DEVICE_ONE_SHOT_MAX);
        return false;
    }
    return true;
}

bool coll_gpu_allreduce_device_hierarchical_fits(const coll_gpu_alg_query_t *query, char *why,
                                                 size_t why_len) {
    if (query->native->team->nnodes < 2) {
        COLL_GPU_WHY(why, why_len, ": device_hierarchical spans nodes (device_two_shot in one)");
        return false;
    }
    return coll_gpu_device_rows_fit(query, why, why_len);
}

bool coll_gpu_device_rows_never(const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    (void)query;
    COLL_GPU_WHY(why, why_len, ": device takes blocks of one size only (not the v-form)");
    return false;
}
