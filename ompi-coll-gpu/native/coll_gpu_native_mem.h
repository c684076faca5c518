/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory kinds a native call runs in (device, host): their copy, reduce and synchronize
 * operations, so that the algorithms are written once for both. */
#ifndef COLL_GPU_NATIVE_MEM_H
#define COLL_GPU_NATIVE_MEM_H

#include "coll_gpu.h"

BEGIN_C_DECLS

/*
 * The memory a native call runs in: device buffers (device scratch mapped by IPC, the
 * accelerator's copies and kernels on the module's stream) or host buffers
 * (coll_gpu_host_buffers: host scratch in posix segments, memcpy and the CPU reduction, which
 * is the kernels' op code; no accelerator needed).  The algorithms are written once against
 * these operations.
 */
typedef enum {
    COLL_GPU_NATIVE_DEVICE = 0,
    COLL_GPU_NATIVE_HOST = 1,
    COLL_GPU_NATIVE_KINDS
} coll_gpu_native_kind_t;

typedef struct coll_gpu_native_mem {
    const char *name;      /* "device", "host" */
    accel_mem_type_t type; /* of the scratch */
    accel_status_t (*copy)(void *dst, const void *src, size_t len, accel_stream_h stream);
    /* rows rows of len bytes, row r from src + r * spitch to dst + r * dpitch (len <= both
     * pitches): one operation where the accelerator has one (accel memcpy2d_async), else a
     * copy per row; one copy where the rows are contiguous on both sides */
    accel_status_t (*copy2d)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t len,
                             size_t rows, accel_stream_h stream);
    /* dst = srcs[0] op ... op srcs[n-1], 2 <= n <= ACCEL_REDUCE_MAX_INPUTS */
    accel_status_t (*reduce)(void *dst, const void *const *srcs, int n, size_t count,
                             accel_dtype_t dtype, accel_op_t op, accel_stream_h stream);
    /* everything queued on stream has completed (a no-op on the host) */
    accel_status_t (*synchronize)(accel_stream_h stream);
} coll_gpu_native_mem_t;

extern const coll_gpu_native_mem_t coll_gpu_native_mems[COLL_GPU_NATIVE_KINDS];

/*
 * dst = srcs[0] op srcs[1] op ... op srcs[n-1], strictly left to right whatever n: calls of at
 * most ACCEL_REDUCE_MAX_INPUTS inputs chained through dst (dst = in0..in15, then dst = dst,
 * in16..in30 ...).  n == 1 is a copy.  Queued on stream.
 */
accel_status_t coll_gpu_native_reduce(const coll_gpu_native_mem_t *mem, void *dst,
                                      const void *const *srcs, int n, size_t count,
                                      accel_dtype_t dtype, accel_op_t op, accel_stream_h stream);

END_C_DECLS

#endif /* COLL_GPU_NATIVE_MEM_H */
