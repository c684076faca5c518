/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_local on device buffers (Open MPI routes it through
 * MPI_COMM_SELF's coll module): the accelerator's reduction kernel when both
 * buffers are device memory and the kernels define the (datatype, op) pair;
 * staged through host memory otherwise (user ops, long double, a host operand).
 */
#include "coll_gpu_dispatch.h"
#include "coll_gpu_reduce_op.h"

/* inoutbuf = inoutbuf op inbuf on the module's stream (inoutbuf is the left operand, as in
 * Open MPI's host ops: that decides which NaN MAX returns), then wait for it. */
static int coll_gpu_reduce_local_native(mca_coll_gpu_module_t *module, const void *inbuf,
                                        void *inoutbuf, int count, accel_dtype_t dtype,
                                        accel_op_t op) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    const void *srcs[2] = {inoutbuf, inbuf};
    accel_stream_h stream;
    accel_status_t status;

    coll_gpu_count_native(COLL_GPU_REDUCE_LOCAL, (size_t)count * accel_dtype_size(dtype));
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

/* coll_gpu_native_try_fn_t of MPI_Reduce_local: both operands on the device, a pair the kernels
 * define. */
static bool coll_gpu_reduce_local_try_native(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                             bool kinds_mixed, int *rc_p) {
    accel_dtype_t accel_dtype;
    accel_op_t accel_op;

    (void)kinds_mixed;
    if ((COLL_GPU_NATIVE_DEVICE != kind) || !mca_coll_gpu_component.native ||
        !coll_gpu_on_device(a->sbuf) || !coll_gpu_on_device(a->rbuf) ||
        !coll_gpu_reduce_op_lookup(a->dtype, a->op, &accel_dtype, &accel_op)) {
        return false;
    }
    *rc_p =
        coll_gpu_reduce_local_native(a->module, a->sbuf, a->rbuf, a->count, accel_dtype, accel_op);
    return true;
}

static const coll_gpu_ops_t coll_gpu_reduce_local_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_reduction_stage,
    .local = true,
};

COLL_GPU_DEFINE_ENTRY(reduce_local, REDUCE_LOCAL, REDUCTION, LOCAL, &coll_gpu_reduce_local_ops,
                      coll_gpu_reduce_local_try_native, NULL)
