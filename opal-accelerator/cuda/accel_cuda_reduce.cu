/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * accel_cuda_reduce(): the reduce() of the CUDA backend.  Checks the
 * arguments, finds the kernel of (op, dtype) in its family, sizes the grid
 * and launches it on the caller's stream through the statically linked
 * runtime (a CUstream is a cudaStream_t).  Nothing here synchronizes.
 *
 * accel_cuda_node_collective(): the node_collective() of the CUDA backend, the
 * same way: accel_cuda_node_kernel of (op, dtype), or its copy-only instance
 * (the kinds that only move data, and calls without data), one block per lane.
 */
#include "accel_cuda_reduce.h"

#define ACCEL_CUDA_REDUCE_MAX_DEVICES 64

/* SM count per device ordinal, asked once (0: not yet). */
static int accel_cuda_reduce_sms[ACCEL_CUDA_REDUCE_MAX_DEVICES];

/* The kernel lookups of one family file. */
typedef struct {
    const void *(*reduce)(accel_op_t op, accel_dtype_t dtype);
    const void *(*node)(accel_op_t op, accel_dtype_t dtype);
} accel_cuda_reduce_family_t;

#define ACCEL_CUDA_REDUCE_FAMILY_(_family)                                                         \
    static const accel_cuda_reduce_family_t accel_cuda_reduce_family_##_family = {                 \
        accel_cuda_reduce_find_##_family, accel_cuda_node_find_##_family}
ACCEL_CUDA_REDUCE_FAMILY_(int);
ACCEL_CUDA_REDUCE_FAMILY_(bit);
ACCEL_CUDA_REDUCE_FAMILY_(float);
ACCEL_CUDA_REDUCE_FAMILY_(complex);
ACCEL_CUDA_REDUCE_FAMILY_(pair);

/* The family file that holds the kernels of (op, dtype). */
static const accel_cuda_reduce_family_t *accel_cuda_reduce_family(accel_op_t op,
                                                                  accel_dtype_t dtype) {
    switch (dtype) {
    case ACCEL_DT_FLOAT16:
    case ACCEL_DT_BFLOAT16:
    case ACCEL_DT_FLOAT:
    case ACCEL_DT_DOUBLE:
        return &accel_cuda_reduce_family_float;
    case ACCEL_DT_COMPLEX_FLOAT:
    case ACCEL_DT_COMPLEX_DOUBLE:
        return &accel_cuda_reduce_family_complex;
    case ACCEL_DT_SHORT_INT:
    case ACCEL_DT_2INT:
    case ACCEL_DT_LONG_INT:
    case ACCEL_DT_FLOAT_INT:
    case ACCEL_DT_DOUBLE_INT:
        return &accel_cuda_reduce_family_pair;
    case ACCEL_DT_BOOL:
        return &accel_cuda_reduce_family_bit;
    default: /* the integer types */
        return ((op >= ACCEL_OP_LAND) && (op <= ACCEL_OP_BXOR)) ? &accel_cuda_reduce_family_bit
                                                                : &accel_cuda_reduce_family_int;
    }
}

static const void *accel_cuda_reduce_find(accel_op_t op, accel_dtype_t dtype) {
    return accel_cuda_reduce_family(op, dtype)->reduce(op, dtype);
}

static const void *accel_cuda_node_find(accel_op_t op, accel_dtype_t dtype) {
    return accel_cuda_reduce_family(op, dtype)->node(op, dtype);
}

/* A node collective that combines nothing: the kinds that only move data, and a call without
 * data (src == NULL, or no elements: the flags and counters only), whatever the op and type. */
static const void *const accel_cuda_node_nodata_kernel =
    (const void *)accel_cuda_node_kernel<accel_cuda_node_no_fold>;

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

/* Launches kernel on stream (timed as what when profiling); a failed launch leaves no error
 * behind for the application (launch errors are not sticky). */
static accel_status_t accel_cuda_launch(const void *kernel, unsigned blocks, unsigned threads,
                                        void **params, accel_stream_h stream, const char *what) {
    double t0 = ACCEL_UNLIKELY(accel_cuda_profile_on) ? accel_cuda_profile_now() : 0.0;
    cudaError_t err =
        cudaLaunchKernel(kernel, dim3(blocks), dim3(threads), params, 0, (cudaStream_t)stream);

    if (ACCEL_UNLIKELY(accel_cuda_profile_on)) {
        accel_cuda_profile_add(what, t0);
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return accel_set_error("cudaLaunchKernel", cudaGetErrorName(err), (int)err);
    }
    return ACCEL_OK;
}

static accel_status_t accel_cuda_reduce_invalid(void) {
    accel_set_error("accel_cuda_reduce", "CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE);
    return ACCEL_ERR_INVALID;
}

/* Load kernel now (see accel_cuda_reduce_preload): 1 when it is, 0 when it is not. */
static int accel_cuda_reduce_preload_one(const void *kernel) {
    cudaFuncAttributes attr;

    if (kernel == NULL) {
        return 0;
    }
    if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the launch will say what is wrong */
        return 0;
    }
    return 1;
}

extern "C" int accel_cuda_reduce_preload(void) {
    int loaded = accel_cuda_reduce_preload_one(accel_cuda_node_nodata_kernel);

    for (int op = 0; op < ACCEL_OP_COUNT; ++op) {
        for (int dtype = 0; dtype < ACCEL_DT_COUNT; ++dtype) {
            loaded += accel_cuda_reduce_preload_one(
                accel_cuda_reduce_find((accel_op_t)op, (accel_dtype_t)dtype));
            loaded += accel_cuda_reduce_preload_one(
                accel_cuda_node_find((accel_op_t)op, (accel_dtype_t)dtype));
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

    return accel_cuda_launch(kernel, (unsigned)blocks, ACCEL_CUDA_REDUCE_THREADS, params, stream,
                             "cudaLaunchKernel (reduce)");
}

static accel_status_t accel_cuda_node_invalid(void) {
    accel_set_error("accel_cuda_node_collective", "CUDA_ERROR_INVALID_VALUE",
                    CUDA_ERROR_INVALID_VALUE);
    return ACCEL_ERR_INVALID;
}

extern "C" accel_status_t accel_cuda_node_collective(const accel_node_plan_t *plan,
                                                     const accel_node_call_t *call,
                                                     accel_stream_h stream) {
    accel_node_args_t args;
    const void *kernel = accel_cuda_node_nodata_kernel;
    void *params[1] = {&args};
    size_t size, elem_align, align;
    accel_status_t status;
    bool data;

    if (!accel_node_call_check(plan, call)) {
        return accel_cuda_node_invalid();
    }
    size = accel_dtype_size(call->dtype);
    data = (call->src != NULL) && (call->count > 0);
    if ((call->src != NULL) && accel_node_reduces(call->kind)) {
        const void *found;

        if ((unsigned)call->op >= ACCEL_OP_COUNT) {
            return accel_cuda_node_invalid();
        }
        found = accel_cuda_node_find(call->op, call->dtype);
        if (found == NULL) {
            accel_set_error("accel_cuda_node_collective", "CUDA_ERROR_NOT_SUPPORTED",
                            CUDA_ERROR_NOT_SUPPORTED);
            return ACCEL_ERR_UNSUPPORTED;
        }
        if (data) {
            kernel = found;
        }
    }
    /* The flags are 32-bit words; the fold loads elements from every half with their type's
     * alignment, which divides the size and is at most 8. */
    elem_align = size & (~size + 1);
    elem_align = (elem_align > 8) ? 8 : elem_align;
    align = (data && (elem_align > sizeof(uint32_t))) ? elem_align : sizeof(uint32_t);
    if (data && (plan->half % elem_align != 0)) {
        return accel_cuda_node_invalid();
    }
    for (int p = 0; p < ACCEL_NODE_MAX_RANKS; ++p) {
        args.areas[p] = (p < plan->nranks) ? plan->areas[p] : NULL;
    }
    for (int p = 0; p < plan->nranks; ++p) {
        if ((plan->areas[p] == NULL) ||
            (((uintptr_t)plan->areas[p] + accel_node_head_bytes(plan->nranks)) % align != 0)) {
            return accel_cuda_node_invalid();
        }
    }
    if (!accel_cuda_kernels_usable) {
        accel_set_error("accel_cuda_node_collective", "CUDA_ERROR_NO_BINARY_FOR_GPU",
                        CUDA_ERROR_NO_BINARY_FOR_GPU);
        return ACCEL_ERR_UNSUPPORTED;
    }
    args.src = data ? (const char *)call->src : NULL;
    args.dst = data ? (char *)call->dst : NULL;
    args.count = call->count;
    args.size = size;
    args.half = plan->half;
    args.nranks = plan->nranks;
    args.rank = plan->rank;
    args.kind = (int)call->kind;
    args.root = call->root;
    args.nnodes = accel_node_nnodes(plan, call->kind);
    args.node = (args.nnodes > 1) ? plan->node : 0;
    args.stage = (args.nnodes > 1) ? plan->stage : NULL; /* pinned host memory: one address */

    /* the runtime launches in the current context: the backend's, as for its copies */
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    return accel_cuda_launch(kernel, (unsigned)accel_node_lanes(call->kind, call->count, size, plan->half),
                             ACCEL_CUDA_NODE_THREADS, params, stream,
                             "cudaLaunchKernel (node_collective)");
}
