/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce and MPI_Ireduce on device buffers.  The receive buffer matters
 * at the root only: elsewhere it is neither classified nor touched.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_staged.h"

/* Its native algorithms (coll_gpu_native.h). */
COLL_GPU_ALG_TABLE_ONE(coll_gpu_reduce_algs, "reduce", "MPI_Reduce", "direct",
                       "the root reduces every rank's input in rank order: allreduce's bits",
                       coll_gpu_reduce_direct, true, true);

typedef struct {
    mca_coll_gpu_module_t *module;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    int root;
    struct ompi_communicator_t *comm;
} coll_gpu_reduce_args_t;

static int coll_gpu_reduce_host(const void *sbuf, void *rbuf, int count, void *args,
                                ompi_request_t **request) {
    coll_gpu_reduce_args_t *a = args;

    if (NULL == request) {
        return COLL_GPU_PREV(a->module, reduce, sbuf, rbuf, count, a->dtype, a->op, a->root,
                             a->comm);
    }
    return COLL_GPU_PREV(a->module, ireduce, sbuf, rbuf, count, a->dtype, a->op, a->root, a->comm,
                         request);
}

static bool coll_gpu_reduce_on_device(const void *sbuf, const void *rbuf, int root,
                                      struct ompi_communicator_t *comm) {
    return coll_gpu_on_device(sbuf) || (ompi_comm_rank(comm) == root && coll_gpu_on_device(rbuf));
}

/* A blocking MPI_Reduce natively in kind's memory; false when it must be staged (device) or
 * handed to Open MPI (host).  The buffers looked at are those MPI says are significant: the
 * send buffer (not at an in-place root), the receive buffer at the root. */
static bool coll_gpu_reduce_native(void *args, coll_gpu_native_kind_t kind, const void *sbuf,
                                   void *rbuf, int count, bool kinds_mixed, int *rc_p) {
    coll_gpu_reduce_args_t *a = args;
    bool is_root = (ompi_comm_rank(a->comm) == a->root),
         in_place = is_root && (MPI_IN_PLACE == sbuf);
    const void *bufs[2];
    coll_gpu_native_call_t call;
    int nbufs = 0;

    if (!in_place) {
        bufs[nbufs++] = sbuf;
    }
    if (is_root) {
        bufs[nbufs++] = rbuf;
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_REDUCE, kind, count, a->dtype,
                                  a->op, bufs, nbufs, kinds_mixed, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        COLL_GPU_COUNT_NATIVE(REDUCE, (size_t)count * call.esize);
        call.sbuf = in_place ? rbuf : sbuf;
        call.rbuf = rbuf;
        call.count = (size_t)count;
        call.root = a->root;
        *rc_p = coll_gpu_native_run(a->comm, &call);
    }
    return true;
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_reduce_dispatch(coll_gpu_reduce_args_t *args, coll_gpu_coll_t coll,
                                    const char *mpi_call, const void *sbuf, void *rbuf, int count,
                                    ompi_request_t **request) {
    bool on_device = coll_gpu_reduce_on_device(sbuf, rbuf, args->root, args->comm);
    coll_gpu_call_t call;
    bool single_call = true;
    int rc;

    if ((NULL == request) && !on_device && mca_coll_gpu_component.host_buffers) {
        return coll_gpu_native_host_buffers(args->module, args->comm, COLL_GPU_REDUCE,
                                            coll_gpu_reduce_native, coll_gpu_reduce_host, args,
                                            sbuf, rbuf, count);
    }
    if (coll_gpu_classified_pass_through(args->module, args->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_reduce_host(sbuf, rbuf, count, args, request);
    }
    if ((NULL == request) &&
        coll_gpu_reduce_native(args, COLL_GPU_NATIVE_DEVICE, sbuf, rbuf, count, single_call, &rc)) {
        return rc;
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_reduce_host, args);
    coll_gpu_buf_init(&call.send, sbuf, args->dtype, (size_t)count);
    if (ompi_comm_rank(args->comm) == args->root) {
        coll_gpu_buf_init(&call.recv, rbuf, args->dtype, (size_t)count);
        call.recv_in = (MPI_IN_PLACE == sbuf);
        call.recv_out = true;
        call.recv_holes = coll_gpu_has_holes(args->dtype, count);
    }
    call.elementwise = true;
    call.count = count;
    call.dtype = args->dtype;
    return coll_gpu_staged_run(args->module, args->comm, &call, request, single_call);
}

static COLL_GPU_SLOW_PATH int coll_gpu_reduce_classified(const void *sbuf, void *rbuf, int count,
                                                         struct ompi_datatype_t *dtype,
                                                         struct ompi_op_t *op, int root,
                                                         struct ompi_communicator_t *comm,
                                                         mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_args_t args = {
        .module = module, .dtype = dtype, .op = op, .root = root, .comm = comm};
    return coll_gpu_reduce_dispatch(&args, COLL_GPU_REDUCE, "MPI_Reduce", sbuf, rbuf, count, NULL);
}

int mca_coll_gpu_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_reduce_host_only(sbuf, rbuf, count, dtype, op, root, comm, base);
        }
        COLL_GPU_COUNT(calls_passthrough, REDUCE);
        return COLL_GPU_PREV(module, reduce, sbuf, rbuf, count, dtype, op, root, comm);
    }
    return coll_gpu_reduce_classified(sbuf, rbuf, count, dtype, op, root, comm, base);
}

int mca_coll_gpu_reduce_host_only(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    coll_gpu_reduce_args_t args = {.module = (mca_coll_gpu_module_t *)base,
                                   .dtype = dtype,
                                   .op = op,
                                   .root = root,
                                   .comm = comm};

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_REDUCE, coll_gpu_reduce_native,
                                        coll_gpu_reduce_host, &args, sbuf, rbuf, count);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_ireduce_classified(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_args_t args = {
        .module = module, .dtype = dtype, .op = op, .root = root, .comm = comm};

    return coll_gpu_reduce_dispatch(&args, COLL_GPU_IREDUCE, "MPI_Ireduce", sbuf, rbuf, count,
                                    request);
}

int mca_coll_gpu_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IREDUCE);
        return COLL_GPU_PREV(module, ireduce, sbuf, rbuf, count, dtype, op, root, comm, request);
    }
    return coll_gpu_ireduce_classified(sbuf, rbuf, count, dtype, op, root, comm, request, base);
}
