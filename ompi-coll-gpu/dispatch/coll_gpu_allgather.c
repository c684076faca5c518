/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgather, MPI_Allgatherv and their nonblocking forms on device buffers.
 */
#include "coll_gpu_native.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_staged.h"

#include <limits.h>

/* Its native algorithms (coll_gpu_native.h). */
COLL_GPU_ALG_TABLE_ONE(coll_gpu_allgather_algs, "allgather", "MPI_Allgather", "direct",
                       "every rank copies every block from its owner's scratch",
                       coll_gpu_allgather_direct, false, true);
COLL_GPU_ALG_TABLE_ONE(coll_gpu_allgatherv_algs, "allgatherv", "MPI_Allgatherv", "direct",
                       "every rank copies every block from its owner's scratch",
                       coll_gpu_allgatherv_direct, false, false);

typedef struct {
    mca_coll_gpu_module_t *module;
    bool vector; /* the v-variant: counts and displacements may be NULL off the root */
    int scount;
    struct ompi_datatype_t *sdtype;
    int rcount;         /* allgather */
    const int *rcounts; /* allgatherv */
    const int *displs;
    struct ompi_datatype_t *rdtype;
    struct ompi_communicator_t *comm;
} coll_gpu_allgather_args_t;

static int coll_gpu_allgather_host(const void *sbuf, void *rbuf, int count, void *args,
                                   ompi_request_t **request) {
    coll_gpu_allgather_args_t *a = args;

    (void)count;
    if (a->vector) {
        return (NULL == request)
                   ? COLL_GPU_PREV(a->module, allgatherv, sbuf, a->scount, a->sdtype, rbuf,
                                   a->rcounts, a->displs, a->rdtype, a->comm)
                   : COLL_GPU_PREV(a->module, iallgatherv, sbuf, a->scount, a->sdtype, rbuf,
                                   a->rcounts, a->displs, a->rdtype, a->comm, request);
    }
    return (NULL == request) ? COLL_GPU_PREV(a->module, allgather, sbuf, a->scount, a->sdtype, rbuf,
                                             a->rcount, a->rdtype, a->comm)
                             : COLL_GPU_PREV(a->module, iallgather, sbuf, a->scount, a->sdtype,
                                             rbuf, a->rcount, a->rdtype, a->comm, request);
}

/* A blocking MPI_Allgather natively in kind's memory; false when it must be staged (device)
 * or handed to Open MPI (host).  Blocks move as bytes of the type signature
 * (coll_gpu_signature.h), whatever datatypes the ranks (and a rank's two sides) pass. */
static bool coll_gpu_allgather_native(coll_gpu_allgather_args_t *a, coll_gpu_native_kind_t kind,
                                      const void *sbuf, void *rbuf, bool kinds_mixed, int *rc_p) {
    const void *bufs[2] = {rbuf, sbuf};
    bool in_place = (MPI_IN_PLACE == sbuf);
    int count = a->rcount;
    coll_gpu_native_call_t call;

    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLGATHER, kind, count,
                                  a->rdtype, NULL, bufs, in_place ? 1 : 2, kinds_mixed, &call,
                                  rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_sig_buf_t send = {0}, recv;

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, 1, a->scount, NULL, NULL, NULL,
                                  NULL, true);
        }
        /* in place, this rank's own block is read from the receive buffer */
        coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, ompi_comm_size(a->comm), count, NULL,
                              NULL, NULL, NULL, in_place);
        coll_gpu_sig_buf_receive(&call, &recv);
        COLL_GPU_COUNT_NATIVE(ALLGATHER, recv.bytes);
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = recv.data;
        call.count = coll_gpu_signature_bytes(count, a->rdtype);
        *rc_p = coll_gpu_native_run(a->comm, &call);
        coll_gpu_sig_buf_fini(&call, &recv);
        coll_gpu_sig_buf_fini(&call, &send);
    }
    return true;
}

/* The same for MPI_Allgatherv.  Every rank knows every block's signature bytes (each passes its
 * own receive type, the counts that go with it): eligibility and the tuning rules see the
 * largest block. */
static bool coll_gpu_allgatherv_native(coll_gpu_allgather_args_t *a, coll_gpu_native_kind_t kind,
                                       const void *sbuf, void *rbuf, bool kinds_mixed, int *rc_p) {
    const void *bufs[2] = {rbuf, sbuf};
    size_t total = 0;
    int size = ompi_comm_size(a->comm), rank = ompi_comm_rank(a->comm), largest = 0;
    bool in_place = (MPI_IN_PLACE == sbuf);
    coll_gpu_native_call_t call;

    if (OPAL_UNLIKELY(coll_gpu_native_check_blocks(a->module, a->comm, COLL_GPU_NCOLL_ALLGATHERV,
                                                   a->rcounts, a->rdtype, NULL, NULL, NULL,
                                                   rc_p))) {
        return true; /* the call failed: no fallback */
    }
    (void)rank;
    for (int p = 0; p < size; ++p) {
        largest = (a->rcounts[p] > largest) ? a->rcounts[p] : largest;
        if (a->rcounts[p] < 0) {
            largest = INT_MIN; /* erroneous: Open MPI's collective reports it */
        }
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLGATHERV, kind,
                                  (largest > 0) ? largest : 0, a->rdtype, NULL, bufs,
                                  in_place ? 1 : 2, kinds_mixed, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_sig_buf_t send = {0}, recv;

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, 1, a->scount, NULL, NULL, NULL,
                                  NULL, true);
        }
        /* in place, this rank's own block is read from the receive buffer */
        coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, size, 0, a->rcounts, a->displs,
                              call.native->counts, call.native->displs, in_place);
        total = recv.bytes;
        coll_gpu_sig_buf_receive(&call, &recv);
        COLL_GPU_COUNT_NATIVE(ALLGATHERV, total);
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = recv.data;
        call.counts = recv.counts;
        call.displs = recv.displs;
        *rc_p = coll_gpu_native_run(a->comm, &call);
        coll_gpu_sig_buf_fini(&call, &recv);
        coll_gpu_sig_buf_fini(&call, &send);
    }
    return true;
}

/* coll_gpu_native_try_fn_t: the blocking form a describes. */
static bool coll_gpu_allgather_try_native(void *args, coll_gpu_native_kind_t kind, const void *sbuf,
                                          void *rbuf, int unused_count, bool kinds_mixed,
                                          int *rc_p) {
    coll_gpu_allgather_args_t *a = args;

    (void)unused_count;
    return (a->vector) ? coll_gpu_allgatherv_native(a, kind, sbuf, rbuf, kinds_mixed, rc_p)
                       : coll_gpu_allgather_native(a, kind, sbuf, rbuf, kinds_mixed, rc_p);
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_allgather_dispatch(coll_gpu_allgather_args_t *a, coll_gpu_coll_t coll,
                                       const char *mpi_call, const void *sbuf, void *rbuf,
                                       ompi_request_t **request) {
    int size = ompi_comm_size(a->comm);
    bool on_device = coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf);
    bool native = (COLL_GPU_ALLGATHER == coll) || (COLL_GPU_ALLGATHERV == coll);
    coll_gpu_call_t call;
    bool single_call = true;
    int rc;

    if (native && !on_device && mca_coll_gpu_component.host_buffers) {
        return coll_gpu_native_host_buffers(a->module, a->comm, coll, coll_gpu_allgather_try_native,
                                            coll_gpu_allgather_host, a, sbuf, rbuf, 0);
    }
    if (coll_gpu_classified_pass_through(a->module, a->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_allgather_host(sbuf, rbuf, 0, a, request);
    }
    if (native &&
        coll_gpu_allgather_try_native(a, COLL_GPU_NATIVE_DEVICE, sbuf, rbuf, 0, single_call, &rc)) {
        return rc;
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_allgather_host, a);
    coll_gpu_buf_init(&call.send, sbuf, a->sdtype, (size_t)a->scount);
    if (a->vector) {
        coll_gpu_buf_init_blocks(&call.recv, rbuf, a->rdtype, a->rcounts, a->displs, size);
        call.recv_holes = true;
    } else {
        coll_gpu_buf_init(&call.recv, rbuf, a->rdtype, (size_t)a->rcount * (size_t)size);
        call.recv_holes = coll_gpu_has_holes(a->rdtype, (size_t)a->rcount * (size_t)size);
    }
    call.recv_in = (MPI_IN_PLACE == sbuf);
    call.recv_out = true;
    return coll_gpu_staged_run(a->module, a->comm, &call, request, single_call);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_allgather_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_allgather_args_t args = {
        .module = module,
        .scount = scount,
        .sdtype = sdtype,
        .rcount = rcount,
        .rdtype = rdtype,
        .comm = comm,
    };
    return coll_gpu_allgather_dispatch(&args, COLL_GPU_ALLGATHER, "MPI_Allgather", sbuf, rbuf,
                                       NULL);
}

int mca_coll_gpu_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                           int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_allgather_host_only(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                                    comm, base);
        }
        COLL_GPU_COUNT(calls_passthrough, ALLGATHER);
        return COLL_GPU_PREV(module, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    }
    return coll_gpu_allgather_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, base);
}

int mca_coll_gpu_allgather_host_only(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                     void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *base) {
    coll_gpu_allgather_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .scount = scount,
        .sdtype = sdtype,
        .rcount = rcount,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_ALLGATHER,
                                        coll_gpu_allgather_try_native, coll_gpu_allgather_host,
                                        &args, sbuf, rbuf, 0);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_allgatherv_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *displs,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_allgather_args_t args = {
        .module = module,
        .vector = true,
        .scount = scount,
        .sdtype = sdtype,
        .rcounts = rcounts,
        .displs = displs,
        .rdtype = rdtype,
        .comm = comm,
    };
    return coll_gpu_allgather_dispatch(&args, COLL_GPU_ALLGATHERV, "MPI_Allgatherv", sbuf, rbuf,
                                       NULL);
}

int mca_coll_gpu_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *displs,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_allgatherv_host_only(sbuf, scount, sdtype, rbuf, rcounts, displs,
                                                     rdtype, comm, base);
        }
        COLL_GPU_COUNT(calls_passthrough, ALLGATHERV);
        return COLL_GPU_PREV(module, allgatherv, sbuf, scount, sdtype, rbuf, rcounts, displs,
                             rdtype, comm);
    }
    return coll_gpu_allgatherv_classified(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                          base);
}

int mca_coll_gpu_allgatherv_host_only(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                      void *rbuf, const int *rcounts, const int *displs,
                                      struct ompi_datatype_t *rdtype,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *base) {
    coll_gpu_allgather_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .vector = true,
        .scount = scount,
        .sdtype = sdtype,
        .rcounts = rcounts,
        .displs = displs,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_ALLGATHERV,
                                        coll_gpu_allgather_try_native, coll_gpu_allgather_host,
                                        &args, sbuf, rbuf, 0);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_iallgather_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_allgather_args_t args = {
        .module = module,
        .scount = scount,
        .sdtype = sdtype,
        .rcount = rcount,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_allgather_dispatch(&args, COLL_GPU_IALLGATHER, "MPI_Iallgather", sbuf, rbuf,
                                       request);
}

int mca_coll_gpu_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IALLGATHER);
        return COLL_GPU_PREV(module, iallgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             request);
    }
    return coll_gpu_iallgather_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                          base);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_iallgatherv_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, const int *rcounts, const int *displs,
                                struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_allgather_args_t args = {
        .module = module,
        .vector = true,
        .scount = scount,
        .sdtype = sdtype,
        .rcounts = rcounts,
        .displs = displs,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_allgather_dispatch(&args, COLL_GPU_IALLGATHERV, "MPI_Iallgatherv", sbuf, rbuf,
                                       request);
}

int mca_coll_gpu_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IALLGATHERV);
        return COLL_GPU_PREV(module, iallgatherv, sbuf, scount, sdtype, rbuf, rcounts, displs,
                             rdtype, comm, request);
    }
    return coll_gpu_iallgatherv_classified(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                           comm, request, base);
}
