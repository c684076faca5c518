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

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_alltoall_dispatch(coll_gpu_alltoall_args_t *a, coll_gpu_coll_t coll,
                                      const char *mpi_call, const void *sbuf, void *rbuf,
                                      ompi_request_t **request) {
    int size = ompi_comm_size(a->comm);
    coll_gpu_call_t call;
    bool single_call = true;

    if (coll_gpu_classified_pass_through(a->module, a->comm, coll,
                                         coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf),
                                         request, &single_call)) {
        return coll_gpu_alltoall_host(sbuf, rbuf, 0, a, request);
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
    return coll_gpu_alltoall_dispatch(&args, COLL_GPU_ALLTOALL, "MPI_Alltoall", sbuf, rbuf, NULL);
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
    return coll_gpu_alltoall_dispatch(&args, COLL_GPU_ALLTOALLV, "MPI_Alltoallv", sbuf, rbuf, NULL);
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
