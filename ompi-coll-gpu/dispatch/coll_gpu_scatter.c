/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Scatter, MPI_Scatterv and their nonblocking forms on device buffers.
 * The send buffer matters at the root only: elsewhere it is neither
 * classified nor touched.
 */
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_signature.h"

/* Its native algorithms (coll_gpu_algorithms.h); auto's order: the table's. */
#define COLL_GPU_SCATTER_BINOMIAL_HELP                                                             \
    "the root's blocks go down a binomial tree of the node leaders, each getting its subtree's "   \
    "blocks from its parent (ceil(log2(nodes)) messages from the root per step, steps pipelined "  \
    "without a barrier): for small blocks across many nodes"

/* binomial: from coll_gpu_scatter_binomial_min_nodes nodes on, for calls from
 * coll_gpu_scatter_binomial_min_bytes up to coll_gpu_scatter_binomial_max_bytes scattered (the
 * block x ranks); its layout is hierarchical's, a slot per rank. */
COLL_GPU_ALG_BINOMIAL_RULE(coll_gpu_scatter, "scatter_binomial", " scattered", true,
                           mca_coll_gpu_component.scatter_binomial,
                           coll_gpu_gather_scatter_hierarchical_fits, "a slot per rank")

/* hierarchical: across nodes where a node has several ranks, on
 * coll_gpu_scatter_hierarchical's band of scattered sizes, direct elsewhere. */
COLL_GPU_ALG_BAND_RULE(coll_gpu_scatter_hier_band, "scatter_hierarchical", " scattered", true,
                       mca_coll_gpu_component.scatter_hierarchical);

COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL(
    coll_gpu_scatter_alg, "every rank copies its block from the root's scratch",
    coll_gpu_scatter_direct,
    "each node's leader gets its node's blocks from the root in one message, the node's ranks "
    "copy theirs from it",
    coll_gpu_scatter_hierarchical, coll_gpu_gather_scatter_hierarchical_fits, SIZE_MAX,
    &coll_gpu_scatter_hier_band,
    COLL_GPU_ALG_BINOMIAL_ROW(coll_gpu_scatter, COLL_GPU_SCATTER_BINOMIAL_HELP, "scatter_binomial",
                              coll_gpu_scatter_binomial));

/* auto stages small blocking calls on device buffers where the cost model has the staged path
 * faster (coll_gpu_scatter_staged_max_bytes, _staged_nodes_max_bytes) */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_scatter_staged, scatter);
COLL_GPU_ALG_TABLE(coll_gpu_scatter_algs, coll_gpu_scatter_alg, "scatter", "MPI_Scatter", true,
                   true,
                   COLL_GPU_ALG_STAGED_AUTO_HELP("scatter")
                       COLL_GPU_ALG_DIRECT_HIERARCHICAL_BAND_AUTO_HELP(
                           "scatter") "; binomial from scatter_binomial_min_nodes "
                                      "nodes on for calls from "
                                      "scatter_binomial_min_bytes up to "
                                      "scatter_binomial_max_bytes",
                   COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER("binomial"),
                   .staged = &coll_gpu_scatter_staged);

/* coll_gpu_native_try_fn_t of MPI_Scatter.  Only the arguments MPI says are significant are
 * looked at: the receive block everywhere but at an in-place root, the send buffer at the root.
 * Blocks move as bytes of the type signature (coll_gpu_signature.h), whatever datatype each
 * rank passes. */
static bool coll_gpu_scatter_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                    bool kinds_mixed, int *rc_p) {
    bool is_root = (ompi_comm_rank(a->comm) == a->root),
         in_place = is_root && (MPI_IN_PLACE == a->rbuf);
    struct ompi_datatype_t *dtype = is_root ? a->sdtype : a->rdtype;
    int count = is_root ? a->scount : a->rcount, nbufs = 0;
    const void *bufs[2];
    coll_gpu_native_call_t call;

    if (!in_place) {
        bufs[nbufs++] = a->rbuf;
    }
    if (is_root) {
        bufs[nbufs++] = a->sbuf;
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_SCATTER, kind, count, dtype,
                                  NULL, bufs, coll_gpu_sig_bufs_checked(kind, nbufs), kinds_mixed,
                                  NULL != a->request, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_sig_buf_t send = {0}, recv = {0};

        if (is_root) {
            coll_gpu_sig_buf_init(&call, &send, a->sbuf, a->sdtype, ompi_comm_size(a->comm),
                                  a->scount, NULL, NULL, NULL, NULL, true);
        }
        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &recv, a->rbuf, a->rdtype, 1, a->rcount, NULL, NULL, NULL,
                                  NULL, false);
            coll_gpu_sig_buf_receive(&call, &recv);
        }
        call.sbuf = is_root ? send.data : a->sbuf;
        call.rbuf = in_place ? NULL : recv.data;
        call.count = coll_gpu_signature_bytes(count, dtype);
        call.root = a->root;
        *rc_p = coll_gpu_native_launch(a, &call, &send, &recv, recv.bytes);
    }
    return true;
}

/* The send buffer matters at the root only: elsewhere it is neither classified nor touched. */
static bool coll_gpu_scatter_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                                   int *rc_p) {
    int size = coll_gpu_args_blocks(a);

    (void)single_call;
    (void)rc_p;
    if (coll_gpu_args_is_root(a)) {
        if (COLL_GPU_SCATTERV == coll_gpu_coll_blocking(a->coll)) {
            coll_gpu_buf_init_blocks(&call->send, a->sbuf, a->sdtype, a->scounts, a->sdispls, size);
        } else {
            coll_gpu_buf_init(&call->send, a->sbuf, a->sdtype, (size_t)a->scount * (size_t)size);
        }
    }
    if (coll_gpu_args_not_root_side(a)) {
        coll_gpu_buf_init(&call->recv, a->rbuf, a->rdtype, (size_t)a->rcount);
        call->recv_out = true;
        call->recv_holes = coll_gpu_has_holes(a->rdtype, a->rcount);
    }
    return false;
}

static const coll_gpu_ops_t coll_gpu_scatter_ops = {
    .on_device = coll_gpu_args_on_device_root_send,
    .stage = coll_gpu_scatter_stage,
};

COLL_GPU_DEFINE_ENTRIES(scatter, SCATTER, BLOCKS_ROOT, &coll_gpu_scatter_ops,
                        coll_gpu_scatter_native, coll_gpu_scatter_native)
COLL_GPU_DEFINE_ENTRIES(scatterv, SCATTERV, SCATTERV, &coll_gpu_scatter_ops, NULL, NULL)
