/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoallw, the neighborhood collectives (MPI_Neighbor_allgather(v),
 * MPI_Neighbor_alltoall(v,w)) and their nonblocking forms on device buffers:
 * always staged, as one host collective per call (no native algorithm, no
 * pipeline), so that ranks passing different kinds of memory or different
 * datatypes of one signature still run the same communication.
 *
 * The neighborhood collectives' buffers hold one block per neighbor: their
 * number comes from the communicator's topology (cartesian: 2 * ndims, in
 * and out alike; graph: the rank's neighbors; distributed graph: its in- and
 * out-degree), asked of the topology module as MPI_*_neighbors_count do.
 */
#include "coll_gpu_staged.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/topo/topo.h"

typedef struct {
    mca_coll_gpu_module_t *module;
    coll_gpu_coll_t coll; /* the blocking form */
    int scount, rcount;   /* neighbor_allgather, neighbor_alltoall */
    /* v- and w-forms; the receive side of neighbor_allgatherv */
    const int *scounts, *sdispls, *rcounts, *rdispls;
    const MPI_Aint *sadispls, *radispls; /* neighbor_alltoallw: byte displacements */
    struct ompi_datatype_t *sdtype, *rdtype;
    struct ompi_datatype_t *const *sdtypes, *const *rdtypes; /* w-forms */
    struct ompi_communicator_t *comm;
} coll_gpu_neighbor_args_t;

static int coll_gpu_neighbor_host(const void *sbuf, void *rbuf, int count, void *args,
                                  ompi_request_t **request) {
    coll_gpu_neighbor_args_t *a = args;
    mca_coll_gpu_module_t *m = a->module;
    bool nb = (NULL != request);

    (void)count;
    switch (a->coll) {
    case COLL_GPU_ALLTOALLW:
        return nb ? COLL_GPU_PREV(m, ialltoallw, sbuf, a->scounts, a->sdispls, a->sdtypes, rbuf,
                                  a->rcounts, a->rdispls, a->rdtypes, a->comm, request)
                  : COLL_GPU_PREV(m, alltoallw, sbuf, a->scounts, a->sdispls, a->sdtypes, rbuf,
                                  a->rcounts, a->rdispls, a->rdtypes, a->comm);
    case COLL_GPU_NEIGHBOR_ALLGATHER:
        return nb ? COLL_GPU_PREV(m, ineighbor_allgather, sbuf, a->scount, a->sdtype, rbuf,
                                  a->rcount, a->rdtype, a->comm, request)
                  : COLL_GPU_PREV(m, neighbor_allgather, sbuf, a->scount, a->sdtype, rbuf,
                                  a->rcount, a->rdtype, a->comm);
    case COLL_GPU_NEIGHBOR_ALLGATHERV:
        return nb ? COLL_GPU_PREV(m, ineighbor_allgatherv, sbuf, a->scount, a->sdtype, rbuf,
                                  a->rcounts, a->rdispls, a->rdtype, a->comm, request)
                  : COLL_GPU_PREV(m, neighbor_allgatherv, sbuf, a->scount, a->sdtype, rbuf,
                                  a->rcounts, a->rdispls, a->rdtype, a->comm);
    case COLL_GPU_NEIGHBOR_ALLTOALL:
        return nb ? COLL_GPU_PREV(m, ineighbor_alltoall, sbuf, a->scount, a->sdtype, rbuf,
                                  a->rcount, a->rdtype, a->comm, request)
                  : COLL_GPU_PREV(m, neighbor_alltoall, sbuf, a->scount, a->sdtype, rbuf, a->rcount,
                                  a->rdtype, a->comm);
    case COLL_GPU_NEIGHBOR_ALLTOALLV:
        return nb ? COLL_GPU_PREV(m, ineighbor_alltoallv, sbuf, a->scounts, a->sdispls, a->sdtype,
                                  rbuf, a->rcounts, a->rdispls, a->rdtype, a->comm, request)
                  : COLL_GPU_PREV(m, neighbor_alltoallv, sbuf, a->scounts, a->sdispls, a->sdtype,
                                  rbuf, a->rcounts, a->rdispls, a->rdtype, a->comm);
    case COLL_GPU_NEIGHBOR_ALLTOALLW:
        return nb ? COLL_GPU_PREV(m, ineighbor_alltoallw, sbuf, a->scounts, a->sadispls, a->sdtypes,
                                  rbuf, a->rcounts, a->radispls, a->rdtypes, a->comm, request)
                  : COLL_GPU_PREV(m, neighbor_alltoallw, sbuf, a->scounts, a->sadispls, a->sdtypes,
                                  rbuf, a->rcounts, a->radispls, a->rdtypes, a->comm);
    default:
        return OMPI_ERR_BAD_PARAM;
    }
}

/* The number of blocks of a neighborhood collective's receive (in) and send (out) buffers. */
static int coll_gpu_neighbor_degrees(struct ompi_communicator_t *comm, int *in_p, int *out_p) {
    mca_topo_base_module_t *topo = comm->c_topo;
    int rc, n, weighted;

    if (NULL == topo) {
        return MPI_ERR_TOPOLOGY;
    }
    if (OMPI_COMM_IS_CART(comm)) {
        rc = topo->topo.cart.cartdim_get(comm, &n);
        *in_p = *out_p = 2 * n;
    } else if (OMPI_COMM_IS_GRAPH(comm)) {
        rc = topo->topo.graph.graph_neighbors_count(comm, ompi_comm_rank(comm), &n);
        *in_p = *out_p = n;
    } else if (OMPI_COMM_IS_DIST_GRAPH(comm)) {
        rc = topo->topo.dist_graph.dist_graph_neighbors_count(comm, in_p, out_p, &weighted);
    } else {
        return MPI_ERR_TOPOLOGY;
    }
    return (OMPI_SUCCESS == rc) ? OMPI_SUCCESS : MPI_ERR_TOPOLOGY;
}

/* Classifies the buffers, then hands the call to the previous module or stages it: the
 * blocking (request NULL) and nonblocking forms alike.  coll: the counters' collective. */
static int coll_gpu_neighbor_dispatch(coll_gpu_neighbor_args_t *a, coll_gpu_coll_t coll,
                                      const char *mpi_call, const void *sbuf, void *rbuf,
                                      ompi_request_t **request) {
    bool on_device = coll_gpu_on_device(sbuf) || coll_gpu_on_device(rbuf);
    bool in_place = (MPI_IN_PLACE == sbuf);
    bool single_call = true;
    int indegree, outdegree, rc;
    coll_gpu_layout_t slayout = {0}, rlayout = {0};
    coll_gpu_call_t call;

    if (coll_gpu_classified_pass_through(a->module, a->comm, coll, on_device, request,
                                         &single_call)) {
        return coll_gpu_neighbor_host(sbuf, rbuf, 0, a, request);
    }
    if (COLL_GPU_ALLTOALLW == a->coll) {
        indegree = outdegree = ompi_comm_size(a->comm);
    } else if (OMPI_SUCCESS != (rc = coll_gpu_neighbor_degrees(a->comm, &indegree, &outdegree))) {
        return rc; /* not a topology communicator: what Open MPI's MPI layer says too */
    }

    coll_gpu_call_init(&call, coll, mpi_call, coll_gpu_neighbor_host, a);
    call.recv_in = in_place;
    call.recv_out = true;
    call.recv_holes = true;
    switch (a->coll) {
    case COLL_GPU_NEIGHBOR_ALLGATHER:
    case COLL_GPU_NEIGHBOR_ALLTOALL:
        coll_gpu_buf_init(&call.send, sbuf, a->sdtype,
                          (size_t)a->scount *
                              (size_t)((COLL_GPU_NEIGHBOR_ALLTOALL == a->coll) ? outdegree : 1));
        coll_gpu_buf_init(&call.recv, rbuf, a->rdtype, (size_t)a->rcount * (size_t)indegree);
        /* a cartesian neighbor may be MPI_PROC_NULL: its block is left as it was */
        call.recv_holes = OMPI_COMM_IS_CART(a->comm) ||
                          coll_gpu_has_holes(a->rdtype, (size_t)a->rcount * (size_t)indegree);
        break;
    case COLL_GPU_NEIGHBOR_ALLGATHERV:
        coll_gpu_buf_init(&call.send, sbuf, a->sdtype, (size_t)a->scount);
        rlayout = (coll_gpu_layout_t){
            .n = indegree, .counts = a->rcounts, .displs = a->rdispls, .dtype = a->rdtype};
        coll_gpu_buf_init_layout(&call.recv, rbuf, &rlayout);
        break;
    default: /* the v- and w-forms of alltoall */
        slayout = (coll_gpu_layout_t){.n = outdegree,
                                      .counts = a->scounts,
                                      .displs = a->sdispls,
                                      .adispls = a->sadispls,
                                      .displs_in_bytes = (NULL != a->sdtypes),
                                      .dtype = a->sdtype,
                                      .dtypes = a->sdtypes};
        rlayout = (coll_gpu_layout_t){.n = indegree,
                                      .counts = a->rcounts,
                                      .displs = a->rdispls,
                                      .adispls = a->radispls,
                                      .displs_in_bytes = (NULL != a->rdtypes),
                                      .dtype = a->rdtype,
                                      .dtypes = a->rdtypes};
        if (in_place) {
            call.send.user = (void *)sbuf; /* MPI_IN_PLACE: the send arguments are ignored */
        } else {
            coll_gpu_buf_init_layout(&call.send, sbuf, &slayout);
        }
        coll_gpu_buf_init_layout(&call.recv, rbuf, &rlayout);
        break;
    }
    /* One host collective whatever the buffers: never pipelined. */
    return coll_gpu_staged_run(a->module, a->comm, &call, request, true);
}

/* ---- MPI_Alltoallw, MPI_Ialltoallw ---- */

static COLL_GPU_SLOW_PATH int coll_gpu_alltoallw_classified(
    coll_gpu_coll_t coll, const char *mpi_call, const void *sbuf, const int *scounts,
    const int *sdispls, struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
    const int *rdispls, struct ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm,
    ompi_request_t **request, mca_coll_base_module_t *base) {
    coll_gpu_neighbor_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .coll = COLL_GPU_ALLTOALLW,
        .scounts = scounts,
        .sdispls = sdispls,
        .rcounts = rcounts,
        .rdispls = rdispls,
        .sdtypes = sdtypes,
        .rdtypes = rdtypes,
        .comm = comm,
    };

    return coll_gpu_neighbor_dispatch(&args, coll, mpi_call, sbuf, rbuf, request);
}

int mca_coll_gpu_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                           struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                           const int *rdispls, struct ompi_datatype_t *const *rdtypes,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, ALLTOALLW);
        return COLL_GPU_PREV(module, alltoallw, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                             rdispls, rdtypes, comm);
    }
    return coll_gpu_alltoallw_classified(COLL_GPU_ALLTOALLW, "MPI_Alltoallw", sbuf, scounts,
                                         sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                         NULL, base);
}

int mca_coll_gpu_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                            const int *rdispls, struct ompi_datatype_t *const *rdtypes,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, IALLTOALLW);
        return COLL_GPU_PREV(module, ialltoallw, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                             rdispls, rdtypes, comm, request);
    }
    return coll_gpu_alltoallw_classified(COLL_GPU_IALLTOALLW, "MPI_Ialltoallw", sbuf, scounts,
                                         sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                         request, base);
}

/* ---- MPI_Neighbor_allgather, MPI_Neighbor_alltoall and their nonblocking forms ---- */

static COLL_GPU_SLOW_PATH int coll_gpu_neighbor_classified(
    coll_gpu_coll_t form, coll_gpu_coll_t coll, const char *mpi_call, const void *sbuf, int scount,
    struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
    struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *base) {
    coll_gpu_neighbor_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .coll = form,
        .scount = scount,
        .rcount = rcount,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_neighbor_dispatch(&args, coll, mpi_call, sbuf, rbuf, request);
}

int mca_coll_gpu_neighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                    void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, NEIGHBOR_ALLGATHER);
        return COLL_GPU_PREV(module, neighbor_allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                             comm);
    }
    return coll_gpu_neighbor_classified(COLL_GPU_NEIGHBOR_ALLGATHER, COLL_GPU_NEIGHBOR_ALLGATHER,
                                        "MPI_Neighbor_allgather", sbuf, scount, sdtype, rbuf,
                                        rcount, rdtype, comm, NULL, base);
}

int mca_coll_gpu_ineighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                     void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, INEIGHBOR_ALLGATHER);
        return COLL_GPU_PREV(module, ineighbor_allgather, sbuf, scount, sdtype, rbuf, rcount,
                             rdtype, comm, request);
    }
    return coll_gpu_neighbor_classified(COLL_GPU_NEIGHBOR_ALLGATHER, COLL_GPU_INEIGHBOR_ALLGATHER,
                                        "MPI_Ineighbor_allgather", sbuf, scount, sdtype, rbuf,
                                        rcount, rdtype, comm, request, base);
}

int mca_coll_gpu_neighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                   void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, NEIGHBOR_ALLTOALL);
        return COLL_GPU_PREV(module, neighbor_alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                             comm);
    }
    return coll_gpu_neighbor_classified(COLL_GPU_NEIGHBOR_ALLTOALL, COLL_GPU_NEIGHBOR_ALLTOALL,
                                        "MPI_Neighbor_alltoall", sbuf, scount, sdtype, rbuf, rcount,
                                        rdtype, comm, NULL, base);
}

int mca_coll_gpu_ineighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                    void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, INEIGHBOR_ALLTOALL);
        return COLL_GPU_PREV(module, ineighbor_alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                             comm, request);
    }
    return coll_gpu_neighbor_classified(COLL_GPU_NEIGHBOR_ALLTOALL, COLL_GPU_INEIGHBOR_ALLTOALL,
                                        "MPI_Ineighbor_alltoall", sbuf, scount, sdtype, rbuf,
                                        rcount, rdtype, comm, request, base);
}

/* ---- MPI_Neighbor_allgatherv and MPI_Ineighbor_allgatherv ---- */

static COLL_GPU_SLOW_PATH int coll_gpu_neighbor_allgatherv_classified(
    coll_gpu_coll_t coll, const char *mpi_call, const void *sbuf, int scount,
    struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *displs,
    struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, ompi_request_t **request,
    mca_coll_base_module_t *base) {
    coll_gpu_neighbor_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .coll = COLL_GPU_NEIGHBOR_ALLGATHERV,
        .scount = scount,
        .rcounts = rcounts,
        .rdispls = displs,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_neighbor_dispatch(&args, coll, mpi_call, sbuf, rbuf, request);
}

int mca_coll_gpu_neighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                     void *rbuf, const int *rcounts, const int *displs,
                                     struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, NEIGHBOR_ALLGATHERV);
        return COLL_GPU_PREV(module, neighbor_allgatherv, sbuf, scount, sdtype, rbuf, rcounts,
                             displs, rdtype, comm);
    }
    return coll_gpu_neighbor_allgatherv_classified(COLL_GPU_NEIGHBOR_ALLGATHERV,
                                                   "MPI_Neighbor_allgatherv", sbuf, scount, sdtype,
                                                   rbuf, rcounts, displs, rdtype, comm, NULL, base);
}

int mca_coll_gpu_ineighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                      void *rbuf, const int *rcounts, const int *displs,
                                      struct ompi_datatype_t *rdtype,
                                      struct ompi_communicator_t *comm, ompi_request_t **request,
                                      mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, INEIGHBOR_ALLGATHERV);
        return COLL_GPU_PREV(module, ineighbor_allgatherv, sbuf, scount, sdtype, rbuf, rcounts,
                             displs, rdtype, comm, request);
    }
    return coll_gpu_neighbor_allgatherv_classified(
        COLL_GPU_INEIGHBOR_ALLGATHERV, "MPI_Ineighbor_allgatherv", sbuf, scount, sdtype, rbuf,
        rcounts, displs, rdtype, comm, request, base);
}

/* ---- MPI_Neighbor_alltoallv and MPI_Ineighbor_alltoallv ---- */

static COLL_GPU_SLOW_PATH int coll_gpu_neighbor_alltoallv_classified(
    coll_gpu_coll_t coll, const char *mpi_call, const void *sbuf, const int *scounts,
    const int *sdispls, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
    const int *rdispls, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
    ompi_request_t **request, mca_coll_base_module_t *base) {
    coll_gpu_neighbor_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .coll = COLL_GPU_NEIGHBOR_ALLTOALLV,
        .scounts = scounts,
        .sdispls = sdispls,
        .rcounts = rcounts,
        .rdispls = rdispls,
        .sdtype = sdtype,
        .rdtype = rdtype,
        .comm = comm,
    };

    return coll_gpu_neighbor_dispatch(&args, coll, mpi_call, sbuf, rbuf, request);
}

int mca_coll_gpu_neighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                    struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                    const int *rdispls, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, NEIGHBOR_ALLTOALLV);
        return COLL_GPU_PREV(module, neighbor_alltoallv, sbuf, scounts, sdispls, sdtype, rbuf,
                             rcounts, rdispls, rdtype, comm);
    }
    return coll_gpu_neighbor_alltoallv_classified(
        COLL_GPU_NEIGHBOR_ALLTOALLV, "MPI_Neighbor_alltoallv", sbuf, scounts, sdispls, sdtype, rbuf,
        rcounts, rdispls, rdtype, comm, NULL, base);
}

int mca_coll_gpu_ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                     struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                     const int *rdispls, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, INEIGHBOR_ALLTOALLV);
        return COLL_GPU_PREV(module, ineighbor_alltoallv, sbuf, scounts, sdispls, sdtype, rbuf,
                             rcounts, rdispls, rdtype, comm, request);
    }
    return coll_gpu_neighbor_alltoallv_classified(
        COLL_GPU_INEIGHBOR_ALLTOALLV, "MPI_Ineighbor_alltoallv", sbuf, scounts, sdispls, sdtype,
        rbuf, rcounts, rdispls, rdtype, comm, request, base);
}

/* ---- MPI_Neighbor_alltoallw and MPI_Ineighbor_alltoallw ---- */

static COLL_GPU_SLOW_PATH int coll_gpu_neighbor_alltoallw_classified(
    coll_gpu_coll_t coll, const char *mpi_call, const void *sbuf, const int *scounts,
    const MPI_Aint *sdispls, struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
    const MPI_Aint *rdispls, struct ompi_datatype_t *const *rdtypes,
    struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *base) {
    coll_gpu_neighbor_args_t args = {
        .module = (mca_coll_gpu_module_t *)base,
        .coll = COLL_GPU_NEIGHBOR_ALLTOALLW,
        .scounts = scounts,
        .sadispls = sdispls,
        .rcounts = rcounts,
        .radispls = rdispls,
        .sdtypes = sdtypes,
        .rdtypes = rdtypes,
        .comm = comm,
    };

    return coll_gpu_neighbor_dispatch(&args, coll, mpi_call, sbuf, rbuf, request);
}

int mca_coll_gpu_neighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                    struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                    const int *rcounts, const MPI_Aint *rdispls,
                                    struct ompi_datatype_t *const *rdtypes,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, NEIGHBOR_ALLTOALLW);
        return COLL_GPU_PREV(module, neighbor_alltoallw, sbuf, scounts, sdispls, sdtypes, rbuf,
                             rcounts, rdispls, rdtypes, comm);
    }
    return coll_gpu_neighbor_alltoallw_classified(
        COLL_GPU_NEIGHBOR_ALLTOALLW, "MPI_Neighbor_alltoallw", sbuf, scounts, sdispls, sdtypes,
        rbuf, rcounts, rdispls, rdtypes, comm, NULL, base);
}

int mca_coll_gpu_ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                     struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                     const int *rcounts, const MPI_Aint *rdispls,
                                     struct ompi_datatype_t *const *rdtypes,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *base) {
    mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;

    if (OPAL_LIKELY(coll_gpu_certainly_host(sbuf) && coll_gpu_certainly_host(rbuf))) {
        COLL_GPU_COUNT(calls_passthrough, INEIGHBOR_ALLTOALLW);
        return COLL_GPU_PREV(module, ineighbor_alltoallw, sbuf, scounts, sdispls, sdtypes, rbuf,
                             rcounts, rdispls, rdtypes, comm, request);
    }
    return coll_gpu_neighbor_alltoallw_classified(
        COLL_GPU_INEIGHBOR_ALLTOALLW, "MPI_Ineighbor_alltoallw", sbuf, scounts, sdispls, sdtypes,
        rbuf, rcounts, rdispls, rdtypes, comm, request, base);
}
