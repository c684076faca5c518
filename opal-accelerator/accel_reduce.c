/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the reductions implement: which (op, type) pairs MPI defines, element
 * sizes, names.  The kernels themselves are accel_reduce_ops.h (the op
 * definitions), accel_reduce_cpu.c and cuda/accel_cuda_reduce*.cu.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "accel.h"

typedef enum {
    ACCEL_DTK_INT,     /* C integer (and MPI_BYTE, as UINT8) */
    ACCEL_DTK_FLOAT,   /* floating point */
    ACCEL_DTK_COMPLEX, /* C complex */
    ACCEL_DTK_BOOL,    /* C_BOOL: logical */
    ACCEL_DTK_PAIR,    /* MAXLOC/MINLOC pairs */
} accel_dtype_kind_t;

typedef struct {
    const char *name;
    unsigned size;
    accel_dtype_kind_t kind;
} accel_dtype_info_t;

/* Pair sizes as C lays out struct {T v; int k;} on LP64. */
static const accel_dtype_info_t accel_dtype_info[ACCEL_DT_COUNT] = {
    [ACCEL_DT_INT8] = {"int8", 1, ACCEL_DTK_INT},
    [ACCEL_DT_UINT8] = {"uint8", 1, ACCEL_DTK_INT},
    [ACCEL_DT_INT16] = {"int16", 2, ACCEL_DTK_INT},
    [ACCEL_DT_UINT16] = {"uint16", 2, ACCEL_DTK_INT},
    [ACCEL_DT_INT32] = {"int32", 4, ACCEL_DTK_INT},
    [ACCEL_DT_UINT32] = {"uint32", 4, ACCEL_DTK_INT},
    [ACCEL_DT_INT64] = {"int64", 8, ACCEL_DTK_INT},
    [ACCEL_DT_UINT64] = {"uint64", 8, ACCEL_DTK_INT},
    [ACCEL_DT_FLOAT16] = {"float16", 2, ACCEL_DTK_FLOAT},
    [ACCEL_DT_BFLOAT16] = {"bfloat16", 2, ACCEL_DTK_FLOAT},
    [ACCEL_DT_FLOAT] = {"float", 4, ACCEL_DTK_FLOAT},
    [ACCEL_DT_DOUBLE] = {"double", 8, ACCEL_DTK_FLOAT},
    [ACCEL_DT_COMPLEX_FLOAT] = {"complex-float", 8, ACCEL_DTK_COMPLEX},
    [ACCEL_DT_COMPLEX_DOUBLE] = {"complex-double", 16, ACCEL_DTK_COMPLEX},
    [ACCEL_DT_BOOL] = {"bool", 1, ACCEL_DTK_BOOL},
    [ACCEL_DT_SHORT_INT] = {"short-int", 8, ACCEL_DTK_PAIR},
    [ACCEL_DT_2INT] = {"2int", 8, ACCEL_DTK_PAIR},
    [ACCEL_DT_LONG_INT] = {"long-int", 16, ACCEL_DTK_PAIR},
    [ACCEL_DT_FLOAT_INT] = {"float-int", 8, ACCEL_DTK_PAIR},
    [ACCEL_DT_DOUBLE_INT] = {"double-int", 16, ACCEL_DTK_PAIR},
};

static const char *const accel_op_names[ACCEL_OP_COUNT] = {
    [ACCEL_OP_SUM] = "sum",   [ACCEL_OP_PROD] = "prod",     [ACCEL_OP_MAX] = "max",
    [ACCEL_OP_MIN] = "min",   [ACCEL_OP_LAND] = "land",     [ACCEL_OP_LOR] = "lor",
    [ACCEL_OP_LXOR] = "lxor", [ACCEL_OP_BAND] = "band",     [ACCEL_OP_BOR] = "bor",
    [ACCEL_OP_BXOR] = "bxor", [ACCEL_OP_MAXLOC] = "maxloc", [ACCEL_OP_MINLOC] = "minloc",
};

/* MPI 4.1, 6.9.2: the type groups each predefined op is defined on. */
bool accel_reduce_supported(accel_op_t op, accel_dtype_t dtype) {
    accel_dtype_kind_t kind;

    if (((unsigned)op >= ACCEL_OP_COUNT) || ((unsigned)dtype >= ACCEL_DT_COUNT)) {
        return false;
    }
    kind = accel_dtype_info[dtype].kind;
    switch (op) {
    case ACCEL_OP_SUM:
    case ACCEL_OP_PROD:
        return (kind == ACCEL_DTK_INT) || (kind == ACCEL_DTK_FLOAT) || (kind == ACCEL_DTK_COMPLEX);
    case ACCEL_OP_MAX:
    case ACCEL_OP_MIN:
        return (kind == ACCEL_DTK_INT) || (kind == ACCEL_DTK_FLOAT);
    case ACCEL_OP_LAND:
    case ACCEL_OP_LOR:
    case ACCEL_OP_LXOR:
        return (kind == ACCEL_DTK_INT) || (kind == ACCEL_DTK_BOOL);
    case ACCEL_OP_BAND:
    case ACCEL_OP_BOR:
    case ACCEL_OP_BXOR:
        return kind == ACCEL_DTK_INT;
    case ACCEL_OP_MAXLOC:
    case ACCEL_OP_MINLOC:
        return kind == ACCEL_DTK_PAIR;
    case ACCEL_OP_COUNT:
        break;
    }
    return false;
}

size_t accel_dtype_size(accel_dtype_t dtype) {
    return ((unsigned)dtype < ACCEL_DT_COUNT) ? accel_dtype_info[dtype].size : 0;
}

const char *accel_dtype_string(accel_dtype_t dtype) {
    return ((unsigned)dtype < ACCEL_DT_COUNT) ? accel_dtype_info[dtype].name : "unknown";
}

const char *accel_op_string(accel_op_t op) {
    return ((unsigned)op < ACCEL_OP_COUNT) ? accel_op_names[op] : "unknown";
}
