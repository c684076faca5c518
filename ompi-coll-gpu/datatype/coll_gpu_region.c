/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bytes a buffer argument touches, from its datatype's bounds; see coll_gpu_region.h.
 */
#include "coll_gpu_region.h"

#include "ompi/datatype/ompi_datatype.h"

void coll_gpu_region(struct ompi_datatype_t *dtype, size_t count, ptrdiff_t *lo_p,
                     ptrdiff_t *hi_p) {
    ptrdiff_t lb, extent, true_lb, true_extent, stride;
    size_t size;

    ompi_datatype_type_size(dtype, &size);
    *lo_p = *hi_p = 0;
    if (0 == count || 0 == size) {
        return; /* nothing is touched, wherever the type's bounds lie */
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    /* the last element's offset; a (resized) type may have a negative extent */
    stride = (ptrdiff_t)(count - 1) * extent;
    *lo_p = true_lb + ((stride < 0) ? stride : 0);
    *hi_p = true_lb + true_extent + ((stride > 0) ? stride : 0);
}

void coll_gpu_region_layout(const coll_gpu_layout_t *layout, ptrdiff_t *lo_p, ptrdiff_t *hi_p) {
    bool any = false;

    *lo_p = *hi_p = 0;
    for (int i = 0; i < layout->n; ++i) {
        struct ompi_datatype_t *dtype =
            (NULL != layout->dtypes) ? layout->dtypes[i] : layout->dtype;
        ptrdiff_t lb, extent, displ, lo, hi;

        if (layout->counts[i] <= 0) {
            continue;
        }
        coll_gpu_region(dtype, (size_t)layout->counts[i], &lo, &hi);
        if (hi <= lo) {
            continue; /* a zero-size type: its displacement need not be a valid address */
        }
        displ = (NULL != layout->adispls) ? (ptrdiff_t)layout->adispls[i]
                                          : (ptrdiff_t)layout->displs[i];
        if (!layout->displs_in_bytes) {
            ompi_datatype_get_extent(dtype, &lb, &extent);
            displ *= extent;
        }
        lo += displ;
        hi += displ;
        if (!any || lo < *lo_p) {
            *lo_p = lo;
        }
        if (!any || hi > *hi_p) {
            *hi_p = hi;
        }
        any = true;
    }
}

void coll_gpu_region_blocks(struct ompi_datatype_t *dtype, const int *counts, const int *displs,
                            int n, ptrdiff_t *lo_p, ptrdiff_t *hi_p) {
    coll_gpu_layout_t layout = {
        .n = n,
        .counts = counts,
        .displs = displs,
        .dtype = dtype,
    };

    coll_gpu_region_layout(&layout, lo_p, hi_p);
}
