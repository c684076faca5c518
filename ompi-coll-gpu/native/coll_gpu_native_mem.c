/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory kinds' operations: the accelerator's asynchronous ones on the module's stream
 * (device), memcpy and the CPU reduction (host); the ordered n-input reduction on them. */
#include "coll_gpu_native_mem.h"

#include <string.h>

/* Device: the accelerator's asynchronous operations on the module's stream. */
static accel_status_t coll_gpu_native_device_copy(void *dst, const void *src, size_t len,
                                                  accel_stream_h stream) {
    return mca_coll_gpu_component.accel->memcpy_async(dst, src, len, stream);
}

static accel_status_t coll_gpu_native_device_reduce(void *dst, const void *const *srcs, int n,
                                                    size_t count, accel_dtype_t dtype,
                                                    accel_op_t op, accel_stream_h stream) {
    return mca_coll_gpu_component.accel->reduce(dst, srcs, n, count, dtype, op, stream);
}

static accel_status_t coll_gpu_native_device_copy2d(void *dst, size_t dpitch, const void *src,
                                                    size_t spitch, size_t len, size_t rows,
                                                    accel_stream_h stream) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    accel_status_t status = ACCEL_OK;

    if ((dpitch == len) && (spitch == len)) {
        return accel->memcpy_async(dst, src, len * rows, stream);
    }
    if ((NULL != accel->memcpy2d_async) && (rows > 1)) {
        return accel->memcpy2d_async(dst, dpitch, src, spitch, len, rows, stream);
    }
    for (size_t r = 0; (r < rows) && (ACCEL_OK == status); ++r) {
        status = accel->memcpy_async((char *)dst + r * dpitch, (const char *)src + r * spitch, len,
                                     stream);
    }
    return status;
}

static accel_status_t coll_gpu_native_device_synchronize(accel_stream_h stream) {
    return mca_coll_gpu_component.accel->stream_synchronize(stream);
}

/* Host: done when the call returns. */
static accel_status_t coll_gpu_native_host_copy(void *dst, const void *src, size_t len,
                                                accel_stream_h stream) {
    (void)stream;
    memcpy(dst, src, len);
    return ACCEL_OK;
}

static accel_status_t coll_gpu_native_host_copy2d(void *dst, size_t dpitch, const void *src,
                                                  size_t spitch, size_t len, size_t rows,
                                                  accel_stream_h stream) {
    (void)stream;
    for (size_t r = 0; r < rows; ++r) {
        memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, len);
    }
    return ACCEL_OK;
}

static accel_status_t coll_gpu_native_host_reduce(void *dst, const void *const *srcs, int n,
                                                  size_t count, accel_dtype_t dtype, accel_op_t op,
                                                  accel_stream_h stream) {
    (void)stream;
    return accel_reduce_cpu(dst, srcs, n, count, dtype, op);
}

static accel_status_t coll_gpu_native_host_synchronize(accel_stream_h stream) {
    (void)stream;
    return ACCEL_OK;
}

const coll_gpu_native_mem_t coll_gpu_native_mems[COLL_GPU_NATIVE_KINDS] = {
    [COLL_GPU_NATIVE_DEVICE] = {.name = "device",
                                .type = ACCEL_MEM_DEVICE,
                                .copy = coll_gpu_native_device_copy,
                                .copy2d = coll_gpu_native_device_copy2d,
                                .reduce = coll_gpu_native_device_reduce,
                                .synchronize = coll_gpu_native_device_synchronize},
    [COLL_GPU_NATIVE_HOST] = {.name = "host",
                              .type = ACCEL_MEM_HOST,
                              .copy = coll_gpu_native_host_copy,
                              .copy2d = coll_gpu_native_host_copy2d,
                              .reduce = coll_gpu_native_host_reduce,
                              .synchronize = coll_gpu_native_host_synchronize},
};

accel_status_t coll_gpu_native_reduce(const coll_gpu_native_mem_t *mem, void *dst,
                                      const void *const *srcs, int n, size_t count,
                                      accel_dtype_t dtype, accel_op_t op, accel_stream_h stream) {
    const void *chain[ACCEL_REDUCE_MAX_INPUTS];
    accel_status_t status;
    int done;

    if (1 == n) {
        return (dst == srcs[0]) ? ACCEL_OK
                                : mem->copy(dst, srcs[0], count * accel_dtype_size(dtype), stream);
    }
    done = (n < ACCEL_REDUCE_MAX_INPUTS) ? n : ACCEL_REDUCE_MAX_INPUTS;
    status = mem->reduce(dst, srcs, done, count, dtype, op, stream);
    /* the accumulated value stays the left operand: the order of a single n-input pass */
    while ((ACCEL_OK == status) && (done < n)) {
        int more = n - done;
        more = (more < ACCEL_REDUCE_MAX_INPUTS - 1) ? more : ACCEL_REDUCE_MAX_INPUTS - 1;
        chain[0] = dst;
        memcpy(&chain[1], &srcs[done], (size_t)more * sizeof(*srcs));
        status = mem->reduce(dst, chain, more + 1, count, dtype, op, stream);
        done += more;
    }
    return status;
}
