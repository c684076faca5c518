/* SPDX-License-Identifier: BSD-3-Clause */
/* One native call as its algorithm gets it (coll_gpu_native_call_t), built by the dispatch and
 * passed down unchanged. */
#ifndef COLL_GPU_NATIVE_CALL_H
#define COLL_GPU_NATIVE_CALL_H

#include "coll_gpu.h"
#include "coll_gpu_alg.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_mem.h"

BEGIN_C_DECLS

/*
 * One native call, as its algorithm gets it: built once by the collective's dispatch
 * (coll_gpu_native_eligible, then the call's arguments), passed down unchanged.  Counts are in
 * elements of esize bytes (bytes of the type signature for data movement, esize 1); MPI_IN_PLACE
 * is resolved by the dispatch as each algorithm's comment says.
 */
#define COLL_GPU_NATIVE_LARGEST_AGREED SIZE_MAX

typedef struct coll_gpu_native_call {
    coll_gpu_native_t *native;
    coll_gpu_native_kind_t kind;
    const coll_gpu_native_mem_t *mem; /* coll_gpu_native_mems[kind] */
    accel_stream_h stream;            /* NULL on the host */
    size_t esize;                     /* bytes of an element */
    accel_dtype_t dtype;              /* the reductions' */
    accel_op_t op;
    const char *mpi_call;
    const coll_gpu_alg_desc_t *alg; /* the algorithm that runs it */
    /* An error before the algorithm started on this rank (no stream, no memory to pack a
     * buffer): the algorithm still runs every step's handshake with its peers, copies nothing,
     * and returns the error, so no peer waits for a step that never comes. */
    accel_status_t entry_status;
    /* A receive buffer packed for the algorithm (a layout that is not dense): unpacked by
     * coll_gpu_native_finish before the ranks agree on the outcome; NULL: none */
    struct coll_gpu_sig_buf *unpack;
    /* the arguments */
    const void *sbuf;
    void *rbuf;
    size_t count; /* per rank, or per block */
    int root;
    /* v-collectives and the alltoalls: receive blocks (counts, displs) and send blocks
     * (scounts, sdispls), one per rank of the team; largest: the longest block of any pair of
     * ranks, the same on every rank, or COLL_GPU_NATIVE_LARGEST_AGREED: the algorithm agrees on
     * it (a nonblocking alltoallv) */
    const size_t *counts, *displs, *scounts, *sdispls;
    size_t largest;
    size_t chunk_bytes; /* pipeline chunk (allreduce: two-shot, ring, hierarchical) */
    /* a nonblocking v-collective's blocks (counts, displs, then for the alltoalls scounts,
     * sdispls: posted_arrays x team size), its own while it is queued (the context's arrays
     * are the running call's work arrays); freed after the call (NULL: none) */
    size_t *posted_blocks;
    int posted_arrays;
} coll_gpu_native_call_t;

END_C_DECLS

#endif /* COLL_GPU_NATIVE_CALL_H */
