/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bytes a buffer argument of a collective touches: count elements of a datatype, or
 * blocks of one or several datatypes at displacements (a v- or w-collective's layout).
 */
#ifndef COLL_GPU_REGION_H
#define COLL_GPU_REGION_H

#include "coll_gpu.h"

BEGIN_C_DECLS

/* Bytes [lo, hi) that count elements of dtype starting at a buffer touch. */
void coll_gpu_region(struct ompi_datatype_t *dtype, size_t count, ptrdiff_t *lo_p, ptrdiff_t *hi_p);

/*
 * The blocks of a v- or w-collective's buffer argument: block i < n holds
 * counts[i] elements of dtypes[i] (of dtype for every block when dtypes is
 * NULL) at displacement displs[i] (int) or adispls[i] (MPI_Aint, when not
 * NULL), counted in bytes when displs_in_bytes, else in extents of the
 * block's type.
 */
typedef struct {
    int n;
    const int *counts;
    const int *displs;
    const MPI_Aint *adispls;
    bool displs_in_bytes;
    struct ompi_datatype_t *dtype;
    struct ompi_datatype_t *const *dtypes;
} coll_gpu_layout_t;

/* Union of the regions of a layout's blocks; blocks of no data (a zero count
 * or a zero-size type) count for nothing, and so does a layout of only those. */
void coll_gpu_region_layout(const coll_gpu_layout_t *layout, ptrdiff_t *lo_p, ptrdiff_t *hi_p);

/* Union of the regions of blocks (counts[i] elements at displs[i] extents)
 * for i < n; empty when every count is 0. */
void coll_gpu_region_blocks(struct ompi_datatype_t *dtype, const int *counts, const int *displs,
                            int n, ptrdiff_t *lo_p, ptrdiff_t *hi_p);

END_C_DECLS

#endif /* COLL_GPU_REGION_H */
