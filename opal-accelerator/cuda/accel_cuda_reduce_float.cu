/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction kernels: SUM, PROD, MAX, MIN on float16, bfloat16, float, double. */
#include "accel_cuda_reduce.h"

ACCEL_CUDA_REDUCE_DEFINE_FAMILY(float, ACCEL_REDUCE_FOREACH_FLOAT)
