/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction kernels: SUM, PROD on complex float and complex double. */
#include "accel_cuda_reduce.h"

ACCEL_CUDA_REDUCE_DEFINE_FAMILY(complex, ACCEL_REDUCE_FOREACH_COMPLEX)
