/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data by type signature.  MPI lets the ranks of a data-movement collective pass different
 * datatypes of one signature (a vector at the root, n MPI_DOUBLE elsewhere; a contiguous type of
 * 3 floats against 3 x MPI_FLOAT), so nothing a rank decides alone may depend on its local
 * datatype: the native data-movement algorithms see every buffer as bytes of the signature.
 * A rank whose layout is dense (its bytes lie one after the other) lends its own memory; any
 * other layout is packed into a temporary of the same memory kind before the call and unpacked
 * after it.  That is this rank's business only: its peers run the same steps either way.
 */
#ifndef COLL_GPU_SIGNATURE_H
#define COLL_GPU_SIGNATURE_H

#include "coll_gpu_native_call.h"

BEGIN_C_DECLS

/* Whether dtype's elements are dense: every element's bytes one after the other, and the next
 * element right after (a buffer of them is its signature's bytes, in place). */
bool coll_gpu_signature_dense(struct ompi_datatype_t *dtype);

/* Bytes of count elements of dtype in the type signature (0 for a count <= 0). */
size_t coll_gpu_signature_bytes(int count, struct ompi_datatype_t *dtype);

/* One buffer argument of a native data-movement call: blocks of dtype (block p: counts[p]
 * elements at displs[p] extents from user), as signature bytes. */
typedef struct coll_gpu_sig_buf {
    char *data;     /* the bytes the algorithm reads or writes: user memory or temp */
    void *temp;     /* the packed temporary, NULL when the user's memory serves */
    size_t bytes;   /* all blocks' signature bytes */
    size_t *displs; /* each block's first byte in data, nblocks entries */
    size_t *counts; /* each block's bytes */
    /* what unpack needs */
    void *user;
    struct ompi_datatype_t *dtype;
    int nblocks;
    const int *ecounts, *edispls; /* elements and extents; NULL: uniform (ecount each) */
    int ecount;
    bool owns_counts; /* counts/displs allocated here (packed uniform blocks) */
} coll_gpu_sig_buf_t;

/*
 * Describes user's blocks for call (nblocks of ecount elements each, block p at p * ecount
 * extents, when ecounts is NULL) and gives the algorithm their bytes: in place when the layout is
 * dense, else in a temporary holding the packed blocks when copy_in.  counts_p/displs_p: arrays
 * of nblocks entries for the byte counts and displacements (may be NULL for uniform blocks).
 * A failure (no memory for the temporary, a copy that failed) is put into call->entry_status
 * and data then points at user: the algorithm still runs every step with its peers, copies
 * nothing, and the call returns the error.
 */
void coll_gpu_sig_buf_init(coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf, const void *user,
                           struct ompi_datatype_t *dtype, int nblocks, int ecount,
                           const int *ecounts, const int *edispls, size_t *counts_p,
                           size_t *displs_p, bool copy_in);
/* How many of a call's nbufs buffers, all given to the algorithm through coll_gpu_sig_buf_init,
 * must be of the call's memory kind: on device memory none (a host buffer, a root's receive
 * buffer in host memory say, goes through a device temporary: the call stays native), in
 * host-buffer mode all. */
static inline int coll_gpu_sig_bufs_checked(coll_gpu_native_kind_t kind, int nbufs) {
    return (COLL_GPU_NATIVE_DEVICE == kind) ? 0 : nbufs;
}

/* The receive side: buf is unpacked into the user's blocks at the end of the algorithm, before
 * the ranks agree on the call's outcome (coll_gpu_native_finish), when it has a temporary. */
static inline void coll_gpu_sig_buf_receive(coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf) {
    call->unpack = buf;
}
/* A reduction's buffer of count elements of dtype (dense): the algorithm's pointer, user itself
 * unless the call is on device memory and user is host memory; then buf's device temporary,
 * copied in (an input) or unpacked at the end (output: coll_gpu_sig_buf_receive). */
void *coll_gpu_sig_buf_reduction(coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf,
                                 const void *user, struct ompi_datatype_t *dtype, int count,
                                 bool output);
/* Unpacks the temporary into the user's blocks (holes keep their contents); nothing without
 * one. */
accel_status_t coll_gpu_sig_buf_unpack(const coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf);
/* After the algorithm: frees the temporary. */
void coll_gpu_sig_buf_fini(const coll_gpu_native_call_t *call, coll_gpu_sig_buf_t *buf);

END_C_DECLS

#endif /* COLL_GPU_SIGNATURE_H */
