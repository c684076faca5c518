/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter, MPI_Reduce_scatter_block and their nonblocking forms
 * on device buffers.  In place, the receive buffer holds every rank's input
 * (the whole vector) on entry.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_staged.h"

#include <limits.h>

/* Its native algorithms (coll_gpu_native.h). */
COLL_GPU_ALG_TABLE_ONE(
    coll_gpu_reduce_scatter_block_algs, "reduce_scatter_block", "MPI_Reduce_scatter_block",
    "direct",
    "every rank reduces its block from every peer's scratch in rank order: allreduce's bits",
    coll_gpu_reduce_scatter_block_direct, true, true);
COLL_GPU_ALG_TABLE_ONE(
    coll_gpu_reduce_scatter_algs, "reduce_scatter", "MPI_Reduce_scatter", "direct",
    "every rank reduces its block from every peer's scratch in rank order: allreduce's bits",
    coll_gpu_reduce_scatter_direct, true, false);

typedef struct {
    mca_coll_gpu_module_t *module;
    int rcount;         /* reduce_scatter_block */
    const int *rcounts; /* reduce_scatter */
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    struct ompi_communicator_t *comm;
} coll_gpu_reduce_scatter_args_t;

static int coll_gpu_reduce_scatter_host(const void *sbuf, void *rbuf, int count, void *args,
                                        ompi_request_t **request) {
    coll_gpu_reduce_scatter_args_t *a = args;

    (void)count;
    if (NULL != a->rcounts) {
        return (NULL == request) ? COLL_GPU_PREV(a->module, reduce_scatter, sbuf, rbuf, a->rcounts,
                                                 a->dtype, a->op, a->comm)
                                 : COLL_GPU_PREV(a->module, ireduce_scatter, sbuf, rbuf, a->rcounts,
                                                 a->dtype, a->op, a->comm, request);
    }
    return (NULL == request) ? COLL_GPU_PREV(a->module, reduce_scatter_block, sbuf, rbuf, a->rcount,
                                             a->dtype, a->op, a->comm)
                             : COLL_GPU_PREV(a->module, ireduce_scatter_block, sbuf, rbuf,
                                             a->rcount, a->dtype, a->op, a->comm, request);
}

/* A blocking MPI_Reduce_scatter_block natively in kind's memory; false when it must be staged
 * (device) or handed to Open MPI (host). */
static bool coll_gpu_reduce_scatter_block_native(coll_gpu_reduce_scatter_args_t *a,
                                                 coll_gpu_native_kind_t kind, const void *sbuf,
                                                 void *rbuf, bool kinds_mixed, int *rc_p) {
    const void *bufs[2] = {rbuf, sbuf};
    coll_gpu_native_call_t call;

    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_REDUCE_SCATTER_BLOCK, kind,
                                  a->rcount, a->dtype, a->op, bufs, (MPI_IN_PLACE == sbuf) ? 1 : 2,
                                  kinds_mixed, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        COLL_GPU_COUNT_NATIVE(REDUCE_SCATTER_BLOCK, (size_t)a->rcount * call.esize);
        call.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.count = (size_t)a->rcount;
        *rc_p = coll_gpu_native_run(a->comm, &call);
    }
    return true;
}

/* The same for MPI_Reduce_scatter.  Every rank knows every block's count: eligibility and the
 * tuning rules see the largest block. */
static bool coll_gpu_reduce_scatter_native(coll_gpu_reduce_scatter_args_t *a,
                                           coll_gpu_native_kind_t kind, const void *sbuf,
                                           void *rbuf, bool kinds_mixed, int *rc_p) {
    const void *bufs[2] = {rbuf, sbuf};
    int size = ompi_comm_size(a->comm), rank = ompi_comm_rank(a->comm), largest = 0;
    coll_gpu_native_call_t call;

    if (OPAL_UNLIKELY(coll_gpu_native_check_blocks(a->module, a->comm,
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
                                  (MPI_IN_PLACE == sbuf) ? 1 : 2, kinds_mixed, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        size_t *counts = call.native->counts;

        for (int b = 0; b < size; ++b) {
            counts[b] = (size_t)a->rcounts[b];
        }
        COLL_GPU_COUNT_NATIVE(REDUCE_SCATTER, counts[rank] * call.esize);
        call.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.counts = counts;
        *rc_p = coll_gpu_native_run(a->comm, &call);
    }
    return true;
}

/* coll_gpu_native_try_fn_t: the blocking form a describes. */
static bool coll_gpu_reduce_scatter_try_native(void *args, coll_gpu_native_kind_t kind,
                                               const void *sbuf, void *rbuf, int unused_count,
                                               bool kinds_mixed, int *rc_p) {
    coll_gpu_reduce_scatter_args_t *a = args;

    (void)unused_count;
    return (NULL != a->rcounts)
               ? coll_gpu_reduce_scatter_native(a, kind, sbuf, rbuf, kinds_mixed, rc_p)
               : coll_gpu_reduce_scatter_block_native(a, kind, sbuf, rbuf, kinds_mixed, rc_p);
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_reduce_scatter_dispatch(coll_gpu_reduce_scatter_args_t *a, coll_gpu_coll_t coll,
                                            const char *mpi_call, const void *sbuf, void *rbuf,
                                            ompi_request_t **request) {
    int size = ompi_comm_size(a->comm), rank = ompi_comm_rank(a->comm);
    size_t total = 0, mine;
    bool on_device = coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf);
    bool block = (COLL_GPU_REDUCE_SCATTER_BLOCK == coll);
    bool native = block || (COLL_GPU_REDUCE_SCATTER == coll);
    coll_gpu_call_t call;
    bool single_call = true;
    int rc;

    if (native && !on_device && mca_coll_gpu_component.host_buffers) {
        return coll_gpu_native_host_buffers(a->module, a->comm, coll,
                                            coll_gpu_reduce_scatter_try_native,
                                            coll_gpu_reduce_scatter_host, a, sbuf, rbuf, 0);
    }
    if (coll_gpu_classified_pass_through(a->module, a->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_reduce_scatter_host(sbuf, rbuf, 0, a, request);
    }
    if (native && coll_gpu_reduce_scatter_try_native(a, COLL_GPU_NATIVE_DEVICE, sbuf, rbuf, 0,
                                                     single_call, &rc)) {
        return rc;
    }

    if (NULL != a->rcounts) {
        for (int i = 0; i < size; ++i) {
            total += (size_t)a->rcounts[i];
        }
        mine = (size_t)a->rcounts[rank];
    } else {
        total = (size_t)a->rcount * (size_t)size;
        mine = (size_t)a->rcount;
    }
    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_reduce_scatter_host, a);
    coll_gpu_buf_init(&call.send, sbuf, a->dtype, total);
    call.recv_in = (MPI_IN_PLACE == sbuf);
    coll_gpu_buf_init(&call.recv, rbuf, a->dtype, call.recv_in ? total : mine);
    call.recv_out = true;
    call.recv_holes = coll_gpu_has_holes(a->dtype, (size_t)mine);
    return coll_gpu_staged_run(a->module, a->comm, &call, request, single_call);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_reduce_scatter_classified(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_scatter_args_t args = {
        .module = module,
        .rcounts = rcounts,
        .dtype = dtype,
        .op = op,
        .comm = comm,
    };
    return coll_gpu_reduce_scatter_dispatch(&args, COLL_GPU_REDUCE_SCATTER, "MPI_Reduce_scatter",
                                            sbuf, rbuf, NULL);
}

int mca_coll_gpu_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_reduce_scatter_host_only(sbuf, rbuf, rcounts, dtype, op, comm,
                                                         base);
        }
        COLL_GPU_COUNT(calls_passthrough, REDUCE_SCATTER);
        return COLL_GPU_PREV(module, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    }
    return coll_gpu_reduce_scatter_classified(sbuf, rbuf, rcounts, dtype, op, comm, base);
}

int mca_coll_gpu_reduce_scatter_host_only(const void *sbuf, void *rbuf, const int *rcounts,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          mca_coll_base_module_t *base) {
    coll_gpu_reduce_scatter_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .rcounts = rcounts,
        .dtype = dtype,
        .op = op,
        .comm = comm,
    };

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_REDUCE_SCATTER,
                                        coll_gpu_reduce_scatter_try_native,
                                        coll_gpu_reduce_scatter_host, &args, sbuf, rbuf, 0);
}

static COLL_GPU_SLOW_PATH int coll_gpu_reduce_scatter_block_classified(
    const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
    struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_scatter_args_t args = {
        .module = module,
        .rcount = rcount,
        .dtype = dtype,
        .op = op,
        .comm = comm,
    };
    return coll_gpu_reduce_scatter_dispatch(&args, COLL_GPU_REDUCE_SCATTER_BLOCK,
                                            "MPI_Reduce_scatter_block", sbuf, rbuf, NULL);
}

int mca_coll_gpu_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_reduce_scatter_block_host_only(sbuf, rbuf, rcount, dtype, op, comm,
                                                               base);
        }
        COLL_GPU_COUNT(calls_passthrough, REDUCE_SCATTER_BLOCK);
        return COLL_GPU_PREV(module, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
    }
    return coll_gpu_reduce_scatter_block_classified(sbuf, rbuf, rcount, dtype, op, comm, base);
}

int mca_coll_gpu_reduce_scatter_block_host_only(const void *sbuf, void *rbuf, int rcount,
                                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                                struct ompi_communicator_t *comm,
                                                mca_coll_base_module_t *base) {
    coll_gpu_reduce_scatter_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .rcount = rcount,
        .dtype = dtype,
        .op = op,
        .comm = comm,
    };

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_REDUCE_SCATTER_BLOCK,
                                        coll_gpu_reduce_scatter_try_native,
                                        coll_gpu_reduce_scatter_host, &args, sbuf, rbuf, 0);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_ireduce_scatter_classified(const void *sbuf, void *rbuf, const int *rcounts,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_scatter_args_t args = {
        .module = module,
        .rcounts = rcounts,
        .dtype = dtype,
        .op = op,
        .comm = comm,
    };

    return coll_gpu_reduce_scatter_dispatch(&args, COLL_GPU_IREDUCE_SCATTER, "MPI_Ireduce_scatter",
                                            sbuf, rbuf, request);
}

int mca_coll_gpu_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, ompi_request_t **request,
                                 mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IREDUCE_SCATTER);
        return COLL_GPU_PREV(module, ireduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm,
                             request);
    }
    return coll_gpu_ireduce_scatter_classified(sbuf, rbuf, rcounts, dtype, op, comm, request, base);
}

static COLL_GPU_SLOW_PATH int coll_gpu_ireduce_scatter_block_classified(
    const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
    struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_scatter_args_t args = {
        .module = module,
        .rcount = rcount,
        .dtype = dtype,
        .op = op,
        .comm = comm,
    };

    return coll_gpu_reduce_scatter_dispatch(&args, COLL_GPU_IREDUCE_SCATTER_BLOCK,
                                            "MPI_Ireduce_scatter_block", sbuf, rbuf, request);
}

int mca_coll_gpu_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm, ompi_request_t **request,
                                       mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IREDUCE_SCATTER_BLOCK);
        return COLL_GPU_PREV(module, ireduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm,
                             request);
    }
    return coll_gpu_ireduce_scatter_block_classified(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                     base);
}
