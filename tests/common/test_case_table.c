/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collective table of the coll/gpu MPI tests, and the names and blocking/nonblocking forms
 * of every intercepted collective: see test_cases.h.
 */
/* strcasecmp, strncasecmp: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <strings.h>

#include "test_cases.h"

/* One row per blocking collective the case engine runs (the first group of
 * coll_gpu_colls.h); their nonblocking forms use the same row. */
static const tu_coll_info_t tu_coll_table[COLL_GPU_ALLTOALLW] = {
    [COLL_GPU_ALLGATHER] =
        {
            .shape = TU_SHAPE_GATHER,
            .significant = TU_SIGNIFICANT_ALL,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_allgather_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, allgather_algorithm),
            .device_row = 5,
        },
    [COLL_GPU_ALLGATHERV] =
        {
            .shape = TU_SHAPE_GATHER,
            .significant = TU_SIGNIFICANT_ALL,
            .vector = true,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_allgatherv_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, allgatherv_algorithm),
        },
    [COLL_GPU_ALLREDUCE] =
        {
            .shape = TU_SHAPE_REDUCE,
            .significant = TU_SIGNIFICANT_ALL,
            .reduction = true,
            .in_place = true,
            .pipelines = true,
            .algorithm_cvar = "coll_gpu_allreduce_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, allreduce_algorithm),
        },
    [COLL_GPU_ALLTOALL] =
        {
            .shape = TU_SHAPE_ALLTOALL,
            .significant = TU_SIGNIFICANT_ALL,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_alltoall_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, alltoall_algorithm),
        },
    [COLL_GPU_ALLTOALLV] =
        {
            .shape = TU_SHAPE_ALLTOALL,
            .significant = TU_SIGNIFICANT_ALL,
            .vector = true,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_alltoallv_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, alltoallv_algorithm),
            .native_when_empty = true,
        },
    [COLL_GPU_BCAST] =
        {
            .shape = TU_SHAPE_BCAST,
            .significant = TU_SIGNIFICANT_ONE,
            .rooted = true,
            .pipelines = true,
            .pipelines_any_type = true,
            .algorithm_cvar = "coll_gpu_bcast_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, bcast_algorithm),
            .device_row = 4,
        },
    [COLL_GPU_EXSCAN] =
        {
            .shape = TU_SHAPE_REDUCE,
            .significant = TU_SIGNIFICANT_ALL,
            .reduction = true,
            .in_place = true,
            .pipelines = true,
        },
    [COLL_GPU_GATHER] =
        {
            .shape = TU_SHAPE_GATHER,
            .significant = TU_SIGNIFICANT_ROOT_RECV,
            .rooted = true,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_gather_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, gather_algorithm),
        },
    [COLL_GPU_GATHERV] =
        {
            .shape = TU_SHAPE_GATHER,
            .significant = TU_SIGNIFICANT_ROOT_RECV,
            .vector = true,
            .rooted = true,
            .in_place = true,
        },
    [COLL_GPU_REDUCE] =
        {
            .shape = TU_SHAPE_REDUCE,
            .significant = TU_SIGNIFICANT_ROOT_RECV,
            .reduction = true,
            .rooted = true,
            .in_place = true,
            .pipelines = true,
            .algorithm_cvar = "coll_gpu_reduce_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, reduce_algorithm),
            .device_row = 5,
        },
    [COLL_GPU_REDUCE_SCATTER] =
        {
            .shape = TU_SHAPE_REDUCE_SCATTER,
            .significant = TU_SIGNIFICANT_ALL,
            .vector = true,
            .reduction = true,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_reduce_scatter_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, reduce_scatter_algorithm),
        },
    [COLL_GPU_REDUCE_SCATTER_BLOCK] =
        {
            .shape = TU_SHAPE_REDUCE_SCATTER,
            .significant = TU_SIGNIFICANT_ALL,
            .reduction = true,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_reduce_scatter_block_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, reduce_scatter_block_algorithm),
            .device_row = 5,
        },
    [COLL_GPU_SCAN] =
        {
            .shape = TU_SHAPE_REDUCE,
            .significant = TU_SIGNIFICANT_ALL,
            .reduction = true,
            .in_place = true,
            .pipelines = true,
        },
    [COLL_GPU_SCATTER] =
        {
            .shape = TU_SHAPE_SCATTER,
            .significant = TU_SIGNIFICANT_ROOT_SEND,
            .rooted = true,
            .in_place = true,
            .algorithm_cvar = "coll_gpu_scatter_algorithm",
            .algorithm_offset = offsetof(tu_gpu_config_t, scatter_algorithm),
        },
    [COLL_GPU_SCATTERV] =
        {
            .shape = TU_SHAPE_SCATTER,
            .significant = TU_SIGNIFICANT_ROOT_SEND,
            .vector = true,
            .rooted = true,
            .in_place = true,
        },
    [COLL_GPU_REDUCE_LOCAL] =
        {
            .shape = TU_SHAPE_REDUCE_LOCAL,
            .significant = TU_SIGNIFICANT_BOTH,
            .reduction = true,
            .pipelines = true,
        },
};

static const char *const tu_coll_names[COLL_GPU_NUM_COLLS] = {
#define TU_COLL_NAME(id, name, ...) name,
    COLL_GPU_FOREACH_COLL(TU_COLL_NAME)
#undef TU_COLL_NAME
};

const char *tu_coll_name(coll_gpu_coll_t coll) {
    return coll < COLL_GPU_NUM_COLLS ? tu_coll_names[coll] : "?";
}

/* coll_gpu_colls.h: two groups, each its blocking collectives, then their i-variants in the
 * same order (reduce_local has none); then the persistent forms of both groups. */
bool tu_coll_is_persistent(coll_gpu_coll_t coll) { return coll >= COLL_GPU_ALLGATHER_INIT; }

bool tu_coll_is_nonblocking(coll_gpu_coll_t coll) {
    return (coll >= COLL_GPU_IALLGATHER && coll < COLL_GPU_ALLTOALLW) ||
           (coll >= COLL_GPU_IALLTOALLW && coll < COLL_GPU_ALLGATHER_INIT);
}

bool tu_coll_is_blocking(coll_gpu_coll_t coll) {
    return !tu_coll_is_nonblocking(coll) && !tu_coll_is_persistent(coll);
}

coll_gpu_coll_t tu_coll_blocking(coll_gpu_coll_t coll) { return coll_gpu_coll_blocking(coll); }

coll_gpu_coll_t tu_coll_nonblocking(coll_gpu_coll_t coll) {
    return coll_gpu_coll_nonblocking(coll);
}

coll_gpu_coll_t tu_coll_persistent(coll_gpu_coll_t coll) { return coll_gpu_coll_persistent(coll); }

bool tu_coll_case_supported(coll_gpu_coll_t coll) {
    return tu_coll_blocking(coll) < COLL_GPU_ALLTOALLW;
}

int tu_coll_from_name(const char *name) {
    if (0 == strncasecmp(name, "MPI_", 4)) {
        name += 4;
    }
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        if (0 == strcasecmp(name, tu_coll_names[coll] + 4)) {
            return coll;
        }
    }
    return -1;
}

const tu_coll_info_t *tu_coll_info(coll_gpu_coll_t coll) {
    int base = (int)tu_coll_blocking(coll);
    return (base >= 0 && base < COLL_GPU_ALLTOALLW) ? &tu_coll_table[base] : NULL;
}

bool tu_coll_is_reduction(coll_gpu_coll_t coll) {
    const tu_coll_info_t *info = tu_coll_info(coll);
    return NULL != info && info->reduction;
}

bool tu_coll_has_root(coll_gpu_coll_t coll) {
    const tu_coll_info_t *info = tu_coll_info(coll);
    return NULL != info && info->rooted;
}

bool tu_coll_allows_in_place(coll_gpu_coll_t coll) {
    const tu_coll_info_t *info = tu_coll_info(coll);
    return NULL == info || info->in_place;
}

bool tu_coll_pipelines(coll_gpu_coll_t coll) {
    const tu_coll_info_t *info = tu_coll_info(coll);
    return tu_coll_is_blocking(coll) && NULL != info && info->pipelines;
}

void tu_coll_buffers_used(coll_gpu_coll_t coll, bool is_root, bool in_place, bool *send_used_p,
                          bool *recv_used_p) {
    const tu_coll_info_t *info = tu_coll_info(coll);

    switch (NULL != info ? info->significant : TU_SIGNIFICANT_ALL) {
    case TU_SIGNIFICANT_BOTH:
        *send_used_p = *recv_used_p = true;
        break;
    case TU_SIGNIFICANT_ONE:
        *send_used_p = is_root;
        *recv_used_p = !is_root;
        break;
    case TU_SIGNIFICANT_ROOT_RECV:
        *send_used_p = !(is_root && in_place);
        *recv_used_p = is_root;
        break;
    case TU_SIGNIFICANT_ROOT_SEND:
        *send_used_p = is_root;
        *recv_used_p = !(is_root && in_place);
        break;
    default:
        *send_used_p = !in_place;
        *recv_used_p = true;
        break;
    }
}
