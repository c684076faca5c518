/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Bcast and MPI_Ibcast on device buffers: the root's buffer is an input,
 * every other rank's an output.
 */
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_signature.h"

#include "ompi/datatype/ompi_datatype.h"

/* Its native algorithms (coll_gpu_algorithms.h); auto's order: the table's. */
#define COLL_GPU_BCAST_PIPELINED_HELP                                                              \
    "the root's scratch, double buffered, read by every rank; across nodes, where a node other "   \
    "than the root's has several ranks, two-level: one leader per node gets each chunk from the "  \
    "root, its node loads it from the leader; on 3 nodes or more above 64 KiB a chain of the "     \
    "leaders from node to node"
#define COLL_GPU_BCAST_BINOMIAL_HELP                                                               \
    "a binomial tree of the node leaders from the root (ceil(log2(nodes)) gets deep, chunks "      \
    "pipelined down it without a barrier), each leader's node loads from it: for calls across "    \
    "many nodes"

/* Any scratch half carries binomial's chunks. */
static bool coll_gpu_bcast_binomial_fits(const coll_gpu_native_t *native, size_t esize) {
    (void)native;
    (void)esize;
    return true;
}

/* binomial: from coll_gpu_bcast_binomial_min_nodes nodes on, for messages of at most
 * coll_gpu_bcast_binomial_max_bytes (beyond, the root's interface, which sends every chunk to
 * each of its ceil(log2 nodes) children, bounds it). */
COLL_GPU_ALG_BINOMIAL_RULE(coll_gpu_bcast, "bcast_binomial", "", false,
                           mca_coll_gpu_component.bcast_binomial, coll_gpu_bcast_binomial_fits,
                           "chunks")

/* pipelined: any call (auto's last resort).  Its reason, for the log: what kept binomial off. */
static bool coll_gpu_bcast_pipelined_preferred(const coll_gpu_alg_query_t *query, char *why,
                                               size_t why_len) {
    char band[256];

    if (1 == query->native->team->nnodes) {
        COLL_GPU_WHY(why, why_len, "one node");
    } else {
        /* the band it missed (binomial's, or the model's without rails), as binomial says it */
        (void)coll_gpu_alg_size_rule_why(&coll_gpu_bcast_binomial_rule, query, band, sizeof(band));
        COLL_GPU_WHY(why, why_len, "not binomial's band: %s", band);
    }
    return true;
}

static const coll_gpu_alg_desc_t coll_gpu_bcast_alg_rows[] = {
    {.name = "pipelined",
     .help = COLL_GPU_BCAST_PIPELINED_HELP,
     .cost_model = "bcast_pipelined",
     .multi_node = true,
     .preferred = coll_gpu_bcast_pipelined_preferred,
     .run = coll_gpu_bcast_pipelined},
    COLL_GPU_ALG_BINOMIAL_ROW(coll_gpu_bcast, COLL_GPU_BCAST_BINOMIAL_HELP, "bcast_binomial",
                              coll_gpu_bcast_binomial),
    COLL_GPU_ALG_DEVICE_ROW(ACCEL_NODE_BCAST, coll_gpu_device_rows_fit),
};
/* auto stages small blocking calls on device buffers where the cost model has the staged path
 * faster (coll_gpu_bcast_staged_max_bytes, _staged_nodes_max_bytes) */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_bcast_staged, bcast);
COLL_GPU_ALG_TABLE(
    coll_gpu_bcast_algs, coll_gpu_bcast_alg, "bcast", "MPI_Bcast", false, true,
    COLL_GPU_ALG_STAGED_AUTO_HELP(
        "bcast") "pipelined; binomial from bcast_binomial_min_nodes nodes on for calls from "
                 "bcast_binomial_min_bytes up to bcast_binomial_max_bytes",
    COLL_GPU_ALG_ORDER("binomial", "pipelined"), .staged = &coll_gpu_bcast_staged);

/*
 * A blocking staged MPI_Bcast large enough to be pipelined: cut into chunks of the type
 * signature's bytes, the same on every rank whatever datatype each passes (a cut in elements of
 * one rank's datatype would pair different chunks of different ranks).  A dense layout is
 * pipelined in place; any other is packed into host memory first (unpacked after), and runs the
 * same chunks without the device copies.  call comes set up for the previous module's bcast.
 */
static int coll_gpu_bcast_staged_bytes(coll_gpu_args_t *a, coll_gpu_call_t *call, size_t bytes) {
    bool is_root = (ompi_comm_rank(a->comm) == a->root);
    coll_gpu_args_t in_bytes = *a;
    ptrdiff_t true_lb, true_extent, lb, extent;
    char *packed = NULL, *region = NULL;
    void *buf = a->rbuf;
    int count = a->count, rc, staged_rc;

    in_bytes.dtype = MPI_BYTE; /* the previous module's bcast of the chunks */
    ompi_datatype_get_true_extent(a->dtype, &true_lb, &true_extent);
    call->args = &in_bytes;
    call->elementwise = true;
    call->count = (int)bytes;
    call->dtype = MPI_BYTE;
    call->recv_in = is_root;
    call->recv_out = !is_root;
    if (coll_gpu_signature_dense(a->dtype)) {
        coll_gpu_buf_init(&call->recv, (char *)buf + true_lb, MPI_BYTE, bytes);
        return coll_gpu_staged_call(a->module, a->comm, call, false);
    }
    /* not dense: the whole region through host memory, packed; the holes keep their bytes */
    coll_gpu_region(a->dtype, (size_t)count, &lb, &extent);
    region = malloc((size_t)(extent - lb) + 1);
    packed = malloc(bytes);
    if ((NULL == region) || (NULL == packed)) {
        coll_gpu_out_of_host_memory(bytes + (size_t)(extent - lb)); /* the peers wait for it */
    }
    rc = OMPI_SUCCESS;
    if (ACCEL_OK !=
        mca_coll_gpu_component.accel->memcpy(region, (char *)buf + lb, (size_t)(extent - lb))) {
        rc = coll_gpu_accel_failed(ACCEL_ERR_DEVICE, "MPI_Bcast", a->comm);
    } else if (is_root) {
        rc = ompi_datatype_sndrcv(region - lb, count, a->dtype, packed, (int)bytes, MPI_BYTE);
    }
    coll_gpu_buf_init(&call->recv, packed, MPI_BYTE, bytes); /* host memory: no copies */
    call->recv.on_device = false;
    /* run whatever happened above: the peers wait for these chunks */
    staged_rc = coll_gpu_staged_call(a->module, a->comm, call, false);
    rc = (OMPI_SUCCESS != rc) ? rc : staged_rc;
    if ((OMPI_SUCCESS == rc) && !is_root) {
        rc = ompi_datatype_sndrcv(packed, (int)bytes, MPI_BYTE, region - lb, count, a->dtype);
        if ((OMPI_SUCCESS == rc) &&
            (ACCEL_OK != mca_coll_gpu_component.accel->memcpy((char *)buf + lb, region,
                                                              (size_t)(extent - lb)))) {
            rc = coll_gpu_accel_failed(ACCEL_ERR_DEVICE, "MPI_Bcast", a->comm);
        }
    }
    free(region);
    free(packed);
    return rc;
}

/* coll_gpu_native_try_fn_t of MPI_Bcast. */
static bool coll_gpu_bcast_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind, bool kinds_mixed,
                                  int *rc_p) {
    const void *bufs[1] = {a->rbuf};
    coll_gpu_native_call_t call;

    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_BCAST, kind, a->count,
                                  a->dtype, NULL, bufs, 1, kinds_mixed, NULL != a->request, &call,
                                  rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        bool is_root = (ompi_comm_rank(a->comm) == a->root);
        coll_gpu_sig_buf_t bytes;

        coll_gpu_sig_buf_init(&call, &bytes, a->rbuf, a->dtype, 1, a->count, NULL, NULL, NULL, NULL,
                              is_root);
        if (!is_root) {
            coll_gpu_sig_buf_receive(&call, &bytes);
        }
        call.rbuf = bytes.data;
        call.count = bytes.bytes;
        call.root = a->root;
        *rc_p = coll_gpu_native_launch(a, &call, NULL, &bytes, bytes.bytes);
    }
    return true;
}

/* The buffer is an input at the root, an output elsewhere.  A blocking call large enough,
 * staged by every rank (coll_gpu_board_all_stage), is pipelined in bytes
 * (coll_gpu_bcast_staged_bytes); anything else is one host collective with the user's datatype. */
static bool coll_gpu_bcast_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                                 int *rc_p) {
    bool is_root = coll_gpu_args_is_root(a);
    size_t bytes = coll_gpu_signature_bytes(a->count, a->dtype);

    if ((NULL == a->request) && !single_call && coll_gpu_pipeline_bytes_applies(bytes) &&
        coll_gpu_board_all_stage(a->module, a->comm)) {
        *rc_p = coll_gpu_board_close(a->module, a->comm, "MPI_Bcast",
                                     coll_gpu_bcast_staged_bytes(a, call, bytes));
        return true;
    }
    if (is_root || coll_gpu_args_not_root_side(a)) { /* (not an intercommunicator's PROC_NULL) */
        coll_gpu_buf_init(&call->recv, a->rbuf, a->dtype, (size_t)a->count);
        call->recv_in = is_root;
        call->recv_out = !is_root;
        call->recv_holes = coll_gpu_has_holes(a->dtype, a->count);
    }
    return false;
}

static const coll_gpu_ops_t coll_gpu_bcast_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_bcast_stage,
};

COLL_GPU_DEFINE_ENTRIES(bcast, BCAST, BCAST, &coll_gpu_bcast_ops, coll_gpu_bcast_native,
                        coll_gpu_bcast_native)
