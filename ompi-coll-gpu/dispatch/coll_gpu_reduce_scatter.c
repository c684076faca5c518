/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter, MPI_Reduce_scatter_block and their nonblocking forms
 * on device buffers.  In place, the receive buffer holds every rank's input
 * (the whole vector) on entry.
 */
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_eligible.h"

#include <limits.h>
#include <stdint.h>

/* Their native algorithms (coll_gpu_algorithms.h); auto's order: the tables'. */
#define COLL_GPU_RS_DIRECT_HELP                                                                    \
    "every rank reduces its block from every peer's scratch in rank order: allreduce's bits on "   \
    "one node"
#define COLL_GPU_RS_HIER_HELP                                                                      \
    "each node reduces its partial of every other node's block, the block's owner fetches one "    \
    "partial per node: hierarchical allreduce's bits"
#define COLL_GPU_RS_HALVING_HELP                                                                   \
    "each node's partial to its leader, recursive halving between the leaders (log2(nodes) "       \
    "rounds of one message), the result from the leader: for small calls across many nodes"

/* hierarchical_halving: two elements of every rank in a scratch half */
static bool coll_gpu_rs_halving_fits_query(const coll_gpu_alg_query_t *query, char *why,
                                           size_t why_len) {
    if (coll_gpu_reduce_scatter_halving_fits(query->native, query->esize)) {
        return true;
    }
    COLL_GPU_WHY(why, why_len,
                 ": the scratch half (%zu bytes) cannot hold two elements of each of %d ranks",
                 query->native->half, query->native->team->size);
    return false;
}

/* hierarchical_halving: from coll_gpu_reduce_scatter_halving_min_nodes nodes on, for calls
 * of at most coll_gpu_reduce_scatter_halving_max_bytes (the largest block x the ranks: its step
 * holds a chunk of every rank, so larger calls take more steps than hierarchical's). */
static const coll_gpu_alg_size_rule_t coll_gpu_rs_halving_rule = {
    .param = "reduce_scatter_halving",
    .bytes_what = " (largest block x ranks)",
    .per_rank = true,
    .min_nodes = &mca_coll_gpu_component.reduce_scatter_halving_min_nodes,
    .max_bytes = &mca_coll_gpu_component.reduce_scatter_halving_max_bytes};

static bool coll_gpu_rs_halving_preferred(const coll_gpu_alg_query_t *query, char *why,
                                          size_t why_len) {
    return coll_gpu_alg_size_rule_why(&coll_gpu_rs_halving_rule, query, why, why_len) &&
           coll_gpu_reduce_scatter_halving_fits(query->native, query->esize);
}

/* The rows of MPI_Reduce_scatter_block (form reduce_scatter_block) and MPI_Reduce_scatter
 * (reduce_scatter): the same algorithms, each form's functions. */
#define COLL_GPU_RS_ROWS(form)                                                                     \
    COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL(                                                         \
        coll_gpu_##form##_alg, COLL_GPU_RS_DIRECT_HELP, coll_gpu_##form##_direct,                  \
        COLL_GPU_RS_HIER_HELP, coll_gpu_##form##_hierarchical,                                     \
        coll_gpu_reduce_scatter_hierarchical_fits, SIZE_MAX, NULL,                                 \
        {.name = "hierarchical_halving",                                                           \
         .help = COLL_GPU_RS_HALVING_HELP,                                                         \
         .multi_node = true,                                                                       \
         .fits = coll_gpu_rs_halving_fits_query,                                                   \
         .preferred = coll_gpu_rs_halving_preferred,                                               \
         .run = coll_gpu_##form##_hierarchical_halving},                                           \
        COLL_GPU_ALG_DEVICE_ROW(ACCEL_NODE_REDUCE_SCATTER, device_fits))
#define device_fits coll_gpu_device_rows_fit
COLL_GPU_RS_ROWS(reduce_scatter_block);
#undef device_fits
#define device_fits coll_gpu_device_rows_never
COLL_GPU_RS_ROWS(reduce_scatter);
#undef device_fits

/* auto stages small blocking calls on device buffers where the cost model has the staged path
 * faster (coll_gpu_reduce_scatter_staged_max_bytes, _staged_nodes_max_bytes); the v-form by its
 * largest block, which every rank knows */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_reduce_scatter_staged, reduce_scatter);
/* auto's rule, for ompi_info */
#define COLL_GPU_RS_AUTO_HELP                                                                      \
    COLL_GPU_ALG_STAGED_AUTO_HELP("reduce_scatter")                                                \
    COLL_GPU_ALG_DIRECT_HIERARCHICAL_AUTO_HELP "; hierarchical_halving from "                      \
                                               "reduce_scatter_halving_min_nodes nodes on for "    \
                                               "calls up to reduce_scatter_halving_max_bytes"
COLL_GPU_ALG_TABLE(coll_gpu_reduce_scatter_block_algs, coll_gpu_reduce_scatter_block_alg,
                   "reduce_scatter_block", "MPI_Reduce_scatter_block", true, true,
                   COLL_GPU_RS_AUTO_HELP,
                   COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER("hierarchical_halving"),
                   .staged = &coll_gpu_reduce_scatter_staged);
COLL_GPU_ALG_TABLE(coll_gpu_reduce_scatter_algs, coll_gpu_reduce_scatter_alg, "reduce_scatter",
                   "MPI_Reduce_scatter", true, false, COLL_GPU_RS_AUTO_HELP,
                   COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER("hierarchical_halving"),
                   .staged = &coll_gpu_reduce_scatter_staged);

/* coll_gpu_native_try_fn_t of MPI_Reduce_scatter_block. */
static bool coll_gpu_reduce_scatter_block_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                                 bool kinds_mixed, int *rc_p) {
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const void *bufs[2] = {rbuf, sbuf};
    coll_gpu_native_call_t call;

    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_REDUCE_SCATTER_BLOCK, kind,
                                  a->rcount, a->dtype, a->op, bufs, (MPI_IN_PLACE == sbuf) ? 1 : 2,
                                  kinds_mixed, NULL != a->request, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        call.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.count = (size_t)a->rcount;
        *rc_p = coll_gpu_native_launch(a, &call, NULL, NULL, (size_t)a->rcount * call.esize);
    }
    return true;
}

/* The same for MPI_Reduce_scatter.  Every rank knows every block's count: eligibility and the
 * tuning rules see the largest block. */
static bool coll_gpu_reduce_scatter_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                           bool kinds_mixed, int *rc_p) {
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const void *bufs[2] = {rbuf, sbuf};
    int size = ompi_comm_size(a->comm), rank = ompi_comm_rank(a->comm), largest = 0;
    coll_gpu_native_call_t call;

    /* (a nonblocking call never compares: coll_gpu_check_counts stages it); a blocking one
     * compares only where every rank runs it natively: its word on the board first */
    if ((NULL == a->request) &&
        coll_gpu_native_arrive(a->module, a->comm, kind, bufs, (MPI_IN_PLACE == sbuf) ? 1 : 2) &&
        OPAL_UNLIKELY(coll_gpu_native_check_blocks(a->module, a->comm,
                                                   COLL_GPU_NCOLL_REDUCE_SCATTER, a->rcounts,
                                                   a->dtype, NULL, NULL, a->op, rc_p))) {
        return true; /* the call failed: no fallback */
    }
    for (int b = 0; b < size; ++b) {
        largest = (a->rcounts[b] > largest) ? a->rcounts[b] : largest;
        if (a->rcounts[b] < 0) {
            largest = INT_MIN;
        }
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_REDUCE_SCATTER, kind,
                                  (largest > 0) ? largest : 0, a->dtype, a->op, bufs,
                                  (MPI_IN_PLACE == sbuf) ? 1 : 2, kinds_mixed, NULL != a->request,
                                  &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        size_t *counts, *displs;

        coll_gpu_native_block_arrays(&call, NULL != a->request, &counts, &displs, NULL, NULL);
        (void)displs;
        for (int b = 0; b < size; ++b) {
            counts[b] = (size_t)a->rcounts[b];
        }
        call.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.counts = counts;
        *rc_p = coll_gpu_native_launch(a, &call, NULL, NULL, counts[rank] * call.esize);
    }
    return true;
}

/* In place, the receive buffer holds every rank's input (the whole vector) on entry. */
static bool coll_gpu_reduce_scatter_stage(coll_gpu_args_t *a, coll_gpu_call_t *call,
                                          bool single_call, int *rc_p) {
    int size = ompi_comm_size(a->comm), rank = ompi_comm_rank(a->comm);
    size_t total = 0, mine;

    (void)single_call;
    (void)rc_p;
    if (NULL != a->rcounts) {
        for (int i = 0; i < size; ++i) {
            total += (size_t)a->rcounts[i];
        }
        mine = (size_t)a->rcounts[rank];
    } else {
        total = (size_t)a->rcount * (size_t)size;
        mine = (size_t)a->rcount;
    }
    coll_gpu_buf_init(&call->send, a->sbuf, a->dtype, total);
    call->recv_in = (MPI_IN_PLACE == a->sbuf);
    coll_gpu_buf_init(&call->recv, a->rbuf, a->dtype, call->recv_in ? total : mine);
    call->recv_out = true;
    call->recv_holes = coll_gpu_has_holes(a->dtype, (size_t)mine);
    return false;
}

static const coll_gpu_ops_t coll_gpu_reduce_scatter_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_reduce_scatter_stage,
};

COLL_GPU_DEFINE_ENTRIES(reduce_scatter, REDUCE_SCATTER, REDUCE_SCATTER,
                        &coll_gpu_reduce_scatter_ops, coll_gpu_reduce_scatter_native,
                        coll_gpu_reduce_scatter_native)
COLL_GPU_DEFINE_ENTRIES(reduce_scatter_block, REDUCE_SCATTER_BLOCK, REDUCE_SCATTER_BLOCK,
                        &coll_gpu_reduce_scatter_ops, coll_gpu_reduce_scatter_block_native,
                        coll_gpu_reduce_scatter_block_native)
