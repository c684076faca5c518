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

COLL_GPU_DEFINE_ENTRY(scan, SCAN, REDUCTION, BLOCKING, &coll_gpu_scan_ops, NULL)
COLL_GPU_DEFINE_ENTRY(exscan, EXSCAN, REDUCTION, BLOCKING, &coll_gpu_scan_ops, NULL)
COLL_GPU_DEFINE_ENTRY(iscan, ISCAN, REDUCTION, NONBLOCKING, &coll_gpu_scan_ops, NULL)
COLL_GPU_DEFINE_ENTRY(iexscan, IEXSCAN, REDUCTION, NONBLOCKING, &coll_gpu_scan_ops, NULL)
COLL_GPU_DEFINE_ENTRY(scan_init, SCAN_INIT, REDUCTION, PERSISTENT, &coll_gpu_scan_ops, NULL)
COLL_GPU_DEFINE_ENTRY(exscan_init, EXSCAN_INIT, REDUCTION, PERSISTENT, &coll_gpu_scan_ops, NULL)
