/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoall, MPI_Alltoallv and their nonblocking forms on device buffers.
 */
#include <limits.h>

#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_signature.h"

#include "ompi/datatype/ompi_datatype.h"

/* hierarchical: across nodes where a node has several ranks, from
 * coll_gpu_alltoall_hierarchical_min_nodes nodes on for blocks from _min_bytes up to _max_bytes,
 * direct elsewhere (the cost model's band); direct on one node and across nodes of one rank each
 * (nothing to aggregate). */
COLL_GPU_ALG_BAND_RULE(coll_gpu_alltoall_hier_band, "alltoall_hierarchical", " per block", false,
                       mca_coll_gpu_component.alltoall_hierarchical);

static bool coll_gpu_alltoall_hierarchical_preferred(const coll_gpu_alg_query_t *query, char *why,
                                                     size_t why_len) {
    return coll_gpu_alg_hierarchical_preferred(query, coll_gpu_alltoall_hierarchical_fits, SIZE_MAX,
                                               &coll_gpu_alltoall_hier_band, why, why_len);
}

static bool coll_gpu_alltoall_hierarchical_fits_call(const coll_gpu_alg_query_t *query, char *why,
                                                     size_t why_len) {
    return coll_gpu_alg_hierarchical_fits(query, coll_gpu_alltoall_hierarchical_fits, why, why_len);
}

/* Its native algorithms (coll_gpu_algorithms.h); auto's order: the table's. */
static const coll_gpu_alg_desc_t coll_gpu_alltoall_alg_rows[] = {
    {.name = "direct",
     .help = "every rank gets its block out of every peer's scratch, pairwise, at most "
             "alltoall_max_outstanding gets from other nodes in flight",
     .cost_model = "alltoall_direct",
     .multi_node = true,
     .preferred = coll_gpu_alg_always,
     .run = coll_gpu_alltoall_direct},
    {.name = "hierarchical",
     .help = "node-aggregated: the blocks between two nodes travel in one message each way, "
             "carried by one rank of each node on the same rail",
     .cost_model = "alltoall_hierarchical",
     .multi_node = true,
     .fits = coll_gpu_alltoall_hierarchical_fits_call,
     .preferred = coll_gpu_alltoall_hierarchical_preferred,
     .run = coll_gpu_alltoall_hierarchical},
};

/* auto stages small blocking calls on device buffers where the cost model has the staged path
 * faster (coll_gpu_alltoall_staged_max_bytes, _staged_nodes_max_bytes) */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_alltoall_staged, alltoall);
/* per rank blocks: every rank's block in a step */
COLL_GPU_ALG_TABLE(coll_gpu_alltoall_algs, coll_gpu_alltoall_alg, "alltoall", "MPI_Alltoall", true,
                   true,
                   COLL_GPU_ALG_STAGED_AUTO_HELP("alltoall")
                       COLL_GPU_ALG_DIRECT_HIERARCHICAL_BAND_AUTO_HELP("alltoall"),
                   COLL_GPU_ALG_ORDER("hierarchical", "direct"),
                   .staged = &coll_gpu_alltoall_staged);
/* (not node-aggregated: a rank knows only its own blocks' lengths, and a carrier would have to
 * move every pair's run at the longest) */
static const coll_gpu_alg_desc_t coll_gpu_alltoallv_alg_rows[] = {
    {.name = "direct",
     .help = "every rank gets its block out of every peer's scratch, pairwise, at most "
             "alltoall_max_outstanding gets from other nodes in flight",
     .multi_node = true,
     .preferred = coll_gpu_alg_always,
     .run = coll_gpu_alltoallv_direct},
};
/* auto stages small blocking calls as MPI_Alltoall's rule does, by the largest block of any pair
 * of ranks, which the ranks agree on before they choose (coll_gpu_alltoallv_native) */
COLL_GPU_ALG_TABLE(coll_gpu_alltoallv_algs, coll_gpu_alltoallv_alg, "alltoallv", "MPI_Alltoallv",
                   true, false,
                   COLL_GPU_ALG_STAGED_AUTO_HELP("alltoall") "by the largest block of any pair "
                                                             "of ranks; direct",
                   NULL, .staged = &coll_gpu_alltoall_staged);

/* coll_gpu_native_try_fn_t of MPI_Alltoall: a block per rank sent and received. */
static bool coll_gpu_alltoall_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                     bool kinds_mixed, int *rc_p) {
    return coll_gpu_args_native_blocks(a, COLL_GPU_NCOLL_ALLTOALL, ompi_comm_size(a->comm), kind,
                                       kinds_mixed, rc_p);
}

/*
 * The same for MPI_Alltoallv.  A rank knows only its own counts, while the number of steps
 * (the longest block of any pair of ranks, in bytes of the type signature), the eligibility and
 * the tuning rule must be the same on every rank.  A blocking call agrees on them with one
 * max-reduction over Open MPI's allreduce, which also carries whether some rank's arguments (a
 * negative count, a block too large) rule the native algorithm out: a few microseconds on host
 * memory, next to an alltoallv's own step signals; skipped only where the parameters rule the
 * native algorithm out on every rank alike.  A nonblocking one must not block in a collective of
 * Open MPI (another rank may post its calls on another communicator first): it decides on what
 * every rank shares (the communicator, the parameters, a tuning rule looked up as one byte) and
 * the algorithm agrees on the longest block in its first step, on the communicator's thread
 * (call.largest COLL_GPU_NATIVE_LARGEST_AGREED; MPI's own argument checks have refused negative
 * counts before the call gets here).  Datatypes play no part in the decision: ranks may pass
 * different ones of one signature (coll_gpu_signature.h).
 */
static bool coll_gpu_alltoallv_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                      bool kinds_mixed, int *rc_p) {
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    size_t total = 0;
    const void *bufs[2] = {rbuf, sbuf};
    bool in_place = (MPI_IN_PLACE == sbuf), nonblocking = (NULL != a->request);
    int size = ompi_comm_size(a->comm), count = 1; /* 1: refused for another reason */
    int64_t agreed[2] = {0, 0};                    /* the largest block, unusable */
    coll_gpu_native_call_t call;

    /* in place, the receive counts are the send counts too (a nonblocking call never
     * compares: coll_gpu_check_counts stages it) */
    /* a blocking call agrees with its peers only where every rank runs it natively: its word
     * on the board first (coll_gpu_board.h) */
    bool uniform =
        !nonblocking && coll_gpu_native_arrive(a->module, a->comm, kind, bufs,
                                               coll_gpu_sig_bufs_checked(kind, in_place ? 1 : 2));

    if (uniform &&
        OPAL_UNLIKELY(coll_gpu_native_check_blocks(
            a->module, a->comm, COLL_GPU_NCOLL_ALLTOALLV, in_place ? a->rcounts : a->scounts,
            in_place ? a->rdtype : a->sdtype, a->rcounts, a->rdtype, NULL, rc_p))) {
        return true; /* the call failed: no fallback */
    }
    if (uniform && !kinds_mixed && c->native &&
        (COLL_GPU_ALG_STAGED != c->algorithm[COLL_GPU_NCOLL_ALLTOALLV])) {
        for (int p = 0; p < size; ++p) {
            int64_t sent =
                in_place ? 0 : (int64_t)coll_gpu_signature_bytes(a->scounts[p], a->sdtype);
            int64_t received = (int64_t)coll_gpu_signature_bytes(a->rcounts[p], a->rdtype);
            agreed[0] = (received > agreed[0]) ? received : agreed[0];
            agreed[0] = (sent > agreed[0]) ? sent : agreed[0];
            if ((!in_place && (a->scounts[p] < 0)) || (a->rcounts[p] < 0)) {
                agreed[1] = 1; /* erroneous: Open MPI's collective reports it */
            }
        }
        if (OMPI_SUCCESS != COLL_GPU_PREV(a->module, allreduce, MPI_IN_PLACE, agreed, 2,
                                          MPI_INT64_T, MPI_MAX, a->comm)) {
            agreed[1] = 1;
        }
        /* the native eligibility sees the agreed largest block as that many bytes */
        count = ((0 != agreed[1]) || (agreed[0] > INT_MAX)) ? 0 : (int)agreed[0];
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLTOALLV, kind, count,
                                  MPI_BYTE, NULL, bufs,
                                  coll_gpu_sig_bufs_checked(kind, in_place ? 1 : 2), kinds_mixed,
                                  nonblocking, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_sig_buf_t send = {0}, recv;
        size_t *counts, *displs, *scounts, *sdispls;

        coll_gpu_native_block_arrays(&call, nonblocking, &counts, &displs, &scounts, &sdispls);
        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, size, 0, a->scounts, a->sdispls,
                                  scounts, sdispls, true);
        }
        /* in place, the receive buffer's blocks are sent: packed in first */
        coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, size, 0, a->rcounts, a->rdispls,
                              counts, displs, in_place);
        total = recv.bytes;
        coll_gpu_sig_buf_receive(&call, &recv);
        call.sbuf = in_place ? NULL : send.data;
        call.scounts = send.counts;
        call.sdispls = send.displs;
        call.rbuf = recv.data;
        call.counts = recv.counts;
        call.displs = recv.displs;
        call.largest = nonblocking ? COLL_GPU_NATIVE_LARGEST_AGREED : (size_t)count;
        *rc_p = coll_gpu_native_launch(a, &call, &send, &recv, total);
    }
    return true;
}

static bool coll_gpu_alltoall_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                                    int *rc_p) {
    int size = coll_gpu_args_blocks(a);

    (void)single_call;
    (void)rc_p;
    if (NULL != a->rcounts) { /* alltoallv */
        if (MPI_IN_PLACE != a->sbuf) {
            coll_gpu_buf_init_blocks(&call->send, a->sbuf, a->sdtype, a->scounts, a->sdispls, size);
        } else {
            call->send.user = (void *)a->sbuf;
        }
    } else {
        coll_gpu_buf_init(&call->send, a->sbuf, a->sdtype, (size_t)a->scount * (size_t)size);
    }
    coll_gpu_args_stage_recv_blocks(a, call, size, NULL != a->rcounts);
    return false;
}

static const coll_gpu_ops_t coll_gpu_alltoall_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_alltoall_stage,
};

COLL_GPU_DEFINE_ENTRIES(alltoall, ALLTOALL, BLOCKS, &coll_gpu_alltoall_ops,
                        coll_gpu_alltoall_native, coll_gpu_alltoall_native)
COLL_GPU_DEFINE_ENTRIES(alltoallv, ALLTOALLV, ALLTOALLV, &coll_gpu_alltoall_ops,
                        coll_gpu_alltoallv_native, coll_gpu_alltoallv_native)
