/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deterministic inputs and the independent reference of the coll/gpu MPI tests: every rank
 * generates every peer's input locally and reduces it itself, never with Open MPI's reductions
 * (Debian's 4.1.4 op/avx saturates int8/uint8 sums, open-mpi/ompi#8045, so it is no oracle).
 * Plain C on packed values: nothing here calls MPI.
 */
#ifndef TEST_REFERENCE_H
#define TEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "test_types.h"

/* Input of source `src` (of `nsrc`), elements [first, first + count), as packed base values
 * (count * nvals values of base_size bytes, no holes).  `stream` separates independent
 * inputs of one source (e.g. the blocks of an alltoall). */
void tu_gen(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int src, int nsrc, size_t first,
            size_t count, void *packed);
/* inout[i] = in[i] op inout[i] on packed values (MPI order: `in` is the left operand). */
void tu_ref_apply(const tu_type_t *type, tu_op_id_t op, const void *in, void *inout, size_t count);
/* Reduction over sources [0, nsrc_used) of nsrc, elements [first, first + count). */
void tu_ref_reduce(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int nsrc_used, int nsrc,
                   size_t first, size_t count, void *packed);

#endif /* TEST_REFERENCE_H */
