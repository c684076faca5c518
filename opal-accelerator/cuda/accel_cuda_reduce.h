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
 * The same families also instantiate accel_cuda_oneshot_kernel, the one-shot
 * allreduce of accel.h (accel_oneshot_t): one block per lane; the block takes
 * the lane's call number, copies its slice of src into this rank's area,
 * exchanges ready / done flags with the peers through the IPC-mapped areas
 * (acquire / release at system scope) and folds every rank's copy of the
 * slice into dst.  accel_cuda_oneshot_find_<family>() returns them.
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
 * The one-shot allreduce (accel.h, accel_oneshot_t): lane l of a call is block l.  The flags
 * are reached through word offsets the host derived from accel.h's helpers, so that the
 * layout has one definition; the slices are the helpers' too (lo[], hi[]).
 */
#define ACCEL_CUDA_ONESHOT_THREADS 512 /* per block; thread p < nranks serves peer p's flags */
#define ACCEL_CUDA_ONESHOT_UNROLL 4    /* units per thread per step, as in the reduce kernel */

static_assert(ACCEL_CUDA_ONESHOT_THREADS >= ACCEL_ONESHOT_MAX_RANKS, "a thread per peer");

/* The one-shot kernels' parameter, passed by value (about 600 bytes). */
typedef struct {
    char *areas[ACCEL_ONESHOT_MAX_RANKS]; /* plan->areas */
    size_t lo[ACCEL_ONESHOT_LANES];       /* lane l takes elements [lo[l], hi[l]) */
    size_t hi[ACCEL_ONESHOT_LANES];
    const void *src; /* NULL for the no-data kernel */
    void *dst;
    size_t half;          /* plan->half */
    size_t head;          /* accel_oneshot_head_bytes(nranks): where half 0 starts */
    size_t lane_words;    /* 32-bit words from ready[l][p] to ready[l + 1][p] */
    size_t done_words;    /* from ready[l][p] to done[l][p] */
    size_t counter_words; /* from the area's start to counter[0] */
    int nranks, rank;
    int vector; /* dst and every half lie at the same address modulo 16 */
} accel_cuda_oneshot_args_t;

/* The flags are written by other GPUs (through their IPC mapping) and by this one into
 * theirs: acquire / release at system scope.  volatile with a memory clobber: a wait is
 * re-read every turn, and no access moves across it. */
static __device__ __forceinline__ uint32_t accel_cuda_ld_acquire_sys(const uint32_t *p) {
    uint32_t v;

    asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
                 : "=r"(v)
                 : "l"(__cvta_generic_to_global(p))
                 : "memory");
    return v;
}

static __device__ __forceinline__ void accel_cuda_st_release_sys(uint32_t *p, uint32_t v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v)
                 : "memory");
}

/* Until *flag has reached c, compared as sequence numbers (they wrap). */
static __device__ __forceinline__ void accel_cuda_oneshot_wait(const uint32_t *flag, uint32_t c) {
    while ((int32_t)(accel_cuda_ld_acquire_sys(flag) - c) < 0) {
    }
}

/* accel_oneshot_ready / _done / _counter of accel.h. */
static __device__ __forceinline__ uint32_t *
accel_cuda_oneshot_ready(const accel_cuda_oneshot_args_t &args, char *area, int l, int p) {
    return (uint32_t *)(void *)area + (size_t)l * args.lane_words + (size_t)p;
}
static __device__ __forceinline__ uint32_t *
accel_cuda_oneshot_done(const accel_cuda_oneshot_args_t &args, char *area, int l, int p) {
    return accel_cuda_oneshot_ready(args, area, l, p) + args.done_words;
}
static __device__ __forceinline__ uint32_t *
accel_cuda_oneshot_counter(const accel_cuda_oneshot_args_t &args, char *area, int l) {
    return (uint32_t *)(void *)area + args.counter_words + (size_t)l;
}

/* Whether this thread serves a peer's flags: thread p for peer p. */
static __device__ __forceinline__ bool
accel_cuda_oneshot_is_peer(const accel_cuda_oneshot_args_t &args) {
    return ((int)threadIdx.x < args.nranks) && ((int)threadIdx.x != args.rank);
}

/*
 * Start lane l of a call: its number c (counter[l], in device memory so that graph replays
 * count too), the same in every thread and every lane: every call advances every lane's
 * counter (lane 0 those of the lanes the call does not use, which have no block), so that
 * consecutive calls use different halves however they cut them.  No wait for the peers' done
 * of call c - 2: their ready of call c - 1, which this rank waited for, came after it
 * (accel.h).
 */
static __device__ __forceinline__ uint32_t
accel_cuda_oneshot_enter(const accel_cuda_oneshot_args_t &args, int l) {
    __shared__ uint32_t call;

    if (threadIdx.x == 0) {
        /* only this rank's kernels, in stream order, touch them: plain accesses */
        uint32_t *counter = accel_cuda_oneshot_counter(args, args.areas[args.rank], l);

        call = *counter + 1;
        *counter = call;
        for (int unused = (int)gridDim.x; (l == 0) && (unused < ACCEL_ONESHOT_LANES); ++unused) {
            *accel_cuda_oneshot_counter(args, args.areas[args.rank], unused) = call;
        }
    }
    __syncthreads();
    return call;
}

/* Lane 0's peer threads: the flags (ready or done) of the lanes the call does not use, so that
 * every flag keeps up with the calls (the end's wait reads every lane's done). */
static __device__ __forceinline__ void
accel_cuda_oneshot_tell_unused(const accel_cuda_oneshot_args_t &args, int l, uint32_t c,
                               size_t word_offset) {
    if ((l == 0) && accel_cuda_oneshot_is_peer(args)) {
        for (int unused = (int)gridDim.x; unused < ACCEL_ONESHOT_LANES; ++unused) {
            accel_cuda_st_release_sys(
                accel_cuda_oneshot_ready(args, args.areas[threadIdx.x], unused, args.rank) +
                    word_offset,
                c);
        }
    }
}

/*
 * Tell every peer that this rank's input of call c has landed in its half (theirs.ready[l][me]
 * = c), then wait until every peer has said so (mine.ready[l][p] >= c).
 */
static __device__ __forceinline__ void
accel_cuda_oneshot_publish(const accel_cuda_oneshot_args_t &args, int l, uint32_t c) {
    /* the barrier orders the whole block's copy before the peer threads' release */
    __syncthreads();
    if (accel_cuda_oneshot_is_peer(args)) {
        const int p = (int)threadIdx.x;

        __threadfence_system();
        accel_cuda_st_release_sys(accel_cuda_oneshot_ready(args, args.areas[p], l, args.rank), c);
    }
    accel_cuda_oneshot_tell_unused(args, l, c, 0);
    if (accel_cuda_oneshot_is_peer(args)) {
        const int p = (int)threadIdx.x;

        accel_cuda_oneshot_wait(accel_cuda_oneshot_ready(args, args.areas[args.rank], l, p), c);
    }
    /* every peer's acquire, then the barrier: the fold reads their halves after */
    __syncthreads();
}

/* Tell every peer that this rank has read its half of call c (theirs.done[l][me] = c). */
static __device__ __forceinline__ void
accel_cuda_oneshot_leave(const accel_cuda_oneshot_args_t &args, int l, uint32_t c) {
    /* the barrier orders the whole block's reads of the halves before the release */
    __syncthreads();
    if (accel_cuda_oneshot_is_peer(args)) {
        accel_cuda_st_release_sys(
            accel_cuda_oneshot_done(args, args.areas[threadIdx.x], l, args.rank), c);
    }
    accel_cuda_oneshot_tell_unused(args, l, c, args.done_words);
}

/* bytes bytes from src to dst by the block's threads, as words of W (dst and src lie at the
 * same address modulo sizeof(W)); the bytes before the first word boundary and after the
 * last one by one. */
template <typename W>
__device__ __forceinline__ void accel_cuda_oneshot_copy_words(char *dst, const char *src,
                                                              size_t bytes) {
    const size_t to_boundary = (sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1);
    const size_t head = (to_boundary < bytes) ? to_boundary : bytes;
    const size_t nwords = (bytes - head) / sizeof(W);
    const size_t tail = head + nwords * sizeof(W);
    const size_t step = (size_t)blockDim.x * ACCEL_CUDA_ONESHOT_UNROLL;
    W *dst_w = (W *)(void *)(dst + head);
    const W *src_w = (const W *)(const void *)(src + head);

    /* head and tail are under sizeof(W) <= 16 bytes: one thread each */
    if (threadIdx.x < head) {
        dst[threadIdx.x] = src[threadIdx.x];
    }
    if (tail + threadIdx.x < bytes) {
        dst[tail + threadIdx.x] = src[tail + threadIdx.x];
    }
    for (size_t base = threadIdx.x; base < nwords; base += step) {
        W w[ACCEL_CUDA_ONESHOT_UNROLL];

#pragma unroll
        for (int u = 0; u < ACCEL_CUDA_ONESHOT_UNROLL; ++u) {
            const size_t i = base + (size_t)u * blockDim.x;
            if (i < nwords) {
                w[u] = src_w[i];
            }
        }
#pragma unroll
        for (int u = 0; u < ACCEL_CUDA_ONESHOT_UNROLL; ++u) {
            const size_t i = base + (size_t)u * blockDim.x;
            if (i < nwords) {
                dst_w[i] = w[u];
            }
        }
    }
}

/* The block copies bytes bytes from src to dst in the widest words both allow.  Not inlined:
 * the copy knows no type, one body per file serves every kernel. */
static __device__ __noinline__ void accel_cuda_oneshot_copy(char *dst, const char *src,
                                                            size_t bytes) {
    const uintptr_t apart = ((uintptr_t)dst ^ (uintptr_t)src) & 15;

    if (apart == 0) {
        accel_cuda_oneshot_copy_words<uint4>(dst, src, bytes);
    } else if ((apart & 7) == 0) {
        accel_cuda_oneshot_copy_words<unsigned long long>(dst, src, bytes);
    } else if ((apart & 3) == 0) {
        accel_cuda_oneshot_copy_words<unsigned int>(dst, src, bytes);
    } else if ((apart & 1) == 0) {
        accel_cuda_oneshot_copy_words<unsigned short>(dst, src, bytes);
    } else {
        accel_cuda_oneshot_copy_words<unsigned char>(dst, src, bytes);
    }
}

/* The one-shot fold's inputs: every rank's half of the call, half_off bytes into its area,
 * read through L2 (the peers' GPUs wrote them). */
struct accel_cuda_oneshot_inputs {
    static constexpr bool through_l2 = true;
    const accel_cuda_oneshot_args_t &args;
    size_t half_off;
    __device__ __forceinline__ const char *base(int k) const { return args.areas[k] + half_off; }
};

/*
 * Lane blockIdx.x of this rank's part of a one-shot allreduce (accel.h): copy the lane's slice
 * of src into this rank's half of the call's parity, exchange ready flags, fold the slice of
 * every rank's half into dst, write the done flags.  In place (dst == src) is fine: the block
 * copies its slice before it writes dst.  The fold goes by 16-byte vectors where the host
 * found dst and the halves aligned alike and the lane's slice starts on an element boundary
 * that reaches one (the elements before and after one by one), else element by element.
 */
template <typename Op>
__global__ void __launch_bounds__(ACCEL_CUDA_ONESHOT_THREADS)
    accel_cuda_oneshot_kernel(const __grid_constant__ accel_cuda_oneshot_args_t args) {
    typedef typename Op::type T;
    typedef accel_cuda_pack16<T> vec_t;
    const int l = (int)blockIdx.x;
    const size_t lo = args.lo[l], n = args.hi[l] - args.lo[l];
    const uint32_t c = accel_cuda_oneshot_enter(args, l);
    /* the half holds the input at its offsets in src */
    const size_t half_off = args.head + (size_t)(c & 1) * args.half;
    const uintptr_t misalign = ((uintptr_t)args.dst + lo * sizeof(T)) & 15;

    accel_cuda_oneshot_copy(args.areas[args.rank] + half_off + lo * sizeof(T),
                            (const char *)args.src + lo * sizeof(T), n * sizeof(T));
    accel_cuda_oneshot_publish(args, l, c);

    /* the block's own units of the slice: the fold is the lane's alone */
    const size_t first = threadIdx.x, step = (size_t)blockDim.x * ACCEL_CUDA_REDUCE_UNROLL;

    if (!args.vector || (misalign % sizeof(T) != 0)) {
        accel_cuda_fold<Op, accel_cuda_pack1<T>>(
            (char *)args.dst + lo * sizeof(T),
            accel_cuda_oneshot_inputs{args, half_off + lo * sizeof(T)}, args.nranks, n, first,
            step);
    } else {
        const size_t to_boundary = ((16 - misalign) & 15) / sizeof(T);
        const size_t head = (to_boundary < n) ? to_boundary : n;
        const size_t nvec = (n - head) / vec_t::n;
        const size_t tail = head + nvec * vec_t::n;

        /* head and tail are under 16 elements: one thread each */
        if (threadIdx.x < head) {
            accel_cuda_fold_element<Op>(args.dst, accel_cuda_oneshot_inputs{args, half_off},
                                        args.nranks, lo + threadIdx.x);
        }
        if (tail + threadIdx.x < n) {
            accel_cuda_fold_element<Op>(args.dst, accel_cuda_oneshot_inputs{args, half_off},
                                        args.nranks, lo + tail + threadIdx.x);
        }
        accel_cuda_fold<Op, vec_t>(
            (char *)args.dst + (lo + head) * sizeof(T),
            accel_cuda_oneshot_inputs{args, half_off + (lo + head) * sizeof(T)}, args.nranks, nvec,
            first, step);
    }
    accel_cuda_oneshot_leave(args, l, c);
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

#define ACCEL_CUDA_ONESHOT_CASE_(_OP, _op, _DT, _dt, _type)                                        \
    case ACCEL_CUDA_REDUCE_KEY(ACCEL_OP_##_OP, ACCEL_DT_##_DT):                                    \
        return (const void *)accel_cuda_oneshot_kernel<accel_cuda_op_##_op##_##_dt>;

/* In accel_cuda_reduce_<family>.cu: the reduce and one-shot kernels of the pairs _FOREACH
 * lists, accel_cuda_reduce_find_<family>() and accel_cuda_oneshot_find_<family>(). */
#define ACCEL_CUDA_REDUCE_DEFINE_FAMILY(_family, _FOREACH)                                         \
    _FOREACH(ACCEL_CUDA_REDUCE_OP_)                                                                \
    const void *accel_cuda_reduce_find_##_family(accel_op_t op, accel_dtype_t dtype) {             \
        switch (ACCEL_CUDA_REDUCE_KEY(op, dtype)) {                                                \
            _FOREACH(ACCEL_CUDA_REDUCE_CASE_)                                                      \
        default:                                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    }                                                                                              \
    const void *accel_cuda_oneshot_find_##_family(accel_op_t op, accel_dtype_t dtype) {            \
        switch (ACCEL_CUDA_REDUCE_KEY(op, dtype)) {                                                \
            _FOREACH(ACCEL_CUDA_ONESHOT_CASE_)                                                     \
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

/* The one-shot allreduce kernel of (op, dtype) in a family, NULL when the family lacks it. */
const void *accel_cuda_oneshot_find_int(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_oneshot_find_bit(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_oneshot_find_float(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_oneshot_find_complex(accel_op_t op, accel_dtype_t dtype);
const void *accel_cuda_oneshot_find_pair(accel_op_t op, accel_dtype_t dtype);

#endif /* ACCEL_CUDA_REDUCE_H */
