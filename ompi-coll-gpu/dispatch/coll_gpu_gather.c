/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather, MPI_Gatherv and their nonblocking forms on device buffers.  The
 * receive buffer matters at the root only: elsewhere it is neither
 * classified nor touched.
 */
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_signature.h"

/* Its native algorithms (coll_gpu_algorithms.h); auto's order: the table's. */
#define COLL_GPU_GATHER_BINOMIAL_HELP                                                              \
    "the node leaders pass their subtrees' blocks up a binomial tree to the root "                 \
    "(ceil(log2(nodes)) "                                                                          \
    "messages at the root per step, steps pipelined up it without a barrier): for small blocks "   \
    "across many nodes"

/* binomial: from coll_gpu_gather_binomial_min_nodes nodes on, for calls from
 * coll_gpu_gather_binomial_min_bytes up to coll_gpu_gather_binomial_max_bytes gathered (the block x
 * ranks); its layout is hierarchical's, a slot per rank. */
COLL_GPU_ALG_BINOMIAL_RULE(coll_gpu_gather, "gather_binomial", " gathered", true,
                           mca_coll_gpu_component.gather_binomial,
                           coll_gpu_gather_scatter_hierarchical_fits, "a slot per rank")

/* hierarchical: across nodes where a node has several ranks, from
 * coll_gpu_gather_hierarchical_min_nodes nodes on for calls from _min_bytes up to _max_bytes
 * gathered, direct elsewhere (the cost model's band). */
COLL_GPU_ALG_BAND_RULE(coll_gpu_gather_hier_band, "gather_hierarchical", " gathered", true,
                       mca_coll_gpu_component.gather_hierarchical);

COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL(
    coll_gpu_gather_alg, "the root copies every block from its owner's scratch",
    coll_gpu_gather_direct,
    "each node's leader collects its node's blocks, the root gets them in one message per node",
    coll_gpu_gather_hierarchical, coll_gpu_gather_scatter_hierarchical_fits, SIZE_MAX,
    &coll_gpu_gather_hier_band,
    COLL_GPU_ALG_BINOMIAL_ROW(coll_gpu_gather, COLL_GPU_GATHER_BINOMIAL_HELP, "gather_binomial",
                              coll_gpu_gather_binomial));

/* auto stages small blocking calls on device buffers where the cost model has the staged path
 * faster (coll_gpu_gather_staged_max_bytes, _staged_nodes_max_bytes) */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_gather_staged, gather);
/* per rank blocks: hierarchical has a slot per rank */
COLL_GPU_ALG_TABLE(coll_gpu_gather_algs, coll_gpu_gather_alg, "gather", "MPI_Gather", true, true,
                   COLL_GPU_ALG_STAGED_AUTO_HELP("gather")
                       COLL_GPU_ALG_DIRECT_HIERARCHICAL_BAND_AUTO_HELP(
                           "gather") "; binomial from gather_binomial_min_nodes "
                                     "nodes on for calls from "
                                     "gather_binomial_min_bytes up to "
                                     "gather_binomial_max_bytes",
                   COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER("binomial"),
                   .staged = &coll_gpu_gather_staged);

/* coll_gpu_native_try_fn_t of MPI_Gather.  Only the arguments MPI says are significant are
 * looked at: the send block everywhere but at an in-place root, the receive buffer at the root.
 * Blocks move as bytes of the type signature (coll_gpu_signature.h), whatever datatype each
 * rank passes. */
static bool coll_gpu_gather_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                   bool kinds_mixed, int *rc_p) {
    bool is_root = (ompi_comm_rank(a->comm) == a->root),
         in_place = is_root && (MPI_IN_PLACE == a->sbuf);
    struct ompi_datatype_t *dtype = is_root ? a->rdtype : a->sdtype;
    int count = is_root ? a->rcount : a->scount, nbufs = 0;
    const void *bufs[2];
    coll_gpu_native_call_t call;

    if (!in_place) {
        bufs[nbufs++] = a->sbuf;
    }
    if (is_root) {
        bufs[nbufs++] = a->rbuf;
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_GATHER, kind, count, dtype,
                                  NULL, bufs, coll_gpu_sig_bufs_checked(kind, nbufs), kinds_mixed,
                                  NULL != a->request, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        int size = ompi_comm_size(a->comm);
        coll_gpu_sig_buf_t send = {0}, recv = {0};

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, a->sbuf, a->sdtype, 1, a->scount, NULL, NULL, NULL,
                                  NULL, true);
        }
        if (is_root) {
            /* in place, the root's own block is read from the receive buffer */
            coll_gpu_sig_buf_init(&call, &recv, a->rbuf, a->rdtype, size, a->rcount, NULL, NULL,
                                  NULL, NULL, in_place);
            coll_gpu_sig_buf_receive(&call, &recv);
        }
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = is_root ? recv.data : a->rbuf;
        call.count = coll_gpu_signature_bytes(count, dtype);
        call.root = a->root;
        *rc_p = coll_gpu_native_launch(a, &call, &send, &recv, recv.bytes);
    }
    return true;
}

/* The receive buffer matters at the root only: elsewhere it is neither classified nor
 * touched.  In place, the root's own block is already in it. */
static bool coll_gpu_gather_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                                  int *rc_p) {
    int size = coll_gpu_args_blocks(a);

    (void)single_call;
    (void)rc_p;
    if (coll_gpu_args_not_root_side(a)) {
        coll_gpu_buf_init(&call->send, a->sbuf, a->sdtype, (size_t)a->scount);
    }
    if (coll_gpu_args_is_root(a)) {
        coll_gpu_args_stage_recv_blocks(a, call, size,
                                        COLL_GPU_GATHERV == coll_gpu_coll_blocking(a->coll));
    }
    return false;
}

static const coll_gpu_ops_t coll_gpu_gather_ops = {
    .on_device = coll_gpu_args_on_device_root_recv,
    .stage = coll_gpu_gather_stage,
};

COLL_GPU_DEFINE_ENTRIES(gather, GATHER, BLOCKS_ROOT, &coll_gpu_gather_ops, coll_gpu_gather_native,
                        coll_gpu_gather_native)
COLL_GPU_DEFINE_ENTRIES(gatherv, GATHERV, GATHERV, &coll_gpu_gather_ops, NULL, NULL)
