/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * accel_cuda_reduce(): the reduce() of the CUDA backend.  Checks the
 * arguments, finds the kernel of (op, dtype) in its family, sizes the grid
 * and launches it on the caller's stream through the statically linked
 * runtime (a CUstream is a cudaStream_t).  Nothing here synchronizes.
 */
#include "accel_cuda_reduce.h"

#define ACCEL_CUDA_REDUCE_MAX_DEVICES 64

/* SM count per device ordinal, asked once (0: not yet). */
static int accel_cuda_reduce_sms[ACCEL_CUDA_REDUCE_MAX_DEVICES];

static const void *accel_cuda_reduce_find(accel_op_t op, accel_dtype_t dtype) {
    switch (dtype) {
    case ACCEL_DT_FLOAT16:
    case ACCEL_DT_BFLOAT16:
    case ACCEL_DT_FLOAT:
    case ACCEL_DT_DOUBLE:
        return accel_cuda_reduce_find_float(op, dtype);
    case ACCEL_DT_COMPLEX_FLOAT:
    case ACCEL_DT_COMPLEX_DOUBLE:
        return accel_cuda_reduce_find_complex(op, dtype);
    case ACCEL_DT_SHORT_INT:
    case ACCEL_DT_2INT:
    case ACCEL_DT_LONG_INT:
    case ACCEL_DT_FLOAT_INT:
    case ACCEL_DT_DOUBLE_INT:
        return accel_cuda_reduce_find_pair(op, dtype);
    case ACCEL_DT_BOOL:
        return accel_cuda_reduce_find_bit(op, dtype);
    default: /* the integer types */
        return ((op >= ACCEL_OP_LAND) && (op <= ACCEL_OP_BXOR))
                   ? accel_cuda_reduce_find_bit(op, dtype)
                   : accel_cuda_reduce_find_int(op, dtype);
    }
}

/* SMs of the current device: the grid never needs more than a few blocks per SM. */
static accel_status_t accel_cuda_reduce_sm_count(int *sms_p) {
    int device = 0, sms = 0;
    cudaError_t err;

    err = cudaGetDevice(&device);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return accel_set_error("cudaGetDevice", cudaGetErrorName(err), (int)err);
    }
    if ((device >= 0) && (device < ACCEL_CUDA_REDUCE_MAX_DEVICES)) {
        sms = __atomic_load_n(&accel_cuda_reduce_sms[device], __ATOMIC_RELAXED);
    }
    if (sms <= 0) {
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            return accel_set_error("cudaDeviceGetAttribute", cudaGetErrorName(err), (int)err);
        }
        if ((device >= 0) && (device < ACCEL_CUDA_REDUCE_MAX_DEVICES)) {
            __atomic_store_n(&accel_cuda_reduce_sms[device], sms, __ATOMIC_RELAXED);
        }
    }
    *sms_p = (sms > 0) ? sms : 1;
    return ACCEL_OK;
}

static accel_status_t accel_cuda_reduce_invalid(void) {
    accel_set_error("accel_cuda_reduce", "CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE);
    return ACCEL_ERR_INVALID;
}

extern "C" int accel_cuda_reduce_preload(void) {
    cudaFuncAttributes attr;
    int loaded = 0;

    for (int op = 0; op < ACCEL_OP_COUNT; ++op) {
        for (int dtype = 0; dtype < ACCEL_DT_COUNT; ++dtype) {
            const void *kernel = accel_cuda_reduce_find((accel_op_t)op, (accel_dtype_t)dtype);

            if (kernel == NULL) {
                continue;
            }
            if (cudaFuncGetAttributes(&attr, kernel) == cudaSuccess) {
                ++loaded;
            } else {
                (void)cudaGetLastError(); /* not sticky: the launch will say what is wrong */
            }
        }
    }
    return loaded;
}

extern "C" accel_status_t accel_cuda_reduce(void *dst, const void *const *srcs, int nsrcs,
                                            size_t count, accel_dtype_t dtype, accel_op_t op,
                                            accel_stream_h stream) {
    accel_cuda_reduce_args_t args;
    const void *kernel;
    void *params[1] = {&args};
    size_t size, units, blocks;
    uintptr_t misalign;
    accel_status_t status;
    bool vector;
    int sms = 1;
    cudaError_t err;

    if ((nsrcs < 2) || (nsrcs > ACCEL_REDUCE_MAX_INPUTS) || ((unsigned)op >= ACCEL_OP_COUNT) ||
        ((unsigned)dtype >= ACCEL_DT_COUNT)) {
        return accel_cuda_reduce_invalid();
    }
    kernel = accel_cuda_reduce_find(op, dtype);
    if (kernel == NULL) {
        accel_set_error("accel_cuda_reduce", "CUDA_ERROR_NOT_SUPPORTED", CUDA_ERROR_NOT_SUPPORTED);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (count == 0) {
        return ACCEL_OK;
    }
    size = accel_dtype_size(dtype);
    if ((dst == NULL) || (srcs == NULL) || (count > SIZE_MAX / size)) {
        return accel_cuda_reduce_invalid();
    }
    if (!accel_cuda_kernels_usable) {
        accel_set_error("accel_cuda_reduce", "CUDA_ERROR_NO_BINARY_FOR_GPU",
                        CUDA_ERROR_NO_BINARY_FOR_GPU);
        return ACCEL_ERR_UNSUPPORTED;
    }

    /* 16-byte vectors when every buffer has dst's offset in its 16 bytes */
    misalign = (uintptr_t)dst & 15;
    vector = (misalign % size == 0);
    args.dst = dst;
    for (int k = 0; k < nsrcs; ++k) {
        if (srcs[k] == NULL) {
            return accel_cuda_reduce_invalid();
        }
        args.srcs[k] = srcs[k];
        vector = vector && (((uintptr_t)srcs[k] & 15) == misalign);
    }
    for (int k = nsrcs; k < ACCEL_REDUCE_MAX_INPUTS; ++k) {
        args.srcs[k] = NULL;
    }
    args.nsrcs = nsrcs;
    args.count = count;
    args.head = vector ? ((16 - misalign) & 15) / size : 0;
    args.nvec = (vector && (args.head < count)) ? (count - args.head) / (16 / size) : 0;
    if (args.nvec == 0) {
        args.head = 0;
    }

    /* the runtime launches in the current context: the backend's, as for its copies */
    status = accel_cuda_ctx_ensure();
    if (status == ACCEL_OK) {
        status = accel_cuda_reduce_sm_count(&sms);
    }
    if (status != ACCEL_OK) {
        return status;
    }
    units = (args.nvec > 0) ? args.nvec : count;
    blocks = (units + ACCEL_CUDA_REDUCE_THREADS * ACCEL_CUDA_REDUCE_UNROLL - 1) /
             (ACCEL_CUDA_REDUCE_THREADS * ACCEL_CUDA_REDUCE_UNROLL);
    if (blocks > (size_t)sms * ACCEL_CUDA_REDUCE_BLOCKS_PER_SM) {
        blocks = (size_t)sms * ACCEL_CUDA_REDUCE_BLOCKS_PER_SM;
    }

    {
        double t0 = ACCEL_UNLIKELY(accel_cuda_profile_on) ? accel_cuda_profile_now() : 0.0;
        err = cudaLaunchKernel(kernel, dim3((unsigned)blocks), dim3(ACCEL_CUDA_REDUCE_THREADS),
                               params, 0, (cudaStream_t)stream);
        if (ACCEL_UNLIKELY(accel_cuda_profile_on)) {
            accel_cuda_profile_add("cudaLaunchKernel (reduce)", t0);
        }
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: leave no error for the application */
        return accel_set_error("cudaLaunchKernel", cudaGetErrorName(err), (int)err);
    }
    return ACCEL_OK;
}
