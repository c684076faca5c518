/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoall, MPI_Alltoallv and their nonblocking forms on device buffers.
 */
#include <limits.h>

#include "coll_gpu_native.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_staged.h"

#include "ompi/datatype/ompi_datatype.h"

/* Its native algorithms (coll_gpu_native.h). */
COLL_GPU_ALG_TABLE_ONE(coll_gpu_alltoall_algs, "alltoall", "MPI_Alltoall", "direct",
                       "every rank copies its block out of every peer's scratch",
                       coll_gpu_alltoall_direct, true, true);
COLL_GPU_ALG_TABLE_ONE(coll_gpu_alltoallv_algs, "alltoallv", "MPI_Alltoallv", "direct",
                       "every rank copies its block out of every peer's scratch",
                       coll_gpu_alltoallv_direct, true, false);

typedef struct {
    mca_coll_gpu_module_t *module;
    bool vector;        /* the v-variant: counts and displacements may be NULL off the root */
    int scount, rcount; /* alltoall */
    const int *scounts, *sdispls; /* alltoallv */
    const int *rcounts, *rdispls;
    struct ompi_datatype_t *sdtype, *rdtype;
    struct ompi_communicator_t *comm;
} coll_gpu_alltoall_args_t;

static int coll_gpu_alltoall_host(const void *sbuf, void *rbuf, int count, void *args,
                                  ompi_request_t **request) {
    coll_gpu_alltoall_args_t *a = args;

    (void)count;
    if (a->vector) {
        return (NULL == request)
                   ? COLL_GPU_PREV(a->module, alltoallv, sbuf, a->scounts, a->sdispls, a->sdtype,
                                   rbuf, a->rcounts, a->rdispls, a->rdtype, a->comm)
                   : COLL_GPU_PREV(a->module, ialltoallv, sbuf, a->scounts, a->sdispls, a->sdtype,
                                   rbuf, a->rcounts, a->rdispls, a->rdtype, a->comm, request);
    }
    return (NULL == request) ? COLL_GPU_PREV(a->module, alltoall, sbuf, a->scount, a->sdtype, rbuf,
                                             a->rcount, a->rdtype, a->comm)
                             : COLL_GPU_PREV(a->module, ialltoall, sbuf, a->scount, a->sdtype, rbuf,
                                             a->rcount, a->rdtype, a->comm, request);
}

/* A blocking MPI_Alltoall natively in kind's memory; false when it must be staged (device)
 * or handed to Open MPI (host).  Blocks move as bytes of the type signature
 * (coll_gpu_signature.h), whatever datatypes the ranks (and a rank's two sides) pass. */
static bool coll_gpu_alltoall_native(coll_gpu_alltoall_args_t *a, coll_gpu_native_kind_t kind,
                                     const void *sbuf, void *rbuf, bool kinds_mixed, int *rc_p) {
    const void *bufs[2] = {rbuf, sbuf};
    bool in_place = (MPI_IN_PLACE == sbuf);
    int count = a->rcount;
    coll_gpu_native_call_t call;

    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLTOALL, kind, count,
                                  a->rdtype, NULL, bufs, in_place ? 1 : 2, kinds_mixed, &call,
                                  rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        int size = ompi_comm_size(a->comm);
        coll_gpu_sig_buf_t send = {0}, recv;

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, size, a->scount, NULL, NULL, NULL,
                                  NULL, true);
        }
        coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, size, count, NULL, NULL, NULL, NULL,
                              in_place);
        coll_gpu_sig_buf_receive(&call, &recv);
        COLL_GPU_COUNT_NATIVE(ALLTOALL, recv.bytes);
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = recv.data;
        call.count = coll_gpu_signature_bytes(count, a->rdtype);
        *rc_p = coll_gpu_native_run(a->comm, &call);
        coll_gpu_sig_buf_fini(&call, &recv);
        coll_gpu_sig_buf_fini(&call, &send);
    }
    return true;
}

/*
 * The same for MPI_Alltoallv.  A rank knows only its own counts, while the number of steps
 * (the longest block of any pair of ranks, in bytes of the type signature), the eligibility and
 * the tuning rule must be the same on every rank: the ranks agree on them with one
 * max-reduction over Open MPI's allreduce per call, which also carries whether some rank's
 * arguments (a negative count, a block too large) rule the native algorithm out.  A few
 * microseconds on host memory, next to an alltoallv's own step signals; skipped only where the
 * parameters rule the native algorithm out on every rank alike.  Datatypes play no part in the
 * decision: ranks may pass different ones of one signature (coll_gpu_signature.h).
 */
static bool coll_gpu_alltoallv_native(coll_gpu_alltoall_args_t *a, coll_gpu_native_kind_t kind,
                                      const void *sbuf, void *rbuf, bool kinds_mixed, int *rc_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    size_t total = 0;
    const void *bufs[2] = {rbuf, sbuf};
    bool in_place = (MPI_IN_PLACE == sbuf);
    int size = ompi_comm_size(a->comm), count = 1; /* 1: refused for another reason */
    int64_t agreed[2] = {0, 0};                    /* the largest block, unusable */
    coll_gpu_native_call_t call;

    /* in place, the receive counts are the send counts too */
    if (OPAL_UNLIKELY(coll_gpu_native_check_blocks(
            a->module, a->comm, COLL_GPU_NCOLL_ALLTOALLV, in_place ? a->rcounts : a->scounts,
            in_place ? a->rdtype : a->sdtype, a->rcounts, a->rdtype, NULL, rc_p))) {
        return true; /* the call failed: no fallback */
    }
    if (!kinds_mixed && c->native &&
        (COLL_GPU_ALG_STAGED != c->algorithm[COLL_GPU_NCOLL_ALLTOALLV])) {
        for (int p = 0; p < size; ++p) {
            int64_t sent =
                in_place ? 0 : (int64_t)coll_gpu_signature_bytes(a->scounts[p], a->sdtype);
            int64_t received = (int64_t)coll_gpu_signature_bytes(a->rcounts[p], a->rdtype);
            agreed[0] = (received > agreed[0]) ? received : agreed[0];
            agreed[0] = (sent > agreed[0]) ? sent : agreed[0];
            if ((!in_place && (a->scounts[p] < 0)) || (a->rcounts[p] < 0)) {
                agreed[1] = 1; /* erroneous: Open MPI's collective reports it */
            }
        }
        if (OMPI_SUCCESS != COLL_GPU_PREV(a->module, allreduce, MPI_IN_PLACE, agreed, 2,
                                          MPI_INT64_T, MPI_MAX, a->comm)) {
            agreed[1] = 1;
        }
        /* the native eligibility sees the agreed largest block as that many bytes */
        count = ((0 != agreed[1]) || (agreed[0] > INT_MAX)) ? 0 : (int)agreed[0];
    }
    if (!coll_gpu_native_eligible(a->module, a->comm, COLL_GPU_NCOLL_ALLTOALLV, kind, count,
                                  MPI_BYTE, NULL, bufs, in_place ? 1 : 2, kinds_mixed, &call,
                                  rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_sig_buf_t send = {0}, recv;

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, size, 0, a->scounts, a->sdispls,
                                  call.native->send_counts, call.native->send_displs, true);
        }
        /* in place, the receive buffer's blocks are sent: packed in first */
        coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, size, 0, a->rcounts, a->rdispls,
                              call.native->counts, call.native->displs, in_place);
        total = recv.bytes;
        coll_gpu_sig_buf_receive(&call, &recv);
        COLL_GPU_COUNT_NATIVE(ALLTOALLV, total);
        call.sbuf = in_place ? NULL : send.data;
        call.scounts = send.counts;
        call.sdispls = send.displs;
        call.rbuf = recv.data;
        call.counts = recv.counts;
        call.displs = recv.displs;
        call.largest = (size_t)count;
        *rc_p = coll_gpu_native_run(a->comm, &call);
        coll_gpu_sig_buf_fini(&call, &recv);
        coll_gpu_sig_buf_fini(&call, &send);
    }
    return true;
}

/* coll_gpu_native_try_fn_t: the blocking form a describes. */
static bool coll_gpu_alltoall_try_native(void *args, coll_gpu_native_kind_t kind, const void *sbuf,
                                         void *rbuf, int unused_count, bool kinds_mixed,
                                         int *rc_p) {
    coll_gpu_alltoall_args_t *a = args;

    (void)unused_count;
    return (a->vector) ? coll_gpu_alltoallv_native(a, kind, sbuf, rbuf, kinds_mixed, rc_p)
                       : coll_gpu_alltoall_native(a, kind, sbuf, rbuf, kinds_mixed, rc_p);
}

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_alltoall_dispatch(coll_gpu_alltoall_args_t *a, coll_gpu_coll_t coll,
                                      const char *mpi_call, const void *sbuf, void *rbuf,
                                      ompi_request_t **request) {
    int size = ompi_comm_size(a->comm);
    bool on_device = coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf);
    bool native = (COLL_GPU_ALLTOALL == coll) || (COLL_GPU_ALLTOALLV == coll);
    coll_gpu_call_t call;
    bool single_call = true;
    int rc;

    if (native && !on_device && mca_coll_gpu_component.host_buffers) {
        return coll_gpu_native_host_buffers(a->module, a->comm, coll, coll_gpu_alltoall_try_native,
                                            coll_gpu_alltoall_host, a, sbuf, rbuf, 0);
    }
    if (coll_gpu_classified_pass_through(a->module, a->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_alltoall_host(sbuf, rbuf, 0, a, request);
    }
    if (native &&
        coll_gpu_alltoall_try_native(a, COLL_GPU_NATIVE_DEVICE, sbuf, rbuf, 0, single_call, &rc)) {
        return rc;
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_alltoall_host, a);
    if (a->vector) {
        if (MPI_IN_PLACE != sbuf) {
            coll_gpu_buf_init_blocks(&call.send, sbuf, a->sdtype, a->scounts, a->sdispls, size);
        } else {
            call.send.user = (void *)sbuf;
        }
        coll_gpu_buf_init_blocks(&call.recv, rbuf, a->rdtype, a->rcounts, a->rdispls, size);
        call.recv_holes = true;
    } else {
        coll_gpu_buf_init(&call.send, sbuf, a->sdtype, (size_t)a->scount * (size_t)size);
        coll_gpu_buf_init(&call.recv, rbuf, a->rdtype, (size_t)a->rcount * (size_t)size);
        call.recv_holes = coll_gpu_has_holes(a->rdtype, (size_t)a->rcount * (size_t)size);
    }
    call.recv_in = (MPI_IN_PLACE == sbuf);
    call.recv_out = true;
    return coll_gpu_staged_run(a->module, a->comm, &call, request, single_call);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_alltoall_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_alltoall_args_t args = {
        .module = module,
        .scount = scount,
        .rcount = rcount,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };
    return coll_gpu_alltoall_dispatch(&args, COLL_GPU_ALLTOALL, "MPI_Alltoall", sbuf, rbuf, NULL);
}

int mca_coll_gpu_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_alltoall_host_only(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                                   base);
        }
        COLL_GPU_COUNT(calls_passthrough, ALLTOALL);
        return COLL_GPU_PREV(module, alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    }
    return coll_gpu_alltoall_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, base);
}

int mca_coll_gpu_alltoall_host_only(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                    void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *base) {
    coll_gpu_alltoall_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .scount = scount,
        .rcount = rcount,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_ALLTOALL,
                                        coll_gpu_alltoall_try_native, coll_gpu_alltoall_host, &args,
                                        sbuf, rbuf, 0);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_alltoallv_classified(const void *sbuf, const int *scounts, const int *sdispls,
                              struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *rdispls, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_alltoall_args_t args = {
        .module = module,
        .vector = true,
        .scounts = scounts,
        .sdispls = sdispls,
        .rcounts = rcounts,
        .rdispls = rdispls,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };
    return coll_gpu_alltoall_dispatch(&args, COLL_GPU_ALLTOALLV, "MPI_Alltoallv", sbuf, rbuf, NULL);
}

int mca_coll_gpu_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                           struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *rdispls, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        if (mca_coll_gpu_component.host_buffers) {
            return mca_coll_gpu_alltoallv_host_only(sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                                    rdispls, rdtype, comm, base);
        }
        COLL_GPU_COUNT(calls_passthrough, ALLTOALLV);
        return COLL_GPU_PREV(module, alltoallv, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                             rdispls, rdtype, comm);
    }
    return coll_gpu_alltoallv_classified(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                         rdtype, comm, base);
}

int mca_coll_gpu_alltoallv_host_only(const void *sbuf, const int *scounts, const int *sdispls,
                                     struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                     const int *rdispls, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *base) {
    coll_gpu_alltoall_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .vector = true,
        .scounts = scounts,
        .sdispls = sdispls,
        .rcounts = rcounts,
        .rdispls = rdispls,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_native_host_buffers(args.module, comm, COLL_GPU_ALLTOALLV,
                                        coll_gpu_alltoall_try_native, coll_gpu_alltoall_host, &args,
                                        sbuf, rbuf, 0);
}

static COLL_GPU_SLOW_PATH int
coll_gpu_ialltoall_classified(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_alltoall_args_t args = {
        .module = module,
        .scount = scount,
        .rcount = rcount,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_alltoall_dispatch(&args, COLL_GPU_IALLTOALL, "MPI_Ialltoall", sbuf, rbuf,
                                      request);
}

int mca_coll_gpu_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                           int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IALLTOALL);
        return COLL_GPU_PREV(module, ialltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             request);
    }
    return coll_gpu_ialltoall_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                         base);
}

static COLL_GPU_SLOW_PATH int coll_gpu_ialltoallv_classified(
    const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
    void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,
    struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;
    coll_gpu_alltoall_args_t args = {
        .module = module,
        .vector = true,
        .scounts = scounts,
        .sdispls = sdispls,
        .rcounts = rcounts,
        .rdispls = rdispls,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_alltoall_dispatch(&args, COLL_GPU_IALLTOALLV, "MPI_Ialltoallv", sbuf, rbuf,
                                      request);
}

int mca_coll_gpu_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                            const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IALLTOALLV);
        return COLL_GPU_PREV(module, ialltoallv, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                             rdispls, rdtype, comm, request);
    }
    return coll_gpu_ialltoallv_classified(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                          rdtype, comm, request, base);
}
