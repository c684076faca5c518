/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Scan, MPI_Exscan and their nonblocking forms on device buffers: staged (no native
 * algorithm), element-wise like allreduce.
 */
#include "coll_gpu_dispatch.h"

static const coll_gpu_ops_t coll_gpu_scan_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_reduction_stage,
};

COLL_GPU_DEFINE_ENTRIES(scan, SCAN, REDUCTION, &coll_gpu_scan_ops, NULL, NULL)
COLL_GPU_DEFINE_ENTRIES(exscan, EXSCAN, REDUCTION, &coll_gpu_scan_ops, NULL, NULL)
