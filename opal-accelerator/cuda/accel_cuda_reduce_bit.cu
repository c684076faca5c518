/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduction kernels: LAND, LOR, LXOR on the integer types and bool; BAND, BOR, BXOR on the integer
 * types. */
#include "accel_cuda_reduce.h"

ACCEL_CUDA_REDUCE_DEFINE_FAMILY(bit, ACCEL_REDUCE_FOREACH_BIT)
