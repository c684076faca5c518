/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buffers of native data-movement calls as bytes of the type signature; see
 * coll_gpu_signature.h.
 */
#include "coll_gpu_signature.h"
#include "coll_gpu_region.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"

size_t coll_gpu_signature_bytes(int count, struct ompi_datatype_t *dtype) {
    size_t tsize = 0;

    if ((count <= 0) || (NULL == dtype) || (MPI_DATATYPE_NULL == dtype)) {
        return 0;
    }
    (void)ompi_datatype_type_size(dtype, &tsize);
    return (size_t)count * tsize;
}

bool coll_gpu_signature_dense(struct ompi_datatype_t *dtype) {
    ptrdiff_t lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    size_t tsize = 0;

    (void)ompi_datatype_type_size(dtype, &tsize);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    return (tsize > 0) && ((size_t)extent == tsize) && ((size_t)true_extent == tsize) &&
           ompi_datatype_is_contiguous_memory_layout(dtype, 1);
}

/* Element p's count and displacement (in extents) of buf's blocks. */
static int coll_gpu_sig_ecount(const coll_gpu_sig_buf_t *buf, int p) {
    return (NULL != buf->ecounts) ? buf->ecounts[p] : buf->ecount;
}
static ptrdiff_t coll_gpu_sig_edispl(const coll_gpu_sig_buf_t *buf, int p) {
    return (NULL != buf->edispls) ? (ptrdiff_t)buf->edispls[p] : (ptrdiff_t)p * buf->ecount;
}

/* [lo, hi): the bytes of user the blocks touch. */
static void coll_gpu_sig_region(const coll_gpu_sig_buf_t *buf, ptrdiff_t *lo_p, ptrdiff_t *hi_p) {
    if (NULL != buf->ecounts) {
        coll_gpu_region_blocks(buf->dtype, buf->ecounts, buf->edispls, buf->nblocks, lo_p, hi_p);
    } else {
        coll_gpu_region(buf->dtype, (size_t)buf->ecount * (size_t)buf->nblocks, lo_p, hi_p);
    }
}

/* Packs (to_bytes) or unpacks every block between host_user (standing for user) and the host
 * bytes; false when the datatype engine fails.  The bytes side is described as n elements of a
 * contiguous type of the element's size, so a block of any size fits the engine's int counts. */
static bool coll_gpu_sig_convert(const coll_gpu_sig_buf_t *buf, char *host_user, char *bytes,
                                 bool to_bytes) {
    struct ompi_datatype_t *element = NULL;
    ptrdiff_t lb, extent;
    size_t tsize = 0;
    bool ok = true;

    ompi_datatype_get_extent(buf->dtype, &lb, &extent);
    (void)ompi_datatype_type_size(buf->dtype, &tsize);
    if ((tsize > INT_MAX) ||
        (OMPI_SUCCESS != ompi_datatype_create_contiguous((int)tsize, MPI_BYTE, &element)) ||
        (OMPI_SUCCESS != ompi_datatype_commit(&element))) {
        ok = false;
    }
    for (int p = 0; ok && (p < buf->nblocks); ++p) {
        int n = coll_gpu_sig_ecount(buf, p);
        char *block = host_user + coll_gpu_sig_edispl(buf, p) * extent;

        if ((n <= 0) || (0 == buf->counts[p])) {
            continue;
        }
        ok = OMPI_SUCCESS ==
             (to_bytes
                  ? ompi_datatype_sndrcv(block, n, buf->dtype, bytes + buf->displs[p], n, element)
                  : ompi_datatype_sndrcv(bytes + buf->displs[p], n, element, block, n, buf->dtype));
    }
    if (NULL != element) {
        (void)ompi_datatype_destroy(&element);
    }
    return ok;
}

/* Packs or unpacks between user's blocks and the temporary, through host memory when they are
 * device memory (the datatype engine walks host memory only). */
static accel_status_t coll_gpu_sig_transfer(const coll_gpu_native_call_t *call,
                                            coll_gpu_sig_buf_t *buf, bool to_bytes) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    accel_status_t status = ACCEL_OK;
    char *region = NULL, *bytes = NULL;
    ptrdiff_t lo, hi;

    if (COLL_GPU_NATIVE_HOST == call->kind) {
        return coll_gpu_sig_convert(buf, buf->user, buf->temp, to_bytes) ? ACCEL_OK
                                                                         : ACCEL_ERR_UNSUPPORTED;
    }
    coll_gpu_sig_region(buf, &lo, &hi);
    region = malloc((size_t)(hi - lo) + 1);
    bytes = malloc(buf->bytes + 1);
    if ((NULL == region) || (NULL == bytes)) {
        status = ACCEL_ERR_NO_MEMORY;
        goto out;
    }
    /* unpacking too starts from the user's bytes: holes between the blocks keep them */
    status = accel->memcpy(region, (char *)buf->user + lo, (size_t)(hi - lo));
    if ((ACCEL_OK == status) && !to_bytes) {
        status = accel->memcpy(bytes, buf->temp, buf->bytes);
    }
    if ((ACCEL_OK == status) && !coll_gpu_sig_convert(buf, region - lo, bytes, to_bytes)) {
        status = ACCEL_ERR_UNSUPPORTED;
    }
    if (ACCEL_OK == status) {
        status = to_bytes ? accel->memcpy(buf->temp, bytes, buf->bytes)
                          : accel->memcpy((char *)buf->user + lo, region, (size_t)(hi - lo));
    }
out:
    free(region);
    free(bytes);
    return status;
}

void coll_gpu_sig_buf_init(coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf, const void *user,
                           struct ompi_datatype_t *dtype, int nblocks, int ecount,
                           const int *ecounts, const int *edispls, size_t *counts_p,
                           size_t *displs_p, bool copy_in) {
    ptrdiff_t lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    size_t tsize = 0, total = 0;
    bool dense;

    memset(buf, 0, sizeof(*buf));
    buf->user = (void *)user;
    buf->dtype = dtype;
    buf->nblocks = nblocks;
    buf->ecount = ecount;
    buf->ecounts = ecounts;
    buf->edispls = edispls;
    buf->counts = counts_p;
    buf->displs = displs_p;
    buf->data = (char *)user;
    (void)ompi_datatype_type_size(dtype, &tsize);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    /* host memory in a device call: through a device temporary, as a layout that is not dense */
    dense = coll_gpu_signature_dense(dtype) &&
            ((COLL_GPU_NATIVE_DEVICE != call->kind) || coll_gpu_on_device(user));
    for (int p = 0; dense && (p < nblocks); ++p) {
        /* the algorithms take displacements from data on: a block before it is packed */
        dense = (coll_gpu_sig_edispl(buf, p) >= 0) || (coll_gpu_sig_ecount(buf, p) <= 0);
    }
    for (int p = 0; p < nblocks; ++p) {
        size_t n = (size_t)((coll_gpu_sig_ecount(buf, p) > 0) ? coll_gpu_sig_ecount(buf, p) : 0);
        if (NULL != counts_p) {
            counts_p[p] = n * tsize;
            displs_p[p] =
                (dense && (n > 0)) ? (size_t)(coll_gpu_sig_edispl(buf, p) * extent) : total;
        }
        total += n * tsize;
    }
    buf->bytes = total;
    if (dense || (0 == total)) {
        buf->data = (char *)user + true_lb;
        return;
    }
    if (NULL == counts_p) {
        buf->counts = calloc(2 * (size_t)nblocks, sizeof(size_t));
        if (NULL == buf->counts) {
            call->entry_status = ACCEL_ERR_NO_MEMORY;
            return;
        }
        buf->owns_counts = true;
        buf->displs = buf->counts + nblocks;
        for (int p = 0, off = 0; p < nblocks; ++p, off += ecount) {
            buf->counts[p] = (size_t)ecount * tsize;
            buf->displs[p] = (size_t)off * tsize;
        }
    }
    if (ACCEL_OK != call->entry_status) {
        return;
    }
    if (COLL_GPU_NATIVE_HOST == call->kind) {
        buf->temp = malloc(total);
        call->entry_status = (NULL == buf->temp) ? ACCEL_ERR_NO_MEMORY : ACCEL_OK;
    } else {
        call->entry_status =
            mca_coll_gpu_component.accel->mem_alloc(ACCEL_MEM_DEVICE, total, &buf->temp);
    }
    if ((ACCEL_OK == call->entry_status) && copy_in) {
        call->entry_status = coll_gpu_sig_transfer(call, buf, true);
    }
    if (ACCEL_OK == call->entry_status) {
        buf->data = buf->temp;
    }
}

void *coll_gpu_sig_buf_reduction(coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf,
                                 const void *user, struct ompi_datatype_t *dtype, int count,
                                 bool output) {
    if ((COLL_GPU_NATIVE_DEVICE != call->kind) || coll_gpu_on_device(user)) {
        return (void *)user;
    }
    coll_gpu_sig_buf_init(call, buf, user, dtype, 1, count, NULL, NULL, NULL, NULL, !output);
    if (output) {
        coll_gpu_sig_buf_receive(call, buf);
    }
    return buf->data;
}

accel_status_t coll_gpu_sig_buf_unpack(const coll_gpu_native_call_t *call,
                                       coll_gpu_sig_buf_t *buf) {
    return (NULL != buf->temp) ? coll_gpu_sig_transfer(call, buf, false) : ACCEL_OK;
}

void coll_gpu_sig_buf_fini(const coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf) {
    if (NULL != buf->temp) {
        if (COLL_GPU_NATIVE_HOST == call->kind) {
            free(buf->temp);
        } else {
            (void)mca_coll_gpu_component.accel->mem_free(buf->temp);
        }
    }
    if (buf->owns_counts) {
        free(buf->counts);
    }
}
