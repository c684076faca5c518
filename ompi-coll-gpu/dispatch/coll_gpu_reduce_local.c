/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_local on device buffers (Open MPI routes it through
 * MPI_COMM_SELF's coll module): the accelerator's reduction kernel when both
 * buffers are device memory and the kernels define the (datatype, op) pair;
 * staged through host memory otherwise (user ops, long double, a host operand).
 */
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_staged.h"

typedef struct {
    mca_coll_gpu_module_t *module;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
} coll_gpu_reduce_local_args_t;

static int coll_gpu_reduce_local_host(const void *sbuf, void *rbuf, int count, void *args,
                                      ompi_request_t **request) {
    coll_gpu_reduce_local_args_t *a = args;

    (void)request;
    return a->module->prev.coll_reduce_local(sbuf, rbuf, count, a->dtype, a->op,
                                             a->module->prev.coll_reduce_local_module);
}

/* inoutbuf = inoutbuf op inbuf on the module's stream (inoutbuf is the left operand, as in
 * Open MPI's host ops: that decides which NaN MAX returns), then wait for it. */
static int coll_gpu_reduce_local_native(mca_coll_gpu_module_t *module, const void *inbuf,
                                        void *inoutbuf, int count, accel_dtype_t dtype,
                                        accel_op_t op) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    const void *srcs[2] = {inoutbuf, inbuf};
    accel_stream_h stream;
    accel_status_t status;

    COLL_GPU_COUNT_NATIVE(REDUCE_LOCAL, (size_t)count * accel_dtype_size(dtype));
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "MPI_Reduce_local: %d x %s %s by the %s kernels",
                     count, accel_dtype_string(dtype), accel_op_string(op), accel->name);
    status = coll_gpu_module_stream(module, &stream);
    if (ACCEL_OK == status) {
        status = accel->reduce(inoutbuf, srcs, 2, (size_t)count, dtype, op, stream);
    }
    if (ACCEL_OK == status) {
        status = accel->stream_synchronize(stream);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != status)) {
        return coll_gpu_accel_failed(status, "MPI_Reduce_local", &ompi_mpi_comm_self.comm);
    }
    return OMPI_SUCCESS;
}

static COLL_GPU_SLOW_PATH int coll_gpu_reduce_local_classified(const void *inbuf, void *inoutbuf,
                                                               int count,
                                                               struct ompi_datatype_t *dtype,
                                                               struct ompi_op_t *op,
                                                               mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_local_args_t args = {.module = module, .dtype = dtype, .op = op};
    coll_gpu_call_t call;

    bool in_on_device = coll_gpu_on_device(inbuf), inout_on_device = coll_gpu_on_device(inoutbuf);
    accel_dtype_t accel_dtype;
    accel_op_t accel_op;

    /* Local: no other rank to agree with on memory kinds. */
    if (coll_gpu_ipass_through(COLL_GPU_REDUCE_LOCAL, in_on_device || inout_on_device)) {
        return module->prev.coll_reduce_local(inbuf, inoutbuf, count, dtype, op,
                                              module->prev.coll_reduce_local_module);
    }
    if (in_on_device && inout_on_device && mca_coll_gpu_component.native &&
        coll_gpu_reduce_op_lookup(dtype, op, &accel_dtype, &accel_op)) {
        return coll_gpu_reduce_local_native(module, inbuf, inoutbuf, count, accel_dtype, accel_op);
    }
    coll_gpu_call_init(&call, COLL_GPU_REDUCE_LOCAL, "MPI_Reduce_local", coll_gpu_reduce_local_host,
                       &args);
    coll_gpu_buf_init(&call.send, inbuf, dtype, (size_t)count);
    coll_gpu_buf_init(&call.recv, inoutbuf, dtype, (size_t)count);
    call.recv_in = true;
    call.recv_out = true;
    call.elementwise = true;
    call.count = count;
    call.dtype = dtype;
    return coll_gpu_staged_call(module, &ompi_mpi_comm_self.comm, &call, false);
}

int mca_coll_gpu_reduce_local(const void *inbuf, void *inoutbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(inbuf) && coll_gpu_certainly_host(inoutbuf))) {
        COLL_GPU_COUNT(calls_passthrough, REDUCE_LOCAL);
        return module->prev.coll_reduce_local(inbuf, inoutbuf, count, dtype, op,
                                              module->prev.coll_reduce_local_module);
    }
    return coll_gpu_reduce_local_classified(inbuf, inoutbuf, count, dtype, op, base);
}
