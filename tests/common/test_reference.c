/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inputs and the independent reference of the coll/gpu MPI tests: see test_reference.h.
 */
#include "test_reference.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t tu_mix64(uint64_t x) {
    /* splitmix64 finalizer */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* "First non-zero" is the non-commutative op on scalars: it needs zeros, placed so the first
 * non-zero source of element i is source i % (nsrc + 1) -- any reordering of the sources by
 * the library changes the result somewhere. */
static bool tu_gen_zero(const tu_type_t *type, tu_op_id_t op, int src, int nsrc, size_t index) {
    return TU_OP_USER_NONCOMM == op && TU_TYPE_VECTOR != type->id &&
           (size_t)src < index % (size_t)(nsrc + 1);
}

void tu_gen(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int src, int nsrc, size_t first,
            size_t count, void *packed) {
    unsigned char *out = packed;
    uint64_t seed = tu_mix64(((uint64_t)stream << 32) ^ (uint64_t)(uint32_t)src);

    for (size_t e = 0; e < count; e++) {
        size_t index = first + e;
        bool zero = tu_gen_zero(type, op, src, nsrc, index);
        for (int v = 0; v < type->nvals; v++) {
            uint64_t h = tu_mix64(seed ^ (index * 2 + v));
            unsigned char *dst = out + (e * type->nvals + v) * type->base_size;
            switch (type->base) {
            case TU_BASE_INT8: {
                /* full range: sums overflow and must wrap */
                int8_t x = zero ? 0 : (int8_t)(uint8_t)h;
                if (!zero && 0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 1;
                }
                memcpy(dst, &x, 1);
                break;
            }
            case TU_BASE_UINT8: {
                /* >= 128: any two of them overflow */
                uint8_t x = zero ? 0 : (uint8_t)(128 + h % 128);
                memcpy(dst, &x, 1);
                break;
            }
            case TU_BASE_INT32: {
                int32_t x = zero ? 0 : (int32_t)(uint32_t)h;
                if (!zero && 0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 1;
                }
                memcpy(dst, &x, 4);
                break;
            }
            case TU_BASE_INT64: {
                int64_t x = zero ? 0 : (int64_t)h;
                if (!zero && 0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 1;
                }
                memcpy(dst, &x, 8);
                break;
            }
            case TU_BASE_FLOAT:
            case TU_BASE_DOUBLE: {
                /* multiples of 1/4 in [-16, 16]: every sum, in any order, is exact */
                double x = zero ? 0.0 : ((int)(h % 129) - 64) * 0.25;
                if (!zero && 0.0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 0.5;
                }
                if (TU_BASE_FLOAT == type->base) {
                    float f = (float)x;
                    memcpy(dst, &f, 4);
                } else {
                    memcpy(dst, &x, 8);
                }
                break;
            }
            }
        }
    }
}

/* Integer ops on the unsigned type so that overflow wraps without undefined behaviour. */
#define TU_APPLY_INT(T, U)                                                                         \
    do {                                                                                           \
        const T *a = in;                                                                           \
        T *b = inout;                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            T x = a[i], y = b[i];                                                                  \
            switch (op) {                                                                          \
            case TU_OP_SUM:                                                                        \
                b[i] = (T)(U)((U)x + (U)y);                                                        \
                break;                                                                             \
            case TU_OP_MAX:                                                                        \
                b[i] = x > y ? x : y;                                                              \
                break;                                                                             \
            case TU_OP_BXOR:                                                                       \
                b[i] = (T)(U)((U)x ^ (U)y);                                                        \
                break;                                                                             \
            case TU_OP_USER_COMM:                                                                  \
                b[i] = (T)(U)((U)x + (U)y + 1u);                                                   \
                break;                                                                             \
            default:                                                                               \
                b[i] = 0 != x ? x : y;                                                             \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define TU_APPLY_FLOAT(T)                                                                          \
    do {                                                                                           \
        const T *a = in;                                                                           \
        T *b = inout;                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            T x = a[i], y = b[i];                                                                  \
            switch (op) {                                                                          \
            case TU_OP_SUM:                                                                        \
                b[i] = x + y;                                                                      \
                break;                                                                             \
            case TU_OP_MAX:                                                                        \
                b[i] = x > y ? x : y;                                                              \
                break;                                                                             \
            case TU_OP_USER_COMM:                                                                  \
                b[i] = x + y + 1;                                                                  \
                break;                                                                             \
            default:                                                                               \
                b[i] = 0 != x ? x : y;                                                             \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

void tu_ref_apply(const tu_type_t *type, tu_op_id_t op, const void *in, void *inout, size_t count) {
    size_t n = count * type->nvals;

    if (TU_OP_USER_NONCOMM == op && TU_TYPE_VECTOR == type->id) {
        /* (a, b) is x -> a*x + b; in o inout is the composition in(inout(x)):
         * (a1, b1) o (a2, b2) = (a1*a2, a1*b2 + b1), modulo 2^32. */
        const uint32_t *a = in;
        uint32_t *b = inout;
        for (size_t i = 0; i < count; i++) {
            uint32_t a1 = a[2 * i], b1 = a[2 * i + 1], a2 = b[2 * i], b2 = b[2 * i + 1];
            b[2 * i] = a1 * a2;
            b[2 * i + 1] = a1 * b2 + b1;
        }
        return;
    }
    switch (type->base) {
    case TU_BASE_INT8:
        TU_APPLY_INT(int8_t, uint8_t);
        break;
    case TU_BASE_UINT8:
        TU_APPLY_INT(uint8_t, uint8_t);
        break;
    case TU_BASE_INT32:
        TU_APPLY_INT(int32_t, uint32_t);
        break;
    case TU_BASE_INT64:
        TU_APPLY_INT(int64_t, uint64_t);
        break;
    case TU_BASE_FLOAT:
        TU_APPLY_FLOAT(float);
        break;
    case TU_BASE_DOUBLE:
        TU_APPLY_FLOAT(double);
        break;
    }
}

void tu_ref_reduce(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int nsrc_used, int nsrc,
                   size_t first, size_t count, void *packed) {
    size_t bytes = tu_type_packed_size(type, count);
    void *tmp;

    if (nsrc_used <= 0 || 0 == count) {
        return;
    }
    /* MPI order a0 op (a1 op (... op a_{n-1})): fold from the last source leftwards. */
    tu_gen(type, op, stream, nsrc_used - 1, nsrc, first, count, packed);
    tmp = malloc(bytes);
    for (int src = nsrc_used - 2; src >= 0; src--) {
        tu_gen(type, op, stream, src, nsrc, first, count, tmp);
        tu_ref_apply(type, op, tmp, packed, count);
    }
    free(tmp);
}
