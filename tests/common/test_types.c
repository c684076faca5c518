/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The datatypes and operations of the coll/gpu MPI tests: see test_types.h.
 */
/* strcasecmp: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_types.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "test_reference.h"
#include "test_report.h"

static tu_type_t tu_types[TU_NUM_TYPES];
static MPI_Op tu_user_ops[2] = {MPI_OP_NULL, MPI_OP_NULL};
static bool tu_types_ready;

static const char *const tu_op_names[TU_NUM_OPS] = {"sum", "max", "bxor", "user-comm",
                                                    "user-noncomm"};
/* The names of the types, on the command line (--types=) and in case descriptions. */
static const char *const tu_type_names[TU_NUM_TYPES] = {"int8",  "uint8",  "int32",  "int64",
                                                        "float", "double", "vector", "lb"};

const tu_type_t *tu_type(tu_type_id_t id) { return &tu_types[id]; }

int tu_type_from_name(const char *name) {
    for (int i = 0; i < TU_NUM_TYPES; i++) {
        if (0 == strcasecmp(name, tu_type_names[i])) {
            return i;
        }
    }
    return -1;
}

const char *tu_op_name(tu_op_id_t op) { return op < TU_NUM_OPS ? tu_op_names[op] : "?"; }

int tu_op_from_name(const char *name) {
    for (int i = 0; i < TU_NUM_OPS; i++) {
        if (0 == strcasecmp(name, tu_op_names[i])) {
            return i;
        }
    }
    return -1;
}

MPI_Op tu_op_handle(tu_op_id_t op) {
    switch (op) {
    case TU_OP_SUM:
        return MPI_SUM;
    case TU_OP_MAX:
        return MPI_MAX;
    case TU_OP_BXOR:
        return MPI_BXOR;
    case TU_OP_USER_COMM:
        return tu_user_ops[0];
    default:
        return tu_user_ops[1];
    }
}

bool tu_op_valid(tu_op_id_t op, tu_type_id_t type) {
    const tu_type_t *t = &tu_types[type];
    switch (op) {
    case TU_OP_SUM:
    case TU_OP_MAX:
        return t->contiguous;
    case TU_OP_BXOR:
        return t->contiguous && t->is_integer;
    default:
        return true;
    }
}

size_t tu_type_span(const tu_type_t *type, size_t n) {
    return 0 == n ? 0 : (n - 1) * (size_t)type->extent + type->true_lb + type->true_extent;
}

size_t tu_type_packed_size(const tu_type_t *type, size_t n) {
    return n * type->nvals * type->base_size;
}

static const tu_type_t *tu_type_by_handle(MPI_Datatype datatype) {
    for (int i = 0; i < TU_NUM_TYPES; i++) {
        if (tu_types[i].datatype == datatype) {
            return &tu_types[i];
        }
    }
    return NULL;
}

/* MPI user functions: gather each element's values into packed form, apply the op the
 * reference uses, scatter back.  MPI passes the datatype of the call, so the layout is
 * known. */
static void tu_user_apply(tu_op_id_t op, void *in, void *inout, int *len, MPI_Datatype *datatype) {
    const tu_type_t *type = tu_type_by_handle(*datatype);
    unsigned char packed_in[16], packed_inout[16];

    if (NULL == type) {
        char name[MPI_MAX_OBJECT_NAME] = "?";
        int name_len;
        MPI_Type_get_name(*datatype, name, &name_len);
        fprintf(stderr, "[rank %d] user op called with unknown datatype %s\n", tu_world_rank, name);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (type->contiguous) {
        tu_ref_apply(type, op, in, inout, (size_t)*len);
        return;
    }
    for (int e = 0; e < *len; e++) {
        char *elem_in = (char *)in + (size_t)e * type->extent;
        char *elem_inout = (char *)inout + (size_t)e * type->extent;
        for (int v = 0; v < type->nvals; v++) {
            memcpy(packed_in + v * type->base_size, elem_in + type->val_offset[v], type->base_size);
            memcpy(packed_inout + v * type->base_size, elem_inout + type->val_offset[v],
                   type->base_size);
        }
        tu_ref_apply(type, op, packed_in, packed_inout, 1);
        for (int v = 0; v < type->nvals; v++) {
            memcpy(elem_inout + type->val_offset[v], packed_inout + v * type->base_size,
                   type->base_size);
        }
    }
}

static void tu_user_comm_fn(void *in, void *inout, int *len, MPI_Datatype *datatype) {
    tu_user_apply(TU_OP_USER_COMM, in, inout, len, datatype);
}

static void tu_user_noncomm_fn(void *in, void *inout, int *len, MPI_Datatype *datatype) {
    tu_user_apply(TU_OP_USER_NONCOMM, in, inout, len, datatype);
}

static void tu_type_predefined(tu_type_id_t id, MPI_Datatype datatype, tu_base_t base, size_t size,
                               bool is_integer) {
    tu_type_t *t = &tu_types[id];
    t->id = id;
    t->name = tu_type_names[id];
    t->datatype = datatype;
    t->base = base;
    t->base_size = size;
    t->nvals = 1;
    t->val_offset[0] = 0;
    t->extent = (MPI_Aint)size;
    t->true_lb = 0;
    t->true_extent = (MPI_Aint)size;
    t->contiguous = true;
    t->is_integer = is_integer;
}

void tu_types_create(void) {
    MPI_Aint lb, extent;
    tu_type_t *t;

    if (tu_types_ready) {
        return;
    }
    tu_type_predefined(TU_TYPE_INT8, MPI_INT8_T, TU_BASE_INT8, 1, true);
    tu_type_predefined(TU_TYPE_UINT8, MPI_UINT8_T, TU_BASE_UINT8, 1, true);
    tu_type_predefined(TU_TYPE_INT32, MPI_INT32_T, TU_BASE_INT32, 4, true);
    tu_type_predefined(TU_TYPE_INT64, MPI_INT64_T, TU_BASE_INT64, 8, true);
    tu_type_predefined(TU_TYPE_FLOAT, MPI_FLOAT, TU_BASE_FLOAT, 4, false);
    tu_type_predefined(TU_TYPE_DOUBLE, MPI_DOUBLE, TU_BASE_DOUBLE, 8, false);

    /* Two int32 with a 4-byte hole between them: extent 12, data at 0 and 8. */
    t = &tu_types[TU_TYPE_VECTOR];
    t->id = TU_TYPE_VECTOR;
    t->name = tu_type_names[TU_TYPE_VECTOR];
    MPI_Type_vector(2, 1, 2, MPI_INT32_T, &t->datatype);
    MPI_Type_set_name(t->datatype, "tu_vector_int32");
    MPI_Type_commit(&t->datatype);
    t->base = TU_BASE_INT32;
    t->base_size = 4;
    t->nvals = 2;
    t->val_offset[0] = 0;
    t->val_offset[1] = 8;
    t->contiguous = false;
    t->is_integer = true;

    /* A double resized to lower bound -8 and extent 24: 16 bytes of holes per element, and
     * the 8 bytes before the buffer belong to no allocation -- staging that copies from
     * buf + lb, or count * extent bytes, is caught.  (No type with an initial gap, true_lb >
     * 0: Open MPI's own base algorithms mishandle those, open-mpi/ompi#1764.) */
    t = &tu_types[TU_TYPE_LB];
    t->id = TU_TYPE_LB;
    t->name = tu_type_names[TU_TYPE_LB];
    MPI_Type_create_resized(MPI_DOUBLE, -8, 24, &t->datatype);
    MPI_Type_set_name(t->datatype, "tu_resized_double_lb-8");
    MPI_Type_commit(&t->datatype);
    t->base = TU_BASE_DOUBLE;
    t->base_size = 8;
    t->nvals = 1;
    t->val_offset[0] = 0;
    t->contiguous = false;
    t->is_integer = false;

    for (int i = TU_TYPE_VECTOR; i <= TU_TYPE_LB; i++) {
        t = &tu_types[i];
        MPI_Type_get_extent(t->datatype, &lb, &extent);
        t->extent = extent;
        MPI_Type_get_true_extent(t->datatype, &t->true_lb, &t->true_extent);
    }
    if (12 != tu_types[TU_TYPE_VECTOR].extent || 0 != tu_types[TU_TYPE_VECTOR].true_lb ||
        24 != tu_types[TU_TYPE_LB].extent || 0 != tu_types[TU_TYPE_LB].true_lb ||
        8 != tu_types[TU_TYPE_LB].true_extent) {
        tu_fail("derived datatypes do not have the layout the test assumes");
    }

    MPI_Op_create(tu_user_comm_fn, 1, &tu_user_ops[0]);
    MPI_Op_create(tu_user_noncomm_fn, 0, &tu_user_ops[1]);
    tu_types_ready = true;
}

void tu_types_free(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!tu_types_ready || finalized) {
        return;
    }
    MPI_Type_free(&tu_types[TU_TYPE_VECTOR].datatype);
    MPI_Type_free(&tu_types[TU_TYPE_LB].datatype);
    MPI_Op_free(&tu_user_ops[0]);
    MPI_Op_free(&tu_user_ops[1]);
    tu_types_ready = false;
}

/* Reduced by Open MPI, never a reference: whether that reduction can be trusted at all. */
bool tu_op_avx_int8_bug_present(void) {
    /* 100 + 100 in int8 must wrap to -56; op/avx (ompi#8045) saturates to 127 from 16
     * elements on. */
    int8_t a[64], b[64];
    for (int i = 0; i < 64; i++) {
        a[i] = 100;
        b[i] = 100;
    }
    MPI_Reduce_local(a, b, 64, MPI_INT8_T, MPI_SUM);
    return -56 != b[0];
}
