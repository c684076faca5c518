/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather, MPI_Allgatherv and their nonblocking forms on device buffers.
 */
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_signature.h"

#include <limits.h>
#include <stdint.h>

/* Their native algorithms (coll_gpu_algorithms.h); auto's order: the tables'. */
#define COLL_GPU_ALLGATHER_DIRECT_HELP "every rank copies every block from its owner's scratch"
#define COLL_GPU_ALLGATHER_HIER_HELP                                                               \
    "one rank of each node fetches each block of another node, the node's ranks copy it from "     \
    "there: every block crosses to each node once"
#define COLL_GPU_ALLGATHER_DOUBLING_HELP                                                           \
    "each node's blocks to its leader, recursive doubling between the leaders (log2(nodes) "       \
    "rounds of one message), the leader's result to its node: for small calls across many nodes"

/* hierarchical_doubling: an element of every rank in a scratch half */
static bool coll_gpu_allgather_doubling_fits_query(const coll_gpu_alg_query_t *query, char *why,
                                                   size_t why_len) {
    if (coll_gpu_allgather_doubling_fits(query->native, query->esize)) {
        return true;
    }
    COLL_GPU_WHY(why, why_len,
                 ": the scratch half (%zu bytes) cannot hold an element of each of "
                 "%d ranks",
                 query->native->half, query->native->team->size);
    return false;
}

/* hierarchical_doubling: from coll_gpu_allgather_doubling_min_nodes nodes on, for calls
 * gathering at most coll_gpu_allgather_doubling_max_bytes (the largest block x the ranks: its
 * step holds a chunk of every rank, so larger calls take more steps than hierarchical's). */
static const coll_gpu_alg_size_rule_t coll_gpu_allgather_doubling_rule = {
    .param = "allgather_doubling",
    .bytes_what = " gathered",
    .per_rank = true,
    .min_nodes = &mca_coll_gpu_component.allgather_doubling_min_nodes,
    .max_bytes = &mca_coll_gpu_component.allgather_doubling_max_bytes};

static bool coll_gpu_allgather_doubling_preferred(const coll_gpu_alg_query_t *query, char *why,
                                                  size_t why_len) {
    return coll_gpu_alg_size_rule_why(&coll_gpu_allgather_doubling_rule, query, why, why_len) &&
           coll_gpu_allgather_doubling_fits(query->native, query->esize);
}

/* The rows of MPI_Allgather (form allgather) and MPI_Allgatherv (allgatherv): the same
 * algorithms, each form's functions. */
#define COLL_GPU_ALLGATHER_ROWS(form)                                                              \
    COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL(                                                         \
        coll_gpu_##form##_alg, COLL_GPU_ALLGATHER_DIRECT_HELP, coll_gpu_##form##_direct,           \
        COLL_GPU_ALLGATHER_HIER_HELP, coll_gpu_##form##_hierarchical,                              \
        coll_gpu_allgather_hierarchical_fits, SIZE_MAX, NULL,                                      \
        {.name = "hierarchical_doubling",                                                          \
         .help = COLL_GPU_ALLGATHER_DOUBLING_HELP,                                                 \
         .multi_node = true,                                                                       \
         .fits = coll_gpu_allgather_doubling_fits_query,                                           \
         .preferred = coll_gpu_allgather_doubling_preferred,                                       \
         .run = coll_gpu_##form##_hierarchical_doubling},                                          \
        COLL_GPU_ALG_DEVICE_ROW(ACCEL_NODE_ALLGATHER, device_fits))
#define device_fits coll_gpu_device_rows_fit
COLL_GPU_ALLGATHER_ROWS(allgather);
#undef device_fits
#define device_fits coll_gpu_device_rows_never
COLL_GPU_ALLGATHER_ROWS(allgatherv);
#undef device_fits

/* auto stages small blocking calls on device buffers where the cost model has the staged path
 * faster (coll_gpu_allgather_staged_max_bytes, _staged_nodes_max_bytes); the v-form by its
 * largest block, which every rank knows */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_allgather_staged, allgather);
/* auto's rule, for ompi_info */
#define COLL_GPU_ALLGATHER_AUTO_HELP                                                               \
    COLL_GPU_ALG_STAGED_AUTO_HELP("allgather")                                                     \
    COLL_GPU_ALG_DIRECT_HIERARCHICAL_AUTO_HELP "; hierarchical_doubling from "                     \
                                               "allgather_doubling_min_nodes nodes on for calls "  \
                                               "gathering up to allgather_doubling_max_bytes"
COLL_GPU_ALG_TABLE(coll_gpu_allgather_algs, coll_gpu_allgather_alg, "allgather", "MPI_Allgather",
                   false, true, COLL_GPU_ALLGATHER_AUTO_HELP,
                   COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER("hierarchical_doubling"),
                   .staged = &coll_gpu_allgather_staged);
COLL_GPU_ALG_TABLE(coll_gpu_allgatherv_algs, coll_gpu_allgatherv_alg, "allgatherv",
                   "MPI_Allgatherv", false, false, COLL_GPU_ALLGATHER_AUTO_HELP,
                   COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER("hierarchical_doubling"),
                   .staged = &coll_gpu_allgather_staged);

/* coll_gpu_native_try_fn_t of MPI_Allgather: a block per rank received, one sent. */
static bool coll_gpu_allgather_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                      bool kinds_mixed, int *rc_p) {
    return coll_gpu_args_native_blocks(a, COLL_GPU_NCOLL_ALLGATHER, 1, kind, kinds_mixed, rc_p);
}

/* The same for MPI_Allgatherv.  Every rank knows every block's signature bytes (each passes its
 * own receive type, the counts that go with it): eligibility and the tuning rules see the
 * largest block. */
static bool coll_gpu_allgatherv_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                       bool kinds_mixed, int *rc_p) {
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const void *bufs[2] = {rbuf, sbuf};
    size_t total = 0;
    int size = ompi_comm_size(a->comm), rank = ompi_comm_rank(a->comm), largest = 0;
    bool in_place = (MPI_IN_PLACE == sbuf);
    coll_gpu_native_call_t call;

    /* (a nonblocking call never compares: coll_gpu_check_counts stages it); a blocking one
     * compares only where every rank runs it natively: its word on the board first */
    if ((NULL == a->request) &&
        coll_gpu_native_arrive(a->module, a->comm, kind, bufs,
                               coll_gpu_sig_bufs_checked(kind, in_place ? 1 : 2)) &&
        OPAL_UNLIKELY(coll_gpu_native_check_blocks(a->module, a->comm, COLL_GPU_NCOLL_ALLGATHERV,
                                                   a->rcounts, a->rdtype, NULL, NULL, NULL,
                                                   rc_p))) {
        return true; /* the call failed: no fallback */
    }
    (void)rank;
    for (int p = 0; p < size; ++p) {
        largest = (a->rcounts[p] > largest) ? a->rcounts[p] : largest;
        if (a->rcounts[p] < 0) {
            largest = INT_MIN; /* erroneous: Open MPI's collective reports it */
        }
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLGATHERV, kind,
                                  (largest > 0) ? largest : 0, a->rdtype, NULL, bufs,
                                  coll_gpu_sig_bufs_checked(kind, in_place ? 1 : 2), kinds_mixed,
                                  NULL != a->request, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_sig_buf_t send = {0}, recv;
        size_t *counts, *displs;

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, 1, a->scount, NULL, NULL, NULL,
                                  NULL, true);
        }
        /* in place, this rank's own block is read from the receive buffer */
        coll_gpu_native_block_arrays(&call, NULL != a->request, &counts, &displs, NULL, NULL);
        coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, size, 0, a->rcounts, a->rdispls,
                              counts, displs, in_place);
        total = recv.bytes;
        coll_gpu_sig_buf_receive(&call, &recv);
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = recv.data;
        call.counts = recv.counts;
        call.displs = recv.displs;
        *rc_p = coll_gpu_native_launch(a, &call, &send, &recv, total);
    }
    return true;
}

static bool coll_gpu_allgather_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                                     int *rc_p) {
    int size = coll_gpu_args_blocks(a);

    (void)single_call;
    (void)rc_p;
    coll_gpu_buf_init(&call->send, a->sbuf, a->sdtype, (size_t)a->scount);
    coll_gpu_args_stage_recv_blocks(a, call, size, NULL != a->rcounts /* allgatherv */);
    return false;
}

static const coll_gpu_ops_t coll_gpu_allgather_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_allgather_stage,
};

COLL_GPU_DEFINE_ENTRIES(allgather, ALLGATHER, BLOCKS, &coll_gpu_allgather_ops,
                        coll_gpu_allgather_native, coll_gpu_allgather_native)
COLL_GPU_DEFINE_ENTRIES(allgatherv, ALLGATHERV, GATHERV_ALL, &coll_gpu_allgather_ops,
                        coll_gpu_allgatherv_native, coll_gpu_allgatherv_native)
