/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Scan, MPI_Exscan and their nonblocking forms on device buffers.
 */
#include "coll_gpu_staged.h"

typedef struct {
    mca_coll_gpu_module_t *module;
    bool exclusive;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    struct ompi_communicator_t *comm;
} coll_gpu_scan_args_t;

static int coll_gpu_scan_host(const void *sbuf, void *rbuf, int count, void *args,
                              ompi_request_t **request) {
    coll_gpu_scan_args_t *a = args;

    if (a->exclusive) {
        return (NULL == request)
                   ? COLL_GPU_PREV(a->module, exscan, sbuf, rbuf, count, a->dtype, a->op, a->comm)
                   : COLL_GPU_PREV(a->module, iexscan, sbuf, rbuf, count, a->dtype, a->op, a->comm,
                                   request);
    }
    return (NULL == request)
               ? COLL_GPU_PREV(a->module, scan, sbuf, rbuf, count, a->dtype, a->op, a->comm)
               : COLL_GPU_PREV(a->module, iscan, sbuf, rbuf, count, a->dtype, a->op, a->comm,
                               request);
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_scan_dispatch(coll_gpu_scan_args_t *args, coll_gpu_coll_t coll,
                                  const char *mpi_call, const void *sbuf, void *rbuf, int count,
                                  ompi_request_t **request) {
    coll_gpu_call_t call;
    bool single_call = true;

    if (coll_gpu_classified_pass_through(args->module, args->comm, coll,
                                         coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf),
                                         request, &single_call)) {
        return coll_gpu_scan_host(sbuf, rbuf, count, args, request);
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_scan_host, args);
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

static COLL_GPU_SLOW_PATH int coll_gpu_scan_classified(const void *sbuf, void *rbuf, int count,
                                                       struct ompi_datatype_t *dtype,
                                                       struct ompi_op_t *op,
                                                       struct ompi_communicator_t *comm,
                                                       mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_scan_args_t args = {
        .module = module, .exclusive = false, .dtype = dtype, .op = op, .comm = comm};
    return coll_gpu_scan_dispatch(&args, COLL_GPU_SCAN, "MPI_Scan", sbuf, rbuf, count, NULL);
}

int mca_coll_gpu_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, SCAN);
        return COLL_GPU_PREV(module, scan, sbuf, rbuf, count, dtype, op, comm);
    }
    return coll_gpu_scan_classified(sbuf, rbuf, count, dtype, op, comm, base);
}

static COLL_GPU_SLOW_PATH int coll_gpu_exscan_classified(const void *sbuf, void *rbuf, int count,
                                                         struct ompi_datatype_t *dtype,
                                                         struct ompi_op_t *op,
                                                         struct ompi_communicator_t *comm,
                                                         mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_scan_args_t args = {
        .module = module, .exclusive = true, .dtype = dtype, .op = op, .comm = comm};
    return coll_gpu_scan_dispatch(&args, COLL_GPU_EXSCAN, "MPI_Exscan", sbuf, rbuf, count, NULL);
}

int mca_coll_gpu_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, EXSCAN);
        return COLL_GPU_PREV(module, exscan, sbuf, rbuf, count, dtype, op, comm);
    }
    return coll_gpu_exscan_classified(sbuf, rbuf, count, dtype, op, comm, base);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_iscan_classified(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_scan_args_t args = {
        .module = module, .exclusive = false, .dtype = dtype, .op = op, .comm = comm};

    return coll_gpu_scan_dispatch(&args, COLL_GPU_ISCAN, "MPI_Iscan", sbuf, rbuf, count, request);
}

int mca_coll_gpu_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, ISCAN);
        return COLL_GPU_PREV(module, iscan, sbuf, rbuf, count, dtype, op, comm, request);
    }
    return coll_gpu_iscan_classified(sbuf, rbuf, count, dtype, op, comm, request, base);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_iexscan_classified(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_scan_args_t args = {
        .module = module, .exclusive = true, .dtype = dtype, .op = op, .comm = comm};

    return coll_gpu_scan_dispatch(&args, COLL_GPU_IEXSCAN, "MPI_Iexscan", sbuf, rbuf, count,
                                  request);
}

int mca_coll_gpu_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IEXSCAN);
        return COLL_GPU_PREV(module, iexscan, sbuf, rbuf, count, dtype, op, comm, request);
    }
    return coll_gpu_iexscan_classified(sbuf, rbuf, count, dtype, op, comm, request, base);
}
