/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter, MPI_Reduce_scatter_block and their nonblocking forms
 * on device buffers.  In place, the receive buffer holds every rank's input
 * (the whole vector) on entry.
 */
#include "coll_gpu_dispatch.h"

#include <limits.h>

/* auto: direct on one node and where every node has one rank (each owner fetches one input per
 * other node either way), hierarchical where a node has several ranks. */
static bool coll_gpu_reduce_scatter_direct_preferred(const coll_gpu_alg_query_t *query, char *why,
                                                     size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;

    if (1 == team->nnodes) {
        COLL_GPU_WHY(why, why_len, "one node");
        return true;
    }
    if (team->nnodes == team->size) {
        COLL_GPU_WHY(why, why_len, "%d nodes, one rank each", team->nnodes);
        return true;
    }
    if (!coll_gpu_reduce_scatter_hierarchical_fits(query->native, query->esize)) {
        COLL_GPU_WHY(why, why_len, "%d nodes; hierarchical does not fit the scratch", team->nnodes);
        return true;
    }
    return false;
}

static bool coll_gpu_reduce_scatter_across_nodes(const coll_gpu_alg_query_t *query, char *why,
                                                 size_t why_len) {
    COLL_GPU_WHY(why, why_len, "%d nodes, some with several ranks", query->native->team->nnodes);
    return true;
}

static bool coll_gpu_reduce_scatter_hierarchical_fits_call(const coll_gpu_alg_query_t *query,
                                                           char *why, size_t why_len) {
    if (coll_gpu_reduce_scatter_hierarchical_fits(query->native, query->esize)) {
        return true;
    }
    COLL_GPU_WHY(why, why_len, ": the scratch half (%zu bytes) cannot hold hierarchical's layout",
                 query->native->half);
    return false;
}

/* The algorithms of MPI_Reduce_scatter_block and MPI_Reduce_scatter (coll_gpu_native.h); auto
 * asks them in this order. */
#define COLL_GPU_REDUCE_SCATTER_ROWS(direct_fn, hierarchical_fn)                                   \
    {{.name = "direct",                                                                            \
      .help = "every rank reduces its block from every peer's scratch in rank order: allreduce's " \
              "bits on one node",                                                                  \
      .multi_node = true,                                                                          \
      .preferred = coll_gpu_reduce_scatter_direct_preferred,                                       \
      .run = direct_fn},                                                                           \
     {.name = "hierarchical",                                                                      \
      .help = "each node reduces its partial of every other node's block, the block's owner "      \
              "fetches one partial per node: hierarchical allreduce's bits",                       \
      .multi_node = true,                                                                          \
      .fits = coll_gpu_reduce_scatter_hierarchical_fits_call,                                      \
      .preferred = coll_gpu_reduce_scatter_across_nodes,                                           \
      .run = hierarchical_fn}}

static const coll_gpu_alg_desc_t coll_gpu_reduce_scatter_block_alg_rows[] =
    COLL_GPU_REDUCE_SCATTER_ROWS(coll_gpu_reduce_scatter_block_direct,
                                 coll_gpu_reduce_scatter_block_hierarchical);
static const coll_gpu_alg_desc_t coll_gpu_reduce_scatter_alg_rows[] =
    COLL_GPU_REDUCE_SCATTER_ROWS(coll_gpu_reduce_scatter_direct,
                                 coll_gpu_reduce_scatter_hierarchical);

#define COLL_GPU_REDUCE_SCATTER_AUTO_HELP                                                          \
    "direct on one node and across nodes of one rank each, hierarchical across nodes where a node " \
    "has several ranks"

const coll_gpu_alg_table_t coll_gpu_reduce_scatter_block_algs = {
    .name = "reduce_scatter_block",
    .mpi_call = "MPI_Reduce_scatter_block",
    .auto_help = COLL_GPU_REDUCE_SCATTER_AUTO_HELP,
    .per_rank_blocks = true,
    .uniform_count = true,
    .num_algs = 2,
    .algs = coll_gpu_reduce_scatter_block_alg_rows,
};
const coll_gpu_alg_table_t coll_gpu_reduce_scatter_algs = {
    .name = "reduce_scatter",
    .mpi_call = "MPI_Reduce_scatter",
    .auto_help = COLL_GPU_REDUCE_SCATTER_AUTO_HELP,
    .per_rank_blocks = true,
    .num_algs = 2,
    .algs = coll_gpu_reduce_scatter_alg_rows,
};

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
        coll_gpu_count_native(a->coll, (size_t)a->rcount * call.esize);
        call.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.count = (size_t)a->rcount;
        *rc_p = coll_gpu_native_launch(a, &call, NULL, NULL);
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

    /* (a nonblocking call never compares: coll_gpu_check_counts stages it) */
    if (OPAL_UNLIKELY(NULL == a->request) &&
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

        coll_gpu_native_block_arrays(&call, NULL != a->request, &counts, &displs);
        (void)displs;
        for (int b = 0; b < size; ++b) {
            counts[b] = (size_t)a->rcounts[b];
        }
        coll_gpu_count_native(a->coll, counts[rank] * call.esize);
        call.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.counts = counts;
        *rc_p = coll_gpu_native_launch(a, &call, NULL, NULL);
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
