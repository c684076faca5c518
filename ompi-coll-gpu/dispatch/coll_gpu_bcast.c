/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Bcast and MPI_Ibcast on device buffers: the root's buffer is an input,
 * every other rank's an output.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_staged.h"

#include "ompi/datatype/ompi_datatype.h"

/* Its native algorithms (coll_gpu_native.h). */
COLL_GPU_ALG_TABLE_ONE(
    coll_gpu_bcast_algs, "bcast", "MPI_Bcast", "pipelined",
    "the root's scratch, double buffered, read by every rank; across nodes, where a node other "
    "than the root's has several ranks, two-level: one leader per node gets each chunk from the "
    "root, its node loads it from the leader",
    coll_gpu_bcast_pipelined, false, true);

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

/* The host collective of a bcast cut in bytes of the type signature. */
static int coll_gpu_bcast_bytes_host(const void *sbuf, void *rbuf, int count, void *args,
                                     ompi_request_t **request) {
    coll_gpu_bcast_args_t *a = args;

    (void)sbuf;
    (void)request;
    return COLL_GPU_PREV(a->module, bcast, rbuf, count, MPI_BYTE, a->root, a->comm);
}

/*
 * A blocking staged MPI_Bcast large enough to be pipelined: cut into chunks of the type
 * signature's bytes, the same on every rank whatever datatype each passes (a cut in elements of
 * one rank's datatype would pair different chunks of different ranks).  A dense layout is
 * pipelined in place; any other is packed into host memory first (unpacked after), and runs the
 * same chunks without the device copies.
 */
static int coll_gpu_bcast_staged_bytes(coll_gpu_bcast_args_t *args, void *buf, int count,
                                       size_t bytes) {
    bool is_root = (ompi_comm_rank(args->comm) == args->root);
    ptrdiff_t true_lb, true_extent, lb, extent;
    char *packed = NULL, *region = NULL;
    coll_gpu_call_t call;
    int rc, staged_rc;

    ompi_datatype_get_true_extent(args->dtype, &true_lb, &true_extent);
    coll_gpu_call_init(&call, COLL_GPU_BCAST, "MPI_Bcast", coll_gpu_bcast_bytes_host, args);
    call.elementwise = true;
    call.count = (int)bytes;
    call.dtype = MPI_BYTE;
    call.recv_in = is_root;
    call.recv_out = !is_root;
    if (coll_gpu_signature_dense(args->dtype)) {
        coll_gpu_buf_init(&call.recv, (char *)buf + true_lb, MPI_BYTE, bytes);
        return coll_gpu_staged_call(args->module, args->comm, &call, false);
    }
    /* not dense: the whole region through host memory, packed; the holes keep their bytes */
    coll_gpu_region(args->dtype, (size_t)count, &lb, &extent);
    region = malloc((size_t)(extent - lb) + 1);
    packed = malloc(bytes);
    if ((NULL == region) || (NULL == packed)) {
        coll_gpu_out_of_host_memory(bytes + (size_t)(extent - lb)); /* the peers wait for it */
    }
    rc = OMPI_SUCCESS;
    if (ACCEL_OK !=
        mca_coll_gpu_component.accel->memcpy(region, (char *)buf + lb, (size_t)(extent - lb))) {
        rc = coll_gpu_accel_failed(ACCEL_ERR_DEVICE, "MPI_Bcast", args->comm);
    } else if (is_root) {
        rc = ompi_datatype_sndrcv(region - lb, count, args->dtype, packed, (int)bytes, MPI_BYTE);
    }
    coll_gpu_buf_init(&call.recv, packed, MPI_BYTE, bytes); /* host memory: no copies */
    call.recv.on_device = false;
    /* run whatever happened above: the peers wait for these chunks */
    staged_rc = coll_gpu_staged_call(args->module, args->comm, &call, false);
    rc = (OMPI_SUCCESS != rc) ? rc : staged_rc;
    if ((OMPI_SUCCESS == rc) && !is_root) {
        rc = ompi_datatype_sndrcv(packed, (int)bytes, MPI_BYTE, region - lb, count, args->dtype);
        if ((OMPI_SUCCESS == rc) &&
            (ACCEL_OK != mca_coll_gpu_component.accel->memcpy((char *)buf + lb, region,
                                                              (size_t)(extent - lb)))) {
            rc = coll_gpu_accel_failed(ACCEL_ERR_DEVICE, "MPI_Bcast", args->comm);
        }
    }
    free(region);
    free(packed);
    return rc;
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
        if (!is_root) {
            coll_gpu_sig_buf_receive(&call, &bytes);
        }
        COLL_GPU_COUNT_NATIVE(BCAST, bytes.bytes);
        call.rbuf = bytes.data;
        call.count = bytes.bytes;
        call.root = a->root;
        *rc_p = coll_gpu_native_run(a->comm, &call);
        coll_gpu_sig_buf_fini(&call, &bytes);
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

    if ((NULL == request) && !single_call &&
        coll_gpu_pipeline_bytes_applies(coll_gpu_signature_bytes(count, args->dtype))) {
        return coll_gpu_bcast_staged_bytes(args, buf, count,
                                           coll_gpu_signature_bytes(count, args->dtype));
    }
    /* one host collective, with the user's datatype */
    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_bcast_host, args);
    coll_gpu_buf_init(&call.recv, buf, args->dtype, (size_t)count);
    call.recv_in = is_root;
    call.recv_out = !is_root;
    call.recv_holes = coll_gpu_has_holes(args->dtype, count);
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
