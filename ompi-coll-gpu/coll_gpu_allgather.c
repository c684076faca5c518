/*
 * MPI_Allgather, MPI_Allgatherv and their nonblocking forms on device buffers.
 */
#include "coll_gpu_staged.h"

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

/* Classifies the buffers, then hands the call to the previous module or
 * stages it: the blocking (request NULL) and nonblocking forms alike. */
static int coll_gpu_allgather_dispatch(coll_gpu_allgather_args_t *a, coll_gpu_coll_t coll,
                                       const char *mpi_call, const void *sbuf, void *rbuf,
                                       ompi_request_t **request) {
    int size = ompi_comm_size(a->comm);
    coll_gpu_call_t call;
    bool single_call = true;

    if (coll_gpu_classified_pass_through(a->module, a->comm, coll,
                                         coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf),
                                         request, &single_call)) {
        return coll_gpu_allgather_host(sbuf, rbuf, 0, a, request);
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_allgather_host, a);
    coll_gpu_buf_init(&call.send, sbuf, a->sdtype, (size_t)a->scount);
    if (a->vector) {
        coll_gpu_buf_init_blocks(&call.recv, rbuf, a->rdtype, a->rcounts, a->displs, size);
        call.recv_holes = true;
    } else {
        coll_gpu_buf_init(&call.recv, rbuf, a->rdtype, (size_t)a->rcount * (size_t)size);
        call.recv_holes = coll_gpu_has_holes(a->rdtype, a->rcount * size);
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
        COLL_GPU_COUNT(calls_passthrough, ALLGATHER);
        return COLL_GPU_PREV(module, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    }
    return coll_gpu_allgather_classified(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, base);
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
        COLL_GPU_COUNT(calls_passthrough, ALLGATHERV);
        return COLL_GPU_PREV(module, allgatherv, sbuf, scount, sdtype, rbuf, rcounts, displs,
                             rdtype, comm);
    }
    return coll_gpu_allgatherv_classified(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                          base);
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
