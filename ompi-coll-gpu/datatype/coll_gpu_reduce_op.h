/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which reductions the accelerator's kernels run: an MPI (datatype, op) pair
 * mapped onto an accel (dtype, op) pair, or "no" (the staged path then runs
 * Open MPI's own op on host memory).
 */
#ifndef COLL_GPU_REDUCE_OP_H
#define COLL_GPU_REDUCE_OP_H

#include "coll_gpu.h"

BEGIN_C_DECLS

/* Builds the datatype table; once, at component open. */
void coll_gpu_reduce_op_init(void);

/*
 * True when the kernels compute op on dtype exactly as MPI defines it: a
 * predefined op on a predefined C type MPI defines it for (Open MPI's
 * ompi_op_is_valid() agreeing), or an op of coll_gpu_ext.h on its bfloat16 /
 * float16 type.  User ops, Fortran and long double types, derived types: false.
 */
bool coll_gpu_reduce_op_lookup(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               accel_dtype_t *dtype_p, accel_op_t *op_p);

END_C_DECLS

#endif /* COLL_GPU_REDUCE_OP_H */
