/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The 24-bit code of a value the ranks agree on inside a call (coll_gpu_native_agree_max): a
 * signal slot carries the step above it, so that a newer word is always the larger.  A
 * floating-point code that rounds up: 18 bits of mantissa, the exponent above; exact below
 * 2^18, at most 2^-17 more above; monotone (a larger value never gets a smaller code), so the
 * largest code of the ranks decodes to at least the largest value.
 */
#ifndef COLL_GPU_VALUE_CODE_H
#define COLL_GPU_VALUE_CODE_H

#include <stdint.h>

#define COLL_GPU_VALUE_CODE_MANT_BITS 18
#define COLL_GPU_VALUE_CODE_BITS 24

static inline uint32_t coll_gpu_value_encode(uint64_t value) {
    const uint64_t mant_top = (uint64_t)1 << COLL_GPU_VALUE_CODE_MANT_BITS;
    unsigned exp;

    if (value < mant_top) {
        return (uint32_t)value;
    }
    /* the fewest low bits to drop so that the rest fits the mantissa, then round up */
    exp = (unsigned)(64 - __builtin_clzll(value)) - COLL_GPU_VALUE_CODE_MANT_BITS;
    value = (value >> exp) + ((0 != (value & (((uint64_t)1 << exp) - 1))) ? 1 : 0);
    if (value == mant_top) {
        value >>= 1;
        exp += 1;
    }
    /* exp >= 1: a mantissa in [2^17, 2^18), codes above every exact one */
    return (uint32_t)(((uint64_t)exp << COLL_GPU_VALUE_CODE_MANT_BITS) | value);
}

static inline uint64_t coll_gpu_value_decode(uint32_t code) {
    unsigned exp = code >> COLL_GPU_VALUE_CODE_MANT_BITS;
    uint64_t mant = code & (((uint64_t)1 << COLL_GPU_VALUE_CODE_MANT_BITS) - 1);

    if (0 == exp) {
        return mant;
    }
    /* 2^64 - 1 rounds up past 64 bits: saturate */
    return (exp > 64 - COLL_GPU_VALUE_CODE_MANT_BITS) ? UINT64_MAX
           : (mant > (UINT64_MAX >> exp))             ? UINT64_MAX
                                                      : (mant << exp);
}

#endif /* COLL_GPU_VALUE_CODE_H */
