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
 *
 * The same families also instantiate accel_cuda_node_kernel, the node
 * allreduce of accel.h (accel_node_plan_t, accel_node_kernels.h): one block per
 * lane.  accel_cuda_node_find_<family>() returns them.
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
    /* through L2 only: memory a peer wrote (the SM's L1 is not coherent with it) */
    __device__ __forceinline__ void load_cg(const void *p, size_t i) {
        w = __ldcg((const uint4 *)p + i);
    }
    __device__ __forceinline__ void store(void *p, size_t i) const { ((uint4 *)p)[i] = w; }
};

/* An unsigned integer of n bytes (the words an element is loaded as). */
template <int n> struct accel_cuda_uint;
template <> struct accel_cuda_uint<1> { typedef unsigned char type; };
template <> struct accel_cuda_uint<2> { typedef unsigned short type; };
template <> struct accel_cuda_uint<4> { typedef unsigned int type; };
template <> struct accel_cuda_uint<8> { typedef unsigned long long type; };

/* *p through L2 only (__ldcg), as words of T's alignment: __ldcg takes no struct. */
template <typename T> __device__ __forceinline__ T accel_cuda_ldcg(const T *p) {
    typedef typename accel_cuda_uint<alignof(T)>::type W;
    union {
        T v;
        W w[sizeof(T) / sizeof(W)];
    } u;

#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / sizeof(W)); ++k) {
        u.w[k] = __ldcg((const W *)(const void *)p + k);
    }
    return u.v;
}

/* One element, moved with its own alignment. */
template <typename T> struct accel_cuda_pack1 {
    static constexpr int n = 1;
    T e[1];
    __device__ __forceinline__ void load(const void *p, size_t i) { e[0] = ((const T *)p)[i]; }
    __device__ __forceinline__ void load_cg(const void *p, size_t i) {
        e[0] = accel_cuda_ldcg((const T *)p + i);
    }
    __device__ __forceinline__ void store(void *p, size_t i) const { ((T *)p)[i] = e[0]; }
};

/*
 * dst = in_0 op in_1 op ... op in_{n-1}, left to right, in registers, over npacks units of type
 * Pack: this thread's units from first on, step apart, ACCEL_CUDA_REDUCE_UNROLL of them
 * blockDim.x apart at a time (several loads per input in flight).  Inputs says where input k
 * starts (base(k)) and whether it is read through L2 only (through_l2: memory another GPU
 * wrote, which this SM's L1 does not see).  reduce() and the one-shot allreduce fold alike.
 */
template <typename Inputs, typename Pack>
__device__ __forceinline__ void accel_cuda_fold_load(Pack &p, const char *src, size_t i) {
    if (Inputs::through_l2) {
        p.load_cg(src, i);
    } else {
        p.load(src, i);
    }
}

template <typename Op, typename Pack, typename Inputs>
__device__ __forceinline__ void accel_cuda_fold(char *dst, const Inputs &in, int n, size_t npacks,
                                                size_t first, size_t step) {
    for (size_t base = first; base < npacks; base += step) {
        const char *first_src = in.base(0);
        Pack acc[ACCEL_CUDA_REDUCE_UNROLL];

#pragma unroll
        for (int u = 0; u < ACCEL_CUDA_REDUCE_UNROLL; ++u) {
            const size_t i = base + (size_t)u * blockDim.x;
            if (i < npacks) {
                accel_cuda_fold_load<Inputs>(acc[u], first_src, i);
            }
        }
        for (int k = 1; k < n; ++k) {
            const char *src = in.base(k);
            Pack x[ACCEL_CUDA_REDUCE_UNROLL];

#pragma unroll
            for (int u = 0; u < ACCEL_CUDA_REDUCE_UNROLL; ++u) {
                const size_t i = base + (size_t)u * blockDim.x;
                if (i < npacks) {
                    accel_cuda_fold_load<Inputs>(x[u], src, i);
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

/* Element i alone (the head and tail of a vector path). */
template <typename Op, typename Inputs>
__device__ __forceinline__ void accel_cuda_fold_element(void *dst, const Inputs &in, int n,
                                                        size_t i) {
    typedef typename Op::type T;
    accel_cuda_pack1<T> acc, x;

    accel_cuda_fold_load<Inputs>(acc, in.base(0), i);
    for (int k = 1; k < n; ++k) {
        accel_cuda_fold_load<Inputs>(x, in.base(k), i);
        acc.e[0] = Op::apply(acc.e[0], x.e[0]);
    }
    acc.store(dst, i);
}

/* reduce()'s inputs: its sources, byte_off bytes in, read as they are. */
struct accel_cuda_reduce_inputs {
    static constexpr bool through_l2 = false;
    const accel_cuda_reduce_args_t &args;
    size_t byte_off;
    __device__ __forceinline__ const char *base(int k) const {
        return (const char *)args.srcs[k] + byte_off;
    }
};

/* Reduce npacks units of type Pack that start byte_off bytes into every buffer: a grid-stride
 * loop over the whole grid. */
template <typename Op, typename Pack>
__device__ __forceinline__ void accel_cuda_reduce_packs(const accel_cuda_reduce_args_t &args,
                                                        size_t byte_off, size_t npacks) {
    accel_cuda_fold<Op, Pack>(
        (char *)args.dst + byte_off, accel_cuda_reduce_inputs{args, byte_off}, args.nsrcs, npacks,
        (size_t)blockIdx.x * blockDim.x * ACCEL_CUDA_REDUCE_UNROLL + threadIdx.x,
        (size_t)gridDim.x * blockDim.x * ACCEL_CUDA_REDUCE_UNROLL);
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
            accel_cuda_fold_element<Op>(args.dst, accel_cuda_reduce_inputs{args, 0}, args.nsrcs,
                                        tid);
        }
        if (tid < args.count - tail) {
            accel_cuda_fold_element<Op>(args.dst, accel_cuda_reduce_inputs{args, 0}, args.nsrcs,
                                        tail + tid);
        }
        accel_cuda_reduce_packs<Op, accel_cuda_pack16<T>>(args, args.head * sizeof(T), args.nvec);
    }
}

/*
 * The node's allreduce kernels (accel_node_kernels.h, written once for the GPU and the
 * emulated device), on the two block-wide primitives defined here: the copy and the fold.
 */
#define ACCEL_CUDA_NODE_THREADS 512 /* per block */
#define ACCEL_CUDA_NODE_UNROLL 4    /* units per thread per step, as in the reduce kernel */

/* bytes bytes from src to dst by the block's threads, as words of W (dst and src lie at the
 * same address modulo sizeof(W)); the bytes before the first word boundary and after the
 * last one by one.  From a peer: through L2 only (this SM's L1 does not see another GPU's
 * writes). */
template <typename W>
__device__ __forceinline__ void accel_cuda_copy_words(char *dst, const char *src, size_t bytes,
                                                      bool from_peer) {
    const size_t to_boundary = (sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1);
    const size_t head = (to_boundary < bytes) ? to_boundary : bytes;
    const size_t nwords = (bytes - head) / sizeof(W);
    const size_t tail = head + nwords * sizeof(W);
    const size_t step = (size_t)blockDim.x * ACCEL_CUDA_NODE_UNROLL;
    W *dst_w = (W *)(void *)(dst + head);
    const W *src_w = (const W *)(const void *)(src + head);

    /* head and tail are under sizeof(W) <= 16 bytes: one thread each */
    if (threadIdx.x < head) {
        dst[threadIdx.x] =
            from_peer ? (char)__ldcg((const unsigned char *)src + threadIdx.x) : src[threadIdx.x];
    }
    if (tail + threadIdx.x < bytes) {
        dst[tail + threadIdx.x] =
            from_peer ? (char)__ldcg((const unsigned char *)src + tail + threadIdx.x)
                      : src[tail + threadIdx.x];
    }
    for (size_t base = threadIdx.x; base < nwords; base += step) {
        W w[ACCEL_CUDA_NODE_UNROLL];

#pragma unroll
        for (int u = 0; u < ACCEL_CUDA_NODE_UNROLL; ++u) {
            const size_t i = base + (size_t)u * blockDim.x;
            if (i < nwords) {
                w[u] = from_peer ? __ldcg(src_w + i) : src_w[i];
            }
        }
#pragma unroll
        for (int u = 0; u < ACCEL_CUDA_NODE_UNROLL; ++u) {
            const size_t i = base + (size_t)u * blockDim.x;
            if (i < nwords) {
                dst_w[i] = w[u];
            }
        }
    }
}

/* The block copies bytes bytes from src to dst in the widest words both allow.  Not inlined:
 * the copy knows no type, one body per file serves every kernel. */
static __device__ __noinline__ void ak_copy(char *dst, const char *src, size_t bytes,
                                            bool from_peer) {
    const uintptr_t apart = ((uintptr_t)dst ^ (uintptr_t)src) & 15;

    if (apart == 0) {
        accel_cuda_copy_words<uint4>(dst, src, bytes, from_peer);
    } else if ((apart & 7) == 0) {
        accel_cuda_copy_words<unsigned long long>(dst, src, bytes, from_peer);
    } else if ((apart & 3) == 0) {
        accel_cuda_copy_words<unsigned int>(dst, src, bytes, from_peer);
    } else if ((apart & 1) == 0) {
        accel_cuda_copy_words<unsigned short>(dst, src, bytes, from_peer);
    } else {
        accel_cuda_copy_words<unsigned char>(dst, src, bytes, from_peer);
    }
}

/* The fold's inputs: every rank's area, off bytes in, read through L2 (peers' GPUs wrote
 * them). */
struct accel_cuda_node_inputs {
    static constexpr bool through_l2 = true;
    char *const *bases;
    size_t off;
    __device__ __forceinline__ const char *base(int k) const { return bases[k] + off; }
};

/* The block's fold of count elements (AK_FOLD): by 16-byte vectors where dst and every input
 * lie at the same address modulo 16 and on an element boundary (the elements before and after
 * one by one), else element by element. */
template <typename Op> struct accel_cuda_node_fold {
    __device__ __forceinline__ void operator()(char *dst, char *const *bases, int n, size_t off,
                                               size_t count) const {
        typedef typename Op::type T;
        typedef accel_cuda_pack16<T> vec_t;
        const uintptr_t misalign = (uintptr_t)dst & 15;
        const size_t first = threadIdx.x, step = (size_t)blockDim.x * ACCEL_CUDA_REDUCE_UNROLL;
        bool vector = (misalign % sizeof(T) == 0);

        for (int k = 0; k < n; ++k) {
            vector = vector && ((((uintptr_t)bases[k] + off) & 15) == misalign);
        }
        if (!vector) {
            accel_cuda_fold<Op, accel_cuda_pack1<T>>(dst, accel_cuda_node_inputs{bases, off}, n,
                                                     count, first, step);
            return;
        }
        const size_t to_boundary = ((16 - misalign) & 15) / sizeof(T);
        const size_t head = (to_boundary < count) ? to_boundary : count;
        const size_t nvec = (count - head) / vec_t::n;
        const size_t tail = head + nvec * vec_t::n;

        /* head and tail are under 16 elements: one thread each */
        if (threadIdx.x < head) {
            accel_cuda_fold_element<Op>(dst, accel_cuda_node_inputs{bases, off}, n, threadIdx.x);
        }
        if (tail + threadIdx.x < count) {
            accel_cuda_fold_element<Op>(dst, accel_cuda_node_inputs{bases, off}, n,
                                        tail + threadIdx.x);
        }
        accel_cuda_fold<Op, vec_t>(dst + head * sizeof(T),
                                   accel_cuda_node_inputs{bases, off + head * sizeof(T)}, n, nvec,
                                   first, step);
    }
};

/* What a launch without data folds with: nothing. */
struct accel_cuda_node_no_fold {
    __device__ __forceinline__ void operator()(char *, char *const *, int, size_t, size_t) const {}
};

#define AK_TEMPLATE template <typename Fold>
#define AK_FOLD_PARAM const Fold &
#define AK_FOLD(fold, dst, bases, n, off, count) (fold)((dst), (bases), (n), (off), (count))

#include "accel_node_kernels.h"

static_assert(ACCEL_CUDA_NODE_THREADS >= 32, "a block has a warp at least");

/* Block blockIdx.x of this rank's part of a node allreduce (accel.h).  __grid_constant__: the
 * threads read args where the launch put it. */
template <typename Fold>
__global__ void __launch_bounds__(ACCEL_CUDA_NODE_THREADS)
    accel_cuda_node_kernel(const __grid_constant__ accel_node_args_t args) {
    const Fold fold{};

    ak_node_collective(&args, (int)blockIdx.x, (int)gridDim.x, fold);
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

#define ACCEL_CUDA_NODE_CASE_(_OP, _op, _DT, _dt, _type)                                           \
    case ACCEL_CUDA_REDUCE_KEY(ACCEL_OP_##_OP, ACCEL_DT_##_DT):                                    \
        return (const void *)                                                                      \
            accel_cuda_node_kernel<accel_cuda_node_fold<accel_cuda_op_##_op##_##_dt>>;

/* In accel_cuda_reduce_<family>.cu: the reduce and node allreduce kernels of the pairs
 * _FOREACH lists, accel_cuda_reduce_find_<family>() and accel_cuda_node_find_<family>(). */
#define ACCEL_CUDA_REDUCE_DEFINE_FAMILY(_family, _FOREACH)                                         \
    _FOREACH(ACCEL_CUDA_REDUCE_OP_)                                                                \
    const void *accel_cuda_reduce_find_##_family(accel_op_t op, accel_dtype_t dtype) {             \
        switch (ACCEL_CUDA_REDUCE_KEY(op, dtype)) {                                                \
            _FOREACH(ACCEL_CUDA_REDUCE_CASE_)                                                      \
        default:                                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    }                                                                                              \
    const void *accel_cuda_node_find_##_family(accel_op_t op, accel_dtype_t dtype) {               \
        switch (ACCEL_CUDA_REDUCE_KEY(op, dtype)) {                                                \
            _FOREACH(ACCEL_CUDA_NODE_CASE_)                                                        \
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

/* The node allreduce kernel of (op, dtype) in a family, NULL when the family lacks it. */
const void *accel_cuda_node_find_int(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_node_find_bit(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_node_find_float(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_node_find_complex(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_node_find_pair(accel_op_t op, accel_dtype_t dtype);

#endif /* ACCEL_CUDA_REDUCE_H */
