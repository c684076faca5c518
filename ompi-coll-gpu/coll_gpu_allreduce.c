/*
 * MPI_Allreduce and MPI_Iallreduce on device buffers: the native algorithms (one-shot,
 * two-shot) for blocking calls on a one-node communicator when the kernels define the
 * reduction; the staged path for everything else.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_staged.h"

#include "ompi/datatype/ompi_datatype.h"

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

/*
 * Runs a blocking device-buffer call natively if it can; false when it must be staged.  The
 * decision depends only on what every rank shares (count, datatype, op, communicator,
 * parameters), the memory kinds excepted: MPI makes a call with host memory on some ranks and
 * device memory on others erroneous here, unless coll_gpu_check_memory_kinds makes the ranks
 * agree on them.
 */
static bool coll_gpu_allreduce_native(coll_gpu_allreduce_args_t *a, const void *sbuf, void *rbuf,
                                      int count, bool kinds_mixed, int *rc_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    coll_gpu_allreduce_native_args_t args;
    coll_gpu_fallback_t reason;
    coll_gpu_native_t *native;
    coll_gpu_alg_t alg = COLL_GPU_ALG_STAGED;
    accel_status_t status;
    char why[256] = "";
    int ok;

    if (!c->native) {
        reason = COLL_GPU_FALLBACK_DISABLED;
        goto fallback;
    }
    if (COLL_GPU_ALG_STAGED == c->allreduce_algorithm) {
        reason = COLL_GPU_FALLBACK_ALGORITHM;
        snprintf(why, sizeof(why), ": coll_gpu_allreduce_algorithm=staged");
        goto fallback;
    }
    if ((count <= 0) || !coll_gpu_reduce_op_lookup(a->dtype, a->op, &args.dtype, &args.op)) {
        reason = COLL_GPU_FALLBACK_DATATYPE_OP;
        goto fallback;
    }
    args.esize = accel_dtype_size(args.dtype);
    {
        ptrdiff_t lb, extent;
        (void)ompi_datatype_get_extent(a->dtype, &lb, &extent);
        if ((0 != lb) || ((size_t)extent != args.esize)) {
            reason = COLL_GPU_FALLBACK_DATATYPE_OP;
            goto fallback;
        }
    }
    if (kinds_mixed) {
        /* the ranks agreed on it already, and the host ones have gone to Open MPI */
        reason = COLL_GPU_FALLBACK_MEMORY;
        goto fallback;
    }
    ok = (MPI_IN_PLACE == sbuf || coll_gpu_on_device(sbuf)) && coll_gpu_on_device(rbuf);
    if (c->check_memory_kinds) {
        /* not only "some device memory on every rank" (the staged path's agreement): all of
         * it, everywhere */
        if (OMPI_SUCCESS !=
            COLL_GPU_PREV(a->module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, a->comm)) {
            ok = 0;
        }
    }
    if (!ok) {
        reason = COLL_GPU_FALLBACK_MEMORY;
        goto fallback;
    }
    if (!coll_gpu_native_get(a->module, a->comm, &native, &reason)) {
        goto fallback;
    }
    alg =
        coll_gpu_allreduce_choose(native->team->size, native->team->local_size,
                                  (size_t)count * args.esize, &args.chunk_bytes, why, sizeof(why));
    if (COLL_GPU_ALG_STAGED == alg) {
        reason = COLL_GPU_FALLBACK_ALGORITHM;
        goto fallback;
    }
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "MPI_Allreduce on %s: %d x %s %s: %s (%s)",
                     a->comm->c_name, count, accel_dtype_string(args.dtype),
                     accel_op_string(args.op), coll_gpu_alg_names[alg], why);
    status = coll_gpu_module_stream(a->module, &args.stream);
    if (OPAL_UNLIKELY(ACCEL_OK != status)) {
        *rc_p = coll_gpu_accel_failed(status, "MPI_Allreduce", a->comm);
        return true;
    }
    args.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    args.rbuf = rbuf;
    args.count = (size_t)count;
    args.mpi_call = "MPI_Allreduce";
    COLL_GPU_COUNT(calls_native, ALLREDUCE);
    ++c->allreduce_algorithm_calls[alg];
    *rc_p = (COLL_GPU_ALG_ONE_SHOT == alg)
                ? coll_gpu_allreduce_one_shot(a->module, a->comm, native, &args)
                : coll_gpu_allreduce_two_shot(a->module, a->comm, native, &args);
    return true;

fallback:
    ++c->native_fallbacks[reason];
    ++c->allreduce_algorithm_calls[COLL_GPU_ALG_STAGED];
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "MPI_Allreduce on %s: %d elements: staged (%s%s)",
                     a->comm->c_name, count, coll_gpu_fallback_names[reason], why);
    return false;
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_allreduce_dispatch(coll_gpu_allreduce_args_t *args, coll_gpu_coll_t coll,
                                       const char *mpi_call, const void *sbuf, void *rbuf,
                                       int count, ompi_request_t **request) {
    coll_gpu_call_t call;
    bool single_call = true;
    int rc;

    if (coll_gpu_classified_pass_through(args->module, args->comm, coll,
                                         coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf),
                                         request, &single_call)) {
        return coll_gpu_allreduce_host(sbuf, rbuf, count, args, request);
    }
    if ((NULL == request) && coll_gpu_allreduce_native(args, sbuf, rbuf, count, single_call, &rc)) {
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
        COLL_GPU_COUNT(calls_passthrough, ALLREDUCE);
        return COLL_GPU_PREV(module, allreduce, sbuf, rbuf, count, dtype, op, comm);
    }
    return coll_gpu_allreduce_classified(sbuf, rbuf, count, dtype, op, comm, base);
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
