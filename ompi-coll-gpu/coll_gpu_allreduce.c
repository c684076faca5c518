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

/* Host-accessible memory: what the CPU reduction may read (everything without an
 * accelerator). */
static inline bool coll_gpu_host_accessible(const void *buf) {
    return (NULL == mca_coll_gpu_component.accel) || !coll_gpu_on_device(buf);
}

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
    if (OPAL_UNLIKELY(c->check_counts)) {
        /* before any decision that depends on the count */
        *rc_p = coll_gpu_native_check_counts(a->module, a->comm, "MPI_Allreduce", count, a->dtype,
                                             a->op);
        if (OMPI_SUCCESS != *rc_p) {
            return true;
        }
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
    if (COLL_GPU_NATIVE_HOST == kind) {
        ok = (MPI_IN_PLACE == sbuf || coll_gpu_host_accessible(sbuf)) &&
             coll_gpu_host_accessible(rbuf);
    } else {
        ok = (MPI_IN_PLACE == sbuf || coll_gpu_on_device(sbuf)) && coll_gpu_on_device(rbuf);
    }
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
    if (!coll_gpu_native_get(a->module, a->comm, kind, &native, &reason)) {
        goto fallback;
    }
    alg = coll_gpu_allreduce_choose(native->team->size, native->team->nnodes,
                                    native->team->local_size, (size_t)count * args.esize,
                                    &args.chunk_bytes, why, sizeof(why));
    if ((native->team->nnodes > 1) &&
        ((COLL_GPU_ALG_ONE_SHOT == alg) || (COLL_GPU_ALG_TWO_SHOT == alg))) {
        /* they load every peer's scratch directly */
        reason = COLL_GPU_FALLBACK_MULTI_NODE;
        snprintf(why, sizeof(why), ": %s needs one node", coll_gpu_alg_names[alg]);
        goto fallback;
    }
    if (COLL_GPU_ALG_STAGED == alg) {
        reason = COLL_GPU_FALLBACK_ALGORITHM;
        goto fallback;
    }
    if ((COLL_GPU_ALG_HIERARCHICAL == alg) &&
        !coll_gpu_allreduce_hierarchical_fits(native, args.esize)) {
        reason = COLL_GPU_FALLBACK_TEAM;
        snprintf(why, sizeof(why),
                 ": the scratch half (%zu bytes) cannot hold hierarchical's "
                 "layout",
                 native->half);
        goto fallback;
    }
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "MPI_Allreduce on %s: %d x %s %s, %s memory: %s (%s)",
                     a->comm->c_name, count, accel_dtype_string(args.dtype),
                     accel_op_string(args.op), coll_gpu_native_mems[kind].name,
                     coll_gpu_alg_names[alg], why);
    args.kind = kind;
    args.mem = &coll_gpu_native_mems[kind];
    args.stream = NULL;
    args.entry_status = ACCEL_OK;
    if (COLL_GPU_NATIVE_DEVICE == kind) {
        /* a stream this rank alone could not create: the algorithm still runs the protocol */
        status = coll_gpu_module_stream(a->module, &args.stream);
        if (OPAL_UNLIKELY(ACCEL_OK != status)) {
            args.entry_status = status;
            args.stream = NULL;
        }
    }
    args.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    args.rbuf = rbuf;
    args.count = (size_t)count;
    args.mpi_call = "MPI_Allreduce";
    COLL_GPU_COUNT_NATIVE(ALLREDUCE, args.count * args.esize);
    coll_gpu_count_add(&c->allreduce_algorithm_calls[alg], 1);
    switch (alg) {
    case COLL_GPU_ALG_ONE_SHOT:
        *rc_p = coll_gpu_allreduce_one_shot(a->module, a->comm, native, &args);
        break;
    case COLL_GPU_ALG_TWO_SHOT:
        *rc_p = coll_gpu_allreduce_two_shot(a->module, a->comm, native, &args);
        break;
    case COLL_GPU_ALG_RING:
        *rc_p = coll_gpu_allreduce_ring(a->module, a->comm, native, &args);
        break;
    default:
        *rc_p = coll_gpu_allreduce_hierarchical(a->module, a->comm, native, &args);
        break;
    }
    return true;

fallback:
    coll_gpu_count_add(&c->native_fallbacks[reason], 1);
    if (COLL_GPU_NATIVE_DEVICE == kind) {
        coll_gpu_count_add(&c->allreduce_algorithm_calls[COLL_GPU_ALG_STAGED], 1);
    }
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "MPI_Allreduce on %s: %d elements: %s (%s%s)",
                     a->comm->c_name, count,
                     (COLL_GPU_NATIVE_DEVICE == kind) ? "staged" : "host buffers to Open MPI",
                     coll_gpu_fallback_names[reason], why);
    return false;
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
