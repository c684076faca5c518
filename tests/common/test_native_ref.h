/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The types, inputs, reference operation and hash shared by the native-collective tests
 * (test_allreduce_native, test_native_collectives, test_native_vcolls; their set-up and checks
 * are in test_native_util.h): inputs whose sums depend on the order, and the rank-order
 * reference the native algorithms must match bit for bit.
 */
#ifndef TEST_NATIVE_REF_H
#define TEST_NATIVE_REF_H

#include <mpi.h>

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    T_FLOAT_SUM,
    T_DOUBLE_SUM,
    T_DOUBLE_MAX,
    T_INT8_SUM,
    T_INT32_SUM,
    T_INT64_BXOR,
    T_NUM
} test_type_t;

static const struct {
    const char *name;
    size_t size;
    bool fp;
} types[T_NUM] __attribute__((unused)) = {{"float sum", 4, true},  {"double sum", 8, true},
                                          {"double max", 8, true}, {"int8 sum", 1, false},
                                          {"int32 sum", 4, false}, {"int64 bxor", 8, false}};

static inline MPI_Datatype type_handle(test_type_t t) {
    switch (t) {
    case T_FLOAT_SUM:
        return MPI_FLOAT;
    case T_DOUBLE_SUM:
    case T_DOUBLE_MAX:
        return MPI_DOUBLE;
    case T_INT8_SUM:
        return MPI_INT8_T;
    case T_INT32_SUM:
        return MPI_INT32_T;
    default:
        return MPI_INT64_T;
    }
}

static inline MPI_Op op_handle(test_type_t t) {
    return (T_DOUBLE_MAX == t) ? MPI_MAX : (T_INT64_BXOR == t) ? MPI_BXOR : MPI_SUM;
}

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* Element i of world rank r's input: floating point of mixed magnitudes, so that the sum
 * depends on the order. */
static inline void gen(test_type_t t, int r, uint32_t salt, size_t i, void *out) {
    uint64_t h = mix(((uint64_t)salt << 40) ^ ((uint64_t)r << 32) ^ i);
    double d = ((double)(h >> 11) / 9007199254740992.0 - 0.5) * ldexp(1.0, (int)(h % 24) - 12);

    switch (t) {
    case T_FLOAT_SUM:
        *(float *)out = (float)d;
        break;
    case T_DOUBLE_SUM:
    case T_DOUBLE_MAX:
        *(double *)out = d;
        break;
    case T_INT8_SUM:
        *(int8_t *)out = (int8_t)h;
        break;
    case T_INT32_SUM:
        *(int32_t *)out = (int32_t)h;
        break;
    default:
        *(uint64_t *)out = h;
        break;
    }
}

/* |x| of a floating-point t (what a sum's rounding scales with), 0 for the others. */
static inline double magnitude(test_type_t t, const void *x) {
    switch (t) {
    case T_FLOAT_SUM:
        return fabs(*(const float *)x);
    case T_DOUBLE_SUM:
    case T_DOUBLE_MAX:
        return fabs(*(const double *)x);
    default:
        return 0.0;
    }
}

/* acc = acc op x, acc the left operand (as MPI's ops and the kernels have it). */
static inline void apply(test_type_t t, void *acc, const void *x) {
    switch (t) {
    case T_FLOAT_SUM:
        *(float *)acc = *(float *)acc + *(const float *)x;
        break;
    case T_DOUBLE_SUM:
        *(double *)acc = *(double *)acc + *(const double *)x;
        break;
    case T_DOUBLE_MAX:
        *(double *)acc =
            (*(double *)acc > *(const double *)x) ? *(double *)acc : *(const double *)x;
        break;
    case T_INT8_SUM:
        *(int8_t *)acc =
            (int8_t)(uint8_t)((uint8_t) * (int8_t *)acc + (uint8_t) * (const int8_t *)x);
        break;
    case T_INT32_SUM:
        *(int32_t *)acc = (int32_t)((uint32_t) * (int32_t *)acc + (uint32_t) * (const int32_t *)x);
        break;
    default:
        *(uint64_t *)acc ^= *(const uint64_t *)x;
        break;
    }
}

/* Element e of the reference reduction, in rank order, of the inputs of the n ranks whose world
 * ranks are world_ranks, into out; returns the sum of the inputs' magnitudes (what a sum in
 * another order may differ by, tn_check_elements). */
static inline double reference_reduce(test_type_t t, const int *world_ranks, int n, uint32_t salt,
                                      size_t e, void *out) {
    char x[8];
    double abs_sum;

    gen(t, world_ranks[0], salt, e, out);
    abs_sum = magnitude(t, out);
    for (int r = 1; r < n; ++r) {
        gen(t, world_ranks[r], salt, e, x);
        apply(t, out, x);
        abs_sum += magnitude(t, x);
    }
    return abs_sum;
}

static inline uint64_t fnv(uint64_t h, const void *p, size_t len) {
    const unsigned char *b = p;
    for (size_t i = 0; i < len; ++i) {
        h = (h ^ b[i]) * 1099511628211ULL;
    }
    return h;
}

#endif /* TEST_NATIVE_REF_H */
