/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI (datatype, op) -> accel (dtype, op).
 *
 * Predefined datatypes through a table indexed by the datatype's id, filled at
 * open from the C types' sizes (MPI_LONG is INT64 on LP64, MPI_CHAR follows
 * the signedness of char).  The ops of coll_gpu_ext.h are user ops: asked once
 * what they compute (the query protocol of that header) and remembered.
 */
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_ext.h"

#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_C_FLOAT16 (Open MPI 5.0) */
#endif
#endif

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#define COLL_GPU_DT_NONE ((int8_t)-1)

/* User ops written in another language than C (Open MPI 5.0 dropped the C++ bindings). */
#ifdef OMPI_OP_FLAGS_CXX_FUNC
#define COLL_GPU_OP_FLAGS_NOT_C                                                                    \
    (OMPI_OP_FLAGS_FORTRAN_FUNC | OMPI_OP_FLAGS_CXX_FUNC | OMPI_OP_FLAGS_JAVA_FUNC)
#else
#define COLL_GPU_OP_FLAGS_NOT_C (OMPI_OP_FLAGS_FORTRAN_FUNC | OMPI_OP_FLAGS_JAVA_FUNC)
#endif

/* accel dtype of each predefined datatype id, COLL_GPU_DT_NONE where none. */
static int8_t coll_gpu_dtype_map[OMPI_DATATYPE_MAX_PREDEFINED];

/* accel op of each intrinsic op type. */
static const int8_t coll_gpu_op_map[OMPI_OP_NUM_OF_TYPES] = {
    [OMPI_OP_NULL] = COLL_GPU_DT_NONE,  [OMPI_OP_MAX] = ACCEL_OP_MAX,
    [OMPI_OP_MIN] = ACCEL_OP_MIN,       [OMPI_OP_SUM] = ACCEL_OP_SUM,
    [OMPI_OP_PROD] = ACCEL_OP_PROD,     [OMPI_OP_LAND] = ACCEL_OP_LAND,
    [OMPI_OP_BAND] = ACCEL_OP_BAND,     [OMPI_OP_LOR] = ACCEL_OP_LOR,
    [OMPI_OP_BOR] = ACCEL_OP_BOR,       [OMPI_OP_LXOR] = ACCEL_OP_LXOR,
    [OMPI_OP_BXOR] = ACCEL_OP_BXOR,     [OMPI_OP_MAXLOC] = ACCEL_OP_MAXLOC,
    [OMPI_OP_MINLOC] = ACCEL_OP_MINLOC, [OMPI_OP_REPLACE] = COLL_GPU_DT_NONE,
};

/* The ops of coll_gpu_ext.h seen so far (a program creates at most 8 per copy of the
 * header; a full table only means asking again). */
#define COLL_GPU_EXT_CACHE_SIZE 32
typedef struct {
    const struct ompi_op_t *op;
    ompi_op_c_handler_fn_t *fn; /* the op a freed handle's address may be reused by */
    accel_op_t accel_op;
    accel_dtype_t accel_dtype;
} coll_gpu_ext_op_t;

static coll_gpu_ext_op_t coll_gpu_ext_ops[COLL_GPU_EXT_CACHE_SIZE];
static unsigned coll_gpu_ext_next;
/* Under MPI_THREAD_MULTIPLE calls with user ops run on several threads at once. */
static pthread_mutex_t coll_gpu_ext_lock = PTHREAD_MUTEX_INITIALIZER;

static accel_dtype_t coll_gpu_int_dtype(size_t size, bool is_signed) {
    switch (size) {
    case 1:
        return is_signed ? ACCEL_DT_INT8 : ACCEL_DT_UINT8;
    case 2:
        return is_signed ? ACCEL_DT_INT16 : ACCEL_DT_UINT16;
    case 4:
        return is_signed ? ACCEL_DT_INT32 : ACCEL_DT_UINT32;
    default:
        return is_signed ? ACCEL_DT_INT64 : ACCEL_DT_UINT64;
    }
}

static void coll_gpu_dtype_set(struct ompi_datatype_t *dtype, accel_dtype_t accel_dtype) {
    if ((dtype->id >= 0) && (dtype->id < OMPI_DATATYPE_MAX_PREDEFINED)) {
        coll_gpu_dtype_map[dtype->id] = (int8_t)accel_dtype;
    }
}

void coll_gpu_reduce_op_init(void) {
    memset(coll_gpu_dtype_map, COLL_GPU_DT_NONE, sizeof(coll_gpu_dtype_map));
    memset(coll_gpu_ext_ops, 0, sizeof(coll_gpu_ext_ops));
    coll_gpu_ext_next = 0;

#define COLL_GPU_INT(_mpi, _ctype, _signed)                                                        \
    coll_gpu_dtype_set(_mpi, coll_gpu_int_dtype(sizeof(_ctype), _signed))
    COLL_GPU_INT(MPI_CHAR, char, CHAR_MIN < 0);
    COLL_GPU_INT(MPI_SIGNED_CHAR, signed char, true);
    COLL_GPU_INT(MPI_UNSIGNED_CHAR, unsigned char, false);
    COLL_GPU_INT(MPI_BYTE, unsigned char, false);
    COLL_GPU_INT(MPI_SHORT, short, true);
    COLL_GPU_INT(MPI_UNSIGNED_SHORT, unsigned short, false);
    COLL_GPU_INT(MPI_INT, int, true);
    COLL_GPU_INT(MPI_UNSIGNED, unsigned, false);
    COLL_GPU_INT(MPI_LONG, long, true);
    COLL_GPU_INT(MPI_UNSIGNED_LONG, unsigned long, false);
    COLL_GPU_INT(MPI_LONG_LONG_INT, long long, true);
    COLL_GPU_INT(MPI_UNSIGNED_LONG_LONG, unsigned long long, false);
    COLL_GPU_INT(MPI_INT8_T, int8_t, true);
    COLL_GPU_INT(MPI_UINT8_T, uint8_t, false);
    COLL_GPU_INT(MPI_INT16_T, int16_t, true);
    COLL_GPU_INT(MPI_UINT16_T, uint16_t, false);
    COLL_GPU_INT(MPI_INT32_T, int32_t, true);
    COLL_GPU_INT(MPI_UINT32_T, uint32_t, false);
    COLL_GPU_INT(MPI_INT64_T, int64_t, true);
    COLL_GPU_INT(MPI_UINT64_T, uint64_t, false);
    COLL_GPU_INT(MPI_AINT, MPI_Aint, true);
    COLL_GPU_INT(MPI_OFFSET, MPI_Offset, true);
    COLL_GPU_INT(MPI_COUNT, MPI_Count, true);
#undef COLL_GPU_INT
    coll_gpu_dtype_set(MPI_FLOAT, ACCEL_DT_FLOAT);
    coll_gpu_dtype_set(MPI_DOUBLE, ACCEL_DT_DOUBLE);
    coll_gpu_dtype_set(MPI_C_FLOAT_COMPLEX, ACCEL_DT_COMPLEX_FLOAT);
    coll_gpu_dtype_set(MPI_C_DOUBLE_COMPLEX, ACCEL_DT_COMPLEX_DOUBLE);
    coll_gpu_dtype_set(MPI_C_BOOL, ACCEL_DT_BOOL);
    coll_gpu_dtype_set(MPI_SHORT_INT, ACCEL_DT_SHORT_INT);
    coll_gpu_dtype_set(MPI_2INT, ACCEL_DT_2INT);
    coll_gpu_dtype_set(MPI_LONG_INT, ACCEL_DT_LONG_INT);
    coll_gpu_dtype_set(MPI_FLOAT_INT, ACCEL_DT_FLOAT_INT);
    coll_gpu_dtype_set(MPI_DOUBLE_INT, ACCEL_DT_DOUBLE_INT);
#ifdef MPIX_C_FLOAT16
    coll_gpu_dtype_set(MPIX_C_FLOAT16, ACCEL_DT_FLOAT16); /* Open MPI 5.0's shortfloat */
#endif
    /* MPI_LONG_DOUBLE(_INT), MPI_C_LONG_DOUBLE_COMPLEX, Fortran types: staged. */
}

static void coll_gpu_ext_lock_take(void) {
    if (mca_coll_gpu_component.thread_multiple) {
        pthread_mutex_lock(&coll_gpu_ext_lock);
    }
}

static void coll_gpu_ext_lock_release(void) {
    if (mca_coll_gpu_component.thread_multiple) {
        pthread_mutex_unlock(&coll_gpu_ext_lock);
    }
}

/* An op of coll_gpu_ext.h on its own type: ask the op what it computes. */
static bool coll_gpu_ext_lookup(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                accel_dtype_t *dtype_p, accel_op_t *op_p) {
    static const accel_op_t ext_ops[] = {[COLL_GPU_EXT_SUM] = ACCEL_OP_SUM,
                                         [COLL_GPU_EXT_PROD] = ACCEL_OP_PROD,
                                         [COLL_GPU_EXT_MAX] = ACCEL_OP_MAX,
                                         [COLL_GPU_EXT_MIN] = ACCEL_OP_MIN};
    coll_gpu_ext_query_t query = {.magic = COLL_GPU_EXT_QUERY_MAGIC};
    ompi_op_c_handler_fn_t *fn = op->o_func.c_fn;
    struct ompi_datatype_t *query_dtype = dtype;
    accel_dtype_t accel_dtype;
    coll_gpu_ext_op_t *slot, found;
    int zero = 0;

    if (0 == strcmp(dtype->name, COLL_GPU_BFLOAT16_NAME)) {
        accel_dtype = ACCEL_DT_BFLOAT16;
    } else if (0 == strcmp(dtype->name, COLL_GPU_FLOAT16_NAME)) {
        accel_dtype = ACCEL_DT_FLOAT16;
    } else {
        return false;
    }
    if ((dtype->super.size != 2) || !ompi_datatype_is_contiguous_memory_layout(dtype, 2)) {
        return false;
    }

    coll_gpu_ext_lock_take();
    for (unsigned i = 0; i < COLL_GPU_EXT_CACHE_SIZE; ++i) {
        slot = &coll_gpu_ext_ops[i];
        if ((slot->op == op) && (slot->fn == fn)) {
            found = *slot;
            coll_gpu_ext_lock_release();
            goto found;
        }
    }
    coll_gpu_ext_lock_release();
    /* the query runs the application's op: outside the lock */
    fn(NULL, &query, &zero, &query_dtype);
    if ((query.op < COLL_GPU_EXT_SUM) || (query.op > COLL_GPU_EXT_MIN) ||
        (query.type !=
         ((accel_dtype == ACCEL_DT_BFLOAT16) ? COLL_GPU_EXT_BFLOAT16 : COLL_GPU_EXT_FLOAT16))) {
        return false; /* some other user op on our type: Open MPI runs it */
    }
    found.op = op;
    found.fn = fn;
    found.accel_op = ext_ops[query.op];
    found.accel_dtype = accel_dtype;
    coll_gpu_ext_lock_take();
    coll_gpu_ext_ops[coll_gpu_ext_next++ % COLL_GPU_EXT_CACHE_SIZE] = found;
    coll_gpu_ext_lock_release();

found:
    if (found.accel_dtype != accel_dtype) {
        return false;
    }
    *dtype_p = found.accel_dtype;
    *op_p = found.accel_op;
    return true;
}

bool coll_gpu_reduce_op_lookup(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               accel_dtype_t *dtype_p, accel_op_t *op_p) {
    int8_t accel_dtype, accel_op;

    if (!ompi_op_is_intrinsic(op)) {
        /* A C user op (not Fortran, C++ or Java) on a named extension type. */
        if ((op->o_flags & COLL_GPU_OP_FLAGS_NOT_C) || !ompi_op_is_commute(op) ||
            ompi_datatype_is_predefined(dtype)) {
            return false;
        }
        return coll_gpu_ext_lookup(dtype, op, dtype_p, op_p);
    }
    if (!ompi_datatype_is_predefined(dtype) || (dtype->id < 0) ||
        (dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED) ||
        ((unsigned)op->op_type >= OMPI_OP_NUM_OF_TYPES)) {
        return false;
    }
    accel_dtype = coll_gpu_dtype_map[dtype->id];
    accel_op = coll_gpu_op_map[op->op_type];
    if ((accel_dtype == COLL_GPU_DT_NONE) || (accel_op == COLL_GPU_DT_NONE)) {
        return false;
    }
    /* Open MPI must define the pair too: what it rejects, it rejects itself. */
    if ((-1 == ompi_op_ddt_map[dtype->id]) ||
        (NULL == op->o_func.intrinsic.fns[ompi_op_ddt_map[dtype->id]])) {
        return false;
    }
    if (!accel_reduce_supported((accel_op_t)accel_op, (accel_dtype_t)accel_dtype)) {
        return false;
    }
    *dtype_p = (accel_dtype_t)accel_dtype;
    *op_p = (accel_op_t)accel_op;
    return true;
}
