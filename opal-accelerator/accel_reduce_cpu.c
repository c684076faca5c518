/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CPU reductions: the op definitions of accel_reduce_ops.h run by loops
 * the compiler vectorizes (built with -O3 -ffp-contract=off, see Makefile.am).
 *
 * Each (op, type) pair has two loops over restrict pointers, dst = a op b
 * and acc op= b, in a table indexed [op][dtype].  Two inputs into a separate
 * dst (below ACCEL_REDUCE_CPU_STREAM_MIN), and acc op= in, run one loop over
 * the whole buffers.  Anything else (more inputs, dst equal to an input other
 * than the first, large results) runs chunk by chunk through an accumulator
 * that stays in L1, so each input is read once from memory and dst written
 * once: one pass, inputs combined left to right.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "accel_internal.h"
#include "accel_reduce_ops.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* The build's CFLAGS (-O2 by default) come after this library's -O3, and
 * GCC >= 12 at -O2 vectorizes only loops whose trip count is a multiple of
 * the vector length (the "very cheap" cost model). */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Bytes of the accumulator: stays in L1 while every input streams through.
 * Small chunks measured fastest with 8 inputs (larger ones lose the
 * hardware prefetchers' pace across the input streams). */
#ifndef ACCEL_REDUCE_CPU_CHUNK
#define ACCEL_REDUCE_CPU_CHUNK 2048
#endif

/* Results at least this large (well past L2) are stored around the cache, as
 * memcpy does for large copies: not reading dst's lines before writing them
 * saves a quarter of the memory traffic of a 2-input reduction. */
#ifndef ACCEL_REDUCE_CPU_STREAM_MIN
#define ACCEL_REDUCE_CPU_STREAM_MIN ((size_t)8 << 20)
#endif

/* The element types must be laid out as accel_dtype_size() says. */
_Static_assert(sizeof(accel_complex_float_t) == 8, "complex float layout");
_Static_assert(sizeof(accel_complex_double_t) == 16, "complex double layout");
_Static_assert(sizeof(accel_short_int_t) == 8, "MPI_SHORT_INT layout");
_Static_assert(sizeof(accel_2int_t) == 8, "MPI_2INT layout");
_Static_assert(sizeof(accel_long_int_t) == 16, "MPI_LONG_INT layout (LP64)");
_Static_assert(sizeof(accel_float_int_t) == 8, "MPI_FLOAT_INT layout");
_Static_assert(sizeof(accel_double_int_t) == 16, "MPI_DOUBLE_INT layout");

typedef void (*accel_reduce_cpu_combine_func_t)(void *dst, const void *a, const void *b, size_t n);
typedef void (*accel_reduce_cpu_accumulate_func_t)(void *acc, const void *b, size_t n);

typedef struct {
    accel_reduce_cpu_combine_func_t combine;       /* dst[i] = a[i] op b[i] */
    accel_reduce_cpu_accumulate_func_t accumulate; /* acc[i] = acc[i] op b[i] */
} accel_reduce_cpu_loops_t;

#define ACCEL_REDUCE_CPU_DEFINE(_OP, _op, _DT, _dt, _type)                                         \
    static void accel_reduce_cpu_combine_##_op##_##_dt(void *dst, const void *a, const void *b,    \
                                                       size_t n) {                                 \
        _type *restrict d = (_type *)dst;                                                          \
        const _type *restrict x = (const _type *)a;                                                \
        const _type *restrict y = (const _type *)b;                                                \
                                                                                                   \
        for (size_t i = 0; i < n; ++i) {                                                           \
            d[i] = accel_reduce_op_##_op##_##_dt(x[i], y[i]);                                      \
        }                                                                                          \
    }                                                                                              \
    static void accel_reduce_cpu_accumulate_##_op##_##_dt(void *acc, const void *b, size_t n) {    \
        _type *restrict d = (_type *)acc;                                                          \
        const _type *restrict y = (const _type *)b;                                                \
                                                                                                   \
        for (size_t i = 0; i < n; ++i) {                                                           \
            d[i] = accel_reduce_op_##_op##_##_dt(d[i], y[i]);                                      \
        }                                                                                          \
    }

ACCEL_REDUCE_FOREACH(ACCEL_REDUCE_CPU_DEFINE)

#define ACCEL_REDUCE_CPU_ENTRY(_OP, _op, _DT, _dt, _type)                                          \
    [ACCEL_OP_##_OP][ACCEL_DT_##_DT] = {accel_reduce_cpu_combine_##_op##_##_dt,                    \
                                        accel_reduce_cpu_accumulate_##_op##_##_dt},

/* NULL where MPI does not define the op on the type. */
static const accel_reduce_cpu_loops_t accel_reduce_cpu_table[ACCEL_OP_COUNT][ACCEL_DT_COUNT] = {
    ACCEL_REDUCE_FOREACH(ACCEL_REDUCE_CPU_ENTRY)};

/* memcpy of a chunk from L1 to memory with non-temporal stores. */
static void accel_reduce_cpu_stream_copy(void *dst, const void *src, size_t len) {
#if defined(__SSE2__)
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;

    if (head > len) {
        head = len;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    len -= head;
    for (; len >= 64; len -= 64, d += 64, s += 64) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)s);
        __m128i v1 = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i v2 = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i v3 = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, v0);
        _mm_stream_si128((__m128i *)(d + 16), v1);
        _mm_stream_si128((__m128i *)(d + 32), v2);
        _mm_stream_si128((__m128i *)(d + 48), v3);
    }
    memcpy(d, s, len);
#else
    memcpy(dst, src, len);
#endif
}

/*
 * The chunked pass.  The accumulator of each chunk lives in tmp; the last
 * input is combined straight into dst unless dst is that input.  dst equal to
 * any earlier input is fine: its chunk was read before dst's is written.
 */
static void accel_reduce_cpu_chunked(const accel_reduce_cpu_loops_t *loops, size_t size, void *dst,
                                     const void *const *srcs, int nsrcs, size_t count,
                                     bool stream) {
    _Alignas(64) unsigned char tmp[ACCEL_REDUCE_CPU_CHUNK];
    const size_t chunk = ACCEL_REDUCE_CPU_CHUNK / size;
    const unsigned char *last = srcs[nsrcs - 1];

    for (size_t off = 0; off < count; off += chunk) {
        const size_t n = (count - off < chunk) ? (count - off) : chunk;
        const size_t byte_off = off * size;
        unsigned char *d = (unsigned char *)dst + byte_off;

        if (nsrcs == 2) {
            loops->combine(tmp, (const unsigned char *)srcs[0] + byte_off,
                           (const unsigned char *)srcs[1] + byte_off, n);
        } else {
            loops->combine(tmp, (const unsigned char *)srcs[0] + byte_off,
                           (const unsigned char *)srcs[1] + byte_off, n);
            for (int k = 2; k < nsrcs - 1; ++k) {
                loops->accumulate(tmp, (const unsigned char *)srcs[k] + byte_off, n);
            }
            if (!stream && (last != dst)) {
                loops->combine(d, tmp, last + byte_off, n);
                continue;
            }
            loops->accumulate(tmp, last + byte_off, n);
        }
        if (stream) {
            accel_reduce_cpu_stream_copy(d, tmp, n * size);
        } else {
            memcpy(d, tmp, n * size);
        }
    }
#if defined(__SSE2__)
    if (stream) {
        _mm_sfence(); /* order the streaming stores before what follows */
    }
#endif
}

static accel_status_t accel_reduce_cpu_invalid(void) {
    accel_set_error("accel_reduce_cpu", "ACCEL_ERR_INVALID", ACCEL_ERR_INVALID);
    return ACCEL_ERR_INVALID;
}

accel_status_t accel_reduce_cpu(void *dst, const void *const *srcs, int nsrcs, size_t count,
                                accel_dtype_t dtype, accel_op_t op) {
    const accel_reduce_cpu_loops_t *loops;
    size_t size;
    bool stream;

    if ((nsrcs < 2) || (nsrcs > ACCEL_REDUCE_MAX_INPUTS) || ((unsigned)op >= ACCEL_OP_COUNT) ||
        ((unsigned)dtype >= ACCEL_DT_COUNT)) {
        return accel_reduce_cpu_invalid();
    }
    loops = &accel_reduce_cpu_table[op][dtype];
    if (loops->combine == NULL) {
        accel_set_error("accel_reduce_cpu", "ACCEL_ERR_UNSUPPORTED", ACCEL_ERR_UNSUPPORTED);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (count == 0) {
        return ACCEL_OK;
    }
    size = accel_dtype_size(dtype);
    if ((dst == NULL) || (srcs == NULL) || (count > SIZE_MAX / size)) {
        return accel_reduce_cpu_invalid();
    }
    for (int k = 0; k < nsrcs; ++k) {
        if (srcs[k] == NULL) {
            return accel_reduce_cpu_invalid();
        }
    }

    /* dst is either one of the inputs or apart from all of them */
    stream = (count * size >= ACCEL_REDUCE_CPU_STREAM_MIN);
    if ((nsrcs == 2) && (dst != srcs[0]) && (dst != srcs[1]) && !stream) {
        loops->combine(dst, srcs[0], srcs[1], count);
    } else if ((nsrcs == 2) && (dst == srcs[0]) && (dst != srcs[1])) {
        loops->accumulate(dst, srcs[1], count); /* inout op= in: dst's lines are read anyway */
    } else {
        accel_reduce_cpu_chunked(loops, size, dst, srcs, nsrcs, count, stream);
    }
    return ACCEL_OK;
}
