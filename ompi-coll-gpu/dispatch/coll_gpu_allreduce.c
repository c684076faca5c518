/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allreduce and MPI_Iallreduce on device buffers: the native algorithms (one-shot,
 * two-shot inside a node, ring on any communicator) for blocking calls when the kernels define
 * the reduction; the staged path for everything else.  With coll_gpu_host_buffers, blocking
 * calls on host buffers run the same algorithms in host memory (the CPU reduction); those
 * that cannot go to Open MPI as before.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_staged.h"

#include <stdio.h>

typedef struct {
    mca_coll_gpu_module_t *module;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    struct ompi_communicator_t *comm;
} coll_gpu_allreduce_args_t;

static int coll_gpu_allreduce_host(const void *sbuf, void *rbuf, int count, void *args,
                                   ompi_request_t **request) {
    coll_gpu_allreduce_args_t *a = args;

    if (NULL == request) {
        return COLL_GPU_PREV(a->module, allreduce, sbuf, rbuf, count, a->dtype, a->op, a->comm);
    }
    return COLL_GPU_PREV(a->module, iallreduce, sbuf, rbuf, count, a->dtype, a->op, a->comm,
                         request);
}

/* auto inside a node: one_shot up to coll_gpu_allreduce_one_shot_max_bytes, two_shot above. */
static bool coll_gpu_allreduce_small(const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    size_t max = mca_coll_gpu_component.allreduce_one_shot_max_bytes;

    COLL_GPU_WHY(why, why_len, "%zu bytes %s coll_gpu_allreduce_one_shot_max_bytes=%zu",
                 query->bytes, (query->bytes <= max) ? "<=" : ">", max);
    return query->bytes <= max;
}

static bool coll_gpu_allreduce_one_node(const coll_gpu_alg_query_t *query, char *why,
                                        size_t why_len) {
    (void)query;
    (void)why;
    (void)why_len;
    return true; /* auto asks only on one node; coll_gpu_allreduce_small said why */
}

/* auto across nodes: the ring when every node has one rank, else hierarchical. */
static bool coll_gpu_allreduce_one_per_node(const coll_gpu_alg_query_t *query, char *why,
                                            size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;

    COLL_GPU_WHY(why, why_len, "%d nodes, one rank each", team->nnodes);
    return team->nnodes == team->size;
}

static bool coll_gpu_allreduce_several_per_node(const coll_gpu_alg_query_t *query, char *why,
                                                size_t why_len) {
    COLL_GPU_WHY(why, why_len, "%d nodes, some with several ranks", query->native->team->nnodes);
    return true;
}

static bool coll_gpu_allreduce_hierarchical_fits_call(const coll_gpu_alg_query_t *query, char *why,
                                                      size_t why_len) {
    if (coll_gpu_allreduce_hierarchical_fits(query->native, query->esize)) {
        return true;
    }
    COLL_GPU_WHY(why, why_len, ": the scratch half (%zu bytes) cannot hold hierarchical's layout",
                 query->native->half);
    return false;
}

/* MPI_Allreduce's algorithms; auto asks them in this order. */
static const coll_gpu_alg_desc_t coll_gpu_allreduce_alg_rows[] = {
    {.name = "one_shot",
     .help = "every rank reads every input",
     .cost_model = "one_shot",
     .preferred = coll_gpu_allreduce_small,
     .run = coll_gpu_allreduce_one_shot},
    {.name = "two_shot",
     .help = "reduce-scatter then allgather",
     .cost_model = "two_shot",
     .preferred = coll_gpu_allreduce_one_node,
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
     .preferred = coll_gpu_allreduce_several_per_node,
     .run = coll_gpu_allreduce_hierarchical},
    {.name = "recursive_doubling",
     .help = "log2(ranks) rounds with one partner each, for small messages; only when forced "
             "or named by a tuning rule",
     .cost_model = "recursive_doubling",
     .run = coll_gpu_allreduce_recursive_doubling},
};

const coll_gpu_alg_table_t coll_gpu_allreduce_algs = {
    .name = "allreduce",
    .mpi_call = "MPI_Allreduce",
    .auto_help = "inside a node one_shot up to allreduce_one_shot_max_bytes and two_shot above; "
                 "across nodes of one rank each ring, across other nodes hierarchical",
    .note = "one_shot and two_shot give the same bits, ring and hierarchical other bits "
            "(another order), independent of the chunk size",
    .uniform_count = true,
    .num_algs = sizeof(coll_gpu_allreduce_alg_rows) / sizeof(coll_gpu_allreduce_alg_rows[0]),
    .algs = coll_gpu_allreduce_alg_rows,
};

/*
 * Runs a blocking call natively if it can, in kind's memory (device buffers, or host buffers
 * under coll_gpu_host_buffers); false when it must be staged (device) or handed to Open MPI
 * (host).  The decision depends only on what every rank shares (count, datatype, op,
 * communicator, parameters), the memory kinds excepted: MPI makes a call with host memory on
 * some ranks and device memory on others erroneous here, unless coll_gpu_check_memory_kinds
 * makes the ranks agree on them.
 */
static bool coll_gpu_allreduce_native(void *call_args, coll_gpu_native_kind_t kind,
                                      const void *sbuf, void *rbuf, int count, bool kinds_mixed,
                                      int *rc_p) {
    coll_gpu_allreduce_args_t *a = call_args;
    const void *bufs[2] = {rbuf, sbuf};
    coll_gpu_native_call_t call;

    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLREDUCE, kind, count,
                                  a->dtype, a->op, bufs, (MPI_IN_PLACE == sbuf) ? 1 : 2,
                                  kinds_mixed, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        call.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.count = (size_t)count;
        COLL_GPU_COUNT_NATIVE(ALLREDUCE, call.count * call.esize);
        *rc_p = coll_gpu_native_run(a->comm, &call);
    }
    return true;
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_allreduce_dispatch(coll_gpu_allreduce_args_t *args, coll_gpu_coll_t coll,
                                       const char *mpi_call, const void *sbuf, void *rbuf,
                                       int count, ompi_request_t **request) {
    bool on_device = coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf);
    bool single_call = true;
    coll_gpu_call_t call;
    int rc;

    if ((NULL == request) && !on_device && mca_coll_gpu_component.host_buffers) {
        return coll_gpu_native_host_buffers(args->module, args->comm, COLL_GPU_ALLREDUCE,
                                            coll_gpu_allreduce_native, coll_gpu_allreduce_host,
                                            args, sbuf, rbuf, count);
    }
    if (coll_gpu_classified_pass_through(args->module, args->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_allreduce_host(sbuf, rbuf, count, args, request);
    }
    if ((NULL == request) && coll_gpu_allreduce_native(args, COLL_GPU_NATIVE_DEVICE, sbuf, rbuf,
                                                       count, single_call, &rc)) {
        return rc;
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_allreduce_host, args);
    coll_gpu_buf_init(&call.send, sbuf, args->dtype, (size_t)count);
    coll_gpu_buf_init(&call.recv, rbuf, args->dtype, (size_t)count);
    call.recv_in = (MPI_IN_PLACE == sbuf);
    call.recv_out = true;
    call.recv_holes = coll_gpu_has_holes(args->dtype, count);
    call.elementwise = true;
    call.count = count;
    call.dtype = args->dtype;
    return coll_gpu_staged_run(args->module, args->comm, &call, request, single_call);
}

static COLL_GPU_SLOW_PATH int coll_gpu_allreduce_classified(const void *sbuf, void *rbuf, int count,
                                                            struct ompi_datatype_t *dtype,
                                                            struct ompi_op_t *op,
                                                            struct ompi_communicator_t *comm,
                                                            mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_allreduce_args_t args = {.module = module, .dtype = dtype, .op = op, .comm = comm};
    return coll_gpu_allreduce_dispatch(&args, COLL_GPU_ALLREDUCE, "MPI_Allreduce", sbuf, rbuf,
                                       count, NULL);
}

int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            coll_gpu_allreduce_args_t args = {
                .module = module, .dtype = dtype, .op = op, .comm = comm};
            return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_ALLREDUCE,
                                                coll_gpu_allreduce_native, coll_gpu_allreduce_host,
                                                &args, sbuf, rbuf, count);
        }
        COLL_GPU_COUNT(calls_passthrough, ALLREDUCE);
        return COLL_GPU_PREV(module, allreduce, sbuf, rbuf, count, dtype, op, comm);
    }
    return coll_gpu_allreduce_classified(sbuf, rbuf, count, dtype, op, comm, base);
}

int mca_coll_gpu_allreduce_host_only(const void *sbuf, void *rbuf, int count,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *base) {
    coll_gpu_allreduce_args_t args = {
        .module = (mca_coll_gpu_module_t *)base, .dtype = dtype, .op = op, .comm = comm};

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_ALLREDUCE,
                                        coll_gpu_allreduce_native, coll_gpu_allreduce_host, &args,
                                        sbuf, rbuf, count);
}

static COLL_GPU_SLOW_PATH int coll_gpu_iallreduce_classified(
    const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
    struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_allreduce_args_t args = {.module = module, .dtype = dtype, .op = op, .comm = comm};

    return coll_gpu_allreduce_dispatch(&args, COLL_GPU_IALLREDUCE, "MPI_Iallreduce", sbuf, rbuf,
                                       count, request);
}

int mca_coll_gpu_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IALLREDUCE);
        return COLL_GPU_PREV(module, iallreduce, sbuf, rbuf, count, dtype, op, comm, request);
    }
    return coll_gpu_iallreduce_classified(sbuf, rbuf, count, dtype, op, comm, request, base);
}
