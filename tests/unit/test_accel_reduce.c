/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the reductions (opal-accelerator): every (op, type) pair MPI
 * defines, 2 to 16 inputs, sizes on both sides of every vector, chunk and
 * tile boundary, misaligned, in place, against a reference written plainly
 * here (not with accel_reduce_ops.h), compared bit for bit.
 *
 *   test_accel_reduce                  accel_reduce_cpu and the emulated backend
 *   test_accel_reduce --backend cuda   the CUDA kernels (exit 77 without a GPU)
 *   --backend cpu|emulated|cuda, --quick (no 64 MiB cases; implied under valgrind)
 *
 * One line per (backend, op, type) and per semantic check, then
 * "N passed, M failed".  Exit 0 when all passed, 1 otherwise, 77 skipped.
 *
 * Comparisons are memcmp, with two exceptions: the padding of the
 * MAXLOC/MINLOC pairs is not compared (only v and k), and a NaN produced by
 * SUM or PROD matches any NaN (payloads are the hardware's: x86 and GPUs
 * differ).  MAX and MIN select an input, so their NaNs must match exactly.
 * Built with -ffp-contract=off, so the reference rounds every product.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "accel.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#include "unit_check.h"

#define MAXN ACCEL_REDUCE_MAX_INPUTS
#define GUARD 16  /* bytes checked on each side of dst */
#define BASE 64   /* where buffers start in each work allocation */
#define SLACK 128 /* room for BASE, offsets and guards */
#define MAX_COUNT 70000
#define BIG_BYTES (((size_t)64 << 20) + 16)

/* ------------------------------------------------------------------------ */
/* Reference                                                                 */

typedef struct {
    short v;
    int k;
} ref_short_int_t;
typedef struct {
    int v;
    int k;
} ref_2int_t;
typedef struct {
    long v;
    int k;
} ref_long_int_t;
typedef struct {
    float v;
    int k;
} ref_float_int_t;
typedef struct {
    double v;
    int k;
} ref_double_int_t;

static bool dt_is_int(accel_dtype_t dt) { return dt <= ACCEL_DT_UINT64; }
static bool dt_is_signed(accel_dtype_t dt) { return dt_is_int(dt) && ((dt % 2) == 0); }
static bool dt_is_pair(accel_dtype_t dt) { return dt >= ACCEL_DT_SHORT_INT; }
static bool dt_is_floating(accel_dtype_t dt) {
    return (dt >= ACCEL_DT_FLOAT16) && (dt <= ACCEL_DT_COMPLEX_DOUBLE);
}

/* binary16 <-> float by value (ldexp, rint), not by bit manipulation. */
static float ref_half_to_float(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;

    if (e == 31) {
        v = m ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp(m, -24);
    } else {
        v = ldexp(1024 + m, e - 25);
    }
    return (float)((h & 0x8000) ? -v : v);
}

static float ref_bf16_to_float(uint16_t h) {
    int e = (h >> 7) & 0xff, m = h & 0x7f;
    double v;

    if (e == 255) {
        v = m ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp(m, -133);
    } else {
        v = ldexp(128 + m, e - 134);
    }
    return (float)((h & 0x8000) ? -v : v);
}

/* Round f to a format of mbits stored mantissa bits, exponent bias bias,
 * exponent field width ebits: the number of quanta by rint (ties to even). */
static uint16_t ref_round(float f, int mbits, int ebits, int bias) {
    const uint16_t sign = signbit(f) ? 0x8000 : 0;
    const int emax_field = (1 << ebits) - 1;
    const int qmin = 1 - bias - mbits; /* quantum of the subnormals */
    double a = fabs((double)f), r, v, m;
    int e, q;

    if (isnan(f)) {
        return (uint16_t)(sign | (emax_field << mbits) | (1 << (mbits - 1)));
    }
    if (isinf(a)) {
        return (uint16_t)(sign | (emax_field << mbits));
    }
    if (a == 0) {
        return sign;
    }
    (void)frexp(a, &e); /* a in [2^(e-1), 2^e) */
    q = e - 1 - mbits;
    if (q < qmin) {
        q = qmin;
    }
    r = rint(ldexp(a, -q));
    v = ldexp(r, q);
    if (v >= ldexp(1.0, bias + 1)) {
        return (uint16_t)(sign | (emax_field << mbits));
    }
    if (v < ldexp(1.0, 1 - bias)) {
        return (uint16_t)(sign | (uint16_t)r); /* subnormal */
    }
    m = frexp(v, &e);
    return (uint16_t)(sign | ((e - 1 + bias) << mbits) |
                      (uint16_t)((m * 2.0 - 1.0) * ldexp(1.0, mbits)));
}

static uint16_t ref_float_to_half(float f) { return ref_round(f, 10, 5, 15); }
static uint16_t ref_float_to_bf16(float f) { return ref_round(f, 7, 8, 127); }

static uint64_t ref_load_u(const void *p, size_t size) {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;

    switch (size) {
    case 1:
        memcpy(&u8, p, 1);
        return u8;
    case 2:
        memcpy(&u16, p, 2);
        return u16;
    case 4:
        memcpy(&u32, p, 4);
        return u32;
    default:
        memcpy(&u64, p, 8);
        return u64;
    }
}

static void ref_store_u(void *p, size_t size, uint64_t v) {
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;

    switch (size) {
    case 1:
        memcpy(p, &u8, 1);
        break;
    case 2:
        memcpy(p, &u16, 2);
        break;
    case 4:
        memcpy(p, &u32, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

static int64_t ref_sign_extend(uint64_t v, size_t size) {
    const unsigned shift = (unsigned)(64 - 8 * size);

    return (int64_t)(v << shift) >> shift; /* arithmetic shift (gcc, clang) */
}

/* Integers: modulo 2^64 in uint64_t, cut to size; order by value. */
static void ref_int(accel_op_t op, accel_dtype_t dt, void *acc, const void *x) {
    const size_t size = accel_dtype_size(dt);
    const uint64_t a = ref_load_u(acc, size), b = ref_load_u(x, size);
    const int64_t sa = ref_sign_extend(a, size), sb = ref_sign_extend(b, size);
    const bool greater = dt_is_signed(dt) ? (sa > sb) : (a > b);
    const bool less = dt_is_signed(dt) ? (sa < sb) : (a < b);
    uint64_t r = 0;

    switch (op) {
    case ACCEL_OP_SUM:
        r = a + b;
        break;
    case ACCEL_OP_PROD:
        r = a * b;
        break;
    case ACCEL_OP_MAX:
        r = greater ? a : b;
        break;
    case ACCEL_OP_MIN:
        r = less ? a : b;
        break;
    case ACCEL_OP_LAND:
        r = (a != 0) && (b != 0);
        break;
    case ACCEL_OP_LOR:
        r = (a != 0) || (b != 0);
        break;
    case ACCEL_OP_LXOR:
        r = (a != 0) != (b != 0);
        break;
    case ACCEL_OP_BAND:
        r = a & b;
        break;
    case ACCEL_OP_BOR:
        r = a | b;
        break;
    case ACCEL_OP_BXOR:
        r = a ^ b;
        break;
    default:
        abort();
    }
    ref_store_u(acc, size, r);
}

#define REF_ARITH(_op, _a, _b)                                                                     \
    ((_op) == ACCEL_OP_SUM    ? (_a) + (_b)                                                        \
     : (_op) == ACCEL_OP_PROD ? (_a) * (_b)                                                        \
     : (_op) == ACCEL_OP_MAX  ? ((_a) > (_b) ? (_a) : (_b))                                        \
                              : ((_a) < (_b) ? (_a) : (_b)))

#define REF_LOC(_type, _op, _acc, _x)                                                              \
    do {                                                                                           \
        _type a_, x_;                                                                              \
        memcpy(&a_, (_acc), sizeof(a_));                                                           \
        memcpy(&x_, (_x), sizeof(x_));                                                             \
        if (((_op) == ACCEL_OP_MAXLOC) ? (x_.v > a_.v) : (x_.v < a_.v)) {                          \
            a_.v = x_.v;                                                                           \
            a_.k = x_.k;                                                                           \
        } else if ((x_.v == a_.v) && (x_.k < a_.k)) {                                              \
            a_.k = x_.k;                                                                           \
        }                                                                                          \
        memcpy((_acc), &a_, sizeof(a_));                                                           \
    } while (0)

/* acc = acc op x for one element. */
static void ref_combine(accel_op_t op, accel_dtype_t dt, void *acc, const void *x) {
    if (dt_is_int(dt)) {
        ref_int(op, dt, acc, x);
        return;
    }
    switch (dt) {
    case ACCEL_DT_BOOL: {
        const uint8_t a = *(uint8_t *)acc, b = *(const uint8_t *)x;
        *(uint8_t *)acc = (op == ACCEL_OP_LAND)  ? (a && b)
                          : (op == ACCEL_OP_LOR) ? (a || b)
                                                 : ((a != 0) != (b != 0));
        break;
    }
    case ACCEL_DT_FLOAT16:
    case ACCEL_DT_BFLOAT16: {
        const bool half = (dt == ACCEL_DT_FLOAT16);
        uint16_t a, b;
        float fa, fb;

        memcpy(&a, acc, 2);
        memcpy(&b, x, 2);
        fa = half ? ref_half_to_float(a) : ref_bf16_to_float(a);
        fb = half ? ref_half_to_float(b) : ref_bf16_to_float(b);
        if (op == ACCEL_OP_MAX) {
            a = (fa > fb) ? a : b;
        } else if (op == ACCEL_OP_MIN) {
            a = (fa < fb) ? a : b;
        } else {
            float r = (op == ACCEL_OP_SUM) ? fa + fb : fa * fb;
            a = half ? ref_float_to_half(r) : ref_float_to_bf16(r);
        }
        memcpy(acc, &a, 2);
        break;
    }
    case ACCEL_DT_FLOAT: {
        float a, b;
        memcpy(&a, acc, sizeof(a));
        memcpy(&b, x, sizeof(b));
        a = REF_ARITH(op, a, b);
        memcpy(acc, &a, sizeof(a));
        break;
    }
    case ACCEL_DT_DOUBLE: {
        double a, b;
        memcpy(&a, acc, sizeof(a));
        memcpy(&b, x, sizeof(b));
        a = REF_ARITH(op, a, b);
        memcpy(acc, &a, sizeof(a));
        break;
    }
    case ACCEL_DT_COMPLEX_FLOAT: {
        float a[2], b[2], r[2];
        memcpy(a, acc, sizeof(a));
        memcpy(b, x, sizeof(b));
        if (op == ACCEL_OP_SUM) {
            r[0] = a[0] + b[0];
            r[1] = a[1] + b[1];
        } else {
            float rr = a[0] * b[0], ii = a[1] * b[1], ri = a[0] * b[1], ir = a[1] * b[0];
            r[0] = rr - ii;
            r[1] = ri + ir;
        }
        memcpy(acc, r, sizeof(r));
        break;
    }
    case ACCEL_DT_COMPLEX_DOUBLE: {
        double a[2], b[2], r[2];
        memcpy(a, acc, sizeof(a));
        memcpy(b, x, sizeof(b));
        if (op == ACCEL_OP_SUM) {
            r[0] = a[0] + b[0];
            r[1] = a[1] + b[1];
        } else {
            double rr = a[0] * b[0], ii = a[1] * b[1], ri = a[0] * b[1], ir = a[1] * b[0];
            r[0] = rr - ii;
            r[1] = ri + ir;
        }
        memcpy(acc, r, sizeof(r));
        break;
    }
    case ACCEL_DT_SHORT_INT:
        REF_LOC(ref_short_int_t, op, acc, x);
        break;
    case ACCEL_DT_2INT:
        REF_LOC(ref_2int_t, op, acc, x);
        break;
    case ACCEL_DT_LONG_INT:
        REF_LOC(ref_long_int_t, op, acc, x);
        break;
    case ACCEL_DT_FLOAT_INT:
        REF_LOC(ref_float_int_t, op, acc, x);
        break;
    case ACCEL_DT_DOUBLE_INT:
        REF_LOC(ref_double_int_t, op, acc, x);
        break;
    default:
        abort();
    }
}

static void ref_reduce(accel_op_t op, accel_dtype_t dt, void *out, const void *const *in, int n,
                       size_t count) {
    const size_t size = accel_dtype_size(dt);
    unsigned char acc[16];

    for (size_t i = 0; i < count; ++i) {
        memcpy(acc, (const unsigned char *)in[0] + i * size, size);
        for (int k = 1; k < n; ++k) {
            ref_combine(op, dt, acc, (const unsigned char *)in[k] + i * size);
        }
        memcpy((unsigned char *)out + i * size, acc, size);
    }
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */

static bool value_is_nan(accel_dtype_t dt, const unsigned char *p) {
    uint16_t h;
    float f;
    double d;

    switch (dt) {
    case ACCEL_DT_FLOAT16:
        memcpy(&h, p, 2);
        return ((h & 0x7c00) == 0x7c00) && (h & 0x3ff);
    case ACCEL_DT_BFLOAT16:
        memcpy(&h, p, 2);
        return ((h & 0x7f80) == 0x7f80) && (h & 0x7f);
    case ACCEL_DT_FLOAT:
        memcpy(&f, p, 4);
        return isnan(f);
    default:
        memcpy(&d, p, 8);
        return isnan(d);
    }
}

/* Whether element got matches want (see the top of the file). */
static bool element_matches(accel_op_t op, accel_dtype_t dt, const unsigned char *got,
                            const unsigned char *want) {
    const size_t size = accel_dtype_size(dt);
    size_t part;

    if (dt_is_pair(dt)) { /* v at 0, k after v's alignment */
        size_t vsize = (dt == ACCEL_DT_SHORT_INT) ? 2 : (size == 16) ? 8 : 4;
        size_t koff = (dt == ACCEL_DT_SHORT_INT) ? 4 : (size == 16) ? 8 : 4;
        return (memcmp(got, want, vsize) == 0) && (memcmp(got + koff, want + koff, 4) == 0);
    }
    if (memcmp(got, want, size) == 0) {
        return true;
    }
    if (!dt_is_floating(dt) || ((op != ACCEL_OP_SUM) && (op != ACCEL_OP_PROD))) {
        return false;
    }
    /* NaN from arithmetic: any NaN; complex: component by component */
    part = (dt == ACCEL_DT_COMPLEX_FLOAT) ? 4 : (dt == ACCEL_DT_COMPLEX_DOUBLE) ? 8 : size;
    for (size_t off = 0; off < size; off += part) {
        accel_dtype_t pdt = (part == 4) ? ACCEL_DT_FLOAT : (part == 8) ? ACCEL_DT_DOUBLE : dt;
        if ((memcmp(got + off, want + off, part) != 0) &&
            !(value_is_nan(pdt, got + off) && value_is_nan(pdt, want + off))) {
            return false;
        }
    }
    return true;
}

/* Index of the first element that differs, count when none. */
static size_t first_mismatch(accel_op_t op, accel_dtype_t dt, const void *got, const void *want,
                             size_t count) {
    const size_t size = accel_dtype_size(dt);

    if (!dt_is_pair(dt) && (memcmp(got, want, count * size) == 0)) {
        return count;
    }
    for (size_t i = 0; i < count; ++i) {
        if (!element_matches(op, dt, (const unsigned char *)got + i * size,
                             (const unsigned char *)want + i * size)) {
            return i;
        }
    }
    return count;
}

static void print_element(const char *what, const unsigned char *p, size_t size) {
    printf(" %s 0x", what);
    for (size_t b = size; b > 0; --b) { /* little endian: most significant byte first */
        printf("%02x", p[b - 1]);
    }
}

/* ------------------------------------------------------------------------ */
/* Backends                                                                  */

typedef struct {
    const char *name;
    const accel_ops_t *ops; /* NULL: accel_reduce_cpu on host memory */
    accel_stream_h stream;
    unsigned char *work[MAXN + 1]; /* inputs, and [MAXN] a separate dst */
    size_t work_len;
} backend_t;

static accel_status_t be_copy(const backend_t *be, void *dst, const void *src, size_t len) {
    if (len == 0) {
        return ACCEL_OK;
    }
    if (be->ops == NULL) {
        memcpy(dst, src, len);
        return ACCEL_OK;
    }
    return be->ops->memcpy(dst, src, len);
}

static accel_status_t be_reduce(const backend_t *be, void *dst, const void *const *srcs, int n,
                                size_t count, accel_dtype_t dt, accel_op_t op) {
    accel_status_t status;

    if (be->ops == NULL) {
        return accel_reduce_cpu(dst, srcs, n, count, dt, op);
    }
    status = be->ops->reduce(dst, srcs, n, count, dt, op, be->stream);
    if (status == ACCEL_OK) {
        status = be->ops->stream_synchronize(be->stream);
    }
    return status;
}

static void be_free_work(backend_t *be) {
    for (int k = 0; k <= MAXN; ++k) {
        if (be->work[k] == NULL) {
            continue;
        }
        if (be->ops == NULL) {
            free(be->work[k]);
        } else {
            be->ops->mem_free(be->work[k]);
        }
        be->work[k] = NULL;
    }
    be->work_len = 0;
}

static bool be_alloc_work(backend_t *be, size_t len, int nbufs) {
    be_free_work(be);
    for (int k = 0; k < nbufs; ++k) {
        int slot = (k == nbufs - 1) ? MAXN : k; /* the last one is the dst */
        void *p = NULL;

        if (be->ops == NULL) {
            p = malloc(len);
        } else if (be->ops->mem_alloc(ACCEL_MEM_DEVICE, len, &p) != ACCEL_OK) {
            p = NULL;
        }
        if (p == NULL) {
            be_free_work(be);
            return false;
        }
        be->work[slot] = p;
    }
    be->work_len = len;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Cases                                                                     */

typedef struct {
    accel_op_t op;
    accel_dtype_t dt;
    int n;
    size_t count;
    size_t off[MAXN + 1]; /* byte offset of input k, [MAXN] of the separate dst */
    int dst_src;          /* -1: a separate dst; k: dst is input k */
    bool repeat_first;    /* input 1 is input 0's buffer */
} test_case_t;

static unsigned char *host_in[MAXN];     /* input values, per dtype */
static unsigned char *host_ref;          /* the reference result */
static unsigned char *host_got;          /* dst as read back, with guards */
static unsigned char guard_bytes[GUARD]; /* what surrounds dst */
static int print_budget = 3;             /* failures described per (op, type) */

/* Run one case on one backend; the reference is in host_ref.  Returns true
 * when the result and the guards match; prints the first difference. */
static bool run_case(backend_t *be, const test_case_t *tc) {
    const size_t size = accel_dtype_size(tc->dt);
    const size_t bytes = tc->count * size;
    const void *srcs[MAXN];
    unsigned char *dst;
    accel_status_t status = ACCEL_OK;
    size_t bad;

    for (int k = 0; k < tc->n; ++k) {
        int buf = (tc->repeat_first && (k == 1)) ? 0 : k;
        srcs[k] = be->work[buf] + BASE + tc->off[buf];
        if (buf == k) {
            status =
                (status != ACCEL_OK) ? status : be_copy(be, (void *)srcs[k], host_in[k], bytes);
        }
    }
    dst = (tc->dst_src >= 0) ? (unsigned char *)srcs[tc->dst_src]
                             : be->work[MAXN] + BASE + tc->off[MAXN];
    if (tc->dst_src < 0) {
        memset(host_got, 0xa5, bytes); /* stale dst contents must not matter */
        status = (status != ACCEL_OK) ? status : be_copy(be, dst, host_got, bytes);
    }
    if (status == ACCEL_OK) {
        status = be_copy(be, dst - GUARD, guard_bytes, GUARD);
    }
    if (status == ACCEL_OK) {
        status = be_copy(be, dst + bytes, guard_bytes, GUARD);
    }
    if (status == ACCEL_OK) {
        status = be_reduce(be, dst, srcs, tc->n, tc->count, tc->dt, tc->op);
    }
    if (status == ACCEL_OK) {
        status = be_copy(be, host_got, dst - GUARD, bytes + 2 * GUARD);
    }
    if (status != ACCEL_OK) {
        printf("  %s %s %s n=%d count=%zu: %s\n", be->name, accel_op_string(tc->op),
               accel_dtype_string(tc->dt), tc->n, tc->count, accel_status_string(status));
        return false;
    }

    bad = first_mismatch(tc->op, tc->dt, host_got + GUARD, host_ref, tc->count);
    if ((bad == tc->count) && (memcmp(host_got, guard_bytes, GUARD) == 0) &&
        (memcmp(host_got + GUARD + bytes, guard_bytes, GUARD) == 0)) {
        return true;
    }
    if (print_budget-- <= 0) {
        return false;
    }
    printf("  %s %s %s n=%d count=%zu dst=%d offsets=%zu/%zu/%zu%s:", be->name,
           accel_op_string(tc->op), accel_dtype_string(tc->dt), tc->n, tc->count, tc->dst_src,
           tc->off[0], tc->off[1], tc->off[MAXN], tc->repeat_first ? " repeated" : "");
    if (bad < tc->count) {
        printf(" element %zu", bad);
        print_element("got", host_got + GUARD + bad * size, size);
        print_element("want", host_ref + bad * size, size);
        for (int k = 0; k < tc->n; ++k) {
            print_element((k == 0) ? "in" : ",", host_in[k] + bad * size, size);
        }
    } else {
        printf(" wrote outside dst");
    }
    printf("\n");
    return false;
}

/* ------------------------------------------------------------------------ */
/* Input values                                                              */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* A float of every kind: mostly ordinary values, some zeros, subnormals,
 * huge values, infinities and NaNs. */
static double gen_float_value(bool is_double) {
    const uint64_t r = rng();
    const unsigned pick = (unsigned)(r % 100);
    const double sign = (r & 0x100) ? -1.0 : 1.0;
    const double frac = (double)((r >> 16) & 0xffffff) / 16777216.0;

    if (pick < 4) {
        return sign * 0.0;
    } else if (pick < 6) {
        return sign * INFINITY;
    } else if (pick < 8) {
        return NAN;
    } else if (pick < 14) {
        return sign * ldexp(1.0 + frac, is_double ? -1030 : -140); /* subnormal */
    } else if (pick < 20) {
        return sign * ldexp(1.0 + frac, is_double ? 1020 : 125);
    } else if (pick < 30) {
        return sign * (double)((r >> 40) % 5); /* small integers: ties in MAX/MIN */
    }
    return sign * ldexp(1.0 + frac, (int)((r >> 44) % 9) - 4);
}

static void gen_inputs(accel_dtype_t dt, size_t count) {
    const size_t size = accel_dtype_size(dt);

    for (int k = 0; k < MAXN; ++k) {
        unsigned char *p = host_in[k];

        for (size_t i = 0; i < count; ++i, p += size) {
            const uint64_t r = rng();

            if (dt_is_int(dt)) {
                /* zeros and small values for the logical ops, else any bits */
                uint64_t v = ((r & 7) == 0) ? 0 : ((r & 7) == 1) ? (r >> 8) % 5 : rng();
                ref_store_u(p, size, v);
            } else if (dt == ACCEL_DT_BOOL) {
                *p = (unsigned char)(r & 1);
            } else if ((dt == ACCEL_DT_FLOAT16) || (dt == ACCEL_DT_BFLOAT16)) {
                /* any bits, or a value near 1 (so that sums round) */
                uint16_t h = (uint16_t)r;
                if (r & 0x10000) {
                    h = (dt == ACCEL_DT_FLOAT16) ? ref_float_to_half((float)gen_float_value(false))
                                                 : ref_float_to_bf16((float)gen_float_value(false));
                }
                memcpy(p, &h, 2);
            } else if (dt == ACCEL_DT_FLOAT) {
                float f = (float)gen_float_value(false);
                memcpy(p, &f, 4);
            } else if (dt == ACCEL_DT_DOUBLE) {
                double d = gen_float_value(true);
                memcpy(p, &d, 8);
            } else if (dt == ACCEL_DT_COMPLEX_FLOAT) {
                float c[2] = {(float)gen_float_value(false), (float)gen_float_value(false)};
                memcpy(p, c, 8);
            } else if (dt == ACCEL_DT_COMPLEX_DOUBLE) {
                double c[2] = {gen_float_value(true), gen_float_value(true)};
                memcpy(p, c, 16);
            } else {
                /* pairs: few distinct values (ties), padding with garbage */
                const int v = (int)(r % 7) - 3;
                const int key = (int)((r >> 8) % 1000);
                unsigned char e[16];

                memset(e, (int)(r >> 40), sizeof(e));
                switch (dt) {
                case ACCEL_DT_SHORT_INT: {
                    ref_short_int_t x = {(short)(v * 1000), key};
                    memcpy(e, &x.v, 2);
                    memcpy(e + 4, &x.k, 4);
                    break;
                }
                case ACCEL_DT_2INT: {
                    ref_2int_t x = {v * 100000, key};
                    memcpy(e, &x, 8);
                    break;
                }
                case ACCEL_DT_LONG_INT: {
                    ref_long_int_t x = {(long)v << 40, key};
                    memcpy(e, &x.v, 8);
                    memcpy(e + 8, &x.k, 4);
                    break;
                }
                case ACCEL_DT_FLOAT_INT: {
                    ref_float_int_t x = {(r & 0x1000000) ? (float)v : (float)gen_float_value(false),
                                         key};
                    memcpy(e, &x, 8);
                    break;
                }
                default: {
                    ref_double_int_t x = {(r & 0x1000000) ? (double)v : gen_float_value(true), key};
                    memcpy(e, &x.v, 8);
                    memcpy(e + 8, &x.k, 4);
                    break;
                }
                }
                memcpy(p, e, size);
            }
        }
    }
}

/* Counts around every boundary of the type: 16-byte vectors, the CPU's 2 KiB
 * chunks, the GPU's 16 KiB block tiles, plus small and odd ones. */
static int gen_counts(accel_dtype_t dt, size_t *counts) {
    const size_t size = accel_dtype_size(dt);
    const size_t vec = 16 / size, chunk = 2048 / size, tile = 16384 / size;
    const size_t list[] = {
        0,    1,        2,    3,   5,    vec - 1,   vec,   vec + 1,   2 * vec - 1,   2 * vec + 1,
        31,   64,       67,   255, 1021, chunk - 1, chunk, chunk + 1, 2 * chunk + 3, tile - 1,
        tile, tile + 1, 40001};
    int n = 0;

    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); ++i) {
        bool seen = false;
        for (int j = 0; j < n; ++j) {
            seen = seen || (counts[j] == list[i]);
        }
        if (!seen && (list[i] <= MAX_COUNT)) {
            counts[n++] = list[i];
        }
    }
    return n;
}

static test_case_t *add_case(test_case_t *cases, int *ncases, accel_op_t op, accel_dtype_t dt,
                             size_t count, int n, int dst_src) {
    test_case_t *tc = &cases[(*ncases)++];

    *tc = (test_case_t){.op = op, .dt = dt, .n = n, .count = count, .dst_src = dst_src};
    return tc;
}

/* The cases of one count: shapes that reach every path of the CPU loops and
 * of the kernels (vector, element by element, head and tail, in place). */
static int gen_cases(accel_op_t op, accel_dtype_t dt, size_t count, test_case_t *cases) {
    static const int ns[] = {2, 3, 7, 16};
    const size_t size = accel_dtype_size(dt);
    test_case_t *tc;
    int n = 0;

    /* aligned, separate dst */
    for (int i = 0; i < 4; ++i) {
        add_case(cases, &n, op, dt, count, ns[i], -1);
    }
    if (count > 20000) { /* the large count: the common shapes only */
        add_case(cases, &n, op, dt, count, 2, 0);
        return n;
    }
    /* every buffer one element past 16-byte alignment: vectors after a head */
    for (int i = 0; i < 2; ++i) {
        tc = add_case(cases, &n, op, dt, count, (i == 0) ? 2 : 16, -1);
        for (int k = 0; k <= MAXN; ++k) {
            tc->off[k] = size;
        }
    }
    /* mixed alignment: element by element */
    for (int i = 0; i < 2; ++i) {
        tc = add_case(cases, &n, op, dt, count, (i == 0) ? 2 : 5, -1);
        for (int k = 0; k < MAXN; ++k) {
            tc->off[k] = (size_t)(k % 2) * size;
        }
        tc->off[MAXN] = (size < 16) ? size : 0;
    }
    /* in place: inout op= in, and dst as input 0 of more */
    add_case(cases, &n, op, dt, count, 2, 0);
    add_case(cases, &n, op, dt, count, 3, 0);
    add_case(cases, &n, op, dt, count, 16, 0);
    tc = add_case(cases, &n, op, dt, count, 2, 0);
    tc->off[0] = tc->off[1] = size;
    /* dst as a later input, and one buffer passed twice */
    add_case(cases, &n, op, dt, count, 2, 1);
    add_case(cases, &n, op, dt, count, 3, 2);
    add_case(cases, &n, op, dt, count, 4, 1);
    tc = add_case(cases, &n, op, dt, count, 3, -1);
    tc->repeat_first = true;
    return n;
}

static void case_ref(const test_case_t *tc) {
    const void *in[MAXN];

    for (int k = 0; k < tc->n; ++k) {
        in[k] = host_in[(tc->repeat_first && (k == 1)) ? 0 : k];
    }
    ref_reduce(tc->op, tc->dt, host_ref, in, tc->n, tc->count);
}

/* Every supported pair, every count and case shape, on every backend. */
static void test_all_pairs(backend_t *bes, int nbes) {
    size_t counts[32];
    test_case_t cases[32];

    for (int dt = 0; dt < ACCEL_DT_COUNT; ++dt) {
        const int ncounts = gen_counts((accel_dtype_t)dt, counts);

        gen_inputs((accel_dtype_t)dt, MAX_COUNT);
        for (int op = 0; op < ACCEL_OP_COUNT; ++op) {
            int ncases = 0, failed[2] = {0, 0};

            if (!accel_reduce_supported((accel_op_t)op, (accel_dtype_t)dt)) {
                continue;
            }
            print_budget = 3;
            for (int c = 0; c < ncounts; ++c) {
                const int nc = gen_cases((accel_op_t)op, (accel_dtype_t)dt, counts[c], cases);

                for (int i = 0; i < nc; ++i, ++ncases) {
                    case_ref(&cases[i]);
                    for (int b = 0; b < nbes; ++b) {
                        failed[b] += !run_case(&bes[b], &cases[i]);
                    }
                }
            }
            for (int b = 0; b < nbes; ++b) {
                CHECK(failed[b] == 0, "%s: %s %s, %d cases", bes[b].name,
                      accel_op_string((accel_op_t)op), accel_dtype_string((accel_dtype_t)dt),
                      ncases);
            }
        }
    }
}

/* All 65536 bit patterns of float16 and bfloat16 against shuffled ones: every
 * conversion path (subnormals, Inf, NaN, rounding into Inf and out of the
 * subnormals). */
static void test_half_patterns(backend_t *bes, int nbes) {
    static const accel_dtype_t dts[] = {ACCEL_DT_FLOAT16, ACCEL_DT_BFLOAT16};
    static const accel_op_t ops[] = {ACCEL_OP_SUM, ACCEL_OP_PROD, ACCEL_OP_MAX, ACCEL_OP_MIN};

    for (size_t d = 0; d < 2; ++d) {
        for (uint32_t i = 0; i < 65536; ++i) {
            uint16_t a = (uint16_t)i, b = (uint16_t)((i * 40503u + 12345u) & 0xffff);
            memcpy(host_in[0] + 2 * i, &a, 2);
            memcpy(host_in[1] + 2 * i, &b, 2);
        }
        for (size_t o = 0; o < 4; ++o) {
            test_case_t tc = {.op = ops[o], .dt = dts[d], .n = 2, .count = 65536, .dst_src = -1};

            case_ref(&tc);
            for (int b = 0; b < nbes; ++b) {
                CHECK(run_case(&bes[b], &tc), "%s: %s %s, every bit pattern", bes[b].name,
                      accel_op_string(ops[o]), accel_dtype_string(dts[d]));
            }
        }
    }
}

/* The reference's own rounding, on values whose encodings are known. */
static void test_reference_rounding(void) {
    CHECK((ref_float_to_half(65504.0f) == 0x7bff) && (ref_float_to_half(65519.99f) == 0x7bff) &&
              (ref_float_to_half(65520.0f) == 0x7c00) && (ref_float_to_half(-65520.0f) == 0xfc00),
          "reference: float16 largest value and overflow");
    CHECK((ref_float_to_half(ldexpf(1.0f, -25)) == 0x0000) &&
              (ref_float_to_half(nextafterf(ldexpf(1.0f, -25), 1.0f)) == 0x0001) &&
              (ref_float_to_half(ldexpf(3.0f, -25)) == 0x0002) &&
              (ref_float_to_half(ldexpf(5.0f, -25)) == 0x0002) &&
              (ref_float_to_half(ldexpf(1023.5f, -24)) == 0x0400) &&
              (ref_float_to_half(-0.0f) == 0x8000),
          "reference: float16 subnormals, ties to even");
    CHECK((ref_float_to_half(1.0f + ldexpf(1.0f, -11)) == 0x3c00) &&
              (ref_float_to_half(1.0f + ldexpf(3.0f, -11)) == 0x3c02) &&
              (ref_half_to_float(0x3555) == 0.333251953125f) &&
              (ref_half_to_float(0x0001) == ldexpf(1.0f, -24)),
          "reference: float16 normal rounding and widening");
    CHECK((ref_float_to_bf16(1.0f + ldexpf(1.0f, -8)) == 0x3f80) &&
              (ref_float_to_bf16(1.0f + ldexpf(3.0f, -8)) == 0x3f82) &&
              (ref_float_to_bf16(3.40282347e38f) == 0x7f80) &&
              (ref_float_to_bf16(ldexpf(1.0f, -133)) == 0x0001) &&
              (ref_float_to_bf16(ldexpf(1.0f, -134)) == 0x0000) &&
              (ref_bf16_to_float(0x3fc0) == 1.5f),
          "reference: bfloat16 rounding, overflow and subnormals");
}

/* ------------------------------------------------------------------------ */
/* Semantic cases with values worked out by hand (the reference aside)        */

/* Reduce n one-element inputs of dt on be into out (count elements each,
 * laid out input after input in in). */
static accel_status_t reduce_small(backend_t *be, accel_op_t op, accel_dtype_t dt, int n,
                                   size_t count, const void *in, void *out) {
    const size_t bytes = count * accel_dtype_size(dt);
    const void *srcs[MAXN];
    accel_status_t status = ACCEL_OK;

    for (int k = 0; (k < n) && (status == ACCEL_OK); ++k) {
        srcs[k] = be->work[k] + BASE;
        status = be_copy(be, be->work[k] + BASE, (const unsigned char *)in + k * bytes, bytes);
    }
    if (status == ACCEL_OK) {
        status = be_reduce(be, be->work[MAXN] + BASE, srcs, n, count, dt, op);
    }
    if (status == ACCEL_OK) {
        status = be_copy(be, out, be->work[MAXN] + BASE, bytes);
    }
    return status;
}

static void test_semantics(backend_t *be) {
    accel_status_t status;

    { /* int8/uint8 SUM wraps (open-mpi/ompi#8045); int8 PROD wraps */
        int8_t i8[16], i8r[3];
        uint8_t u8[16], u8r[2];
        int8_t p8[2] = {-128, -1}, p8r;
        bool ok;

        for (int k = 0; k < 16; ++k) {
            i8[k] = 127;
            u8[k] = 255;
        }
        ok = (reduce_small(be, ACCEL_OP_SUM, ACCEL_DT_INT8, 16, 1, i8, &i8r[0]) == ACCEL_OK);
        i8[0] = 100, i8[1] = 100;
        ok = ok && (reduce_small(be, ACCEL_OP_SUM, ACCEL_DT_INT8, 2, 1, i8, &i8r[1]) == ACCEL_OK);
        i8[0] = -100, i8[1] = -100;
        ok = ok && (reduce_small(be, ACCEL_OP_SUM, ACCEL_DT_INT8, 2, 1, i8, &i8r[2]) == ACCEL_OK);
        ok = ok && (reduce_small(be, ACCEL_OP_SUM, ACCEL_DT_UINT8, 16, 1, u8, &u8r[0]) == ACCEL_OK);
        u8[0] = 200, u8[1] = 100;
        ok = ok && (reduce_small(be, ACCEL_OP_SUM, ACCEL_DT_UINT8, 2, 1, u8, &u8r[1]) == ACCEL_OK);
        ok = ok && (reduce_small(be, ACCEL_OP_PROD, ACCEL_DT_INT8, 2, 1, p8, &p8r) == ACCEL_OK);
        CHECK(ok && (i8r[0] == -16) && (i8r[1] == -56) && (i8r[2] == 56) && (u8r[0] == 240) &&
                  (u8r[1] == 44) && (p8r == -128),
              "%s: int8/uint8 overflow wraps (16*127=-16, 100+100=-56, -100-100=56, 16*255=240, "
              "200+100=44, -128*-1=-128)",
              be->name);
    }

    { /* MAX/MIN: (acc > x ? acc : x) left to right; NaN as Open MPI has it */
        const float nan = NAN;
        /* element-wise: inputs 0..2 of 4 elements */
        const float in[3][4] = {
            {nan, 1.0f, 1.0f, -0.0f}, {1.0f, nan, 2.0f, 0.0f}, {2.0f, 2.0f, nan, -0.0f}};
        float max3[4], min3[4], max2[4];
        bool ok;

        ok = (reduce_small(be, ACCEL_OP_MAX, ACCEL_DT_FLOAT, 3, 4, in, max3) == ACCEL_OK) &&
             (reduce_small(be, ACCEL_OP_MIN, ACCEL_DT_FLOAT, 3, 4, in, min3) == ACCEL_OK) &&
             (reduce_small(be, ACCEL_OP_MAX, ACCEL_DT_FLOAT, 2, 4, in, max2) == ACCEL_OK);
        /* max(NaN,1)=1 then 2; max(1,NaN)=NaN then max(NaN,2)=2; max(1,2)=2 then max(2,NaN)=NaN;
         * -0 vs 0: neither greater, x wins: 0 then -0 */
        CHECK(ok && (max3[0] == 2.0f) && (max3[1] == 2.0f) && isnan(max3[2]) && (max3[3] == 0.0f) &&
                  signbit(max3[3]) && (min3[0] == 1.0f) && (min3[1] == 2.0f) && isnan(min3[2]) &&
                  (max2[0] == 1.0f) && isnan(max2[1]) && (max2[2] == 2.0f) && !signbit(max2[3]),
              "%s: float MAX/MIN with NaN and signed zeros, left to right", be->name);
    }

    { /* MAXLOC/MINLOC: strictly greater/less wins, ties keep the lowest index */
        const ref_2int_t in[4][2] = {
            {{5, 7}, {1, 0}}, {{5, 3}, {5, 4}}, {{5, 9}, {5, 2}}, {{4, 1}, {3, 1}}};
        ref_2int_t maxloc[2], minloc[2];
        const ref_float_int_t zin[2] = {{-0.0f, 3}, {0.0f, 1}};
        ref_float_int_t zout;
        bool ok;

        ok = (reduce_small(be, ACCEL_OP_MAXLOC, ACCEL_DT_2INT, 4, 2, in, maxloc) == ACCEL_OK) &&
             (reduce_small(be, ACCEL_OP_MINLOC, ACCEL_DT_2INT, 4, 2, in, minloc) == ACCEL_OK) &&
             (reduce_small(be, ACCEL_OP_MAXLOC, ACCEL_DT_FLOAT_INT, 2, 1, zin, &zout) == ACCEL_OK);
        CHECK(ok && (maxloc[0].v == 5) && (maxloc[0].k == 3) && (maxloc[1].v == 5) &&
                  (maxloc[1].k == 2) && (minloc[0].v == 4) && (minloc[0].k == 1) &&
                  (minloc[1].v == 1) && (minloc[1].k == 0) && (zout.k == 1) && signbit(zout.v),
              "%s: MAXLOC/MINLOC ties take the lower index, keep the first value", be->name);
    }

    { /* complex PROD: (ar*br - ai*bi, ar*bi + ai*br), each product rounded: ar*br
       * = 1 + 2^-11 + 2^-24 rounds to ai*bi = 1 + 2^-11, so re is 0 (an FMA would
       * keep the 2^-24) */
        const float in[2][2] = {{1.0f + 0x1p-12f, 1.0f}, {1.0f + 0x1p-12f, 1.0f + 0x1p-11f}};
        volatile float rr = in[0][0] * in[1][0], ii = in[0][1] * in[1][1];
        volatile float ri = in[0][0] * in[1][1], ir = in[0][1] * in[1][0];
        const float im = ri + ir;
        float out[2];

        status = reduce_small(be, ACCEL_OP_PROD, ACCEL_DT_COMPLEX_FLOAT, 2, 1, in, out);
        CHECK((status == ACCEL_OK) && (rr - ii == 0.0f) && (out[0] == 0.0f) && (out[1] == im),
              "%s: complex float PROD rounds each product (%a %a)", be->name, (double)out[0],
              (double)out[1]);
    }

    { /* logical ops give 0/1 */
        const int32_t in[2][3] = {{5, 0, -7}, {-2, 0, 0}};
        int32_t land[3], lor[3], lxor[3];
        bool ok;

        ok = (reduce_small(be, ACCEL_OP_LAND, ACCEL_DT_INT32, 2, 3, in, land) == ACCEL_OK) &&
             (reduce_small(be, ACCEL_OP_LOR, ACCEL_DT_INT32, 2, 3, in, lor) == ACCEL_OK) &&
             (reduce_small(be, ACCEL_OP_LXOR, ACCEL_DT_INT32, 2, 3, in, lxor) == ACCEL_OK);
        CHECK(ok && (land[0] == 1) && (land[1] == 0) && (land[2] == 0) && (lor[0] == 1) &&
                  (lor[1] == 0) && (lor[2] == 1) && (lxor[0] == 0) && (lxor[1] == 0) &&
                  (lxor[2] == 1),
              "%s: LAND/LOR/LXOR give 0 or 1", be->name);
    }
}

/* Unsupported pairs and bad arguments. */
static void test_errors(backend_t *be) {
    const void *srcs[MAXN + 1];
    int unsupported_ok = 0, unsupported = 0, supported_ok = 0, supported = 0;
    accel_status_t st[6];

    for (int k = 0; k <= MAXN; ++k) {
        srcs[k] = be->work[(k < MAXN) ? k : 0] + BASE;
    }
    for (int op = 0; op < ACCEL_OP_COUNT; ++op) {
        for (int dt = 0; dt < ACCEL_DT_COUNT; ++dt) {
            accel_status_t s =
                be_reduce(be, be->work[MAXN] + BASE, srcs, 2, 1, (accel_dtype_t)dt, (accel_op_t)op);
            if (accel_reduce_supported((accel_op_t)op, (accel_dtype_t)dt)) {
                ++supported;
                supported_ok += (s == ACCEL_OK);
            } else {
                ++unsupported;
                unsupported_ok += (s == ACCEL_ERR_UNSUPPORTED);
            }
        }
    }
    CHECK((supported == 113) && (supported_ok == supported),
          "%s: the %d pairs accel_reduce_supported() accepts run (%d of 113 expected)", be->name,
          supported_ok, supported);
    CHECK(unsupported_ok == unsupported,
          "%s: the %d other pairs return ACCEL_ERR_UNSUPPORTED (%d did)", be->name, unsupported,
          unsupported_ok);

    st[0] = be_reduce(be, be->work[MAXN] + BASE, srcs, 1, 4, ACCEL_DT_FLOAT, ACCEL_OP_SUM);
    st[1] = be_reduce(be, be->work[MAXN] + BASE, srcs, 0, 4, ACCEL_DT_FLOAT, ACCEL_OP_SUM);
    st[2] = be_reduce(be, be->work[MAXN] + BASE, srcs, -1, 4, ACCEL_DT_FLOAT, ACCEL_OP_SUM);
    st[3] = be_reduce(be, be->work[MAXN] + BASE, srcs, MAXN + 1, 4, ACCEL_DT_FLOAT, ACCEL_OP_SUM);
    st[4] = be_reduce(be, be->work[MAXN] + BASE, srcs, 2, 4, ACCEL_DT_COUNT, ACCEL_OP_SUM);
    st[5] = be_reduce(be, be->work[MAXN] + BASE, srcs, 2, 4, ACCEL_DT_FLOAT, ACCEL_OP_COUNT);
    CHECK((st[0] == ACCEL_ERR_INVALID) && (st[1] == ACCEL_ERR_INVALID) &&
              (st[2] == ACCEL_ERR_INVALID) && (st[3] == ACCEL_ERR_INVALID) &&
              (st[4] == ACCEL_ERR_INVALID) && (st[5] == ACCEL_ERR_INVALID),
          "%s: nsrcs 1, 0, -1, %d and unknown type or op return ACCEL_ERR_INVALID", be->name,
          MAXN + 1);
    st[0] = be_reduce(be, be->work[MAXN] + BASE, srcs, 2, 0, ACCEL_DT_FLOAT, ACCEL_OP_SUM);
    st[1] = be_reduce(be, be->work[MAXN] + BASE, srcs, MAXN, 0, ACCEL_DT_BOOL, ACCEL_OP_LXOR);
    CHECK((st[0] == ACCEL_OK) && (st[1] == ACCEL_OK), "%s: count 0 succeeds", be->name);
}

/* 64 MiB and more: float SUM (2 and 3 inputs, in place, misaligned), int32
 * and int8 SUM: the CPU's streaming stores, the kernels' grid-stride loop. */
static void test_big(backend_t *bes, int nbes) {
    static const struct {
        accel_dtype_t dt;
        int n;
        int dst_src;
        size_t off;
    } big[] = {
        {ACCEL_DT_FLOAT, 2, -1, 0}, {ACCEL_DT_FLOAT, 3, -1, 4}, {ACCEL_DT_FLOAT, 2, 0, 4},
        {ACCEL_DT_INT32, 2, -1, 0}, {ACCEL_DT_INT8, 2, -1, 1},
    };
    unsigned char *in[3];
    const size_t len = BIG_BYTES + SLACK;
    bool ok = true;

    for (int k = 0; k < 3; ++k) {
        in[k] = host_in[k];
        host_in[k] = malloc(len);
        ok = ok && (host_in[k] != NULL);
    }
    free(host_ref);
    free(host_got);
    host_ref = malloc(len);
    host_got = malloc(len + 2 * GUARD);
    for (int b = 0; b < nbes; ++b) {
        ok = ok && be_alloc_work(&bes[b], len, 4);
    }
    if (!ok || (host_ref == NULL) || (host_got == NULL)) {
        CHECK(false, "big cases: cannot allocate 4 x %zu MiB per backend", len >> 20);
        goto out;
    }

    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); ++i) {
        const size_t size = accel_dtype_size(big[i].dt);
        test_case_t tc = {.op = ACCEL_OP_SUM,
                          .dt = big[i].dt,
                          .n = big[i].n,
                          .count = BIG_BYTES / size - 1,
                          .dst_src = big[i].dst_src};

        for (int k = 0; k < 3; ++k) {
            tc.off[k] = big[i].off;
            for (size_t j = 0; j < tc.count * size; j += 8) { /* fast: 8 bytes at a time */
                uint64_t r = rng();
                if (big[i].dt == ACCEL_DT_FLOAT) { /* two floats in [-2, 2) */
                    float f[2] = {(float)((int32_t)r >> 8) * 0x1p-22f,
                                  (float)((int32_t)(r >> 32) >> 8) * 0x1p-22f};
                    memcpy(&r, f, 8);
                }
                memcpy(host_in[k] + j, &r, 8);
            }
        }
        tc.off[MAXN] = big[i].off;
        case_ref(&tc);
        for (int b = 0; b < nbes; ++b) {
            CHECK(run_case(&bes[b], &tc), "%s: %s %s, %d inputs, %zu elements (%zu MiB)%s%s",
                  bes[b].name, accel_op_string(tc.op), accel_dtype_string(tc.dt), tc.n, tc.count,
                  (tc.count * size) >> 20, (tc.dst_src == 0) ? ", in place" : "",
                  big[i].off ? ", misaligned" : "");
        }
    }
out:
    for (int k = 0; k < 3; ++k) {
        free(host_in[k]);
        host_in[k] = in[k];
    }
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    const size_t work_len = MAX_COUNT * 16 + SLACK;
    backend_t bes[2];
    int nbes = 0;
    bool want_cpu = true, want_emulated = true, want_cuda = false, quick = false;
    const char *reason = "";
    accel_backend_kind_t device_kind = ACCEL_BACKEND_EMULATED;
    const accel_ops_t *ops = NULL;
    double t0 = (double)clock();

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; ++i) {
        if ((strcmp(argv[i], "--backend") == 0) && (i + 1 < argc)) {
            const char *b = argv[++i];
            want_cpu = (strcmp(b, "cpu") == 0);
            want_emulated = (strcmp(b, "emulated") == 0);
            want_cuda = (strcmp(b, "cuda") == 0);
            if (!want_cpu && !want_emulated && !want_cuda) {
                fprintf(stderr, "unknown backend %s (cpu, emulated, cuda)\n", b);
                return 2;
            }
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else {
            fprintf(stderr, "usage: %s [--backend cpu|emulated|cuda] [--quick]\n", argv[0]);
            return 2;
        }
    }

    if (RUNNING_ON_VALGRIND) { /* 64 MiB cases are minutes under valgrind */
        quick = true;
    }
    memset(bes, 0, sizeof(bes));
    if (want_cpu) {
        bes[nbes++].name = "cpu";
    }
    if (want_emulated || want_cuda) {
        device_kind = want_cuda ? ACCEL_BACKEND_CUDA : ACCEL_BACKEND_EMULATED;
        if (accel_init(device_kind, &ops, &reason) != ACCEL_OK) {
            printf("SKIP: no %s backend: %s\n", want_cuda ? "cuda" : "emulated", reason);
            return 77;
        }
        bes[nbes].name = ops->name;
        bes[nbes].ops = ops;
        if (ops->stream_create(&bes[nbes].stream) != ACCEL_OK) {
            CHECK(false, "%s: stream_create", ops->name);
            return 1;
        }
        ++nbes;
    }

    for (int k = 0; k < MAXN; ++k) {
        host_in[k] = malloc(work_len);
    }
    host_ref = malloc(work_len);
    host_got = malloc(work_len + 2 * GUARD);
    for (int b = 0; b < nbes; ++b) {
        if (!be_alloc_work(&bes[b], work_len, MAXN + 1)) {
            CHECK(false, "%s: allocate %d x %zu bytes", bes[b].name, MAXN + 1, work_len);
            return 1;
        }
    }
    for (int i = 0; i < GUARD; ++i) {
        guard_bytes[i] = (unsigned char)(0x5a + 3 * i);
    }

    test_reference_rounding();
    for (int b = 0; b < nbes; ++b) {
        test_errors(&bes[b]);
        test_semantics(&bes[b]);
    }
    test_half_patterns(bes, nbes);
    test_all_pairs(bes, nbes);
    if (!quick) {
        test_big(bes, nbes);
    }

    for (int b = 0; b < nbes; ++b) {
        be_free_work(&bes[b]);
        if (bes[b].stream != NULL) {
            bes[b].ops->stream_destroy(bes[b].stream);
        }
    }
    if (ops != NULL) {
        accel_finalize();
    }
    for (int k = 0; k < MAXN; ++k) {
        free(host_in[k]);
    }
    free(host_ref);
    free(host_got);
    printf("%d passed, %d failed (%.1f s of CPU)\n", test_passed, test_failed,
           ((double)clock() - t0) / CLOCKS_PER_SEC);
    return (test_failed == 0) ? 0 : 1;
}
