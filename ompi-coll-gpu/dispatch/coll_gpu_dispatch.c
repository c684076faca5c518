/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dispatch path every intercepted call takes once its certainly-host test failed
 * (coll_gpu_dispatch.h).
 */
#include "coll_gpu_dispatch.h"
#include "coll_gpu_alg.h"
#include "coll_gpu_deferral.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_async.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_native_steps.h"
#include "coll_gpu_signature.h"

#include <stdlib.h>
#include <string.h>

bool coll_gpu_args_on_device(const coll_gpu_args_t *a) {
    return coll_gpu_on_device(a->sbuf) || coll_gpu_on_device(a->rbuf);
}

bool coll_gpu_args_on_device_root_recv(const coll_gpu_args_t *a) {
    return (coll_gpu_args_not_root_side(a) && coll_gpu_on_device(a->sbuf)) ||
           (coll_gpu_args_is_root(a) && coll_gpu_on_device(a->rbuf));
}

bool coll_gpu_args_on_device_root_send(const coll_gpu_args_t *a) {
    return (coll_gpu_args_is_root(a) && coll_gpu_on_device(a->sbuf)) ||
           (coll_gpu_args_not_root_side(a) && coll_gpu_on_device(a->rbuf));
}

void coll_gpu_args_stage_recv_blocks(const coll_gpu_args_t *a, coll_gpu_call_t *call, int size,
                                     bool blocks) {
    if (blocks) {
        coll_gpu_buf_init_blocks(&call->recv, a->rbuf, a->rdtype, a->rcounts, a->rdispls, size);
        call->recv_holes = true;
    } else {
        coll_gpu_buf_init(&call->recv, a->rbuf, a->rdtype, (size_t)a->rcount * (size_t)size);
        call->recv_holes = coll_gpu_has_holes(a->rdtype, (size_t)a->rcount * (size_t)size);
    }
    call->recv_in = (MPI_IN_PLACE == a->sbuf);
    call->recv_out = true;
}

bool coll_gpu_args_native_blocks(coll_gpu_args_t *a, coll_gpu_ncoll_t ncoll, int send_blocks,
                                 coll_gpu_native_kind_t kind, bool kinds_mixed, int *rc_p) {
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const void *bufs[2] = {rbuf, sbuf};
    bool in_place = (MPI_IN_PLACE == sbuf);
    int count = a->rcount;
    coll_gpu_native_call_t call;

    if (!coll_gpu_native_eligible(a->module, a->comm, ncoll, kind, count, a->rdtype, NULL, bufs,
                                  coll_gpu_sig_bufs_checked(kind, in_place ? 1 : 2), kinds_mixed,
                                  NULL != a->request, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_sig_buf_t send = {0}, recv;

        if (!in_place) {
            coll_gpu_sig_buf_init(&call, &send, sbuf, a->sdtype, send_blocks, a->scount, NULL, NULL,
                                  NULL, NULL, true);
        }
        /* in place, this rank's own block is read from the receive buffer */
        coll_gpu_sig_buf_init(&call, &recv, rbuf, a->rdtype, ompi_comm_size(a->comm), count, NULL,
                              NULL, NULL, NULL, in_place);
        coll_gpu_sig_buf_receive(&call, &recv);
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = recv.data;
        call.count = coll_gpu_signature_bytes(count, a->rdtype);
        *rc_p = coll_gpu_native_launch(a, &call, &send, &recv, recv.bytes);
    }
    return true;
}

/* A blocking native call runs after the communicator's queued calls (they run on the same
 * scratch): those waiting for its setup posted, then the thread's run. */
static void coll_gpu_dispatch_after_queued(mca_coll_gpu_module_t *module) {
    coll_gpu_deferral_flush(module);
    coll_gpu_native_async_drain(module);
}

COLL_GPU_SLOW_PATH int coll_gpu_native_host_buffers(const coll_gpu_entry_t *entry,
                                                    coll_gpu_args_t *a) {
    bool mixed = false;
    int rc;

    if ((NULL != entry->native) && !OMPI_COMM_IS_INTER(a->comm)) {
        if (OPAL_UNLIKELY(mca_coll_gpu_component.check_memory_kinds) &&
            (NULL != mca_coll_gpu_component.accel)) {
            mixed = coll_gpu_memory_kinds_mixed(a->module, a->comm, a->coll, false);
        }
        coll_gpu_dispatch_after_queued(a->module);
        if (entry->native(a, COLL_GPU_NATIVE_HOST, mixed, &rc)) {
            return rc;
        }
    }
    coll_gpu_count_add(&mca_coll_gpu_component.calls_passthrough[a->coll], 1);
    coll_gpu_board_settle(a->module);
    return entry->prev(a->sbuf, a->rbuf, a->count, a, NULL);
}

/* A persistent call run natively: its arguments, the nonblocking form MPI_Start posts, and its
 * plan (the blocks of a v-collective's plan follow it in the same allocation: freed with it). */
typedef struct {
    coll_gpu_args_t args;
    const coll_gpu_entry_t *started;
    coll_gpu_plan_t plan;
} coll_gpu_persistent_t;

/* A planned start: the recorded call, posted as it is (counted as a call of the persistent
 * form); false when it cannot be (the native path gave up on the communicator, no thread):
 * the start then takes the dispatch. */
static bool coll_gpu_plan_start(const coll_gpu_persistent_t *p, ompi_request_t **inner, int *rc_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_plan_t *plan = &p->plan;
    coll_gpu_async_job_t *job;

    if (!plan->ready || !coll_gpu_native_nonblocking_ready(p->args.module)) {
        return false;
    }
    job = coll_gpu_native_async_submit(p->args.module, p->args.comm, &plan->call, NULL, NULL);
    if (NULL == job) {
        return false;
    }
    coll_gpu_count_native(p->args.coll, plan->bytes);
    coll_gpu_count_add(&c->algorithm_calls[plan->ncoll][plan->alg], 1);
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "%s on %s: MPI_Start of the plan: %s",
                     coll_gpu_coll_name(p->args.coll), p->args.comm->c_name, plan->call.alg->name);
    *rc_p =
        coll_gpu_nonblocking_native(p->args.comm, plan->call.mpi_call, job, OMPI_SUCCESS, inner);
    return true;
}

/* MPI_Start of a native persistent call: its plan; the first start (or one the plan cannot
 * serve) takes the nonblocking form through the dispatch, the same decision on every rank as
 * for MPI_I<coll> (native on the communicator's thread, else staged, the outcome in *inner),
 * counted as a call of the persistent form, and records the plan. */
static int coll_gpu_persistent_start(void *ctx, ompi_request_t **inner) {
    coll_gpu_persistent_t *p = ctx;
    coll_gpu_args_t a = p->args;
    int rc;

    if (coll_gpu_plan_start(p, inner, &rc)) {
        return rc;
    }
    a.request = inner;
    a.persistent = false;
    a.info = NULL;
    a.plan = p->plan.ready ? NULL : &p->plan;
    return coll_gpu_dispatch(p->started, &a);
}

/* A persistent call whose nonblocking form runs natively now (the conditions every rank shares:
 * native nonblocking calls on, no agreement asked for, the communicator's device scratch set
 * up; and device memory, which every rank passes): a request whose every MPI_Start
 * posts that form.  False (nothing done) for the staged persistent request instead. */
static bool coll_gpu_persistent_native(const coll_gpu_entry_t *entry, coll_gpu_args_t *a,
                                       bool on_device, int *rc_p) {
    size_t nblocks = 4 * (size_t)ompi_comm_size(a->comm); /* an alltoallv's four arrays */
    coll_gpu_persistent_t *p;

    /* (where no call set the native context up yet, the starts' posts may: the decision is
     * then the same on every rank at every start) */
    if ((NULL == entry->started) || (NULL == entry->started->native) || !on_device ||
        !(coll_gpu_native_nonblocking_ready(a->module) ||
          (coll_gpu_native_nonblocking_allowed(a->module) &&
           coll_gpu_native_undecided(a->module)))) {
        return false;
    }
    p = calloc(1, sizeof(*p) + nblocks * sizeof(size_t));
    if (NULL == p) {
        return false; /* staged: it needs no more than this either way */
    }
    p->args = *a;
    p->started = entry->started;
    p->plan.blocks = (size_t *)(void *)(p + 1);
    *rc_p = coll_gpu_nonblocking_persistent(a->comm, coll_gpu_coll_name(a->coll),
                                            coll_gpu_persistent_start, p, a->request);
    return true;
}

/* Records call in plan when a start can post it as it is: no packed temporary (the user's
 * buffers serve: nothing to unpack either, call->unpack being recv), no entry error. */
static void coll_gpu_plan_record(coll_gpu_plan_t *plan, const coll_gpu_native_call_t *call,
                                 const struct coll_gpu_sig_buf *send,
                                 const struct coll_gpu_sig_buf *recv, size_t bytes) {
    int size = call->native->team->size;

    if (((NULL != send) && ((NULL != send->temp) || send->owns_counts)) ||
        ((NULL != recv) && ((NULL != recv->temp) || recv->owns_counts)) ||
        ((NULL != call->unpack) && (call->unpack != recv)) || (ACCEL_OK != call->entry_status)) {
        return;
    }
    for (int t = 0; t < COLL_GPU_NCOLL_NUM; ++t) {
        const coll_gpu_alg_table_t *table = coll_gpu_alg_tables[t];

        if ((call->alg >= table->algs) && (call->alg < table->algs + table->num_algs)) {
            plan->ncoll = t;
            plan->alg = COLL_GPU_ALG_FIRST_NATIVE + (int)(call->alg - table->algs);
        }
    }
    plan->call = *call;
    if (NULL != call->posted_blocks) {
        /* a v-collective's blocks: the plan's own copy */
        memcpy(plan->blocks, call->posted_blocks,
               (size_t)call->posted_arrays * (size_t)size * sizeof(size_t));
        plan->call.counts = plan->blocks;
        plan->call.displs = plan->blocks + size;
        if (4 == call->posted_arrays) {
            plan->call.scounts = plan->blocks + 2 * size;
            plan->call.sdispls = plan->blocks + 3 * size;
        }
    }
    plan->call.posted_blocks = NULL;
    plan->call.unpack = NULL;
    plan->bytes = bytes;
    plan->ready = true;
}

/* A call queued behind its communicator's native setup (coll_gpu_deferral.h), as posted. */
typedef struct {
    coll_gpu_args_t args;
    const coll_gpu_entry_t *entry;
} coll_gpu_deferred_t;

static int coll_gpu_dispatch_deferred(void *call, ompi_request_t **inner) {
    coll_gpu_deferred_t *d = call;

    d->args.request = inner;
    d->args.deferred_post = true; /* counted, its board word given, at its post */
    return coll_gpu_dispatch(d->entry, &d->args);
}

/* Queues a nonblocking or persistent call where its communicator has a queue, or where it
 * starts one: a nonblocking call with a native form on device memory. */
static bool coll_gpu_dispatch_defer(const coll_gpu_entry_t *entry, coll_gpu_args_t *a,
                                    bool on_device) {
    bool starts = on_device && !a->persistent && (NULL != entry->native) &&
                  coll_gpu_deferral_may_start(a->module, a->comm);
    coll_gpu_deferred_t call;

    if (!starts && (NULL == a->module->deferral)) {
        return false;
    }
    call.args = *a;
    call.entry = entry;
    return coll_gpu_deferral_take(a->module, a->comm, starts, coll_gpu_dispatch_deferred, &call,
                                  sizeof(call), coll_gpu_coll_name(a->coll), a->persistent,
                                  a->request);
}

int coll_gpu_dispatch(const coll_gpu_entry_t *entry, coll_gpu_args_t *a) {
    const coll_gpu_ops_t *ops = entry->ops;
    bool on_device = ops->on_device(a), single_call = false, passed;
    /* An intercommunicator's call on device memory is one host collective of the modules below
     * (coll/inter, coll/basic, libnbc: none reads device memory where Open MPI is not
     * CUDA-aware) on host copies, laid out by ops->stage under MPI's intercommunicator rules
     * (coll_gpu_args_is_root, _blocks).  No native algorithm, no pipeline, no agreement on
     * memory kinds: whatever each rank passes, every rank meets in that host collective. */
    bool inter = OMPI_COMM_IS_INTER(a->comm);
    coll_gpu_call_t call;
    int rc;

    if ((NULL != a->request) && !a->deferred_post) {
        /* a nonblocking or persistent call never waits for its peers' words: its word is
         * host, whatever it runs (coll_gpu_board.h) */
        coll_gpu_board_settle(a->module);
        /* nor for the native setup it may start: queued behind it, or behind the calls queued
         * before it */
        if (!inter && coll_gpu_dispatch_defer(entry, a, on_device)) {
            return OMPI_SUCCESS;
        }
    }
    if (a->persistent && !inter && coll_gpu_persistent_native(entry, a, on_device, &rc)) {
        return rc;
    }

    if (ops->local || inter) {
        /* no peer to agree with (an intercommunicator's: none needed); one host collective */
        single_call = inter;
        passed = coll_gpu_ipass_through(a->coll, on_device);
    } else {
        if ((NULL != entry->native) && (NULL == a->request) && !on_device &&
            mca_coll_gpu_component.host_buffers) {
            return coll_gpu_native_host_buffers(entry, a);
        }
        /* blocking calls may agree on memory kinds; nonblocking ones never do (a blocking
         * agreement inside them could deadlock against collectives on other communicators)
         * and never pipeline */
        passed = coll_gpu_classified_pass_through(a->module, a->comm, a->coll, on_device,
                                                  a->request, &single_call);
    }
    if (passed) {
        if (NULL == a->request) {
            coll_gpu_board_settle(a->module); /* (a nonblocking call's word: above) */
        }
        return entry->prev(a->sbuf, a->rbuf, a->count, a, a->request);
    }
    /* a nonblocking call never agrees on memory kinds: the ranks pass device memory, as for a
     * blocking call without coll_gpu_check_memory_kinds */
    if ((NULL != entry->native) && !inter) {
        if (NULL == a->request) {
            coll_gpu_dispatch_after_queued(a->module);
        }
        if (entry->native(a, COLL_GPU_NATIVE_DEVICE, (NULL == a->request) && single_call, &rc)) {
            return rc;
        }
    }

    coll_gpu_call_init(&call, a->coll, coll_gpu_coll_name(a->coll), entry->prev, a);
    /* what the previous module's function is called with; an element-wise collective's
     * staged path may cut it in chunks (call.elementwise) */
    call.count = a->count;
    call.dtype = a->dtype;
    call.persistent = a->persistent;
    if (ops->stage(a, &call, single_call, &rc)) {
        return rc;
    }
    if ((NULL == a->request) && !single_call && call.elementwise &&
        coll_gpu_pipeline_applies(call.dtype, call.count)) {
        /* a pipeline is several host collectives: only where every rank stages */
        if (coll_gpu_board_all_stage(a->module, a->comm)) {
            rc = coll_gpu_staged_run(a->module, a->comm, &call, NULL, false);
            return coll_gpu_board_close(a->module, a->comm, call.mpi_call, rc);
        }
        single_call = true;
    }
    /* (a blocking call's word: the staged path's agreement on its copies in) */
    return coll_gpu_staged_run(a->module, a->comm, &call, a->request, single_call);
}

int coll_gpu_native_launch(coll_gpu_args_t *a, coll_gpu_native_call_t *call,
                           struct coll_gpu_sig_buf *send, struct coll_gpu_sig_buf *recv,
                           size_t bytes) {
    coll_gpu_async_job_t *job = NULL;
    int rc;

    coll_gpu_count_native(a->coll, bytes);
    if (NULL != a->plan) {
        coll_gpu_plan_record(a->plan, call, send, recv, bytes);
    }
    if (NULL != a->request) {
        job = coll_gpu_native_async_submit(a->module, a->comm, call, send, recv);
        if (OPAL_LIKELY(NULL != job)) {
            return coll_gpu_nonblocking_native(a->comm, call->mpi_call, job, OMPI_SUCCESS,
                                               a->request);
        }
        /* no thread: run it here, after the calls queued before it; the peers' threads take
         * part as in any other */
        coll_gpu_native_async_drain(a->module);
    }
    rc = ((NULL == a->request) && coll_gpu_kernel_proxied(call))
             ? coll_gpu_native_async_run(a->module, a->comm, call)
             : coll_gpu_native_run_now(a->comm, call);
    if (NULL != recv) {
        coll_gpu_sig_buf_fini(call, recv);
    }
    if (NULL != send) {
        coll_gpu_sig_buf_fini(call, send);
    }
    free(call->posted_blocks);
    return (NULL != a->request)
               ? coll_gpu_nonblocking_native(a->comm, call->mpi_call, NULL, rc, a->request)
               : rc;
}
