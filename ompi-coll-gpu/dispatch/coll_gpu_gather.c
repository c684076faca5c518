/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather, MPI_Gatherv and their nonblocking forms on device buffers.  The
 * receive buffer matters at the root only: elsewhere it is neither
 * classified nor touched.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_staged.h"

/* Its native algorithms (coll_gpu_native.h). */
COLL_GPU_ALG_TABLE_ONE(coll_gpu_gather_algs, "gather", "MPI_Gather", "direct",
                       "the root copies every block from its owner's scratch",
                       coll_gpu_gather_direct, false, true);

typedef struct {
    mca_coll_gpu_module_t *module;
    bool vector; /* the v-variant: counts and displacements may be NULL off the root */
    int scount;
    struct ompi_datatype_t *sdtype;
    int rcount;         /* gather */
    const int *rcounts; /* gatherv */
    const int *displs;
    struct ompi_datatype_t *rdtype;
    int root;
    struct ompi_communicator_t *comm;
} coll_gpu_gather_args_t;

static int coll_gpu_gather_host(const void *sbuf, void *rbuf, int count, void *args,
                                ompi_request_t **request) {
    coll_gpu_gather_args_t *a = args;

    (void)count;
    if (a->vector) {
        return (NULL == request)
                   ? COLL_GPU_PREV(a->module, gatherv, sbuf, a->scount, a->sdtype, rbuf, a->rcounts,
                                   a->displs, a->rdtype, a->root, a->comm)
                   : COLL_GPU_PREV(a->module, igatherv, sbuf, a->scount, a->sdtype, rbuf,
                                   a->rcounts, a->displs, a->rdtype, a->root, a->comm, request);
    }
    return (NULL == request) ? COLL_GPU_PREV(a->module, gather, sbuf, a->scount, a->sdtype, rbuf,
                                             a->rcount, a->rdtype, a->root, a->comm)
                             : COLL_GPU_PREV(a->module, igather, sbuf, a->scount, a->sdtype, rbuf,
                                             a->rcount, a->rdtype, a->root, a->comm, request);
}

static bool coll_gpu_gather_on_device(const void *sbuf, const void *rbuf, int root,
                                      struct ompi_communicator_t *comm) {
    return coll_gpu_on_device(sbuf) || (ompi_comm_rank(comm) == root && coll_gpu_on_device(rbuf));
}

/* A blocking MPI_Gather natively in kind's memory; false when it must be staged (device) or
 * handed to Open MPI (host).  Only the arguments MPI says are significant are looked at: the
 * send block everywhere but at an in-place root, the receive buffer at the root.  Blocks move as
 * bytes of the type signature (coll_gpu_signature.h), whatever datatype each rank passes. */
static bool coll_gpu_gather_native(void *args, coll_gpu_native_kind_t kind, const void *sbuf,
                                   void *rbuf, int unused_count, bool kinds_mixed, int *rc_p) {
    coll_gpu_gather_args_t *a = args;
    bool is_root = (ompi_comm_rank(a->comm) == a->root),
         in_place = is_root && (MPI_IN_PLACE == sbuf);
    struct ompi_datatype_t *dtype = is_root ? a->rdtype : a->sdtype;
    int count = is_root ? a->rcount : a->scount, nbufs = 0;
    const void *bufs[2];
    coll_gpu_native_call_t call;

    (void)unused_count;
    if (!in_place) {
        bufs[nbufs++] = sbuf;
    }
    if (is_root) {
        bufs[nbufs++] = rbuf;
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_GATHER, kind, count, dtype,
                                  NULL, bufs, nbufs, kinds_mixed, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        int size = ompi_comm_size(a->comm);
        coll_gpu_sig_buf_t send = {0}, recv = {0};

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, 1, a->scount, NULL, NULL, NULL,
                                  NULL, true);
        }
        if (is_root) {
            /* in place, the root's own block is read from the receive buffer */
            coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, size, a->rcount, NULL, NULL, NULL,
                                  NULL, in_place);
        }
        if (is_root) {
            coll_gpu_sig_buf_receive(&call, &recv);
        }
        COLL_GPU_COUNT_NATIVE(GATHER, recv.bytes);
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = is_root ? recv.data : rbuf;
        call.count = coll_gpu_signature_bytes(count, dtype);
        call.root = a->root;
        *rc_p = coll_gpu_native_run(a->comm, &call);
        coll_gpu_sig_buf_fini(&call, &recv);
        coll_gpu_sig_buf_fini(&call, &send);
    }
    return true;
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_gather_dispatch(coll_gpu_gather_args_t *a, coll_gpu_coll_t coll,
                                    const char *mpi_call, const void *sbuf, void *rbuf,
                                    ompi_request_t **request) {
    int size = ompi_comm_size(a->comm);
    bool on_device = coll_gpu_gather_on_device(sbuf, rbuf, a->root, a->comm);
    bool native = (COLL_GPU_GATHER == coll);
    coll_gpu_call_t call;
    bool single_call = true;
    int rc;

    if (native && !on_device && mca_coll_gpu_component.host_buffers) {
        return coll_gpu_native_host_buffers(a->module, a->comm, COLL_GPU_GATHER,
                                            coll_gpu_gather_native, coll_gpu_gather_host, a, sbuf,
                                            rbuf, 0);
    }
    if (coll_gpu_classified_pass_through(a->module, a->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_gather_host(sbuf, rbuf, 0, a, request);
    }
    if (native &&
        coll_gpu_gather_native(a, COLL_GPU_NATIVE_DEVICE, sbuf, rbuf, 0, single_call, &rc)) {
        return rc;
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_gather_host, a);
    coll_gpu_buf_init(&call.send, sbuf, a->sdtype, (size_t)a->scount);
    if (ompi_comm_rank(a->comm) == a->root) {
        if (a->vector) {
            coll_gpu_buf_init_blocks(&call.recv, rbuf, a->rdtype, a->rcounts, a->displs, size);
            call.recv_holes = true;
        } else {
            coll_gpu_buf_init(&call.recv, rbuf, a->rdtype, (size_t)a->rcount * (size_t)size);
            call.recv_holes = coll_gpu_has_holes(a->rdtype, (size_t)a->rcount * (size_t)size);
        }
        /* In place, the root's own block is already in the receive buffer. */
        call.recv_in = (MPI_IN_PLACE == sbuf);
        call.recv_out = true;
    }
    return coll_gpu_staged_run(a->module, a->comm, &call, request, single_call);
}

static COLL_GPU_SLOW_PATH int coll_gpu_gather_classified(const void *sbuf, int scount,
                                                         struct ompi_datatype_t *sdtype, void *rbuf,
                                                         int rcount, struct ompi_datatype_t *rdtype,
                                                         int root, struct ompi_communicator_t *comm,
                                                         mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_gather_args_t args = {
        .module = module,
        .scount = scount,
        .sdtype = sdtype,
        .rcount = rcount,
        .rdtype = rdtype,
        .root = root,
        .comm = comm,
    };
    return coll_gpu_gather_dispatch(&args, COLL_GPU_GATHER, "MPI_Gather", sbuf, rbuf, NULL);
}

int mca_coll_gpu_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_gather_host_only(sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                                                 comm, base);
        }
        COLL_GPU_COUNT(calls_passthrough, GATHER);
        return COLL_GPU_PREV(module, gather, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                             comm);
    }
    return coll_gpu_gather_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, base);
}

int mca_coll_gpu_gather_host_only(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    coll_gpu_gather_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .scount = scount,
        .sdtype = sdtype,
        .rcount = rcount,
        .rdtype = rdtype,
        .root = root,
        .comm = comm,
    };

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_GATHER, coll_gpu_gather_native,
                                        coll_gpu_gather_host, &args, sbuf, rbuf, 0);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_gatherv_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *displs,
                            struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_gather_args_t args = {
        .module = module,
        .vector = true,
        .scount = scount,
        .sdtype = sdtype,
        .rcounts = rcounts,
        .displs = displs,
        .rdtype = rdtype,
        .root = root,
        .comm = comm,
    };
    return coll_gpu_gather_dispatch(&args, COLL_GPU_GATHERV, "MPI_Gatherv", sbuf, rbuf, NULL);
}

int mca_coll_gpu_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                         int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, GATHERV);
        return COLL_GPU_PREV(module, gatherv, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                             root, comm);
    }
    return coll_gpu_gatherv_classified(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                       comm, base);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_igather_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_gather_args_t args = {
        .module = module,
        .scount = scount,
        .sdtype = sdtype,
        .rcount = rcount,
        .rdtype = rdtype,
        .root = root,
        .comm = comm,
    };

    return coll_gpu_gather_dispatch(&args, COLL_GPU_IGATHER, "MPI_Igather", sbuf, rbuf, request);
}

int mca_coll_gpu_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IGATHER);
        return COLL_GPU_PREV(module, igather, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                             comm, request);
    }
    return coll_gpu_igather_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                       request, base);
}

static COLL_GPU_SLOW_PATH int coll_gpu_igatherv_classified(
    const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
    const int *displs, struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
    ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_gather_args_t args = {
        .module = module,
        .vector = true,
        .scount = scount,
        .sdtype = sdtype,
        .rcounts = rcounts,
        .displs = displs,
        .rdtype = rdtype,
        .root = root,
        .comm = comm,
    };

    return coll_gpu_gather_dispatch(&args, COLL_GPU_IGATHERV, "MPI_Igatherv", sbuf, rbuf, request);
}

int mca_coll_gpu_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                          int root, struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IGATHERV);
        return COLL_GPU_PREV(module, igatherv, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                             root, comm, request);
    }
    return coll_gpu_igatherv_classified(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                        comm, request, base);
}
