/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction kernels: MAXLOC, MINLOC on the MPI pair types. */
#include "accel_cuda_reduce.h"

ACCEL_CUDA_REDUCE_DEFINE_FAMILY(pair, ACCEL_REDUCE_FOREACH_PAIR)
