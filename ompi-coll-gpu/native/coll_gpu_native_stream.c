/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream-ordered MPI_Allreduce (coll_gpu_ext.h: MPIX_Stream_comm_create, MPIX_Allreduce_enqueue):
 * the whole collective is queued on the application's stream and the call returns at once; the
 * host takes no part in it after the enqueue.
 *
 * Each stream communicator has a symmetric device area per rank, mapped by every rank of the
 * node (cuda_ipc): flags (READY[p], DONE[p]: 32-bit, written by rank p's stream), two parity
 * halves and an output area.  Call c (the c-th enqueued on the communicator, the same on every
 * rank), parity c & 1, is this stream work on every rank:
 *
 *   wait DONE[p] >= c - 2 for every peer p    (its reads of my half of this parity are over)
 *   copy the input into my half of parity
 *   write READY[me] = c into every peer's flags
 *   wait READY[p] >= c for every peer p       (every input of call c has landed)
 *   reduce every rank's half, in rank order, into the output (one_shot's order and bits)
 *   write DONE[me] = c into every peer's flags
 *   copy the output to the receive buffer      (only when it is not device memory)
 *
 * Waits compare as 32-bit sequence numbers (they wrap).  What decides whether a call runs this
 * way is the same on every rank (count, datatype, op, the communicator's node, the message's
 * size against the area): MPI requires count, datatype and op to match; memory kinds are each
 * rank's own business (any kind is copied in and out on the stream).  Otherwise, and where the
 * component does not run the communicator's collectives, the call synchronizes the stream and
 * runs MPI_Allreduce (the host then waits: a fallback, said at verbose 10).
 *
 * Across nodes the stream cannot do the network steps: the call goes to the communicator's
 * thread (the native nonblocking calls' one, coll_gpu_native_async.c), gated by two flags in
 * pinned host memory: the stream writes gate[0] = c once the call's inputs are there and waits
 * for gate[1] >= c; the thread waits for gate[0] >= c, runs the native allreduce (its UCX steps
 * and device copies), and stores gate[1] = c.  The host returns at once there too.
 *
 * Errors of the queued work surface where the stream's do (its synchronize); an error at
 * enqueue still writes this rank's flags, so that the peers' streams do not wait forever.  Their
 * results of that call are then undefined, and they are told: the failing rank stores the
 * call's number in every peer's stream-failure slot of the team (a host signal), across nodes
 * the communicator's thread stores the number of a call whose agreed outcome was an error; each
 * rank's next stream call on the communicator (queued as usual, the protocol stays in step)
 * returns MPI_ERR_OTHER with a help message naming the rank and the call, once per failure.
 */
#include "coll_gpu_dispatch.h"
#define COLL_GPU_EXT_NO_MPIX_STREAM /* the component implements them */
#include "coll_gpu_ext.h"
#include "coll_gpu_native.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_team.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/errhandler/errhandler.h"
#include "opal/util/show_help.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The flags' bytes at the start of a rank's area (2 x size 32-bit flags, rounded up). */
#define COLL_GPU_STREAM_FLAGS_ALIGN 256

typedef struct {
    accel_stream_h stream;         /* the application's */
    mca_coll_gpu_module_t *module; /* NULL: the component does not run this comm's allreduce */
    bool unavailable;              /* the setup (collective) failed somewhere */
    /* across nodes: the communicator's thread runs the calls, between two flags in pinned host
     * memory: [0] written by the stream (the inputs are there), [1] by the thread (done) */
    bool threaded;
    uint32_t *gates;
    cgt_mem_t *mem; /* flags, two halves, output: per rank, device memory */
    char **peer;    /* every rank's area, mapped here */
    size_t flags_bytes, half;
    uint64_t seq; /* calls enqueued on the stream path so far, the same on every rank */
    /* failures to report (see the top): the number of the last failed call the thread saw
     * (across nodes), and per peer the last failed call already reported (size entries) */
    uint32_t thread_failed, thread_reported;
    uint64_t *peer_reported;
} coll_gpu_stream_ctx_t;

static int coll_gpu_stream_keyval = MPI_KEYVAL_INVALID;

static uint32_t *coll_gpu_stream_flag(const coll_gpu_stream_ctx_t *ctx, int owner, int index) {
    return (uint32_t *)(void *)ctx->peer[owner] + index;
}
static char *coll_gpu_stream_half(const coll_gpu_stream_ctx_t *ctx, int owner, uint64_t c) {
    return ctx->peer[owner] + ctx->flags_bytes + (c & 1) * ctx->half;
}

/* Waits until every peer finished with this rank's area, then frees it (the communicator is
 * freed: collective; the application's stream must still exist, see coll_gpu_ext.h). */
static void coll_gpu_stream_ctx_free(coll_gpu_stream_ctx_t *ctx) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_team_t *team = (NULL != ctx->module) ? ctx->module->team : NULL;
    accel_stream_h waiter = NULL;

    if (NULL != ctx->gates) {
        /* the stream passed every release, so the thread is done with every call */
        (void)accel->stream_synchronize(ctx->stream);
        (void)accel->mem_free(ctx->gates);
    }
    if ((NULL != ctx->mem) && (NULL != team)) {
        int size = team->size, me = team->rank;

        /* this rank's stream is done with the peers' areas; then theirs with this one */
        (void)accel->stream_synchronize(ctx->stream);
        if (ACCEL_OK == accel->stream_create(&waiter)) {
            for (int p = 0; p < size; ++p) {
                if (p != me) {
                    (void)accel->stream_wait_value32(waiter,
                                                     coll_gpu_stream_flag(ctx, me, size + p),
                                                     (uint32_t)ctx->seq, ACCEL_WAIT_VALUE_GEQ);
                }
            }
            (void)accel->stream_synchronize(waiter);
            (void)accel->stream_destroy(waiter);
        }
        cgt_free(team->cgt, ctx->mem);
    }
    free(ctx->peer);
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

/* Across nodes (collective): the gate flags, and stream memory operations on pinned host
 * memory; false when some rank has not got them. */
static bool coll_gpu_stream_setup_threaded(coll_gpu_stream_ctx_t *ctx,
                                           struct ompi_communicator_t *comm) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    accel_stream_h probe = NULL;
    void *gates = NULL;
    int ok, rc;

    ok = (ACCEL_OK == accel->mem_alloc(ACCEL_MEM_HOST_PINNED, 2 * sizeof(uint32_t), &gates));
    if (ok) {
        ctx->gates = gates;
        ctx->gates[0] = ctx->gates[1] = 0;
        ok = (ACCEL_OK == accel->stream_create(&probe)) &&
             (ACCEL_OK == accel->stream_write_value32(probe, &ctx->gates[0], 0)) &&
             (ACCEL_OK == accel->stream_synchronize(probe));
        if (NULL != probe) {
            (void)accel->stream_destroy(probe);
        }
    }
    rc = COLL_GPU_PREV(ctx->module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if ((OMPI_SUCCESS != rc) || !ok) {
        if (NULL != ctx->gates) {
            (void)accel->mem_free(ctx->gates);
            ctx->gates = NULL;
        }
        ctx->unavailable = true;
        return false;
    }
    ctx->threaded = true;
    COLL_GPU_VERBOSE(1,
                     "%s: stream-ordered allreduce across %d nodes, run by the "
                     "communicator's thread between stream flags",
                     comm->c_name, ctx->module->team->nnodes);
    return true;
}

/* Across nodes: the call goes to the communicator's thread, which starts it once the stream
 * wrote the gate and releases the stream when it is done; false when the native path does not
 * take it (the same answer on every rank: coll_gpu_native_eligible). */
static bool coll_gpu_stream_enqueue_threaded(coll_gpu_stream_ctx_t *ctx,
                                             struct ompi_communicator_t *comm, const void *sbuf,
                                             void *rbuf, int count, struct ompi_datatype_t *dtype,
                                             struct ompi_op_t *op, int *rc_p) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    bool in_place = (MPI_IN_PLACE == sbuf);
    const void *bufs[2] = {rbuf, sbuf};
    coll_gpu_native_call_t call;
    uint32_t c;

    if (!coll_gpu_native_eligible(ctx->module, comm, COLL_GPU_NCOLL_ALLREDUCE,
                                  COLL_GPU_NATIVE_DEVICE, count, dtype, op, bufs, in_place ? 1 : 2,
                                  false, true, &call, rc_p)) {
        return false;
    }
    if (OMPI_SUCCESS != *rc_p) {
        return true;
    }
    call.sbuf = in_place ? rbuf : sbuf;
    call.rbuf = rbuf;
    call.count = (size_t)count;
    c = (uint32_t)++ctx->seq;
    if (NULL == coll_gpu_native_async_submit_gated(ctx->module, comm, &call, &ctx->gates[0], c,
                                                   &ctx->gates[1], c, &ctx->thread_failed)) {
        /* no thread: the host waits for the stream and runs it now */
        *rc_p = (ACCEL_OK == accel->stream_synchronize(ctx->stream))
                    ? coll_gpu_native_run_now(comm, &call)
                    : OMPI_ERROR;
        __atomic_store_n(&ctx->gates[1], c, __ATOMIC_RELEASE);
        return true;
    }
    if ((ACCEL_OK != accel->stream_write_value32(ctx->stream, &ctx->gates[0], c)) ||
        (ACCEL_OK !=
         accel->stream_wait_value32(ctx->stream, &ctx->gates[1], c, ACCEL_WAIT_VALUE_GEQ))) {
        /* the thread must still start: the peers run the call */
        __atomic_store_n(&ctx->gates[0], c, __ATOMIC_RELEASE);
        *rc_p = OMPI_ERROR;
    }
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
    accel_stream_h probe = NULL;
    void *zeros = NULL;
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
    ctx->half = native->half;
    ctx->flags_bytes = (2 * (size_t)size * sizeof(uint32_t) + COLL_GPU_STREAM_FLAGS_ALIGN - 1) /
                       COLL_GPU_STREAM_FLAGS_ALIGN * COLL_GPU_STREAM_FLAGS_ALIGN;
    ctx->peer = calloc((size_t)size, sizeof(*ctx->peer));
    ctx->peer_reported = calloc((size_t)size, sizeof(*ctx->peer_reported));
    zeros = calloc(1, ctx->flags_bytes);
    /* collective whatever this rank's allocations did: every rank allocates, then all agree */
    ok = (CGT_OK ==
          cgt_alloc(team->cgt, ctx->flags_bytes + 3 * ctx->half, ACCEL_MEM_DEVICE, &ctx->mem));
    if (!ok) {
        ctx->mem = NULL;
    }
    ok = ok && (NULL != ctx->peer) && (NULL != ctx->peer_reported) && (NULL != zeros);
    for (int p = 0; ok && (p < size); ++p) {
        ctx->peer[p] = cgt_rmem_ptr(cgt_mem_peer(ctx->mem, p));
        ok = (NULL != ctx->peer[p]);
    }
    /* flags start at 0; and the driver must have stream memory operations */
    ok = ok && (ACCEL_OK == accel->memcpy(ctx->peer[team->rank], zeros, ctx->flags_bytes)) &&
         (ACCEL_OK == accel->stream_create(&probe));
    if (ok) {
        ok = (ACCEL_OK == accel->stream_write_value32(
                              probe, coll_gpu_stream_flag(ctx, team->rank, team->rank), 0)) &&
             (ACCEL_OK == accel->stream_synchronize(probe));
    }
    if (NULL != probe) {
        (void)accel->stream_destroy(probe);
    }
    free(zeros);
    /* every rank's flags are zero before any stream writes a peer's */
    rc = COLL_GPU_PREV(module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if ((OMPI_SUCCESS != rc) || !ok) {
        COLL_GPU_VERBOSE(1,
                         "%s: no stream-ordered allreduce (the device area or stream memory "
                         "operations are missing on some rank)",
                         comm->c_name);
        if (NULL != ctx->mem) {
            cgt_free(team->cgt, ctx->mem);
            ctx->mem = NULL;
        }
        ctx->unavailable = true;
        return false;
    }
    COLL_GPU_VERBOSE(1, "%s: stream-ordered allreduce on %d ranks, 2 x %zu bytes per rank",
                     comm->c_name, size, ctx->half);
    return true;
}

/* Queues call c on the stream (see the top of the file). */
static accel_status_t coll_gpu_stream_enqueue(coll_gpu_stream_ctx_t *ctx, const void *sbuf,
                                              void *rbuf, size_t count, size_t bytes,
                                              accel_dtype_t dtype, accel_op_t op) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_team_t *team = ctx->module->team;
    int size = team->size, me = team->rank;
    uint64_t c = ++ctx->seq;
    accel_stream_h s = ctx->stream;
    bool direct = coll_gpu_on_device(rbuf);
    char *out = direct ? (char *)rbuf : ctx->peer[me] + ctx->flags_bytes + 2 * ctx->half;
    accel_status_t status = ACCEL_OK, st;
    const void *srcs[ACCEL_REDUCE_MAX_INPUTS];

    for (int p = 0; (p < size) && (c > 2); ++p) {
        if (p != me) {
            st = accel->stream_wait_value32(s, coll_gpu_stream_flag(ctx, me, size + p),
                                            (uint32_t)(c - 2), ACCEL_WAIT_VALUE_GEQ);
            status = (ACCEL_OK == status) ? st : status;
        }
    }
    st = accel->memcpy_async(coll_gpu_stream_half(ctx, me, c), sbuf, bytes, s);
    status = (ACCEL_OK == status) ? st : status;
    for (int p = 0; p < size; ++p) {
        if (p != me) {
            st = accel->stream_write_value32(s, coll_gpu_stream_flag(ctx, p, me), (uint32_t)c);
            status = (ACCEL_OK == status) ? st : status;
        }
    }
    for (int p = 0; p < size; ++p) {
        if (p != me) {
            st = accel->stream_wait_value32(s, coll_gpu_stream_flag(ctx, me, p), (uint32_t)c,
                                            ACCEL_WAIT_VALUE_GEQ);
            status = (ACCEL_OK == status) ? st : status;
        }
    }
    /* rank order, left to right, in passes of at most ACCEL_REDUCE_MAX_INPUTS inputs (a later
     * pass starts from the output so far) */
    for (int next = 0, k; (next < size) && (ACCEL_OK == status);) {
        k = 0;
        if (next > 0) {
            srcs[k++] = out;
        }
        while ((next < size) && (k < ACCEL_REDUCE_MAX_INPUTS)) {
            srcs[k++] = coll_gpu_stream_half(ctx, next++, c);
        }
        status = (k > 1) ? accel->reduce(out, srcs, k, count, dtype, op, s)
                         : accel->memcpy_async(out, srcs[0], bytes, s); /* one rank */
    }
    for (int p = 0; p < size; ++p) {
        if (p != me) {
            st = accel->stream_write_value32(s, coll_gpu_stream_flag(ctx, p, size + me),
                                             (uint32_t)c);
            status = (ACCEL_OK == status) ? st : status;
        }
    }
    if (!direct) {
        st = accel->memcpy_async(rbuf, out, bytes, s);
        status = (ACCEL_OK == status) ? st : status;
    }
    return status;
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
    char err[160];
    bool capturing = false;
    int flag = 0, rc;

    if ((MPI_KEYVAL_INVALID == coll_gpu_stream_keyval) || (MPI_COMM_NULL == comm) ||
        (MPI_SUCCESS != MPI_Comm_get_attr(comm, coll_gpu_stream_keyval, &ctx, &flag)) || !flag) {
        return coll_gpu_stream_error(
            (MPI_COMM_NULL == comm) ? MPI_COMM_WORLD : comm, MPI_ERR_COMM, "MPIX_Allreduce_enqueue",
            "the communicator is not a stream communicator (MPIX_Stream_comm_create)");
    }
    /* Captured into a CUDA graph, the call's stream work would run at every launch of the
     * graph with the flags' sequence numbers of this call, which later calls have passed: it is
     * refused, nothing queued (so the ranks stay in step where they all capture it) */
    if ((NULL != c->accel) && (NULL != c->accel->stream_is_capturing) &&
        ((ACCEL_OK != c->accel->stream_is_capturing(ctx->stream, &capturing)) || capturing)) {
        return coll_gpu_stream_error(
            comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue",
            capturing ? "its stream is being captured into a CUDA graph, which stream-ordered "
                        "collectives do not support: call it outside the capture"
                      : coll_gpu_stream_accel_error(err, sizeof(err)));
    }
    /* the same answer on every rank: count, datatype and op match (MPI), so does the node */
    if (NULL == ctx->module) {
        why = "coll/gpu does not run this communicator's collectives";
    } else if ((count <= 0) || !coll_gpu_reduce_op_lookup(dtype, op, &adt, &aop) ||
               (OMPI_SUCCESS != ompi_datatype_get_extent(dtype, &lb, &extent)) || (0 != lb) ||
               ((size_t)extent != accel_dtype_size(adt))) {
        why = "a datatype and op the kernels do not take";
    } else if (ctx->unavailable) {
        why = "the communicator has no stream area (device scratch, stream memory operations)";
    } else if (ctx->threaded) {
        int rc = OMPI_SUCCESS;

        if (coll_gpu_stream_enqueue_threaded(ctx, comm, sbuf, rbuf, count, dtype, op, &rc)) {
            COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                             "MPIX_Allreduce_enqueue on %s: %d x %zu bytes: queued on the stream, "
                             "run by the communicator's thread across %d nodes (call %llu)",
                             comm->c_name, count, (size_t)extent, ctx->module->team->nnodes,
                             (unsigned long long)ctx->seq);
            coll_gpu_count_native(COLL_GPU_ALLREDUCE, (size_t)count * (size_t)extent);
            return (OMPI_SUCCESS == rc)
                       ? coll_gpu_stream_reported(ctx, comm)
                       : coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue",
                                               coll_gpu_stream_accel_error(err, sizeof(err)));
        }
        why = "the native path does not take it across nodes";
    } else if ((bytes = (size_t)count * (size_t)extent) > ctx->half) {
        why = "larger than the stream area";
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
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                     "MPIX_Allreduce_enqueue on %s: %d x %zu bytes: queued on the stream "
                     "(call %llu)",
                     comm->c_name, count, (size_t)extent, (unsigned long long)ctx->seq + 1);
    coll_gpu_count_native(COLL_GPU_ALLREDUCE, bytes);
    if (ACCEL_OK != coll_gpu_stream_enqueue(ctx, (MPI_IN_PLACE == sbuf) ? rbuf : sbuf, rbuf,
                                            (size_t)count, bytes, adt, aop)) {
        coll_gpu_stream_tell_failure(ctx, ctx->seq);
        return coll_gpu_stream_error(comm, MPI_ERR_OTHER, "MPIX_Allreduce_enqueue",
                                     coll_gpu_stream_accel_error(err, sizeof(err)));
    }
    return coll_gpu_stream_reported(ctx, comm);
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
