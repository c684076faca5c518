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
#include "coll_gpu_dispatch.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/topo/topo.h"

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

/* One host collective whatever the buffers: never pipelined. */
static bool coll_gpu_neighbor_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                                    int *rc_p) {
    bool in_place = (MPI_IN_PLACE == a->sbuf);
    int indegree, outdegree;
    coll_gpu_layout_t slayout, rlayout;
    coll_gpu_coll_t base = coll_gpu_coll_blocking(a->coll);

    (void)single_call;
    if (COLL_GPU_ALLTOALLW == base) {
        indegree = outdegree = coll_gpu_args_blocks(a);
    } else if (OMPI_SUCCESS !=
               (*rc_p = coll_gpu_neighbor_degrees(a->comm, &indegree, &outdegree))) {
        return true; /* not a topology communicator: what Open MPI's MPI layer says too */
    }
    call->recv_in = in_place;
    call->recv_out = true;
    call->recv_holes = true;
    switch (base) {
    case COLL_GPU_NEIGHBOR_ALLGATHER:
    case COLL_GPU_NEIGHBOR_ALLTOALL: {
        bool alltoall = (COLL_GPU_NEIGHBOR_ALLTOALL == base);

        coll_gpu_buf_init(&call->send, a->sbuf, a->sdtype,
                          (size_t)a->scount * (size_t)(alltoall ? outdegree : 1));
        coll_gpu_buf_init(&call->recv, a->rbuf, a->rdtype, (size_t)a->rcount * (size_t)indegree);
        /* a cartesian neighbor may be MPI_PROC_NULL: its block is left as it was */
        call->recv_holes = OMPI_COMM_IS_CART(a->comm) ||
                           coll_gpu_has_holes(a->rdtype, (size_t)a->rcount * (size_t)indegree);
        break;
    }
    case COLL_GPU_NEIGHBOR_ALLGATHERV:
        coll_gpu_buf_init(&call->send, a->sbuf, a->sdtype, (size_t)a->scount);
        rlayout = (coll_gpu_layout_t){
            .n = indegree, .counts = a->rcounts, .displs = a->rdispls, .dtype = a->rdtype};
        coll_gpu_buf_init_layout(&call->recv, a->rbuf, &rlayout);
        break;
    default: /* the v- and w-forms of alltoall */
        slayout = (coll_gpu_layout_t){.n = outdegree,
                                      .counts = a->scounts,
                                      .displs = a->sdispls,
                                      .adispls = a->asdispls,
                                      .displs_in_bytes = (NULL != a->sdtypes),
                                      .dtype = a->sdtype,
                                      .dtypes = a->sdtypes};
        rlayout = (coll_gpu_layout_t){.n = indegree,
                                      .counts = a->rcounts,
                                      .displs = a->rdispls,
                                      .adispls = a->ardispls,
                                      .displs_in_bytes = (NULL != a->rdtypes),
                                      .dtype = a->rdtype,
                                      .dtypes = a->rdtypes};
        if (in_place) {
            call->send.user = (void *)a->sbuf; /* MPI_IN_PLACE: the send arguments are ignored */
        } else {
            coll_gpu_buf_init_layout(&call->send, a->sbuf, &slayout);
        }
        coll_gpu_buf_init_layout(&call->recv, a->rbuf, &rlayout);
        break;
    }
    *rc_p = coll_gpu_staged_run(a->module, a->comm, call, a->request, true);
    return true;
}

static const coll_gpu_ops_t coll_gpu_neighbor_ops = {
    .on_device = coll_gpu_args_on_device,
    .stage = coll_gpu_neighbor_stage,
};

COLL_GPU_DEFINE_ENTRIES(alltoallw, ALLTOALLW, ALLTOALLW, &coll_gpu_neighbor_ops, NULL, NULL)
COLL_GPU_DEFINE_ENTRIES(neighbor_allgather, NEIGHBOR_ALLGATHER, BLOCKS, &coll_gpu_neighbor_ops,
                        NULL, NULL)
COLL_GPU_DEFINE_ENTRIES(neighbor_allgatherv, NEIGHBOR_ALLGATHERV, GATHERV_ALL,
                        &coll_gpu_neighbor_ops, NULL, NULL)
COLL_GPU_DEFINE_ENTRIES(neighbor_alltoall, NEIGHBOR_ALLTOALL, BLOCKS, &coll_gpu_neighbor_ops, NULL,
                        NULL)
COLL_GPU_DEFINE_ENTRIES(neighbor_alltoallv, NEIGHBOR_ALLTOALLV, ALLTOALLV, &coll_gpu_neighbor_ops,
                        NULL, NULL)
COLL_GPU_DEFINE_ENTRIES(neighbor_alltoallw, NEIGHBOR_ALLTOALLW, NEIGHBOR_ALLTOALLW,
                        &coll_gpu_neighbor_ops, NULL, NULL)
