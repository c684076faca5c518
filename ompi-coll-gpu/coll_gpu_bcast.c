/*
 * MPI_Bcast and MPI_Ibcast on device buffers: the root's buffer is an input,
 * every other rank's an output.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_staged.h"

typedef struct {
    mca_coll_gpu_module_t *module;
    struct ompi_datatype_t *dtype;
    int root;
    struct ompi_communicator_t *comm;
} coll_gpu_bcast_args_t;

static int coll_gpu_bcast_host(const void *sbuf, void *rbuf, int count, void *args,
                               ompi_request_t **request) {
    coll_gpu_bcast_args_t *a = args;

    (void)sbuf;
    if (NULL == request) {
        return COLL_GPU_PREV(a->module, bcast, rbuf, count, a->dtype, a->root, a->comm);
    }
    return COLL_GPU_PREV(a->module, ibcast, rbuf, count, a->dtype, a->root, a->comm, request);
}

/* A blocking MPI_Bcast natively in kind's memory; false when it must be staged (device) or
 * handed to Open MPI (host). */
static bool coll_gpu_bcast_native(void *args, coll_gpu_native_kind_t kind, const void *unused_sbuf,
                                  void *buf, int count, bool kinds_mixed, int *rc_p) {
    coll_gpu_bcast_args_t *a = args;
    const void *bufs[1] = {buf};
    coll_gpu_native_call_t call;

    (void)unused_sbuf;
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_BCAST, kind, count, a->dtype,
                                  NULL, bufs, 1, kinds_mixed, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        bool is_root = (ompi_comm_rank(a->comm) == a->root);
        coll_gpu_sig_buf_t bytes;

        coll_gpu_sig_buf_init(&call, &bytes, buf, a->dtype, 1, count, NULL, NULL, NULL, NULL,
                              is_root);
        COLL_GPU_COUNT_NATIVE(BCAST, bytes.bytes);
        *rc_p = coll_gpu_bcast_pipelined(a->comm, &call, bytes.data, bytes.bytes, a->root);
        *rc_p = coll_gpu_sig_buf_fini(&call, &bytes, !is_root, *rc_p, a->comm);
    }
    return true;
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_bcast_dispatch(coll_gpu_bcast_args_t *args, coll_gpu_coll_t coll,
                                   const char *mpi_call, void *buf, int count,
                                   ompi_request_t **request) {
    bool is_root = (ompi_comm_rank(args->comm) == args->root);
    bool on_device = coll_gpu_on_device(buf);
    coll_gpu_call_t call;
    bool single_call = true;
    int rc;

    if ((NULL == request) && !on_device && mca_coll_gpu_component.host_buffers) {
        return coll_gpu_native_host_buffers(args->module, args->comm, COLL_GPU_BCAST,
                                            coll_gpu_bcast_native, coll_gpu_bcast_host, args, NULL,
                                            buf, count);
    }
    if (coll_gpu_classified_pass_through(args->module, args->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_bcast_host(NULL, buf, count, args, request);
    }
    if ((NULL == request) &&
        coll_gpu_bcast_native(args, COLL_GPU_NATIVE_DEVICE, NULL, buf, count, single_call, &rc)) {
        return rc;
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_bcast_host, args);
    coll_gpu_buf_init(&call.recv, buf, args->dtype, (size_t)count);
    call.recv_in = is_root;
    call.recv_out = !is_root;
    call.recv_holes = coll_gpu_has_holes(args->dtype, count);
    call.elementwise = true;
    call.count = count;
    call.dtype = args->dtype;
    return coll_gpu_staged_run(args->module, args->comm, &call, request, single_call);
}

static COLL_GPU_SLOW_PATH int coll_gpu_bcast_classified(void *buf, int count,
                                                        struct ompi_datatype_t *dtype, int root,
                                                        struct ompi_communicator_t *comm,
                                                        mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_bcast_args_t args = {.module = module, .dtype = dtype, .root = root, .comm = comm};
    return coll_gpu_bcast_dispatch(&args, COLL_GPU_BCAST, "MPI_Bcast", buf, count, NULL);
}

int mca_coll_gpu_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(buf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_bcast_host_only(buf, count, dtype, root, comm, base);
        }
        COLL_GPU_COUNT(calls_passthrough, BCAST);
        return COLL_GPU_PREV(module, bcast, buf, count, dtype, root, comm);
    }
    return coll_gpu_bcast_classified(buf, count, dtype, root, comm, base);
}

int mca_coll_gpu_bcast_host_only(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    coll_gpu_bcast_args_t args = {
        .module = (mca_coll_gpu_module_t *)base, .dtype = dtype, .root = root, .comm = comm};

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_BCAST, coll_gpu_bcast_native,
                                        coll_gpu_bcast_host, &args, NULL, buf, count);
}

static COLL_GPU_SLOW_PATH int coll_gpu_ibcast_classified(void *buf, int count,
                                                         struct ompi_datatype_t *dtype, int root,
                                                         struct ompi_communicator_t *comm,
                                                         ompi_request_t **request,
                                                         mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_bcast_args_t args = {.module = module, .dtype = dtype, .root = root, .comm = comm};

    return coll_gpu_bcast_dispatch(&args, COLL_GPU_IBCAST, "MPI_Ibcast", buf, count, request);
}

int mca_coll_gpu_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(buf))) {
        COLL_GPU_COUNT(calls_passthrough, IBCAST);
        return COLL_GPU_PREV(module, ibcast, buf, count, dtype, root, comm, request);
    }
    return coll_gpu_ibcast_classified(buf, count, dtype, root, comm, request, base);
}
