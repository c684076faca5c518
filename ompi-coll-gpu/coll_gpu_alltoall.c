/*
 * MPI_Alltoall, MPI_Alltoallv and their nonblocking forms on device buffers.
 */
#include "coll_gpu_staged.h"

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

static int coll_gpu_alltoall_staged(coll_gpu_alltoall_args_t *a, coll_gpu_coll_t coll,
                                    const char *mpi_call, const void *sbuf, void *rbuf,
                                    ompi_request_t **request, bool single_call) {
    int size = ompi_comm_size(a->comm);
    coll_gpu_call_t call;

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
        call.recv_holes = coll_gpu_has_holes(a->rdtype, a->rcount * size);
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
    bool single_call;

    if (coll_gpu_pass_through(module, comm, COLL_GPU_ALLTOALL,
                              coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf), &single_call)) {
        return COLL_GPU_PREV(module, alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    }
    return coll_gpu_alltoall_staged(&args, COLL_GPU_ALLTOALL, "MPI_Alltoall", sbuf, rbuf, NULL,
                                    single_call);
}

int mca_coll_gpu_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, ALLTOALL);
        return COLL_GPU_PREV(module, alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    }
    return coll_gpu_alltoall_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, base);
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
    bool single_call;

    if (coll_gpu_pass_through(module, comm, COLL_GPU_ALLTOALLV,
                              coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf), &single_call)) {
        return COLL_GPU_PREV(module, alltoallv, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                             rdispls, rdtype, comm);
    }
    return coll_gpu_alltoall_staged(&args, COLL_GPU_ALLTOALLV, "MPI_Alltoallv", sbuf, rbuf, NULL,
                                    single_call);
}

int mca_coll_gpu_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                           struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *rdispls, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, ALLTOALLV);
        return COLL_GPU_PREV(module, alltoallv, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                             rdispls, rdtype, comm);
    }
    return coll_gpu_alltoallv_classified(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                         rdtype, comm, base);
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

    if (coll_gpu_ipass_through(COLL_GPU_IALLTOALL,
                               coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf))) {
        return COLL_GPU_PREV(module, ialltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             request);
    }
    return coll_gpu_alltoall_staged(&args, COLL_GPU_IALLTOALL, "MPI_Ialltoall", sbuf, rbuf, request,
                                    true);
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

    if (coll_gpu_ipass_through(COLL_GPU_IALLTOALLV,
                               coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf))) {
        return COLL_GPU_PREV(module, ialltoallv, sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                             rdispls, rdtype, comm, request);
    }
    return coll_gpu_alltoall_staged(&args, COLL_GPU_IALLTOALLV, "MPI_Ialltoallv", sbuf, rbuf,
                                    request, true);
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
