/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking collectives on device buffers.  Inputs are staged when the
 * call is posted and the previous module's nonblocking collective runs on the
 * host copies ("inner" request).  The application gets a request of ours,
 * which completes only once the results are back on the device: a progress
 * callback watches the inner requests and does the copy-back.  Host copies
 * are private to the request: several may be outstanding on a communicator.
 *
 * Our request is an ompi_coll_base_nbc_request_t because that is what Open
 * MPI's MPI layer takes a collective request to be (4.1 retains user
 * datatypes and ops in it after the call returns).  The inner request is
 * never handed out and its callbacks are left alone.
 */
#include "coll_gpu_staged.h"

#include <string.h>

#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

typedef struct coll_gpu_nb_request {
    ompi_coll_base_nbc_request_t super;
    ompi_request_t *inner;
    coll_gpu_stage_t stage;
    coll_gpu_buf_t recv;
    bool recv_out;
    const char *mpi_call;
    struct ompi_communicator_t *comm;
    bool freed; /* the application freed it before it completed */
    struct coll_gpu_nb_request *next;
} coll_gpu_nb_request_t;

static void coll_gpu_nb_request_construct(coll_gpu_nb_request_t *req) {
    req->inner = NULL;
    memset(&req->stage, 0, sizeof(req->stage));
    memset(&req->recv, 0, sizeof(req->recv));
    req->recv_out = false;
    req->mpi_call = NULL;
    req->comm = NULL;
    req->freed = false;
    req->next = NULL;
}

static OBJ_CLASS_INSTANCE(coll_gpu_nb_request_t, ompi_coll_base_nbc_request_t,
                          coll_gpu_nb_request_construct, NULL);

/* Requests whose inner request has not completed yet. */
static struct {
    opal_mutex_t lock;
    coll_gpu_nb_request_t *head;
    bool progress_registered;
    bool initialized;
} coll_gpu_nb_pending;

static void coll_gpu_nb_release(coll_gpu_nb_request_t *req) {
    OMPI_REQUEST_FINI(&req->super.super);
    OBJ_RELEASE(req);
}

/* Copies the results back and completes the application's request. */
static void coll_gpu_nb_finish(coll_gpu_nb_request_t *req) {
    int inner_status = req->inner->req_status.MPI_ERROR;
    bool release;
    int rc;

    if (req->recv_out && MPI_SUCCESS == inner_status) {
        coll_gpu_stage_out(&req->stage, &req->recv);
    }
    (void)ompi_request_free(&req->inner);
    coll_gpu_stage_set_rc(&req->stage, inner_status);
    rc = coll_gpu_stage_end(&req->stage, req->comm, req->mpi_call);

    req->super.super.req_status.MPI_ERROR = rc;
    OPAL_THREAD_LOCK(&coll_gpu_nb_pending.lock);
    release = req->freed;
    OPAL_THREAD_UNLOCK(&coll_gpu_nb_pending.lock);
    ompi_request_complete(&req->super.super, true);
    if (release) {
        coll_gpu_nb_release(req);
    }
}

static int coll_gpu_nb_progress(void) {
    coll_gpu_nb_request_t *done = NULL, **link, *req;
    int count = 0;

    if (NULL == coll_gpu_nb_pending.head) {
        return 0;
    }
    OPAL_THREAD_LOCK(&coll_gpu_nb_pending.lock);
    link = &coll_gpu_nb_pending.head;
    while (NULL != (req = *link)) {
        if (REQUEST_COMPLETE(req->inner)) {
            *link = req->next;
            req->next = done;
            done = req;
        } else {
            link = &req->next;
        }
    }
    OPAL_THREAD_UNLOCK(&coll_gpu_nb_pending.lock);

    /* Outside the lock: the copy-back can take a while. */
    while (NULL != (req = done)) {
        done = req->next;
        coll_gpu_nb_finish(req);
        ++count;
    }
    return count;
}

static int coll_gpu_nb_request_free(ompi_request_t **request_p) {
    coll_gpu_nb_request_t *req = (coll_gpu_nb_request_t *)*request_p;
    bool release;

    /* Freed before completion (MPI_Request_free): the progress callback
     * releases it once the copy-back is done. */
    OPAL_THREAD_LOCK(&coll_gpu_nb_pending.lock);
    release = REQUEST_COMPLETE(&req->super.super);
    req->freed = !release;
    OPAL_THREAD_UNLOCK(&coll_gpu_nb_pending.lock);
    if (release) {
        coll_gpu_nb_release(req);
    }
    *request_p = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int coll_gpu_nb_request_cancel(ompi_request_t *request, int complete) {
    (void)request;
    (void)complete;
    /* MPI: collective requests cannot be cancelled. */
    return MPI_ERR_REQUEST;
}

/* Progresses until no request is pending: every one has its results back and is complete
 * (released, when the application freed it). */
static void coll_gpu_nb_drain(void) {
    for (;;) {
        bool empty;

        OPAL_THREAD_LOCK(&coll_gpu_nb_pending.lock);
        empty = (NULL == coll_gpu_nb_pending.head);
        OPAL_THREAD_UNLOCK(&coll_gpu_nb_pending.lock);
        if (empty) {
            return;
        }
        opal_progress();
    }
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes before anything else is finalized (MPI-4.0
 * section 11.2.4): where a request the application freed before it completed (MPI_Request_free
 * is legal on a pending collective) gets completed, results copied back, while every peer can
 * still progress its part. */
static int coll_gpu_nb_finalize_hook(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    coll_gpu_nb_drain();
    return MPI_SUCCESS;
}

static void coll_gpu_nb_enqueue(coll_gpu_nb_request_t *req) {
    bool first;

    OPAL_THREAD_LOCK(&coll_gpu_nb_pending.lock);
    req->next = coll_gpu_nb_pending.head;
    coll_gpu_nb_pending.head = req;
    first = !coll_gpu_nb_pending.progress_registered;
    if (first) {
        coll_gpu_nb_pending.progress_registered = true;
        opal_progress_register(coll_gpu_nb_progress);
    }
    OPAL_THREAD_UNLOCK(&coll_gpu_nb_pending.lock);
    if (first) {
        int keyval;

        /* through the MPI interface: Open MPI's attribute internals are not exported */
        if ((MPI_SUCCESS == PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                                    coll_gpu_nb_finalize_hook, &keyval, NULL)) &&
            (MPI_SUCCESS != PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL))) {
            (void)PMPI_Comm_free_keyval(&keyval);
        }
    }
}

void coll_gpu_nonblocking_init(void) {
    OBJ_CONSTRUCT(&coll_gpu_nb_pending.lock, opal_mutex_t);
    coll_gpu_nb_pending.head = NULL;
    coll_gpu_nb_pending.progress_registered = false;
    coll_gpu_nb_pending.initialized = true;
}

void coll_gpu_nonblocking_fini(void) {
    if (!coll_gpu_nb_pending.initialized) {
        return;
    }
    if (coll_gpu_nb_pending.progress_registered) {
        coll_gpu_nb_drain(); /* nothing left after MPI_Finalize's hook; ompi_info: never any */
        opal_progress_unregister(coll_gpu_nb_progress);
        coll_gpu_nb_pending.progress_registered = false;
    }
    OBJ_DESTRUCT(&coll_gpu_nb_pending.lock);
    coll_gpu_nb_pending.initialized = false;
}

int coll_gpu_staged_icall(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                          coll_gpu_call_t *call, ompi_request_t **request) {
    coll_gpu_nb_request_t *req;
    ompi_request_t *ompi_req;
    int rc;

    (void)module;
    req = OBJ_NEW(coll_gpu_nb_request_t);
    if (NULL == req) {
        coll_gpu_out_of_host_memory(sizeof(*req)); /* the peers post theirs */
    }
    ompi_req = &req->super.super;
    OMPI_REQUEST_INIT(ompi_req, false);
    ompi_req->req_type = OMPI_REQUEST_COLL;
    ompi_req->req_state = OMPI_REQUEST_ACTIVE;
    ompi_req->req_mpi_object.comm = comm;
    ompi_req->req_free = coll_gpu_nb_request_free;
    ompi_req->req_cancel = coll_gpu_nb_request_cancel;
    req->mpi_call = call->mpi_call;
    req->comm = comm;

    /* No shared staging buffer: it may be in use by another request. */
    coll_gpu_stage_begin(&req->stage, NULL, call->coll);
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "%s: staged (send %s, receive %s)", call->mpi_call,
                     call->send.on_device ? "device" : "host",
                     call->recv.on_device ? "device" : "host");
    if (OMPI_SUCCESS != coll_gpu_stage_in(&req->stage, &call->send, true) ||
        OMPI_SUCCESS !=
            coll_gpu_stage_in(&req->stage, &call->recv, call->recv_in || call->recv_holes)) {
        goto err_release;
    }
    rc = call->host_fn(call->send.host, call->recv.host, call->count, call->args, &req->inner);
    if (OMPI_SUCCESS != rc) {
        coll_gpu_stage_set_rc(&req->stage, rc);
        goto err_release;
    }
    req->recv = call->recv;
    req->recv_out = call->recv_out;
    *request = ompi_req;

    if (REQUEST_COMPLETE(req->inner)) {
        coll_gpu_nb_finish(req);
    } else {
        coll_gpu_nb_enqueue(req);
    }
    return OMPI_SUCCESS;

err_release:
    rc = coll_gpu_stage_end(&req->stage, comm, call->mpi_call);
    coll_gpu_nb_release(req);
    return rc;
}
