/*
 * MPI_Reduce_local on device buffers: a local operation, staged like the
 * reductions (Open MPI routes it through MPI_COMM_SELF's coll module).
 */
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

static COLL_GPU_SLOW_PATH int coll_gpu_reduce_local_classified(const void *inbuf, void *inoutbuf,
                                                               int count,
                                                               struct ompi_datatype_t *dtype,
                                                               struct ompi_op_t *op,
                                                               mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_reduce_local_args_t args = {.module = module, .dtype = dtype, .op = op};
    coll_gpu_call_t call;

    /* Local: no other rank to agree with on memory kinds. */
    if (coll_gpu_ipass_through(COLL_GPU_REDUCE_LOCAL,
                               coll_gpu_on_device(inbuf) || coll_gpu_on_device(inoutbuf))) {
        return module->prev.coll_reduce_local(inbuf, inoutbuf, count, dtype, op,
                                              module->prev.coll_reduce_local_module);
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
