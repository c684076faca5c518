/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA reduction kernels (C++, included by cuda/accel_cuda_reduce*.cu
 * only).  One kernel template, over the op of accel_reduce_ops.h; each
 * accel_cuda_reduce_<family>.cu instantiates it for the (op, type) pairs of
 * one family and returns them from accel_cuda_reduce_find_<family>(), so the
 * families compile in parallel.  accel_cuda_reduce.cu checks the arguments,
 * chooses the launch geometry and launches (accel_cuda_reduce()).
 *
 * Every thread combines the nsrcs inputs of its elements left to right, in
 * registers, and stores once.  Where dst and every input have the same
 * address modulo 16 the elements are moved as 16-byte vectors (at most 15
 * bytes of head and tail one element at a time); otherwise one element at a
 * time.  Both are grid-stride loops, ACCEL_CUDA_REDUCE_UNROLL units per
 * thread per step so that several loads per input are in flight.
 */
#ifndef ACCEL_CUDA_REDUCE_H
#define ACCEL_CUDA_REDUCE_H

#include "accel_cuda.h"
#include "accel_reduce_ops.h"

#include <cuda_runtime.h>

#define ACCEL_CUDA_REDUCE_THREADS 256     /* per block */
#define ACCEL_CUDA_REDUCE_UNROLL 4        /* units (vectors or elements) per thread per step */
#define ACCEL_CUDA_REDUCE_BLOCKS_PER_SM 4 /* grid cap: enough resident warps to saturate HBM */

/* The kernel's parameter, passed by value (about 160 bytes). */
typedef struct {
    void *dst;
    const void *srcs[ACCEL_REDUCE_MAX_INPUTS];
    size_t count; /* elements */
    size_t head;  /* vector path: elements before dst's first 16-byte boundary */
    size_t nvec;  /* vector path: 16-byte vectors after the head; 0: element by element */
    int nsrcs;
} accel_cuda_reduce_args_t;

/* 16 bytes of elements, moved as one vector. */
template <typename T> struct accel_cuda_pack16 {
    static constexpr int n = 16 / sizeof(T);
    union {
        uint4 w;
        T e[n];
    };
    __device__ __forceinline__ void load(const void *p, size_t i) { w = ((const uint4 *)p)[i]; }
    __device__ __forceinline__ void store(void *p, size_t i) const { ((uint4 *)p)[i] = w; }
};

/* One element, moved with its own alignment. */
template <typename T> struct accel_cuda_pack1 {
    static constexpr int n = 1;
    T e[1];
    __device__ __forceinline__ void load(const void *p, size_t i) { e[0] = ((const T *)p)[i]; }
    __device__ __forceinline__ void store(void *p, size_t i) const { ((T *)p)[i] = e[0]; }
};

/* Reduce npacks units of type Pack that start byte_off bytes into every buffer. */
template <typename Op, typename Pack>
__device__ __forceinline__ void accel_cuda_reduce_packs(const accel_cuda_reduce_args_t &args,
                                                        size_t byte_off, size_t npacks) {
    const size_t step = (size_t)gridDim.x * blockDim.x * ACCEL_CUDA_REDUCE_UNROLL;
    char *dst = (char *)args.dst + byte_off;

    for (size_t base = (size_t)blockIdx.x * blockDim.x * ACCEL_CUDA_REDUCE_UNROLL + threadIdx.x;
         base < npacks; base += step) {
        Pack acc[ACCEL_CUDA_REDUCE_UNROLL];

#pragma unroll
        for (int u = 0; u < ACCEL_CUDA_REDUCE_UNROLL; ++u) {
            const size_t i = base + (size_t)u * blockDim.x;
            if (i < npacks) {
                acc[u].load((const char *)args.srcs[0] + byte_off, i);
            }
        }
        for (int k = 1; k < args.nsrcs; ++k) {
            const char *src = (const char *)args.srcs[k] + byte_off;
            Pack x[ACCEL_CUDA_REDUCE_UNROLL];

#pragma unroll
            for (int u = 0; u < ACCEL_CUDA_REDUCE_UNROLL; ++u) {
                const size_t i = base + (size_t)u * blockDim.x;
                if (i < npacks) {
                    x[u].load(src, i);
                }
            }
#pragma unroll
            for (int u = 0; u < ACCEL_CUDA_REDUCE_UNROLL; ++u) {
                if (base + (size_t)u * blockDim.x < npacks) {
#pragma unroll
                    for (int e = 0; e < Pack::n; ++e) {
                        acc[u].e[e] = Op::apply(acc[u].e[e], x[u].e[e]);
                    }
                }
            }
        }
#pragma unroll
        for (int u = 0; u < ACCEL_CUDA_REDUCE_UNROLL; ++u) {
            const size_t i = base + (size_t)u * blockDim.x;
            if (i < npacks) {
                acc[u].store(dst, i);
            }
        }
    }
}

/* Element i alone (head and tail of the vector path). */
template <typename Op>
__device__ __forceinline__ void accel_cuda_reduce_element(const accel_cuda_reduce_args_t &args,
                                                          size_t i) {
    typedef typename Op::type T;
    T acc = ((const T *)args.srcs[0])[i];

    for (int k = 1; k < args.nsrcs; ++k) {
        acc = Op::apply(acc, ((const T *)args.srcs[k])[i]);
    }
    ((T *)args.dst)[i] = acc;
}

/* __grid_constant__: the threads read args where the launch put it (srcs[k]
 * with k known only at run time would otherwise be copied per thread). */
template <typename Op>
__global__ void __launch_bounds__(ACCEL_CUDA_REDUCE_THREADS)
    accel_cuda_reduce_kernel(const __grid_constant__ accel_cuda_reduce_args_t args) {
    typedef typename Op::type T;

    if (args.nvec == 0) {
        accel_cuda_reduce_packs<Op, accel_cuda_pack1<T>>(args, 0, args.count);
    } else {
        const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
        const size_t tail = args.head + args.nvec * accel_cuda_pack16<T>::n;

        if (tid < args.head) {
            accel_cuda_reduce_element<Op>(args, tid);
        }
        if (tid < args.count - tail) {
            accel_cuda_reduce_element<Op>(args, tail + tid);
        }
        accel_cuda_reduce_packs<Op, accel_cuda_pack16<T>>(args, args.head * sizeof(T), args.nvec);
    }
}

/* The functor each kernel is instantiated with: accel_cuda_op_<op>_<dt>. */
#define ACCEL_CUDA_REDUCE_OP_(_OP, _op, _DT, _dt, _type)                                           \
    struct accel_cuda_op_##_op##_##_dt {                                                           \
        typedef _type type;                                                                        \
        static __device__ __forceinline__ _type apply(_type acc, _type x) {                        \
            return accel_reduce_op_##_op##_##_dt(acc, x);                                          \
        }                                                                                          \
    };

#define ACCEL_CUDA_REDUCE_KEY(_op, _dtype) ((int)(_op) * (int)ACCEL_DT_COUNT + (int)(_dtype))

#define ACCEL_CUDA_REDUCE_CASE_(_OP, _op, _DT, _dt, _type)                                         \
    case ACCEL_CUDA_REDUCE_KEY(ACCEL_OP_##_OP, ACCEL_DT_##_DT):                                    \
        return (const void *)accel_cuda_reduce_kernel<accel_cuda_op_##_op##_##_dt>;

/* In accel_cuda_reduce_<family>.cu: the kernels of the pairs _FOREACH lists,
 * and accel_cuda_reduce_find_<family>(). */
#define ACCEL_CUDA_REDUCE_DEFINE_FAMILY(_family, _FOREACH)                                         \
    _FOREACH(ACCEL_CUDA_REDUCE_OP_)                                                                \
    const void *accel_cuda_reduce_find_##_family(accel_op_t op, accel_dtype_t dtype) {             \
        switch (ACCEL_CUDA_REDUCE_KEY(op, dtype)) {                                                \
            _FOREACH(ACCEL_CUDA_REDUCE_CASE_)                                                      \
        default:                                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    }

/* The kernel of (op, dtype) in a family, NULL when the family lacks it. */
const void *accel_cuda_reduce_find_int(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_reduce_find_bit(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_reduce_find_float(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_reduce_find_complex(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_reduce_find_pair(accel_op_t op, accel_dtype_t dtype);

#endif /* ACCEL_CUDA_REDUCE_H */
