/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking and persistent collectives on device buffers: inputs staged at post (persistent:
 * host copies and the previous module's persistent request made at init, inputs copied at every
 * MPI_Start), the previous module's request on the host copies, a progress callback that copies
 * the results back and completes our request.  Native nonblocking calls (coll_gpu_native_async.c)
 * complete here too.  docs/nonblocking.md.
 *
 * Our request is an ompi_coll_base_nbc_request_t because that is what Open MPI's MPI layer takes
 * a collective request to be (4.1 retains user datatypes and ops in it after the call returns).
 * The inner request is never handed out and its callbacks are left alone.
 */
#include "coll_gpu_nonblocking.h"
#include "coll_gpu_native_async.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

typedef struct coll_gpu_nb_request {
    ompi_coll_base_nbc_request_t super;
    ompi_request_t *inner;
    coll_gpu_async_job_t *job; /* a native call run by the communicator's thread */
    int job_rc;
    coll_gpu_stage_t stage;
    coll_gpu_buf_t send; /* persistent: copied in at every start */
    coll_gpu_buf_t recv;
    bool recv_in; /* persistent: the receive buffer is copied in at every start too */
    bool recv_out;
    bool persistent;
    /* a native persistent call: every start posts it (inner), ctx freed with the request */
    coll_gpu_persistent_start_fn_t start;
    void *start_ctx;
    const char *mpi_call;
    struct ompi_communicator_t *comm;
    /* a persistent call posted later (coll_gpu_nonblocking_later): its starts go behind the
     * calls queued before them, or fail as its init did (job_rc) */
    coll_gpu_queue_start_fn_t queue_start;
    void *queue_ctx;
    bool forwards; /* completes with its inner request's outcome, then frees it */
    bool freed;    /* the application freed it before it completed */
    bool released;
    struct coll_gpu_nb_request *next;
} coll_gpu_nb_request_t;

static void coll_gpu_nb_request_construct(coll_gpu_nb_request_t *req) {
    req->inner = NULL;
    req->job = NULL;
    req->job_rc = OMPI_SUCCESS;
    memset(&req->stage, 0, sizeof(req->stage));
    memset(&req->send, 0, sizeof(req->send));
    memset(&req->recv, 0, sizeof(req->recv));
    req->recv_in = false;
    req->recv_out = false;
    req->persistent = false;
    req->start = NULL;
    req->start_ctx = NULL;
    req->mpi_call = NULL;
    req->comm = NULL;
    req->queue_start = NULL;
    req->queue_ctx = NULL;
    req->forwards = false;
    req->freed = false;
    req->released = false;
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
    req->released = true; /* a call still to be posted holds its own reference */
    if (NULL != req->start) {
        free(req->start_ctx); /* its inner request went when the last start completed */
    } else if (req->persistent) {
        /* its host copies and inner request lived as long as it did; any error was reported
         * when the start that had it completed */
        if (NULL != req->inner) {
            (void)ompi_request_free(&req->inner);
        }
        (void)coll_gpu_stage_end(&req->stage, req->comm, req->mpi_call);
    }
    OMPI_REQUEST_FINI(&req->super.super);
    OBJ_RELEASE(req);
}

/* Copies the results back and completes the application's request. */
static void coll_gpu_nb_finish(coll_gpu_nb_request_t *req) {
    int inner_status;
    bool release;
    int rc;

    if (req->forwards && (NULL != req->inner)) {
        /* a native persistent call's start, a call posted later: the posted call's outcome */
        rc = req->inner->req_status.MPI_ERROR;
        (void)ompi_request_free(&req->inner);
        goto complete;
    }
    if (NULL != req->job || NULL == req->inner) {
        /* native: the thread wrote the results where they belong */
        if (NULL != req->job) {
            coll_gpu_native_async_free(req->job);
            req->job = NULL;
        }
        rc = req->job_rc;
        goto complete;
    }
    inner_status = req->inner->req_status.MPI_ERROR;
    if (req->recv_out && MPI_SUCCESS == inner_status) {
        coll_gpu_stage_out(&req->stage, &req->recv);
    }
    coll_gpu_stage_set_rc(&req->stage, inner_status);
    if (req->persistent) {
        /* the inner request is inactive again, as MPI_Wait would leave it */
        req->inner->req_state = OMPI_REQUEST_INACTIVE;
        rc = coll_gpu_stage_report(&req->stage, req->comm, req->mpi_call);
        req->stage.rc = OMPI_SUCCESS; /* the next start's own */
        req->stage.error.call = NULL;
    } else {
        (void)ompi_request_free(&req->inner);
        rc = coll_gpu_stage_end(&req->stage, req->comm, req->mpi_call);
    }

complete:
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
    bool running = false;
    int count = 0;

    if (NULL == coll_gpu_nb_pending.head) {
        return 0;
    }
    OPAL_THREAD_LOCK(&coll_gpu_nb_pending.lock);
    link = &coll_gpu_nb_pending.head;
    while (NULL != (req = *link)) {
        if ((NULL != req->job) ? coll_gpu_native_async_done(req->job, &req->job_rc)
                               : REQUEST_COMPLETE(req->inner)) {
            *link = req->next;
            req->next = done;
            done = req;
        } else {
            running = running || (NULL != req->job);
            link = &req->next;
        }
    }
    OPAL_THREAD_UNLOCK(&coll_gpu_nb_pending.lock);
    if (running && (NULL == done)) {
        /* a communicator's thread is running a call this rank waits for: a rank spinning in
         * MPI_Wait must not starve it of its core */
        sched_yield();
    }

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
void coll_gpu_nonblocking_drain(void) {
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
    coll_gpu_nonblocking_drain();
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
        coll_gpu_at_finalize(coll_gpu_nb_finalize_hook);
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
        coll_gpu_nonblocking_drain(); /* nothing left after MPI_Finalize's hook; ompi_info: never
                                         any */
        opal_progress_unregister(coll_gpu_nb_progress);
        coll_gpu_nb_pending.progress_registered = false;
    }
    OBJ_DESTRUCT(&coll_gpu_nb_pending.lock);
    coll_gpu_nb_pending.initialized = false;
}

/* A request whose inner request was posted: completed now if that is done, else pending. */
static void coll_gpu_nb_track(coll_gpu_nb_request_t *req) {
    if (REQUEST_COMPLETE(req->inner)) {
        coll_gpu_nb_finish(req);
    } else {
        coll_gpu_nb_enqueue(req);
    }
}

/* A call posted later that cannot run: its request completes with rc (a persistent one is
 * inactive again). */
static void coll_gpu_nb_later_fail(coll_gpu_nb_request_t *req, int rc) {
    req->job_rc = rc;
    coll_gpu_nb_finish(req);
}

/* Posts the call of a request its start made active (inner), or waits for its init's post;
 * the post's error. */
static int coll_gpu_nb_start_inner(coll_gpu_nb_request_t *req) {
    int rc;

    if (NULL != req->start) {
        /* posted as MPI_I<coll> would be, by every rank at this start */
        req->inner = NULL;
        rc = req->start(req->start_ctx, &req->inner);
        if ((OMPI_SUCCESS == rc) && (NULL == req->inner)) {
            rc = OMPI_ERR_BAD_PARAM;
        }
    } else if ((NULL != req->queue_start) && req->queue_start(req->queue_ctx, &req->super.super)) {
        /* behind the calls queued before it, its init among them: posted in their order
         * (coll_gpu_nonblocking_start_later) */
        return OMPI_SUCCESS;
    } else if (NULL == req->inner) {
        /* its init failed */
        coll_gpu_nb_later_fail(req, req->job_rc);
        return OMPI_SUCCESS;
    } else {
        coll_gpu_stage_refresh(&req->stage, &req->send);
        if (req->recv_in) {
            coll_gpu_stage_refresh(&req->stage, &req->recv);
        }
        /* started whatever happened above: the peers start theirs.  Through the MPI interface,
         * as the application would: the inner request may be a no-op (a communicator of one),
         * which only MPI_Start knows how to start. */
        rc = PMPI_Start(&req->inner);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    coll_gpu_nb_track(req);
    return OMPI_SUCCESS;
}

/* MPI_Start(all) of persistent requests of ours. */
static int coll_gpu_nb_request_start(size_t count, ompi_request_t **requests) {
    for (size_t i = 0; i < count; ++i) {
        coll_gpu_nb_request_t *req = (coll_gpu_nb_request_t *)requests[i];
        int rc;

        req->super.super.req_state = OMPI_REQUEST_ACTIVE;
        req->super.super.req_complete = REQUEST_PENDING;
        req->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
        rc = coll_gpu_nb_start_inner(req);
        if (OMPI_SUCCESS != rc) {
            req->super.super.req_state = OMPI_REQUEST_INACTIVE;
            req->super.super.req_complete = REQUEST_COMPLETED;
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* A request of ours (persistent or not), not yet handed out. */
static coll_gpu_nb_request_t *coll_gpu_nb_request_alloc(struct ompi_communicator_t *comm,
                                                        const char *mpi_call, bool persistent) {
    coll_gpu_nb_request_t *req = OBJ_NEW(coll_gpu_nb_request_t);
    ompi_request_t *ompi_req;

    if (NULL == req) {
        coll_gpu_out_of_host_memory(sizeof(*req)); /* the peers post theirs */
    }
    ompi_req = &req->super.super;
    OMPI_REQUEST_INIT(ompi_req, persistent);
    ompi_req->req_type = OMPI_REQUEST_COLL;
    ompi_req->req_mpi_object.comm = comm;
    ompi_req->req_free = coll_gpu_nb_request_free;
    ompi_req->req_cancel = coll_gpu_nb_request_cancel;
    if (persistent) {
        ompi_req->req_start = coll_gpu_nb_request_start;
    } else {
        ompi_req->req_state = OMPI_REQUEST_ACTIVE;
    }
    req->persistent = persistent;
    req->mpi_call = mpi_call;
    req->comm = comm;
    return req;
}

/* A staged request of ours for call, its staging begun. */
static coll_gpu_nb_request_t *coll_gpu_nb_request_new(struct ompi_communicator_t *comm,
                                                      coll_gpu_call_t *call, bool persistent) {
    coll_gpu_nb_request_t *req = coll_gpu_nb_request_alloc(comm, call->mpi_call, persistent);

    /* No shared staging buffer: it may be in use by another request. */
    coll_gpu_stage_begin(&req->stage, NULL, call->coll);
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "%s: staged (send %s, receive %s)", call->mpi_call,
                     call->send.on_device ? "device" : "host",
                     call->recv.on_device ? "device" : "host");
    return req;
}

int coll_gpu_staged_init(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         coll_gpu_call_t *call, ompi_request_t **request) {
    coll_gpu_nb_request_t *req = coll_gpu_nb_request_new(comm, call, true);
    int rc;

    (void)module;
    /* host copies now, their content at every start */
    if (OMPI_SUCCESS != coll_gpu_stage_in(&req->stage, &call->send, false) ||
        OMPI_SUCCESS != coll_gpu_stage_in(&req->stage, &call->recv, false)) {
        goto err_release;
    }
    rc = call->host_fn(call->send.host, call->recv.host, call->count, call->args, &req->inner);
    if (OMPI_SUCCESS != rc) {
        req->inner = NULL;
        coll_gpu_stage_set_rc(&req->stage, rc);
        goto err_release;
    }
    req->send = call->send;
    req->recv = call->recv;
    req->recv_in = call->recv_in || call->recv_holes;
    req->recv_out = call->recv_out;
    *request = &req->super.super;
    return OMPI_SUCCESS;

err_release:
    req->persistent = false; /* nothing to free but the host copies */
    rc = coll_gpu_stage_end(&req->stage, comm, call->mpi_call);
    coll_gpu_nb_release(req);
    return rc;
}

int coll_gpu_staged_icall(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                          coll_gpu_call_t *call, ompi_request_t **request) {
    coll_gpu_nb_request_t *req = coll_gpu_nb_request_new(comm, call, false);
    ompi_request_t *ompi_req = &req->super.super;
    int rc;

    (void)module;
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
    coll_gpu_nb_track(req);
    return OMPI_SUCCESS;

err_release:
    rc = coll_gpu_stage_end(&req->stage, comm, call->mpi_call);
    coll_gpu_nb_release(req);
    return rc;
}

int coll_gpu_nonblocking_persistent(struct ompi_communicator_t *comm, const char *mpi_call,
                                    coll_gpu_persistent_start_fn_t start, void *ctx,
                                    ompi_request_t **request) {
    coll_gpu_nb_request_t *req = coll_gpu_nb_request_alloc(comm, mpi_call, true);

    req->start = start;
    req->start_ctx = ctx;
    req->forwards = true;
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                     "%s: persistent, every MPI_Start posts the nonblocking form (native)",
                     mpi_call);
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

int coll_gpu_nonblocking_native(struct ompi_communicator_t *comm, const char *mpi_call,
                                coll_gpu_async_job_t *job, int rc, ompi_request_t **request) {
    coll_gpu_nb_request_t *req = coll_gpu_nb_request_alloc(comm, mpi_call, false);

    req->job = job;
    req->job_rc = rc;
    *request = &req->super.super;
    if ((NULL == job) || coll_gpu_native_async_done(job, &req->job_rc)) {
        coll_gpu_nb_finish(req);
    } else {
        coll_gpu_nb_enqueue(req);
    }
    return OMPI_SUCCESS;
}

ompi_request_t *coll_gpu_nonblocking_later(struct ompi_communicator_t *comm, const char *mpi_call,
                                           coll_gpu_queue_start_fn_t queue_start, void *ctx) {
    bool persistent = (NULL != queue_start);
    coll_gpu_nb_request_t *req = coll_gpu_nb_request_alloc(comm, mpi_call, persistent);

    req->queue_start = queue_start;
    req->queue_ctx = ctx;
    req->forwards = !persistent;
    OBJ_RETAIN(req); /* the post's reference: the application may free it before */
    return &req->super.super;
}

void coll_gpu_nonblocking_posted(ompi_request_t *later, ompi_request_t *inner, int rc) {
    coll_gpu_nb_request_t *req = (coll_gpu_nb_request_t *)later;

    if ((OMPI_SUCCESS == rc) && (NULL == inner)) {
        rc = OMPI_ERR_BAD_PARAM;
    }
    if (req->released) {
        /* a persistent request freed before its init was posted */
        if (NULL != inner) {
            (void)ompi_request_free(&inner);
        }
    } else if (!req->persistent) {
        req->inner = inner;
        if (OMPI_SUCCESS != rc) {
            coll_gpu_nb_later_fail(req, rc);
        } else {
            coll_gpu_nb_track(req);
        }
    } else {
        if ((OMPI_SUCCESS != rc) && (NULL != inner)) {
            (void)ompi_request_free(&inner);
        }
        req->inner = inner;
        req->job_rc = rc;
    }
    OBJ_RELEASE(req);
}

int coll_gpu_nonblocking_start_later(ompi_request_t *later) {
    coll_gpu_nb_request_t *req = (coll_gpu_nb_request_t *)later;
    int rc = req->job_rc;

    /* started by MPI_Start already (an MPI_Waitall may wait on it: its state is left alone) */
    if (OMPI_SUCCESS == rc) {
        rc = (NULL != req->inner) ? PMPI_Start(&req->inner) : OMPI_ERR_BAD_PARAM;
    }
    if (OMPI_SUCCESS != rc) {
        coll_gpu_nb_later_fail(req, rc);
    } else {
        coll_gpu_nb_track(req);
    }
    OBJ_RELEASE(req);
    return OMPI_SUCCESS;
}
