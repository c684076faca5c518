/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction kernels: SUM, PROD, MAX, MIN on the integer types. */
#include "accel_cuda_reduce.h"

ACCEL_CUDA_REDUCE_DEFINE_FAMILY(int, ACCEL_REDUCE_FOREACH_INT)
