/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream-ordered MPI_Allreduce (coll_gpu_ext.h: MPIX_Stream_comm_create, MPIX_Allreduce_enqueue):
 * the collective is queued on the application's stream and the call returns at once.  Inside a
 * node one kernel of the device rows (one-shot or two-shot) on a device area per rank
 * (cuda_ipc), host buffers in one-shot pieces through a staging area; across nodes a host function
 * hands the call to the communicator's thread and the stream waits for its release; otherwise the
 * call synchronizes the stream and runs MPI_Allreduce.  The area, CUDA graphs, the fallbacks and
 * how a failed call reaches the peers: docs/nonblocking.md, "Stream-ordered allreduce".
 */
#include "coll_gpu_dispatch.h"
#define COLL_GPU_EXT_NO_MPIX_STREAM /* the component implements them */
#include "coll_gpu_alg.h"
#include "coll_gpu_ext.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_async.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_native_steps.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_team.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/errhandler/errhandler.h"
#include "opal/util/show_help.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    accel_stream_h stream;         /* the application's */
    mca_coll_gpu_module_t *module; /* NULL: the component does not run this comm's allreduce */
    bool unavailable;              /* the setup (collective) failed somewhere */
    /* across nodes: the calls run on the thread of net_comm (a duplicate of the stream
     * communicator), posted by host functions on the stream, which then waits for *release
     * (pinned host memory: cleared by the post, set by the thread) */
    bool threaded;
    MPI_Comm net_comm;
    mca_coll_gpu_module_t *net_module;
    uint32_t *release;
    uint32_t posts; /* calls posted so far (host functions of the stream only) */
    struct coll_gpu_stream_post *recorded; /* the posts captured into graphs */
    cgt_mem_t *mem;         /* per rank: the one-shot area (accel.h), then the staging area */
    accel_node_plan_t plan; /* every rank's area, as mapped here */
    char *stage;            /* this rank's staging area (plan.half bytes) */
    /* calls the host enqueued on the stream path so far (graph launches not counted), the same
     * on every rank: the numbers failures are reported by */
    uint64_t seq;
    /* failures to report (see the top): the number of the last failed call the thread saw
     * (across nodes), and per peer the last failed call already reported (size entries) */
    uint32_t thread_failed, thread_reported;
    uint64_t *peer_reported;
} coll_gpu_stream_ctx_t;

/* What a host function on the stream posts (across nodes): a call made once, or captured into
 * a graph and posted at every launch (then kept on the communicator's list until it is freed:
 * a graph must not be launched after its communicator is freed). */
typedef struct coll_gpu_stream_post {
    coll_gpu_stream_ctx_t *ctx;
    coll_gpu_async_job_t *job;
    bool recorded;
    struct coll_gpu_stream_post *next;
} coll_gpu_stream_post_t;

static int coll_gpu_stream_keyval = MPI_KEYVAL_INVALID;

/* Waits until every peer finished with this rank's area, then frees it (the communicator is
 * freed: collective; the application's stream must still exist, see coll_gpu_ext.h). */
static void coll_gpu_stream_ctx_free(coll_gpu_stream_ctx_t *ctx) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_team_t *team = (NULL != ctx->module) ? ctx->module->team : NULL;

    if (ctx->threaded) {
        /* the stream passed every release, so the thread is done with every call */
        (void)accel->stream_synchronize(ctx->stream);
        while (NULL != ctx->recorded) {
            coll_gpu_stream_post_t *post = ctx->recorded;

            ctx->recorded = post->next;
            coll_gpu_native_async_free(post->job);
            free(post);
        }
        (void)MPI_Comm_free(&ctx->net_comm); /* collective, as the stream communicator's free */
    }
    if (NULL != ctx->release) {
        (void)accel->mem_free(ctx->release);
    }
    if ((NULL != ctx->mem) && (NULL != team)) {
        /* this rank's stream is done with the peers' areas; then theirs with this one */
        (void)accel->stream_synchronize(ctx->stream);
        coll_gpu_kernel_quiesce(&ctx->plan);
        cgt_free(team->cgt, ctx->mem);
    }
    free(ctx->peer_reported);
    free(ctx);
}

static int coll_gpu_stream_delete_attr(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm;
    (void)keyval;
    (void)extra;
    coll_gpu_stream_ctx_free(value);
    return MPI_SUCCESS;
}

/* Across nodes (collective): the duplicate whose thread runs the calls, its native context,
 * the release flag, and host functions and waits on pinned host memory; false when some rank
 * has not got them. */
static bool coll_gpu_stream_setup_threaded(coll_gpu_stream_ctx_t *ctx,
                                           struct ompi_communicator_t *comm) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_fallback_t reason;
    coll_gpu_native_t *native = NULL;
    accel_stream_h probe = NULL;
    void *flag = NULL;
    int ok, rc;

    ok = (MPI_SUCCESS == MPI_Comm_dup(comm, &ctx->net_comm));
    if (ok && (mca_coll_gpu_allreduce == ctx->net_comm->c_coll->coll_allreduce)) {
        ctx->net_module = (mca_coll_gpu_module_t *)ctx->net_comm->c_coll->coll_allreduce_module;
    }
    /* collective on the duplicate, which every rank has (or the dup failed everywhere) */
    ok = ok && (NULL != ctx->net_module) &&
         coll_gpu_native_get(ctx->net_module, ctx->net_comm, COLL_GPU_NATIVE_DEVICE, &native,
                             &reason);
    if (ok) {
        /* its calls are the stream's, on device memory everywhere by the stream API's contract:
         * the promise of coll_gpu_memory_kinds_uniform, made for this duplicate only */
        ctx->net_module->kinds_promised = true;
    }
    ok = ok && (NULL != accel->stream_host_func) &&
         coll_gpu_native_async_start(ctx->net_module, ctx->net_comm) &&
         (ACCEL_OK == accel->mem_alloc(ACCEL_MEM_HOST_PINNED, sizeof(uint32_t), &flag));
    if (NULL != flag) {
        ctx->release = flag;
        *ctx->release = 1; /* no call outstanding */
        ok =
            ok && (ACCEL_OK == accel->stream_create(&probe)) &&
            (ACCEL_OK == accel->stream_wait_value32(probe, ctx->release, 1, ACCEL_WAIT_VALUE_EQ)) &&
            (ACCEL_OK == accel->stream_synchronize(probe));
        if (NULL != probe) {
            (void)accel->stream_destroy(probe);
        }
    }
    rc = COLL_GPU_PREV(ctx->module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if ((OMPI_SUCCESS != rc) || !ok) {
        if (NULL != ctx->release) {
            (void)accel->mem_free(ctx->release);
            ctx->release = NULL;
        }
        if (MPI_COMM_NULL != ctx->net_comm) {
            (void)MPI_Comm_free(&ctx->net_comm);
        }
        ctx->unavailable = true;
        return false;
    }
    ctx->threaded = true;
    COLL_GPU_VERBOSE(1,
                     "%s: stream-ordered allreduce across %d nodes, posted by the stream to the "
                     "thread of %s",
                     comm->c_name, ctx->module->team->nnodes, ctx->net_comm->c_name);
    return true;
}

/* The stream's host function: posts the call to the thread (host functions of one stream run
 * one at a time, in its order, so the count is the same on every rank). */
static void coll_gpu_stream_post(void *arg) {
    coll_gpu_stream_post_t *post = arg;
    uint32_t number = ++post->ctx->posts;

    coll_gpu_native_async_stream_post(post->job, number);
    if (!post->recorded) {
        free(post); /* the thread frees the job */
    }
}

/* This rank's part of a call it could not queue (not captured): the host waits until the
 * stream has posted every earlier call, then has the thread run this one (posted: true when its
 * host function is on the stream already) and waits for it.  The protocol stays that of the
 * other ranks, and the result is right unless the stream failed (the return) or the call did
 * (recorded by the thread). */
static int coll_gpu_stream_complete_here(coll_gpu_stream_ctx_t *ctx, coll_gpu_stream_post_t *post,
                                         bool posted) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    struct timespec pause = {0, 10000};
    int rc = (ACCEL_OK == accel->stream_synchronize(ctx->stream)) ? OMPI_SUCCESS : OMPI_ERROR;

    if (!posted) {
        coll_gpu_stream_post(post);
    }
    /* the call's own failure is the thread's to record, as on the other ranks */
    while (0 == __atomic_load_n(ctx->release, __ATOMIC_ACQUIRE)) {
        nanosleep(&pause, NULL);
    }
    return rc;
}

/* Across nodes: a host function posting the call to the thread, then the wait for its release,
 * queued on the stream (recorded there when capturing); false when the native path does not
 * take the call (the same answer on every rank: coll_gpu_native_eligible).  *why_p: what
 * failed, when something did. */
static bool coll_gpu_stream_enqueue_threaded(coll_gpu_stream_ctx_t *ctx, const void *sbuf,
                                             void *rbuf, int count, struct ompi_datatype_t *dtype,
                                             struct ompi_op_t *op, bool capturing, int *rc_p,
                                             const char **why_p) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    bool in_place = (MPI_IN_PLACE == sbuf);
    const void *bufs[2] = {rbuf, sbuf};
    coll_gpu_stream_post_t *post;
    coll_gpu_native_call_t call;
    accel_status_t status;

    if (!coll_gpu_native_eligible(ctx->net_module, ctx->net_comm, COLL_GPU_NCOLL_ALLREDUCE,
                                  COLL_GPU_NATIVE_DEVICE, count, dtype, op, bufs, in_place ? 1 : 2,
                                  false, true, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS != *rc_p) {
        return true;
    }
    if (coll_gpu_kernel_row(call.alg)) {
        /* its kernel would queue on the stream behind the wait for its own release (forced
         * device_hierarchical): the call is made after the stream's work, as a blocking one */
        return false;
    }
    call.sbuf = in_place ? rbuf : sbuf;
    call.rbuf = rbuf;
    call.count = (size_t)count;
    post = calloc(1, sizeof(*post));
    if (NULL != post) {
        post->ctx = ctx;
        post->recorded = capturing;
        post->job = coll_gpu_native_async_stream_job(ctx->net_module, ctx->net_comm, &call,
                                                     ctx->release, &ctx->thread_failed, capturing);
    }
    if ((NULL == post) || (NULL == post->job)) {
        free(post);
        *why_p = "the call's allocation";
        *rc_p = OMPI_ERR_OUT_OF_RESOURCE;
        if (!capturing) {
            /* the thread needs a job: the host runs the call instead, after the stream's */
            (void)accel->stream_synchronize(ctx->stream);
            coll_gpu_native_async_drain(ctx->net_module);
            *rc_p = coll_gpu_native_run_now(ctx->net_comm, &call);
        }
        return true;
    }
    status = accel->stream_host_func(ctx->stream, coll_gpu_stream_post, post);
    if ((ACCEL_OK == status) && capturing) {
        post->next = ctx->recorded; /* the graph may post it at any launch */
        ctx->recorded = post;
    }
    if (ACCEL_OK == status) {
        status = accel->stream_wait_value32(ctx->stream, ctx->release, 1, ACCEL_WAIT_VALUE_EQ);
        if ((ACCEL_OK != status) && !capturing) {
            *why_p = "the stream's wait for the call";
            *rc_p = coll_gpu_stream_complete_here(ctx, post, true);
            return true;
        }
    } else if (!capturing) {
        *why_p = "the stream's host function";
        *rc_p = coll_gpu_stream_complete_here(ctx, post, false);
        return true;
    } else {
        coll_gpu_native_async_free(post->job);
        free(post);
    }
    *rc_p = (ACCEL_OK == status) ? OMPI_SUCCESS : OMPI_ERROR;
    return true;
}

/* The area (collective, at MPIX_Stream_comm_create); false when some rank could not set it
 * up: every call falls back. */
static bool coll_gpu_stream_setup(coll_gpu_stream_ctx_t *ctx, struct ompi_communicator_t *comm) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    mca_coll_gpu_module_t *module = ctx->module;
    coll_gpu_fallback_t reason;
    coll_gpu_native_t *native = NULL;
    coll_gpu_team_t *team;
    void *zeros = NULL;
    size_t head;
    int ok, size, rc;

    ok = coll_gpu_native_get(module, comm, COLL_GPU_NATIVE_DEVICE, &native, &reason);
    /* every rank got here with the same answer (coll_gpu_native_get agrees) */
    if (!ok) {
        ctx->unavailable = true;
        return false;
    }
    team = native->team;
    if (team->nnodes > 1) {
        return coll_gpu_stream_setup_threaded(ctx, comm);
    }
    size = team->size;
    ctx->plan.nranks = size;
    ctx->plan.rank = team->rank;
    ctx->plan.half = native->half;
    if (1 == size) { /* a call is a copy (coll_gpu_stream_enqueue): no area, no peers */
        return true;
    }
    ctx->peer_reported = calloc((size_t)size, sizeof(*ctx->peer_reported));
    head = accel_node_head_bytes(size);
    zeros = calloc(1, head);
    /* collective whatever this rank's allocations did: every rank allocates, then all agree */
    ok = (size <= ACCEL_NODE_MAX_RANKS) && (NULL != accel->node_collective) &&
         (CGT_OK == cgt_alloc(team->cgt, head + 3 * ctx->plan.half, ACCEL_MEM_DEVICE, &ctx->mem));
    if (!ok) {
        ctx->mem = NULL;
    }
    ok = ok && (NULL != ctx->peer_reported) && (NULL != zeros);
    for (int p = 0; ok && (p < size); ++p) {
        ctx->plan.areas[p] = cgt_rmem_ptr(cgt_mem_peer(ctx->mem, p));
        ok = (NULL != ctx->plan.areas[p]);
    }
    /* flags and counters start at 0 */
    ok = ok && (ACCEL_OK == accel->memcpy(ctx->plan.areas[team->rank], zeros, head));
    if (ok) {
        ctx->stage = ctx->plan.areas[team->rank] + head + 2 * ctx->plan.half;
    }
    free(zeros);
    /* every rank's flags are zero before any rank's stream writes a peer's */
    rc = COLL_GPU_PREV(module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if ((OMPI_SUCCESS != rc) || !ok) {
        COLL_GPU_VERBOSE(1,
                         "%s: no stream-ordered allreduce (the device area or the accelerator's "
                         "one-shot allreduce is missing on some rank, or more than %d ranks)",
                         comm->c_name, ACCEL_NODE_MAX_RANKS);
        if (NULL != ctx->mem) {
            cgt_free(team->cgt, ctx->mem);
            ctx->mem = NULL;
        }
        ctx->unavailable = true;
        return false;
    }
    COLL_GPU_VERBOSE(1, "%s: stream-ordered allreduce on %d ranks, 2 x %zu bytes per rank",
                     comm->c_name, size, ctx->plan.half);
    return true;
}

/* The accelerator's one-shot allreduce of a piece on the stream (src NULL: without data). */
static accel_status_t coll_gpu_stream_one_shot(coll_gpu_stream_ctx_t *ctx, const void *src,
                                               void *dst, size_t count, accel_dtype_t dtype,
                                               accel_op_t op) {
    accel_node_call_t call = {ACCEL_NODE_ALLREDUCE_ONE_SHOT, src, dst, count, dtype, op, 0};

    return mca_coll_gpu_component.accel->node_collective(&ctx->plan, &call, ctx->stream);
}

/* Queues one piece of a call (at most a half) on the stream: the one-shot allreduce, through
 * the staging area for what is not device memory; *queued_p: whether the one-shot call was
 * (the peers count it), whatever failed after it. */
static accel_status_t coll_gpu_stream_enqueue_piece(coll_gpu_stream_ctx_t *ctx, const char *src,
                                                    char *dst, bool src_on_device,
                                                    bool dst_on_device, size_t count,
                                                    accel_dtype_t dtype, accel_op_t op,
                                                    bool *queued_p) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    size_t bytes = count * accel_dtype_size(dtype);
    accel_status_t status = ACCEL_OK;

    *queued_p = false;
    if (!src_on_device) {
        status = accel->memcpy_async(ctx->stage, src, bytes, ctx->stream);
        src = ctx->stage;
    }
    if (ACCEL_OK == status) {
        status =
            coll_gpu_stream_one_shot(ctx, src, dst_on_device ? dst : ctx->stage, count, dtype, op);
        *queued_p = (ACCEL_OK == status);
    }
    if ((ACCEL_OK == status) && !dst_on_device) {
        status = accel->memcpy_async(dst, ctx->stage, bytes, ctx->stream);
    }
    return status;
}

/* The node collective of a call of bytes on device buffers. */
static accel_node_kind_t coll_gpu_stream_kind(const coll_gpu_stream_ctx_t *ctx, size_t bytes) {
    return ((bytes <= COLL_GPU_DEVICE_ONE_SHOT_MAX) && (bytes <= ctx->plan.half))
               ? ACCEL_NODE_ALLREDUCE_ONE_SHOT
               : ACCEL_NODE_ALLREDUCE_TWO_SHOT;
}

/* Queues this rank's part of the call on the stream (see the top of the file).  Device buffers:
 * one kernel whatever the size, the device rows' one-shot up to COLL_GPU_DEVICE_ONE_SHOT_MAX and
 * two-shot above (in steps of a half inside the kernel; the same bits).  Host memory on either
 * side: one one-shot allreduce per piece of at most a half through the staging area, in order
 * (element-wise: the same sums; the pieces a function of the size, the same on every rank). */
static accel_status_t coll_gpu_stream_enqueue(coll_gpu_stream_ctx_t *ctx, const void *sbuf,
                                              void *rbuf, size_t count, accel_dtype_t dtype,
                                              accel_op_t op, bool capturing) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    const size_t esize = accel_dtype_size(dtype), per = ctx->plan.half / esize;
    bool src_on_device, dst_on_device;
    size_t done = 0;

    if (1 == ctx->plan.nranks) { /* the sum of one: a copy, where there is one */
        return (sbuf != rbuf) ? accel->memcpy_async(rbuf, sbuf, count * esize, ctx->stream)
                              : ACCEL_OK;
    }
    src_on_device = coll_gpu_on_device(sbuf);
    dst_on_device = coll_gpu_on_device(rbuf);
    if (src_on_device && dst_on_device) {
        accel_node_call_t call = {
            coll_gpu_stream_kind(ctx, count * esize), sbuf, rbuf, count, dtype, op, 0};
        accel_status_t status = accel->node_collective(&ctx->plan, &call, ctx->stream);

        if ((ACCEL_OK != status) && !capturing) {
            /* the peers wait for this rank's part: the call without data keeps them going */
            call.src = NULL;
            call.dst = NULL;
            (void)accel->node_collective(&ctx->plan, &call, ctx->stream);
        }
        return status;
    }
    for (; done < count; done += per) {
        size_t n = (count - done < per) ? count - done : per;
        bool queued;
        accel_status_t status = coll_gpu_stream_enqueue_piece(
            ctx, (const char *)sbuf + done * esize, (char *)rbuf + done * esize, src_on_device,
            dst_on_device, n, dtype, op, &queued);

        if (ACCEL_OK != status) {
            /* the peers wait for this rank's part of the pieces not queued: calls without data
             * keep them going (in a capture the graph is broken anyway) */
            for (done += queued ? per : 0; !capturing && (done < count); done += per) {
                n = (count - done < per) ? count - done : per;
                (void)coll_gpu_stream_one_shot(ctx, NULL, NULL, n, dtype, op);
            }
            return status;
        }
    }
    return ACCEL_OK;
}

static pthread_once_t coll_gpu_stream_keyval_once = PTHREAD_ONCE_INIT;

static void coll_gpu_stream_keyval_create(void) {
    (void)MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, coll_gpu_stream_delete_attr,
                                 &coll_gpu_stream_keyval, NULL);
}

/* The error of a stream call on comm: the help message, then comm's error handler. */
static int coll_gpu_stream_error(struct ompi_communicator_t *comm, int rc, const char *call,
                                 const char *what) {
    opal_show_help("help-mpi-coll-gpu.txt", "stream call", true, call, what);
    return OMPI_ERRHANDLER_INVOKE(comm, rc, call);
}

/* The accelerator's last error, in words, for a help message. */
static const char *coll_gpu_stream_accel_error(char *buf, size_t len) {
    const accel_error_t *e = accel_last_error();

    snprintf(buf, len, "the accelerator: %s failed: %s", (NULL != e && e->call) ? e->call : "?",
             (NULL != e && e->error) ? e->error : "?");
    return buf;
}

static int coll_gpu_stream_comm_create(MPI_Comm comm, void *stream, MPI_Comm *newcomm) {
    coll_gpu_stream_ctx_t *ctx;
    int rc;

    if (NULL == mca_coll_gpu_component.accel) {
        return coll_gpu_stream_error(comm, MPI_ERR_UNSUPPORTED_OPERATION, "MPIX_Stream_comm_create",
                                     "coll/gpu has no accelerator, so no stream to order calls on");
    }
    (void)pthread_once(&coll_gpu_stream_keyval_once, coll_gpu_stream_keyval_create);
    if (MPI_KEYVAL_INVALID == coll_gpu_stream_keyval) {
        return coll_gpu_stream_error(comm, MPI_ERR_INTERN, "MPIX_Stream_comm_create",
                                     "MPI_Comm_create_keyval failed");
    }
    rc = MPI_Comm_dup(comm, newcomm);
    if (MPI_SUCCESS != rc) {
        return rc;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (NULL == ctx) {
        (void)MPI_Comm_free(newcomm);
        return coll_gpu_stream_error(comm, MPI_ERR_NO_MEM, "MPIX_Stream_comm_create",
                                     "no memory for the stream communicator");
    }
    ctx->stream = (accel_stream_h)stream;
    ctx->net_comm = MPI_COMM_NULL;
    if (mca_coll_gpu_allreduce == (*newcomm)->c_coll->coll_allreduce) {
        ctx->module = (mca_coll_gpu_module_t *)(*newcomm)->c_coll->coll_allreduce_module;
    }
    rc = MPI_Comm_set_attr(*newcomm, coll_gpu_stream_keyval, ctx);
    if (MPI_SUCCESS != rc) {
        free(ctx);
        (void)MPI_Comm_free(newcomm);
        return rc;
    }
    /* Everything the calls need is set up now, collectively: at the first enqueue the stream
     * may be held by work the host releases only later, and setting up allocates and frees
     * device memory, which waits for every stream (cudaFree). */
    if (NULL != ctx->module) {
        (void)coll_gpu_stream_setup(ctx, *newcomm);
    } else {
        ctx->unavailable = true;
    }
    return MPI_SUCCESS;
}

/* Tells the peers that call c failed here (one node: their streams went on with this rank's
 * flags, so their results of c are undefined). */
static void coll_gpu_stream_tell_failure(coll_gpu_stream_ctx_t *ctx, uint64_t c) {
    coll_gpu_team_t *team = ctx->module->team;
    unsigned slot = COLL_GPU_TEAM_SLOT_STREAM_FAILED0(team->size) + (unsigned)team->rank;

    for (int p = 0; p < team->size; ++p) {
        if (p != team->rank) {
            (void)cgt_signal(team->cgt, p, slot, c);
        }
    }
}

/* A failure of this stream call or an earlier one not reported yet on this rank: MPI_SUCCESS,
 * or the error (its help message names the rank and the call), once per failure.  A peer ahead
 * of this rank may already have failed a later call: that one waits for this rank's call of
 * the same number (each rank reports a failure at that call or the one after). */
static int coll_gpu_stream_reported(coll_gpu_stream_ctx_t *ctx, struct ompi_communicator_t *comm) {
    uint32_t failed = __atomic_load_n(&ctx->thread_failed, __ATOMIC_ACQUIRE);
    char why[200];

    if (NULL == ctx->module) {
        return MPI_SUCCESS;
    }
    if (failed != ctx->thread_reported) {
        ctx->thread_reported = failed;
        snprintf(why, sizeof(why),
                 "stream-ordered call %u on this communicator failed (its outcome, agreed by every "
                 "rank across the nodes): its result is undefined",
                 failed);
        return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue", why);
    }
    for (int p = 0; (NULL != ctx->peer_reported) && (p < ctx->module->team->size); ++p) {
        coll_gpu_team_t *team = ctx->module->team;
        uint64_t c = __atomic_load_n(
            cgt_signal_addr(team->cgt, COLL_GPU_TEAM_SLOT_STREAM_FAILED0(team->size) + (unsigned)p),
            __ATOMIC_ACQUIRE);

        if ((c > ctx->peer_reported[p]) && (c <= ctx->seq)) {
            ctx->peer_reported[p] = c;
            snprintf(why, sizeof(why),
                     "rank %d's stream-ordered call %llu on this communicator failed there (an "
                     "accelerator error at its enqueue): the result of that call is undefined "
                     "on every rank",
                     p, (unsigned long long)c);
            return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue", why);
        }
    }
    return MPI_SUCCESS;
}

static int coll_gpu_stream_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype,
                                     MPI_Op op, MPI_Comm comm) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    coll_gpu_stream_ctx_t *ctx = NULL;
    const char *why = "";
    accel_dtype_t adt;
    accel_op_t aop;
    ptrdiff_t lb, extent;
    size_t bytes = 0;
    char err[320];
    bool capturing = false;
    int flag = 0, rc;

    if ((MPI_KEYVAL_INVALID == coll_gpu_stream_keyval) || (MPI_COMM_NULL == comm) ||
        (MPI_SUCCESS != MPI_Comm_get_attr(comm, coll_gpu_stream_keyval, &ctx, &flag)) || !flag) {
        return coll_gpu_stream_error(
            (MPI_COMM_NULL == comm) ? MPI_COMM_WORLD : comm, MPI_ERR_COMM, "MPIX_Allreduce_enqueue",
            "the communicator is not a stream communicator (MPIX_Stream_comm_create)");
    }
    /* A stream being captured into a CUDA graph records the call's work, to run at every
     * launch of the graph: only the one-node path can be recorded (its call numbers are kept in
     * device memory); the others need the host (a synchronization, the communicator's thread) */
    if ((NULL != c->accel) && (NULL != c->accel->stream_is_capturing) &&
        (ACCEL_OK != c->accel->stream_is_capturing(ctx->stream, &capturing))) {
        return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue",
                                     coll_gpu_stream_accel_error(err, sizeof(err)));
    }
    /* the same answer on every rank: count, datatype and op match (MPI), so does the node */
    if (NULL == ctx->module) {
        why = "coll/gpu does not run this communicator's collectives";
    } else if ((count <= 0) || !coll_gpu_reduce_op_lookup(dtype, op, &adt, &aop) ||
               (OMPI_SUCCESS != ompi_datatype_get_extent(dtype, &lb, &extent)) || (0 != lb) ||
               ((size_t)extent != accel_dtype_size(adt))) {
        why = "a datatype and op the kernels do not take";
    } else if (ctx->unavailable) {
        why = "the communicator has no stream area (device scratch, the one-shot allreduce, "
              "stream memory operations across nodes)";
    } else if (ctx->threaded) {
        const char *failed = NULL;
        int rc = OMPI_SUCCESS;

        if (coll_gpu_stream_enqueue_threaded(ctx, sbuf, rbuf, count, dtype, op, capturing, &rc,
                                             &failed)) {
            if (!capturing) {
                ++ctx->seq;
                coll_gpu_count_native(COLL_GPU_ALLREDUCE, (size_t)count * (size_t)extent);
            }
            COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                             "MPIX_Allreduce_enqueue on %s: %d x %zu bytes: %s, run by the "
                             "communicator's thread across %d nodes%s%s%s",
                             comm->c_name, count, (size_t)extent,
                             capturing          ? "recorded into the stream's CUDA graph"
                             : (NULL != failed) ? "not queued, the host saw it through"
                                                : "queued on the stream",
                             ctx->module->team->nnodes, (NULL != failed) ? " (" : "",
                             (NULL != failed) ? failed : "", (NULL != failed) ? " failed)" : "");
            if (OMPI_SUCCESS == rc) {
                return coll_gpu_stream_reported(ctx, comm);
            }
            if (OMPI_ERR_OUT_OF_RESOURCE == rc) {
                return coll_gpu_stream_error(comm, MPI_ERR_NO_MEM, "MPIX_Allreduce_enqueue",
                                             "no memory for the call");
            }
            return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue",
                                         coll_gpu_stream_accel_error(err, sizeof(err)));
        }
        why = "the native path does not take it across nodes";
    } else {
        bytes = (size_t)count * (size_t)extent;
    }
    if (('\0' != why[0]) && capturing) {
        snprintf(err, sizeof(err),
                 "its stream is being captured into a CUDA graph, and this call cannot be "
                 "recorded there (%s): nothing was queued",
                 why);
        return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue", err);
    }
    if ('\0' != why[0]) {
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "MPIX_Allreduce_enqueue on %s: %d elements: the stream is synchronized "
                         "and MPI_Allreduce runs (%s)",
                         comm->c_name, count, why);
        if (ACCEL_OK != c->accel->stream_synchronize(ctx->stream)) {
            return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue",
                                         coll_gpu_stream_accel_error(err, sizeof(err)));
        }
        rc = MPI_Allreduce(sbuf, rbuf, count, dtype, op, comm);
        return (MPI_SUCCESS == rc) ? coll_gpu_stream_reported(ctx, comm) : rc;
    }
    if (!capturing) {
        ++ctx->seq;
        coll_gpu_count_native(COLL_GPU_ALLREDUCE, bytes);
    }
    {
        size_t per = ctx->plan.half / (size_t)extent, pieces = ((size_t)count + per - 1) / per;
        char how[96] = "";

        if ((ctx->plan.nranks > 1) && (pieces > 1)) { /* large calls only: no cost to small */
            if (coll_gpu_on_device((MPI_IN_PLACE == sbuf) ? rbuf : sbuf) &&
                coll_gpu_on_device(rbuf)) {
                snprintf(how, sizeof(how), " as one %s kernel, in steps of at most %zu bytes",
                         (ACCEL_NODE_ALLREDUCE_ONE_SHOT == coll_gpu_stream_kind(ctx, bytes))
                             ? "one-shot"
                             : "two-shot",
                         per * (size_t)extent);
            } else {
                snprintf(how, sizeof(how), " as %zu one-shot calls of at most %zu bytes", pieces,
                         per * (size_t)extent);
            }
        }
        if (capturing) {
            COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                             "MPIX_Allreduce_enqueue on %s: %d x %zu bytes: recorded into the "
                             "stream's CUDA graph%s",
                             comm->c_name, count, (size_t)extent, how);
        } else {
            COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                             "MPIX_Allreduce_enqueue on %s: %d x %zu bytes: queued on the "
                             "stream%s (call %llu)",
                             comm->c_name, count, (size_t)extent, how,
                             (unsigned long long)ctx->seq);
        }
    }
    if (ACCEL_OK != coll_gpu_stream_enqueue(ctx, (MPI_IN_PLACE == sbuf) ? rbuf : sbuf, rbuf,
                                            (size_t)count, adt, aop, capturing)) {
        if (!capturing) {
            coll_gpu_stream_tell_failure(ctx, ctx->seq);
        }
        return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue",
                                     coll_gpu_stream_accel_error(err, sizeof(err)));
    }
    return capturing ? MPI_SUCCESS : coll_gpu_stream_reported(ctx, comm);
}

static const coll_gpu_ext_stream_api_t coll_gpu_stream_api = {
    .version = COLL_GPU_EXT_STREAM_API_VERSION,
    .comm_create = coll_gpu_stream_comm_create,
    .allreduce_enqueue = coll_gpu_stream_allreduce,
};

__attribute__((visibility("default"))) const coll_gpu_ext_stream_api_t *
coll_gpu_ext_stream_api(void) {
    return &coll_gpu_stream_api;
}
