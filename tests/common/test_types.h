/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The datatypes and operations of the coll/gpu MPI tests: six predefined types, two derived
 * types with holes and a non-zero lower bound, three predefined and two user-defined ops (whose
 * functions apply the reference of test_reference.h).
 */
#ifndef TEST_TYPES_H
#define TEST_TYPES_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    TU_TYPE_INT8 = 0,
    TU_TYPE_UINT8,
    TU_TYPE_INT32,
    TU_TYPE_INT64,
    TU_TYPE_FLOAT,
    TU_TYPE_DOUBLE,
    TU_TYPE_VECTOR, /* MPI_Type_vector(2, 1, 2, MPI_INT32_T): a hole inside every element */
    TU_TYPE_LB,     /* MPI_DOUBLE resized to lower bound -8, extent 24 */
    TU_NUM_TYPES
} tu_type_id_t;

typedef enum {
    TU_BASE_INT8,
    TU_BASE_UINT8,
    TU_BASE_INT32,
    TU_BASE_INT64,
    TU_BASE_FLOAT,
    TU_BASE_DOUBLE
} tu_base_t;

typedef struct {
    tu_type_id_t id;
    const char *name;
    MPI_Datatype datatype;
    tu_base_t base;
    size_t base_size;
    int nvals;            /* base values per element */
    size_t val_offset[2]; /* byte offset of each value from the element's address */
    MPI_Aint extent;      /* element stride */
    MPI_Aint true_lb;     /* first byte of data from the element's address */
    MPI_Aint true_extent; /* bytes from the first to the last byte of data of one element */
    bool contiguous;      /* a plain predefined type */
    bool is_integer;
} tu_type_t;

typedef enum {
    TU_OP_SUM = 0,
    TU_OP_MAX,
    TU_OP_BXOR,
    TU_OP_USER_COMM,    /* x + y + 1 (wrapping): commutative user-defined op */
    TU_OP_USER_NONCOMM, /* non-commutative user-defined op: "first non-zero" on scalars,
                           affine map composition on the (a, b) pairs of the vector type */
    TU_NUM_OPS
} tu_op_id_t;

/* Creates the derived types and user ops (after MPI_Init; tu_setup does it). */
void tu_types_create(void);
void tu_types_free(void);
const tu_type_t *tu_type(tu_type_id_t id);
int tu_type_from_name(const char *name);
MPI_Op tu_op_handle(tu_op_id_t op);
const char *tu_op_name(tu_op_id_t op);
int tu_op_from_name(const char *name);
/* Predefined ops are defined by MPI on predefined types only (BXOR on integers only); the
 * derived types are reduced with the user-defined ops. */
bool tu_op_valid(tu_op_id_t op, tu_type_id_t type);

/* Bytes a buffer of n elements spans from its address (0 for n = 0). */
size_t tu_type_span(const tu_type_t *type, size_t n);
/* Bytes of n elements packed (their base values without holes). */
size_t tu_type_packed_size(const tu_type_t *type, size_t n);

/* Diagnostic: does this Open MPI's MPI_SUM on int8 saturate (open-mpi/ompi#8045)? */
bool tu_op_avx_int8_bug_present(void);

#endif /* TEST_TYPES_H */
