/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allreduce and MPI_Iallreduce on device buffers: the native algorithms (one-shot,
 * two-shot inside a node, ring on any communicator) for blocking calls when the kernels define
 * the reduction; the staged path for everything else.  With coll_gpu_host_buffers, blocking
 * calls on host buffers run the same algorithms in host memory (the CPU reduction); those
 * that cannot go to Open MPI as before.
 */
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_dispatch.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_signature.h"

#include <stdio.h>

/* auto inside a node: one_shot up to coll_gpu_allreduce_one_shot_max_bytes, two_shot above. */
static bool coll_gpu_allreduce_small(const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    size_t max = mca_coll_gpu_component.allreduce_one_shot_max_bytes;

    COLL_GPU_WHY(why, why_len, "%zu bytes %s coll_gpu_allreduce_one_shot_max_bytes=%zu",
                 query->bytes, (query->bytes <= max) ? "<=" : ">", max);
    return query->bytes <= max;
}

/* auto stages blocking device calls up to coll_gpu_allreduce_staged_max_bytes inside a node
 * and coll_gpu_allreduce_staged_nodes_max_bytes across nodes: where the cost model has two
 * copies and Open MPI's host allreduce faster than the launches, synchronizations and signal
 * rounds of the row auto would run (docs/cost-model-crossovers.md). */
COLL_GPU_ALG_STAGED_RULE(coll_gpu_allreduce_staged, allreduce);

/* hierarchical_doubling: from coll_gpu_allreduce_doubling_min_nodes nodes on up to
 * coll_gpu_allreduce_doubling_max_bytes (its rounds are O(log nodes) where hierarchical's owners
 * each exchange with every node; it moves the whole message each round, so only small ones). */
static const coll_gpu_alg_size_rule_t coll_gpu_allreduce_doubling_rule = {
    .param = "allreduce_doubling",
    .bytes_what = "",
    .per_rank = false,
    .min_nodes = &mca_coll_gpu_component.allreduce_doubling_min_nodes,
    .max_bytes = &mca_coll_gpu_component.allreduce_doubling_max_bytes};

/* the ring: large messages when every node has one rank (its 2 (nnodes - 1) steps are latency
 * a small message pays), or where hierarchical's layout does not fit. */
static bool coll_gpu_allreduce_one_per_node(const coll_gpu_alg_query_t *query, char *why,
                                            size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;
    size_t min = mca_coll_gpu_component.allreduce_ring_min_bytes;

    if (team->nnodes != team->size) {
        return false;
    }
    if (!coll_gpu_allreduce_hierarchical_fits(query->native, query->esize)) {
        COLL_GPU_WHY(why, why_len, "%d nodes, one rank each; hierarchical does not fit the scratch",
                     team->nnodes);
        return true;
    }
    COLL_GPU_WHY(why, why_len,
                 "%d nodes, one rank each; %zu bytes %s "
                 "coll_gpu_allreduce_ring_min_bytes=%zu",
                 team->nnodes, query->bytes, (query->bytes >= min) ? ">=" : "<", min);
    return query->bytes >= min;
}

/* hierarchical_rabenseifner: from coll_gpu_allreduce_rabenseifner_min_nodes nodes on. */
static bool coll_gpu_allreduce_many_nodes(const coll_gpu_alg_query_t *query, char *why,
                                          size_t why_len) {
    COLL_GPU_WHY(why, why_len, "%d nodes >= coll_gpu_allreduce_rabenseifner_min_nodes=%d",
                 query->native->team->nnodes,
                 mca_coll_gpu_component.allreduce_rabenseifner_min_nodes);
    return query->native->team->nnodes >= mca_coll_gpu_component.allreduce_rabenseifner_min_nodes;
}

static bool coll_gpu_allreduce_small_across_nodes(const coll_gpu_alg_query_t *query, char *why,
                                                  size_t why_len) {
    return coll_gpu_alg_size_rule_why(&coll_gpu_allreduce_doubling_rule, query, why, why_len);
}

/* hierarchical: any call across nodes (auto's last resort there). */
static bool coll_gpu_allreduce_across_nodes(const coll_gpu_alg_query_t *query, char *why,
                                            size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;

    if (team->nnodes == team->size) {
        COLL_GPU_WHY(why, why_len,
                     "%d nodes, one rank each; %zu bytes < "
                     "coll_gpu_allreduce_ring_min_bytes=%zu",
                     team->nnodes, query->bytes, mca_coll_gpu_component.allreduce_ring_min_bytes);
    } else {
        COLL_GPU_WHY(why, why_len, "%d nodes, some with several ranks", team->nnodes);
    }
    return true;
}

static bool coll_gpu_allreduce_hierarchical_fits_call(const coll_gpu_alg_query_t *query, char *why,
                                                      size_t why_len) {
    return coll_gpu_alg_hierarchical_fits(query, coll_gpu_allreduce_hierarchical_fits, why,
                                          why_len);
}

static bool coll_gpu_allreduce_rabenseifner_fits_call(const coll_gpu_alg_query_t *query, char *why,
                                                      size_t why_len) {
    return coll_gpu_alg_hierarchical_fits(query, coll_gpu_allreduce_hierarchical_rabenseifner_fits,
                                          why, why_len);
}

/* MPI_Allreduce's algorithms (their parameter values in this order; auto's order: the table's
 * auto_order). */
static const coll_gpu_alg_desc_t coll_gpu_allreduce_alg_rows[] = {
    {.name = "one_shot",
     .help = "every rank reads every input",
     .cost_model = "one_shot",
     .preferred = coll_gpu_allreduce_small,
     .run = coll_gpu_allreduce_one_shot},
    {.name = "two_shot",
     .help = "reduce-scatter then allgather",
     .cost_model = "two_shot",
     .preferred = coll_gpu_alg_always, /* after one_shot, which said why */
     .run = coll_gpu_allreduce_two_shot},
    {.name = "ring",
     .help = "pipelined ring between neighbours, on any communicator",
     .cost_model = "ring",
     .multi_node = true,
     .preferred = coll_gpu_allreduce_one_per_node,
     .run = coll_gpu_allreduce_ring},
    {.name = "hierarchical",
     .help = "reduce-scatter inside each node, the shards' allreduce between nodes, allgather "
             "inside each node",
     .cost_model = "hierarchical",
     .multi_node = true,
     .fits = coll_gpu_allreduce_hierarchical_fits_call,
     .preferred = coll_gpu_allreduce_across_nodes,
     .run = coll_gpu_allreduce_hierarchical},
    {.name = "recursive_doubling",
     .help = "log2(ranks) rounds with one partner each, for small messages, on any "
             "communicator; only when forced or named by a tuning rule",
     .cost_model = "recursive_doubling",
     .multi_node = true,
     .run = coll_gpu_allreduce_recursive_doubling},
    {.name = "hierarchical_doubling",
     .help = "each node's inputs reduced by its leader, recursive doubling between the node "
             "leaders (log2(nodes) rounds of one message each way), the result handed to the "
             "node: small messages across nodes",
     .cost_model = "hierarchical_doubling",
     .multi_node = true,
     .preferred = coll_gpu_allreduce_small_across_nodes,
     .run = coll_gpu_allreduce_hierarchical_doubling},
    {.name = "hierarchical_rabenseifner",
     .help = "reduce-scatter inside each node, Rabenseifner's allreduce of the shards between "
             "nodes (recursive halving and doubling: 2 log2(nodes) rounds of one partner, "
             "bandwidth-optimal), allgather inside each node: large messages across many "
             "nodes",
     .cost_model = "hierarchical_rabenseifner",
     .multi_node = true,
     .fits = coll_gpu_allreduce_rabenseifner_fits_call,
     .preferred = coll_gpu_allreduce_many_nodes,
     .run = coll_gpu_allreduce_hierarchical_rabenseifner},
    {.name = "device_one_shot",
     .cost_model = "device_one_shot",
     .help = "one_shot as one kernel per call (device-driven: the host launches and waits once, "
             "flags and call counters in device memory), inside a node, up to 256 KiB; only when "
             "forced or named by a tuning rule until a GPU run has measured it",
     .fits = coll_gpu_allreduce_device_one_shot_fits,
     .run = coll_gpu_kernel_run,
     .node_kind = ACCEL_NODE_ALLREDUCE_ONE_SHOT},
    {.name = "device_two_shot",
     .cost_model = "device_two_shot",
     .help = "two_shot as one kernel per call (device-driven: the host launches and waits once; "
             "reduce-scatter then allgather in steps of 1 MiB inside the kernel), inside a node, "
             "any size; only when forced or named by a tuning rule until a GPU run has measured "
             "it",
     .fits = coll_gpu_device_rows_fit,
     .run = coll_gpu_kernel_run,
     .node_kind = ACCEL_NODE_ALLREDUCE_TWO_SHOT},
    {.name = "device_hierarchical",
     .cost_model = "device_hierarchical",
     .help = "across nodes of as many ranks each, one kernel per call and rank: device_two_shot "
             "inside the node, each rank's part exchanged with the other nodes' ranks of its "
             "index by a proxy (the communicator's thread) between the kernel's two folds; only "
             "when forced or named by a tuning rule until a GPU run has measured it",
     .multi_node = true,
     .fits = coll_gpu_allreduce_device_hierarchical_fits,
     .run = coll_gpu_kernel_run,
     .node_kind = ACCEL_NODE_ALLREDUCE_HIERARCHICAL},
};

const coll_gpu_alg_table_t coll_gpu_allreduce_algs = {
    .name = "allreduce",
    .mpi_call = "MPI_Allreduce",
    .auto_help =
        "device buffers staged up to allreduce_staged_max_bytes inside a node and "
        "allreduce_staged_nodes_max_bytes across nodes; "
        "inside a node one_shot up to allreduce_one_shot_max_bytes and two_shot above; "
        "across nodes hierarchical_doubling up to allreduce_doubling_max_bytes from "
        "allreduce_doubling_min_nodes nodes on, else hierarchical_rabenseifner from "
        "allreduce_rabenseifner_min_nodes nodes on, else the ring from allreduce_ring_min_bytes "
        "on where nodes have one rank each, else hierarchical",
    .note = "one_shot, two_shot, device_one_shot and device_two_shot give the same bits, ring, "
            "hierarchical, device_hierarchical, "
            "recursive_doubling, "
            "hierarchical_doubling and hierarchical_rabenseifner other bits (another order "
            "each), independent of the chunk size",
    .uniform_count = true,
    .num_algs = sizeof(coll_gpu_allreduce_alg_rows) / sizeof(coll_gpu_allreduce_alg_rows[0]),
    .algs = coll_gpu_allreduce_alg_rows,
    /* one_shot and two_shot run on one node only (not multi_node), the rest across nodes:
     * two_shot and hierarchical take every call they are asked */
    .auto_order = COLL_GPU_ALG_ORDER("one_shot", "two_shot", "hierarchical_doubling",
                                     "hierarchical_rabenseifner", "ring", "hierarchical"),
    .staged = &coll_gpu_allreduce_staged,
};

/* coll_gpu_native_try_fn_t of MPI_Allreduce.  A call with host memory on some ranks and device
 * memory on others is erroneous here, unless coll_gpu_check_memory_kinds makes the ranks agree
 * on them (kinds_mixed). */
static bool coll_gpu_allreduce_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                      bool kinds_mixed, int *rc_p) {
    bool in_place = (MPI_IN_PLACE == a->sbuf);
    const void *bufs[2] = {a->rbuf, a->sbuf};
    coll_gpu_native_call_t call;

    /* a device call's buffers of host memory (one of the two: else the call passed through) go
     * through device temporaries */
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLREDUCE, kind, a->count,
                                  a->dtype, a->op, bufs,
                                  in_place ? 1 : coll_gpu_sig_bufs_checked(kind, 2), kinds_mixed,
                                  NULL != a->request, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        /* temporaries only where a device call may have host buffers (host-buffer mode's calls,
         * every buffer of host memory, have none) */
        bool temps = !in_place && (COLL_GPU_NATIVE_DEVICE == call.kind);
        coll_gpu_sig_buf_t send, recv;

        call.sbuf = in_place ? a->rbuf : a->sbuf;
        call.rbuf = a->rbuf;
        if (temps) {
            send = (coll_gpu_sig_buf_t){0};
            recv = (coll_gpu_sig_buf_t){0};
            call.sbuf =
                coll_gpu_sig_buf_reduction(&call, &send, a->sbuf, a->dtype, a->count, false);
            call.rbuf = coll_gpu_sig_buf_reduction(&call, &recv, a->rbuf, a->dtype, a->count, true);
        }
        call.count = (size_t)a->count;
        *rc_p = coll_gpu_native_launch(a, &call, temps ? &send : NULL, temps ? &recv : NULL,
                                       call.count * call.esize);
    }
    return true;
}

/* The staged path of every element-wise reduction (allreduce, scan, exscan, reduce_local):
 * the receive buffer is written whole, read too in place (reduce_local: always). */
bool coll_gpu_reduction_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                              int *rc_p) {
    (void)single_call;
    (void)rc_p;
    coll_gpu_buf_init(&call->send, a->sbuf, a->dtype, (size_t)a->count);
    coll_gpu_buf_init(&call->recv, a->rbuf, a->dtype, (size_t)a->count);
    call->recv_in = (MPI_IN_PLACE == a->sbuf) || (COLL_GPU_REDUCE_LOCAL == a->coll);
    call->recv_out = true;
    call->recv_holes = coll_gpu_has_holes(a->dtype, a->count);
    call->elementwise = true;
    return false;
}

static const coll_gpu_ops_t coll_gpu_allreduce_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_reduction_stage,
};

COLL_GPU_DEFINE_ENTRIES(allreduce, ALLREDUCE, REDUCTION, &coll_gpu_allreduce_ops,
                        coll_gpu_allreduce_native, coll_gpu_allreduce_native)
