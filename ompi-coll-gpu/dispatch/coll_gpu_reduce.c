/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce and MPI_Ireduce on device buffers.  The receive buffer matters
 * at the root only: elsewhere it is neither classified nor touched.
 */
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_signature.h"

/* Its native algorithms (coll_gpu_algorithms.h); auto's order: the table's. */
#define COLL_GPU_REDUCE_BINOMIAL_HELP                                                              \
    "the node leaders reduce up a binomial tree to the root (ceil(log2(nodes)) gets deep, chunks " \
    "pipelined up it without a barrier), each from its node's inputs: for small calls across "     \
    "many nodes"

/* binomial: from coll_gpu_reduce_binomial_min_nodes nodes on, for messages from
 * coll_gpu_reduce_binomial_min_bytes up to coll_gpu_reduce_binomial_max_bytes; it needs an input,
 * a partial and a landing slot per child in a scratch half. */
COLL_GPU_ALG_BINOMIAL_RULE(coll_gpu_reduce, "reduce_binomial", "", false,
                           mca_coll_gpu_component.reduce_binomial, coll_gpu_reduce_binomial_fits,
                           "2 + ceil(log2(nodes)) elements")

COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL(
    coll_gpu_reduce_alg,
    "the root reduces every rank's input in rank order: allreduce's bits on one node",
    coll_gpu_reduce_direct,
    "each node reduces its ranks' inputs into one partial, the root fetches one per node: "
    "hierarchical allreduce's bits",
    coll_gpu_reduce_hierarchical, coll_gpu_reduce_hierarchical_fits,
    COLL_GPU_REDUCE_SEGMENTED_MIN_BYTES, NULL,
    COLL_GPU_ALG_BINOMIAL_ROW(coll_gpu_reduce, COLL_GPU_REDUCE_BINOMIAL_HELP, "reduce_binomial",
                              coll_gpu_reduce_binomial),
    COLL_GPU_ALG_DEVICE_ROW(ACCEL_NODE_REDUCE, coll_gpu_device_rows_fit));

/* auto's rule, for ompi_info */
#define COLL_GPU_REDUCE_AUTO_HELP                                                                  \
    COLL_GPU_ALG_DIRECT_HIERARCHICAL_AUTO_HELP "; binomial from reduce_binomial_min_nodes nodes "  \
                                               "on for calls from reduce_binomial_min_bytes up "   \
                                               "to reduce_binomial_max_bytes"
/* auto stages small blocking calls on device buffers where the cost model has the staged path
 * faster (coll_gpu_reduce_staged_max_bytes, _staged_nodes_max_bytes) */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_reduce_staged, reduce);
COLL_GPU_ALG_TABLE(coll_gpu_reduce_algs, coll_gpu_reduce_alg, "reduce", "MPI_Reduce", true, true,
                   COLL_GPU_ALG_STAGED_AUTO_HELP("reduce") COLL_GPU_REDUCE_AUTO_HELP,
                   COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER("binomial"),
                   .staged = &coll_gpu_reduce_staged);

/* coll_gpu_native_try_fn_t of MPI_Reduce.  The buffers looked at are those MPI says are
 * significant: the send buffer (not at an in-place root), the receive buffer at the root. */
static bool coll_gpu_reduce_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                   bool kinds_mixed, int *rc_p) {
    bool is_root = (ompi_comm_rank(a->comm) == a->root),
         in_place = is_root && (MPI_IN_PLACE == a->sbuf);
    const void *bufs[2];
    coll_gpu_native_call_t call;
    int nbufs = 0;

    if (!in_place) {
        bufs[nbufs++] = a->sbuf;
    }
    if (is_root && ((COLL_GPU_NATIVE_DEVICE != kind) || in_place)) {
        /* (a device call's root may receive into host memory: through a device temporary) */
        bufs[nbufs++] = a->rbuf;
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_REDUCE, kind, a->count,
                                  a->dtype, a->op, bufs, nbufs, kinds_mixed, NULL != a->request,
                                  &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        /* a temporary only where a device call's root may receive into host memory */
        bool temp = is_root && !in_place && (COLL_GPU_NATIVE_DEVICE == call.kind);
        coll_gpu_sig_buf_t recv;

        call.sbuf = in_place ? a->rbuf : a->sbuf;
        call.rbuf = a->rbuf;
        if (temp) {
            recv = (coll_gpu_sig_buf_t){0};
            call.rbuf = coll_gpu_sig_buf_reduction(&call, &recv, a->rbuf, a->dtype, a->count, true);
        }
        call.count = (size_t)a->count;
        call.root = a->root;
        *rc_p = coll_gpu_native_launch(a, &call, NULL, temp ? &recv : NULL,
                                       (size_t)a->count * call.esize);
    }
    return true;
}

/* The receive buffer matters at the root only: elsewhere it is neither classified nor
 * touched. */
static bool coll_gpu_reduce_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                                  int *rc_p) {
    (void)single_call;
    (void)rc_p;
    if (coll_gpu_args_not_root_side(a)) {
        coll_gpu_buf_init(&call->send, a->sbuf, a->dtype, (size_t)a->count);
    }
    if (coll_gpu_args_is_root(a)) {
        coll_gpu_buf_init(&call->recv, a->rbuf, a->dtype, (size_t)a->count);
        call->recv_in = (MPI_IN_PLACE == a->sbuf);
        call->recv_out = true;
        call->recv_holes = coll_gpu_has_holes(a->dtype, a->count);
    }
    call->elementwise = true;
    return false;
}

static const coll_gpu_ops_t coll_gpu_reduce_ops = {
    .on_device = coll_gpu_args_on_device_root_recv,
    .stage = coll_gpu_reduce_stage,
};

COLL_GPU_DEFINE_ENTRIES(reduce, REDUCE, REDUCE, &coll_gpu_reduce_ops, coll_gpu_reduce_native,
                        coll_gpu_reduce_native)
