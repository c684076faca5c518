/*
 * Nonblocking collectives on device buffers: inputs are staged when the call
 * is posted, the previous module's nonblocking collective runs on the host
 * copies, and a completion callback on its request copies the results back
 * before the application can see the request complete.  Host copies are
 * private to the request (several may be outstanding on one communicator).
 */
#include "coll_gpu_staged.h"

#include <stdlib.h>

#include "ompi/errhandler/errcode-internal.h"
#include "ompi/request/request.h"

typedef struct {
    coll_gpu_stage_t stage;
    coll_gpu_buf_t recv;
    bool recv_out;
    const char *mpi_call;
    struct ompi_communicator_t *comm;
    /* A callback the previous module had set on the request, run after ours. */
    ompi_request_complete_fn_t next_cb;
    void *next_cb_data;
} coll_gpu_nb_t;

static int coll_gpu_nb_complete(ompi_request_t *request) {
    coll_gpu_nb_t *nb = (coll_gpu_nb_t *)request->req_complete_cb_data;
    ompi_request_complete_fn_t next_cb = nb->next_cb;
    int rc;

    if (nb->recv_out && MPI_SUCCESS == request->req_status.MPI_ERROR) {
        coll_gpu_stage_out(&nb->stage, &nb->recv);
    }
    rc = coll_gpu_stage_end(&nb->stage, nb->comm, nb->mpi_call);
    if (OMPI_SUCCESS != rc && MPI_SUCCESS == request->req_status.MPI_ERROR) {
        request->req_status.MPI_ERROR = ompi_errcode_get_mpi_code(rc);
    }
    request->req_complete_cb_data = nb->next_cb_data;
    free(nb);
    return (NULL != next_cb) ? next_cb(request) : 0;
}

int coll_gpu_staged_icall(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                          coll_gpu_call_t *call, ompi_request_t **request) {
    coll_gpu_nb_t *nb;
    ompi_request_t *req;
    int rc;

    (void)module;
    nb = calloc(1, sizeof(*nb));
    if (NULL == nb) {
        return MPI_ERR_NO_MEM;
    }
    nb->mpi_call = call->mpi_call;
    nb->comm = comm;
    /* No shared staging buffer: it may be in use by another request. */
    coll_gpu_stage_begin(&nb->stage, NULL, call->coll);
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "%s: staged (send %s, receive %s)", call->mpi_call,
                     call->send.on_device ? "device" : "host",
                     call->recv.on_device ? "device" : "host");

    if (OMPI_SUCCESS != coll_gpu_stage_in(&nb->stage, &call->send, true) ||
        OMPI_SUCCESS !=
            coll_gpu_stage_in(&nb->stage, &call->recv, call->recv_in || call->recv_holes)) {
        rc = coll_gpu_stage_end(&nb->stage, comm, call->mpi_call);
        free(nb);
        return rc;
    }
    rc = call->host_fn(call->send.host, call->recv.host, call->count, call->args, request);
    if (OMPI_SUCCESS != rc) {
        coll_gpu_stage_set_rc(&nb->stage, rc);
        rc = coll_gpu_stage_end(&nb->stage, comm, call->mpi_call);
        free(nb);
        return rc;
    }
    nb->recv = call->recv;
    nb->recv_out = call->recv_out;

    /* Chain in front of any callback the previous module set (coll/base
     * uses one to release datatypes and ops). */
    req = *request;
    nb->next_cb = req->req_complete_cb;
    nb->next_cb_data = req->req_complete_cb_data;
    req->req_complete_cb = NULL;
    /* Runs the callback at once if the request is already complete; its
     * status then travels in the request, not in this call's return. */
    (void)ompi_request_set_callback(req, coll_gpu_nb_complete, nb);
    return OMPI_SUCCESS;
}
