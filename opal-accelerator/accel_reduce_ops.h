/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What each reduction computes: one definition of every (op, type) pair MPI
 * defines, shared by the CPU loops (accel_reduce_cpu.c, C) and the CUDA
 * kernels (cuda/accel_cuda_reduce*.cu, __host__ __device__ under nvcc).  How
 * the data are loaded, vectorized and walked is the business of those files,
 * as NCCL keeps FuncSum<T> apart from its packing.
 *
 * Semantics are those of Open MPI's host ops (ompi/mca/op/base), with acc the
 * accumulated value (Open MPI's inout) and x the next input:
 *   - integers wrap around: signed arithmetic is done in an unsigned type at
 *     least as wide as int, so no overflow is undefined behaviour;
 *   - MAX is (acc > x ? acc : x), MIN (acc < x ? acc : x): a NaN accumulator
 *     is replaced by the next input, a NaN input replaces the accumulator;
 *   - logical ops give 0 or 1;
 *   - MAXLOC/MINLOC take x when strictly greater/less, the lower index of two
 *     equal values (and keep acc's value, so -0.0 vs +0.0 keeps acc's zero);
 *   - complex PROD is (ar*br - ai*bi, ar*bi + ai*br), each product rounded
 *     (no FMA: C built with -ffp-contract=off, CUDA with --fmad=false and
 *     the _rn intrinsics below);
 *   - float16 and bfloat16 are widened to float, combined, and rounded back
 *     to nearest-even at every step, by the bit operations below, so the CPU
 *     and the GPU round identically (the result is that of a native
 *     half-precision op: float has more than 2p+2 bits).
 * NaN payloads of SUM/PROD results are the hardware's (x86 propagates an
 * input's payload, GPUs return the canonical NaN); MAX/MIN select an input,
 * so their NaNs are bit-exact everywhere.
 */
#ifndef ACCEL_REDUCE_OPS_H
#define ACCEL_REDUCE_OPS_H

#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <string.h>
#endif

#if defined(__CUDACC__)
#define ACCEL_REDUCE_FUNC static __host__ __device__ __forceinline__
#else
#define ACCEL_REDUCE_FUNC static inline __attribute__((always_inline))
#endif

/* Element types as they lie in memory (accel_dtype_t, pairs as MPI's C pairs). */
typedef uint16_t accel_float16_t;  /* IEEE binary16, its bits */
typedef uint16_t accel_bfloat16_t; /* bfloat16, its bits */
typedef uint8_t accel_bool_t;      /* 0 or 1 (any non-zero byte reads as true) */
typedef struct {
    float re, im;
} accel_complex_float_t;
typedef struct {
    double re, im;
} accel_complex_double_t;
typedef struct {
    short v;
    int k;
} accel_short_int_t;
typedef struct {
    int v;
    int k;
} accel_2int_t;
typedef struct {
    long v;
    int k;
} accel_long_int_t;
typedef struct {
    float v;
    int k;
} accel_float_int_t;
typedef struct {
    double v;
    int k;
} accel_double_int_t;

/*
 * Every pair accel_reduce_supported() accepts, by family (the CUDA kernels are
 * built one family per file): _F(OP, op, DT, dt, type) for ACCEL_OP_<OP> on
 * ACCEL_DT_<DT> of C type type; accel_reduce_op_<op>_<dt>() computes it.
 */
#define ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, _OP, _op)                                               \
    _F(_OP, _op, INT8, int8, int8_t)                                                               \
    _F(_OP, _op, UINT8, uint8, uint8_t)                                                            \
    _F(_OP, _op, INT16, int16, int16_t)                                                            \
    _F(_OP, _op, UINT16, uint16, uint16_t)                                                         \
    _F(_OP, _op, INT32, int32, int32_t)                                                            \
    _F(_OP, _op, UINT32, uint32, uint32_t)                                                         \
    _F(_OP, _op, INT64, int64, int64_t)                                                            \
    _F(_OP, _op, UINT64, uint64, uint64_t)

#define ACCEL_REDUCE_FOREACH_FLOAT_TYPE_(_F, _OP, _op)                                             \
    _F(_OP, _op, FLOAT16, float16, accel_float16_t)                                                \
    _F(_OP, _op, BFLOAT16, bfloat16, accel_bfloat16_t)                                             \
    _F(_OP, _op, FLOAT, float, float)                                                              \
    _F(_OP, _op, DOUBLE, double, double)

#define ACCEL_REDUCE_FOREACH_PAIR_TYPE_(_F, _OP, _op)                                              \
    _F(_OP, _op, SHORT_INT, short_int, accel_short_int_t)                                          \
    _F(_OP, _op, 2INT, 2int, accel_2int_t)                                                         \
    _F(_OP, _op, LONG_INT, long_int, accel_long_int_t)                                             \
    _F(_OP, _op, FLOAT_INT, float_int, accel_float_int_t)                                          \
    _F(_OP, _op, DOUBLE_INT, double_int, accel_double_int_t)

/* SUM, PROD, MAX, MIN on integers. */
#define ACCEL_REDUCE_FOREACH_INT(_F)                                                               \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, SUM, sum)                                                   \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, PROD, prod)                                                 \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, MAX, max)                                                   \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, MIN, min)

/* Logical ops on integers and bool, bitwise ops on integers. */
#define ACCEL_REDUCE_FOREACH_BIT(_F)                                                               \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, LAND, land)                                                 \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, LOR, lor)                                                   \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, LXOR, lxor)                                                 \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, BAND, band)                                                 \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, BOR, bor)                                                   \
    ACCEL_REDUCE_FOREACH_INT_TYPE_(_F, BXOR, bxor)                                                 \
    _F(LAND, land, BOOL, bool, accel_bool_t)                                                       \
    _F(LOR, lor, BOOL, bool, accel_bool_t)                                                         \
    _F(LXOR, lxor, BOOL, bool, accel_bool_t)

/* SUM, PROD, MAX, MIN on float16, bfloat16, float, double. */
#define ACCEL_REDUCE_FOREACH_FLOAT(_F)                                                             \
    ACCEL_REDUCE_FOREACH_FLOAT_TYPE_(_F, SUM, sum)                                                 \
    ACCEL_REDUCE_FOREACH_FLOAT_TYPE_(_F, PROD, prod)                                               \
    ACCEL_REDUCE_FOREACH_FLOAT_TYPE_(_F, MAX, max)                                                 \
    ACCEL_REDUCE_FOREACH_FLOAT_TYPE_(_F, MIN, min)

#define ACCEL_REDUCE_FOREACH_COMPLEX(_F)                                                           \
    _F(SUM, sum, COMPLEX_FLOAT, complex_float, accel_complex_float_t)                              \
    _F(PROD, prod, COMPLEX_FLOAT, complex_float, accel_complex_float_t)                            \
    _F(SUM, sum, COMPLEX_DOUBLE, complex_double, accel_complex_double_t)                           \
    _F(PROD, prod, COMPLEX_DOUBLE, complex_double, accel_complex_double_t)

#define ACCEL_REDUCE_FOREACH_PAIR(_F)                                                              \
    ACCEL_REDUCE_FOREACH_PAIR_TYPE_(_F, MAXLOC, maxloc)                                            \
    ACCEL_REDUCE_FOREACH_PAIR_TYPE_(_F, MINLOC, minloc)

#define ACCEL_REDUCE_FOREACH(_F)                                                                   \
    ACCEL_REDUCE_FOREACH_INT(_F)                                                                   \
    ACCEL_REDUCE_FOREACH_BIT(_F)                                                                   \
    ACCEL_REDUCE_FOREACH_FLOAT(_F)                                                                 \
    ACCEL_REDUCE_FOREACH_COMPLEX(_F)                                                               \
    ACCEL_REDUCE_FOREACH_PAIR(_F)

/* Rounded products that no compiler fuses into an FMA with the add that follows. */
#ifdef __CUDA_ARCH__
#define ACCEL_REDUCE_MULF(_a, _b) __fmul_rn(_a, _b)
#define ACCEL_REDUCE_MUL(_a, _b) __dmul_rn(_a, _b)
#else
#define ACCEL_REDUCE_MULF(_a, _b) ((_a) * (_b))
#define ACCEL_REDUCE_MUL(_a, _b) ((_a) * (_b))
#endif

ACCEL_REDUCE_FUNC uint32_t accel_reduce_float_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
#endif
}

ACCEL_REDUCE_FUNC float accel_reduce_bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
#endif
}

/* binary16 -> float: exact. */
ACCEL_REDUCE_FUNC float accel_reduce_half_to_float(accel_float16_t h) {
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
    uint32_t mant = (uint32_t)h & 0x3ffu;
    float mag;

    if (exp == 0x1fu) { /* Inf, NaN (payload kept) */
        return accel_reduce_bits_float(sign | 0x7f800000u | (mant << 13));
    }
    if (exp == 0) { /* zero, subnormal: mant * 2^-24, exact in float */
        mag = (float)mant * 5.9604644775390625e-8f;
        return accel_reduce_bits_float(sign | accel_reduce_float_bits(mag));
    }
    return accel_reduce_bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* float -> binary16, round to nearest, ties to even. */
ACCEL_REDUCE_FUNC accel_float16_t accel_reduce_float_to_half(float f) {
    uint32_t x = accel_reduce_float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    uint32_t bits, rem, halfway, shift;

    if (ax > 0x7f800000u) { /* NaN: quiet, keep the top of the payload */
        return (accel_float16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    if (ax >= 0x477ff000u) { /* >= 65520 (max + half an ulp, odd): Inf */
        return (accel_float16_t)(sign | 0x7c00u);
    }
    if (ax >= 0x38800000u) { /* normal: rebias the exponent, round 13 bits away */
        bits = (ax - 0x38000000u) >> 13;
        rem = ax & 0x1fffu;
        bits += (rem > 0x1000u) || ((rem == 0x1000u) && (bits & 1u));
        return (accel_float16_t)(sign | bits);
    }
    if (ax < 0x33000000u) { /* < 2^-25 (half the smallest subnormal, even): 0 */
        return (accel_float16_t)sign;
    }
    /* subnormal: round (1.mant * 2^(e-127)) * 2^24 to an integer; may carry
     * into the smallest normal, whose encoding follows on */
    shift = 126u - (ax >> 23);
    bits = ((ax & 0x7fffffu) | 0x800000u);
    rem = bits & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
    bits >>= shift;
    bits += (rem > halfway) || ((rem == halfway) && (bits & 1u));
    return (accel_float16_t)(sign | bits);
}

/* bfloat16 -> float: exact. */
ACCEL_REDUCE_FUNC float accel_reduce_bf16_to_float(accel_bfloat16_t h) {
    return accel_reduce_bits_float((uint32_t)h << 16);
}

/* float -> bfloat16, round to nearest, ties to even (the carry makes Inf). */
ACCEL_REDUCE_FUNC accel_bfloat16_t accel_reduce_float_to_bf16(float f) {
    uint32_t x = accel_reduce_float_bits(f);

    if ((x & 0x7fffffffu) > 0x7f800000u) { /* NaN: quiet, keep the top of the payload */
        return (accel_bfloat16_t)((x >> 16) | 0x40u);
    }
    return (accel_bfloat16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Integers: _wide is unsigned and at least as wide as int (no promotion to a
 * signed int that could overflow, e.g. uint16 * uint16). */
#define ACCEL_REDUCE_DEFINE_INT_OPS_(_dt, _type, _wide)                                            \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_sum_##_dt(_type acc, _type x) {                        \
        return (_type)((_wide)acc + (_wide)x);                                                     \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_prod_##_dt(_type acc, _type x) {                       \
        return (_type)((_wide)acc * (_wide)x);                                                     \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_max_##_dt(_type acc, _type x) {                        \
        return (acc > x) ? acc : x;                                                                \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_min_##_dt(_type acc, _type x) {                        \
        return (acc < x) ? acc : x;                                                                \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_land_##_dt(_type acc, _type x) {                       \
        return (_type)(acc && x);                                                                  \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_lor_##_dt(_type acc, _type x) {                        \
        return (_type)(acc || x);                                                                  \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_lxor_##_dt(_type acc, _type x) {                       \
        return (_type)((acc != 0) ^ (x != 0));                                                     \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_band_##_dt(_type acc, _type x) {                       \
        return (_type)(acc & x);                                                                   \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_bor_##_dt(_type acc, _type x) {                        \
        return (_type)(acc | x);                                                                   \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_bxor_##_dt(_type acc, _type x) {                       \
        return (_type)(acc ^ x);                                                                   \
    }

ACCEL_REDUCE_DEFINE_INT_OPS_(int8, int8_t, uint32_t)
ACCEL_REDUCE_DEFINE_INT_OPS_(uint8, uint8_t, uint32_t)
ACCEL_REDUCE_DEFINE_INT_OPS_(int16, int16_t, uint32_t)
ACCEL_REDUCE_DEFINE_INT_OPS_(uint16, uint16_t, uint32_t)
ACCEL_REDUCE_DEFINE_INT_OPS_(int32, int32_t, uint32_t)
ACCEL_REDUCE_DEFINE_INT_OPS_(uint32, uint32_t, uint32_t)
ACCEL_REDUCE_DEFINE_INT_OPS_(int64, int64_t, uint64_t)
ACCEL_REDUCE_DEFINE_INT_OPS_(uint64, uint64_t, uint64_t)

ACCEL_REDUCE_FUNC accel_bool_t accel_reduce_op_land_bool(accel_bool_t acc, accel_bool_t x) {
    return (accel_bool_t)(acc && x);
}

ACCEL_REDUCE_FUNC accel_bool_t accel_reduce_op_lor_bool(accel_bool_t acc, accel_bool_t x) {
    return (accel_bool_t)(acc || x);
}

ACCEL_REDUCE_FUNC accel_bool_t accel_reduce_op_lxor_bool(accel_bool_t acc, accel_bool_t x) {
    return (accel_bool_t)((acc != 0) ^ (x != 0));
}

/* float, double. */
#define ACCEL_REDUCE_DEFINE_FLOAT_OPS_(_dt, _type)                                                 \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_sum_##_dt(_type acc, _type x) { return acc + x; }      \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_prod_##_dt(_type acc, _type x) { return acc * x; }     \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_max_##_dt(_type acc, _type x) {                        \
        return (acc > x) ? acc : x;                                                                \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_min_##_dt(_type acc, _type x) {                        \
        return (acc < x) ? acc : x;                                                                \
    }

ACCEL_REDUCE_DEFINE_FLOAT_OPS_(float, float)
ACCEL_REDUCE_DEFINE_FLOAT_OPS_(double, double)

/* float16, bfloat16: through float; MAX/MIN select an input's bits. */
#define ACCEL_REDUCE_DEFINE_HALF_OPS_(_dt, _type, _to_float, _from_float)                          \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_sum_##_dt(_type acc, _type x) {                        \
        return _from_float(_to_float(acc) + _to_float(x));                                         \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_prod_##_dt(_type acc, _type x) {                       \
        return _from_float(_to_float(acc) * _to_float(x));                                         \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_max_##_dt(_type acc, _type x) {                        \
        return (_to_float(acc) > _to_float(x)) ? acc : x;                                          \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_min_##_dt(_type acc, _type x) {                        \
        return (_to_float(acc) < _to_float(x)) ? acc : x;                                          \
    }

ACCEL_REDUCE_DEFINE_HALF_OPS_(float16, accel_float16_t, accel_reduce_half_to_float,
                              accel_reduce_float_to_half)
ACCEL_REDUCE_DEFINE_HALF_OPS_(bfloat16, accel_bfloat16_t, accel_reduce_bf16_to_float,
                              accel_reduce_float_to_bf16)

/* Complex: Open MPI's COMPLEX_SUM_FUNC / COMPLEX_PROD_FUNC. */
#define ACCEL_REDUCE_DEFINE_COMPLEX_OPS_(_dt, _type, _mul)                                         \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_sum_##_dt(_type acc, _type x) {                        \
        _type r;                                                                                   \
        r.re = acc.re + x.re;                                                                      \
        r.im = acc.im + x.im;                                                                      \
        return r;                                                                                  \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_prod_##_dt(_type acc, _type x) {                       \
        _type r;                                                                                   \
        r.re = _mul(acc.re, x.re) - _mul(acc.im, x.im);                                            \
        r.im = _mul(acc.re, x.im) + _mul(acc.im, x.re);                                            \
        return r;                                                                                  \
    }

ACCEL_REDUCE_DEFINE_COMPLEX_OPS_(complex_float, accel_complex_float_t, ACCEL_REDUCE_MULF)
ACCEL_REDUCE_DEFINE_COMPLEX_OPS_(complex_double, accel_complex_double_t, ACCEL_REDUCE_MUL)

/* MAXLOC, MINLOC: Open MPI's LOC_FUNC. */
#define ACCEL_REDUCE_DEFINE_LOC_OPS_(_dt, _type)                                                   \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_maxloc_##_dt(_type acc, _type x) {                     \
        if (x.v > acc.v) {                                                                         \
            return x;                                                                              \
        }                                                                                          \
        if ((x.v == acc.v) && (x.k < acc.k)) {                                                     \
            acc.k = x.k;                                                                           \
        }                                                                                          \
        return acc;                                                                                \
    }                                                                                              \
    ACCEL_REDUCE_FUNC _type accel_reduce_op_minloc_##_dt(_type acc, _type x) {                     \
        if (x.v < acc.v) {                                                                         \
            return x;                                                                              \
        }                                                                                          \
        if ((x.v == acc.v) && (x.k < acc.k)) {                                                     \
            acc.k = x.k;                                                                           \
        }                                                                                          \
        return acc;                                                                                \
    }

ACCEL_REDUCE_DEFINE_LOC_OPS_(short_int, accel_short_int_t)
ACCEL_REDUCE_DEFINE_LOC_OPS_(2int, accel_2int_t)
ACCEL_REDUCE_DEFINE_LOC_OPS_(long_int, accel_long_int_t)
ACCEL_REDUCE_DEFINE_LOC_OPS_(float_int, accel_float_int_t)
ACCEL_REDUCE_DEFINE_LOC_OPS_(double_int, accel_double_int_t)

#endif /* ACCEL_REDUCE_OPS_H */
