/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream-ordered MPI_Allreduce through coll_gpu_ext.h's MPIX_ stream API (MPICH's names), on
 * the emulated device, whose streams run their work later on a thread of their own:
 *
 *   held      the stream is held by a wait on a device flag the host sets only after
 *             MPIX_Allreduce_enqueue returned, and the next stream work (a copy of the result,
 *             standing for the next kernel) is queued right after the call: the enqueue must
 *             return while the stream cannot run (a call that waits for the stream would never
 *             return: the run's timeout), and the copy must hold the sum once the stream ran,
 *             with no host synchronization between the call and the copy;
 *   burst     --calls calls back to back on one stream, each with its own buffers and its own
 *             copy after it, one synchronization at the end (the area's halves reused while
 *             earlier calls may still be queued), sizes from 1 element up, int32 and float,
 *             in place and not, a device and a host receive buffer;
 *   two comms two stream communicators of two streams, calls alternating;
 *   large     MPIX_Allreduce_enqueue_c (MPICH's MPI_Count form), cut into calls of at most
 *             COLL_GPU_EXT_ENQUEUE_PIECE elements (1000 here: 4099 elements are 5 calls), in
 *             place, a host receive buffer; a negative count: MPI_ERR_COUNT;
 *   capture   (a backend with CUDA graphs: CUDA, and the emulated device, whose graphs record
 *             the stream's work and queue it again at every launch) two calls (one in place) and
 * the copies after them captured into a graph: nothing runs at the capture; one launch gives the
 * sums; two launches back to back, and a call queued normally right after them, give the
 * in-place call's sums of sums and that call's sums (each launch is the next call: on one node its
 * number is counted on the device, and a replay of recorded numbers would read stale halves or
 * wait forever; across nodes the stream's host functions post it to the communicator's thread
 * again).  With --expect-fallback: MPI_ERR_OTHER, nothing recorded, the next call right;
 *   host call (after the held cases) an enqueued call, held on the even ranks' streams and
 *             started on the odd ranks', then MPI_Allreduce by the host on the stream
 *             communicator, device buffers, then the streams released: both right (across nodes
 *             the enqueued call starts when the stream reaches it, on a communicator of its own:
 *             a host collective must neither wait for it nor run beside it on the same one);
 *   errors    MPIX_Allreduce_enqueue on a communicator that is not a stream communicator:
 *             MPI_ERR_COMM (MPI_ERRORS_RETURN set on it); MPIX_Stream_create without info, of
 *             another type or with a value that is not hexadecimal: MPI_ERR_INFO_VALUE;
 *             MPIX_Stream_comm_create of MPIX_STREAM_NULL: MPI_ERR_ARG.
 *
 *   failure   (--fault, one node) the last rank's enqueue fails (the launch of its one-shot
 *             allreduce, or the copy of its first piece back to a host receive buffer: an
 *             injected accelerator error): it returns MPI_ERR_OTHER there; the other
 * ranks' streams go on (no hang), and their first call once the failure is known returns
 * MPI_ERR_OTHER (its help message naming the rank and the call), exactly once, still queued and
 *             right; the call after them succeeds everywhere.  Twice: the last rank ahead of
 *             the others (its failure known before they start the call before: reported at the
 *             failing call itself, never at the one before), then behind them (reported at the
 *             next call), then behind them with the copy back failing (with halves of 4 KiB the
 *             failing call's 2 pieces: one queued, one replaced by a call without data).
 *
 *   failure across nodes (--fault-across) a reduction of the communicator's thread fails on
 *             the last rank: the enqueue returned at once, the call's outcome (agreed by the
 *             ranks) is an error, every rank's next call returns MPI_ERR_OTHER, once.
 *             (--fault-post) the last rank cannot queue the host function of the second of
 *             three calls: its host sees that call through on the communicator's thread, in the
 *             stream's order; no rank hangs or fails, every result is right.
 *
 * --expect-fallback: the calls must synchronize the stream and run MPI_Allreduce (across
 * emulated nodes without native nonblocking calls, say): the held case is skipped (the
 * call waits for the stream by design) and the others must still be right.  The enqueue's host
 * time is printed (rank 0).  Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "accel_emulated.h"
/* MPIX_Allreduce_enqueue_c cuts counts above this into several calls (INT_MAX by default) */
#define COLL_GPU_EXT_ENQUEUE_PIECE 1000
#include "coll_gpu_ext.h"
#include "test_native_util.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;

static double st_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int32_t st_input(int r, int call, size_t i) {
    return (int32_t)(r * 1009 + call * 31 + (int)(i % 4099));
}

/* A stream communicator over a new stream of the emulated device. */
static void st_stream_comm(accel_stream_h *stream_p, MPIX_Stream *mpix_p, MPI_Comm *comm_p) {
    MPI_Info info;
    int rc;

    if (ACCEL_OK != tu_accel->stream_create(stream_p)) {
        tn_setup_failed();
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", stream_p, sizeof(*stream_p));
    rc = MPIX_Stream_create(info, mpix_p);
    MPI_Info_free(&info);
    if (MPI_SUCCESS == rc) {
        rc = MPIX_Stream_comm_create(MPI_COMM_WORLD, *mpix_p, comm_p);
    }
    if (MPI_SUCCESS != rc) {
        fprintf(stderr, "[%d] stream communicator: error %d\n", rank, rc);
        tn_setup_failed();
    }
}

/* Inputs (device), expected sums, and the call itself; the result copied on the stream into
 * check (device) right after it. */
typedef struct {
    size_t n;
    bool is_float, in_place, host_recv;
    void *dsend, *drecv, *check;
    int32_t *want; /* the bits expected */
} st_call_t;

static void st_call_init(st_call_t *c, int call, size_t n, bool is_float, bool in_place,
                         bool host_recv) {
    int32_t *in = tn_malloc(n * 4);

    memset(c, 0, sizeof(*c));
    c->n = n;
    c->is_float = is_float;
    c->in_place = in_place;
    c->host_recv = host_recv;
    c->want = tn_malloc(n * 4);
    for (size_t i = 0; i < n; ++i) {
        uint32_t usum = 0;
        float fsum = 0;
        for (int r = 0; r < size; ++r) {
            int32_t v = st_input(r, call, i);
            usum += (uint32_t)v;
            fsum += (float)v; /* integers: exact in any order */
        }
        in[i] = is_float ? 0 : st_input(rank, call, i);
        if (is_float) {
            float f = (float)st_input(rank, call, i);
            memcpy(&in[i], &f, 4);
            memcpy(&c->want[i], &fsum, 4);
        } else {
            c->want[i] = (int32_t)usum;
        }
    }
    if (host_recv) {
        c->drecv = tn_malloc(n * 4);
        memcpy(c->drecv, in, n * 4);
    } else {
        c->drecv = tn_mem_copy_of(TU_MEM_DEVICE, in, n * 4);
    }
    c->dsend = in_place ? MPI_IN_PLACE : tn_mem_copy_of(TU_MEM_DEVICE, in, n * 4);
    c->check = tn_mem_copy_of(TU_MEM_DEVICE, c->want, n * 4);
    memset(in, 0xee, n * 4);
    tu_mem_write(TU_MEM_DEVICE, c->check, in, n * 4); /* not the answer until the copy */
    free(in);
}

/* large: MPIX_Allreduce_enqueue_c, MPI_Count elements */
static int st_call_enqueue_as(st_call_t *c, MPI_Comm comm, accel_stream_h stream, bool large) {
    MPI_Datatype type = c->is_float ? MPI_FLOAT : MPI_INT32_T;
    int rc =
        large ? MPIX_Allreduce_enqueue_c(c->dsend, c->drecv, (MPI_Count)c->n, type, MPI_SUM, comm)
              : MPIX_Allreduce_enqueue(c->dsend, c->drecv, (int)c->n, type, MPI_SUM, comm);
    if (ACCEL_OK != tu_accel->memcpy_async(c->check, c->drecv, c->n * 4, stream)) {
        tu_fail("the copy after the call could not be queued");
    }
    return rc;
}

static int st_call_enqueue(st_call_t *c, MPI_Comm comm, accel_stream_h stream) {
    return st_call_enqueue_as(c, comm, stream, false);
}

/* Whether the copy after the call holds want (its bits): a failure names what, the call and
 * the element. */
static void st_call_verify(const st_call_t *c, const int32_t *want, const char *what) {
    int32_t *got = tn_malloc(c->n * 4);

    tu_mem_read(TU_MEM_DEVICE, got, c->check, c->n * 4);
    for (size_t i = 0; i < c->n; ++i) {
        if (got[i] != want[i]) {
            tu_fail("%s: %zu %s%s%s: element %zu is 0x%08x, expected 0x%08x", what, c->n,
                    c->is_float ? "float" : "int32", c->in_place ? ", in place" : "",
                    c->host_recv ? ", host receive buffer" : "", i, (unsigned)got[i],
                    (unsigned)want[i]);
            break;
        }
    }
    free(got);
}

/* A call whose result is undefined (it failed somewhere): its buffers freed unchecked. */
static void st_call_discard(st_call_t *c) {
    if (!c->in_place) {
        tu_mem_free(TU_MEM_DEVICE, c->dsend);
    }
    if (c->host_recv) {
        free(c->drecv);
    } else {
        tu_mem_free(TU_MEM_DEVICE, c->drecv);
    }
    tu_mem_free(TU_MEM_DEVICE, c->check);
    free(c->want);
}

/* The call's result checked, then its buffers freed. */
static void st_call_check(st_call_t *c, const char *what) {
    st_call_verify(c, c->want, what);
    st_call_discard(c);
}

int main(int argc, char **argv) {
    bool expect_fallback = false, fault = false, fault_across = false, fault_post = false;
    int ncalls = 40;
    const tu_arg_t args[] = {
        {"--expect-fallback", TU_ARG_FLAG, &expect_fallback},
        {"--fault", TU_ARG_FLAG, &fault},
        {"--fault-across", TU_ARG_FLAG, &fault_across},
        {"--fault-post", TU_ARG_FLAG, &fault_post},
        {"--calls=", TU_ARG_INT, &ncalls},
        {NULL, TU_ARG_FLAG, NULL},
    };
    static const size_t sizes[] = {1, 7, 256, 4099, 65536};
    tu_options_t opts;
    accel_stream_h stream, stream2;
    MPIX_Stream mpix, mpix2;
    MPI_Comm scomm, scomm2, plain;
    double enqueue_s = 0;
    int enqueues = 0;

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_stream", args, &opts);
    tn_setup(&opts, TU_MEM_DEVICE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    st_stream_comm(&stream, &mpix, &scomm);

    if (!expect_fallback) {
        uint32_t zero = 0, one = 1;
        uint32_t *flag = tn_mem_copy_of(TU_MEM_DEVICE, &zero, sizeof(zero));

        for (int s = 0; s < 3; ++s) {
            st_call_t c;
            double t0;
            int rc;

            static const size_t held_sizes[] = {7, 256, 1000}; /* within a 4 KiB area too */

            st_call_init(&c, s, held_sizes[s], 1 == s, 2 == s, false);
            tu_case_begin("held stream: %zu elements return before the stream runs", c.n);
            tu_mem_write(TU_MEM_DEVICE, flag, &zero, sizeof(zero));
            if (ACCEL_OK != tu_accel->stream_wait_value32(stream, flag, 1, ACCEL_WAIT_VALUE_GEQ)) {
                tu_fail("stream_wait_value32");
            }
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = st_now();
            rc = st_call_enqueue(&c, scomm, stream);
            enqueue_s += st_now() - t0;
            ++enqueues;
            if (MPI_SUCCESS != rc) {
                tu_fail("MPIX_Allreduce_enqueue: error %d", rc);
            }
            /* the stream has not run: the copy still holds its filler */
            {
                int32_t first;
                tu_mem_read(TU_MEM_DEVICE, &first, c.check, sizeof(first));
                if (first == c.want[0]) {
                    tu_fail("the result was there before the stream was released");
                }
            }
            tu_mem_write(TU_MEM_DEVICE, flag, &one, sizeof(one));
            if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
                tu_fail("stream_synchronize");
            }
            st_call_check(&c, "held");
            tu_case_end();
        }

        {
            st_call_t c, host;

            tu_case_begin("stream held on even ranks: MPI_Allreduce on the stream communicator "
                          "meanwhile");
            st_call_init(&c, 3, 300, false, false, false);
            st_call_init(&host, 4, 5000, false, true, false);
            tu_mem_write(TU_MEM_DEVICE, flag, &zero, sizeof(zero));
            if ((0 == rank % 2) && (ACCEL_OK != tu_accel->stream_wait_value32(
                                                    stream, flag, 1, ACCEL_WAIT_VALUE_GEQ))) {
                tu_fail("stream_wait_value32");
            }
            if (MPI_SUCCESS != st_call_enqueue(&c, scomm, stream)) {
                tu_fail("MPIX_Allreduce_enqueue");
            }
            /* the host's call comes later in program order; the stream's has started on the odd
             * ranks (given the time to), not on the even ones */
            if (1 == rank % 2) {
                nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
            }
            if (MPI_SUCCESS !=
                MPI_Allreduce(MPI_IN_PLACE, host.drecv, (int)host.n, MPI_INT32_T, MPI_SUM, scomm)) {
                tu_fail("MPI_Allreduce on the stream communicator");
            }
            if (ACCEL_OK != tu_accel->memcpy(host.check, host.drecv, host.n * 4)) {
                tu_fail("memcpy");
            }
            tu_mem_write(TU_MEM_DEVICE, flag, &one, sizeof(one));
            if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
                tu_fail("stream_synchronize");
            }
            st_call_check(&host, "the host's MPI_Allreduce");
            st_call_check(&c, "the stream's call");
            tu_case_end();
        }
        tu_mem_free(TU_MEM_DEVICE, flag);
    }

    {
        st_call_t *calls = tn_malloc((size_t)ncalls * sizeof(*calls));
        int rc = MPI_SUCCESS;

        tu_case_begin("%d calls back to back on one stream, one synchronization", ncalls);
        for (int k = 0; k < ncalls; ++k) {
            st_call_init(&calls[k], k, sizes[k % 5], 1 == (k % 3), 2 == (k % 4), 3 == (k % 6));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; (k < ncalls) && (MPI_SUCCESS == rc); ++k) {
            double t0 = st_now();
            rc = st_call_enqueue(&calls[k], scomm, stream);
            enqueue_s += st_now() - t0;
            ++enqueues;
        }
        if (MPI_SUCCESS != rc) {
            tu_fail("MPIX_Allreduce_enqueue: error %d", rc);
        }
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize");
        }
        for (int k = 0; k < ncalls; ++k) {
            st_call_check(&calls[k], "burst");
        }
        free(calls);
        tu_case_end();
    }

    if (fault_across) {
        st_call_t failing, next, after;
        int rc, cls = MPI_SUCCESS;

        tu_case_begin("a call failing on the communicator's thread (a reduction on rank %d): "
                      "reported at every rank's next call",
                      size - 1);
        MPI_Comm_set_errhandler(scomm, MPI_ERRORS_RETURN);
        st_call_init(&failing, 400, 4099, false, false, false);
        st_call_init(&next, 401, 256, false, false, false);
        st_call_init(&after, 402, 7, true, false, false);
        if (rank == size - 1) {
            /* only the thread reduces: its first reduction of the call */
            accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_REDUCE, 1, false);
        }
        rc = st_call_enqueue(&failing, scomm, stream);
        if (MPI_SUCCESS != rc) {
            tu_fail("the enqueue itself returned %d: the failure comes later, on the thread", rc);
        }
        /* the thread recorded the outcome before it released the stream */
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize after the failed call");
        }
        accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_REDUCE, 0, false);
        rc = st_call_enqueue(&next, scomm, stream);
        MPI_Error_class(rc, &cls);
        if (MPI_ERR_OTHER != cls) {
            tu_fail("the call after the failed one returned error class %d: not reported", cls);
        }
        rc = st_call_enqueue(&after, scomm, stream);
        if (MPI_SUCCESS != rc) {
            tu_fail("the next call but one returned %d: a failure reported more than once", rc);
        }
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize");
        }
        st_call_check(&next, "the call reporting the failure");
        st_call_check(&after, "the call after it");
        st_call_discard(&failing);
        MPI_Comm_set_errhandler(scomm, MPI_ERRORS_ARE_FATAL);
        tu_case_end();
    }
    if (fault_post) {
        st_call_t calls[3];

        tu_case_begin("rank %d cannot queue a call's host function: its host sees the call "
                      "through, every result right, no error",
                      size - 1);
        st_call_init(&calls[0], 410, 4099, false, false, false);
        st_call_init(&calls[1], 411, 256, true, true, false);
        st_call_init(&calls[2], 412, 7, false, false, true);
        for (int k = 0; k < 3; ++k) {
            if ((1 == k) && (rank == size - 1)) {
                accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_HOST_FUNC, 1, false);
            }
            if (MPI_SUCCESS != st_call_enqueue(&calls[k], scomm, stream)) {
                tu_fail("MPIX_Allreduce_enqueue %d returned an error", k);
            }
        }
        accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_HOST_FUNC, 0, false);
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize");
        }
        for (int k = 0; k < 3; ++k) {
            st_call_check(&calls[k], "around the call not queued");
        }
        tu_case_end();
    }
    /* The failing rank ahead of the others (it fails call k+1 before they start call k: they
     * must not hear of it at call k, but at k+1 itself), then behind them (they are past call
     * k+1 when it fails there: they hear of it at the next call). */
    for (int variant = 0; fault && (variant < 3); ++variant) {
        /* 0: ahead; 1: behind; 2: behind, the copy of the call's first piece back into the
         * host receive buffer failing (the one-shot call before it was queued: no stand-in for
         * that piece, or this rank would be a call ahead of its peers) */
        const int ahead = (0 == variant), copy_back = (2 == variant);
        const accel_emulated_fault_t what =
            copy_back ? ACCEL_EMULATED_FAULT_MEMCPY : ACCEL_EMULATED_FAULT_REDUCE;
        st_call_t before, failing, next, after;
        int last = size - 1, rc, rc_before, cls = MPI_SUCCESS, reports;

        tu_case_begin("an enqueue failing on rank %d (%s), %s the others: reported there, then "
                      "at every other rank's %s call",
                      last, copy_back ? "the copy back of its first piece" : "the kernel's launch",
                      ahead ? "ahead of" : "behind", ahead ? "same" : "next");
        MPI_Comm_set_errhandler(scomm, MPI_ERRORS_RETURN);
        st_call_init(&before, 298 + 10 * variant, 64, false, false, false);
        st_call_init(&failing, 300 + 10 * variant, 2000, false, false, copy_back);
        st_call_init(&next, 301 + 10 * variant, 256, false, false, false);
        st_call_init(&after, 302 + 10 * variant, 4099, true, false, false);
        if (ahead && (rank != last)) {
            MPI_Barrier(MPI_COMM_WORLD); /* the last rank has failed call k+1 */
        }
        rc_before = st_call_enqueue(&before, scomm, stream);
        if (MPI_SUCCESS != rc_before) {
            tu_fail("the call before the failing one returned %d on rank %d: a later call's "
                    "failure reported early",
                    rc_before, rank);
        }
        if (!ahead && (rank == last)) {
            MPI_Barrier(MPI_COMM_WORLD); /* the others have enqueued call k+1 */
        }
        if (rank == last) {
            accel_emulated_inject_fault(what, 1, false);
        }
        rc = st_call_enqueue(&failing, scomm, stream);
        accel_emulated_inject_fault(what, 0, false);
        if (ahead && (rank == last)) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (!ahead && (rank != last)) {
            MPI_Barrier(MPI_COMM_WORLD); /* before their streams wait for the last rank's */
        }
        MPI_Error_class(rc, &cls);
        reports = (MPI_ERR_OTHER == cls) ? 1 : 0;
        if ((rank == last) && (MPI_ERR_OTHER != cls)) {
            tu_fail("the failing call returned error class %d on rank %d", cls, rank);
        }
        if ((rank != last) && (reports != ahead)) {
            tu_fail("rank %d: the failing call returned error class %d with the last rank %s", rank,
                    cls,
                    ahead ? "ahead (it had failed: reported there)"
                          : "behind (it had not failed yet)");
        }
        /* no hang: every stream gets past the failed call */
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize after the failed call");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        rc = st_call_enqueue(&next, scomm, stream);
        MPI_Error_class(rc, &cls);
        reports += (MPI_ERR_OTHER == cls) ? 1 : 0;
        if (1 != reports) {
            tu_fail("rank %d: the failure reported %d times by the failing call and the next "
                    "(error class %d at the next): once expected",
                    rank, reports, cls);
        }
        rc = st_call_enqueue(&after, scomm, stream);
        if (MPI_SUCCESS != rc) {
            tu_fail("the next call but one returned %d: a failure reported more than once", rc);
        }
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize");
        }
        /* the reporting call was queued and ran like any other */
        st_call_check(&before, "the call before the failing one");
        st_call_check(&next, "the call reporting the failure");
        st_call_check(&after, "the call after it");
        st_call_discard(&failing);
        MPI_Comm_set_errhandler(scomm, MPI_ERRORS_ARE_FATAL);
        tu_case_end();
    }

    st_stream_comm(&stream2, &mpix2, &scomm2);
    {
        st_call_t calls[8];

        tu_case_begin("two stream communicators, calls alternating");
        for (int k = 0; k < 8; ++k) {
            st_call_init(&calls[k], 100 + k, sizes[k % 4], k & 1, false, false);
        }
        for (int k = 0; k < 8; ++k) {
            if (MPI_SUCCESS !=
                st_call_enqueue(&calls[k], (k & 1) ? scomm2 : scomm, (k & 1) ? stream2 : stream)) {
                tu_fail("MPIX_Allreduce_enqueue %d", k);
            }
        }
        tu_accel->stream_synchronize(stream);
        tu_accel->stream_synchronize(stream2);
        for (int k = 0; k < 8; ++k) {
            st_call_check(&calls[k], "two comms");
        }
        tu_case_end();
    }

    if ((NULL != tu_accel->stream_begin_capture) && expect_fallback) {
        st_call_t captured, after;
        accel_graph_h graph = NULL;
        int32_t *got = tn_malloc(256 * 4);
        int rc, cls = 0;

        tu_case_begin("a call that cannot be recorded into a CUDA graph: MPI_ERR_OTHER, "
                      "nothing queued");
        MPI_Comm_set_errhandler(scomm, MPI_ERRORS_RETURN);
        st_call_init(&captured, 400, 256, false, false, false);
        st_call_init(&after, 401, 4099, true, false, false);
        if (ACCEL_OK != tu_accel->stream_begin_capture(stream)) {
            tu_fail("stream_begin_capture");
        }
        rc = MPIX_Allreduce_enqueue(captured.dsend, captured.drecv, 256, MPI_INT32_T, MPI_SUM,
                                    scomm);
        if (ACCEL_OK != tu_accel->stream_end_capture(stream, &graph)) {
            tu_fail("stream_end_capture");
        }
        MPI_Error_class(rc, &cls);
        if (MPI_ERR_OTHER != cls) {
            tu_fail("MPIX_Allreduce_enqueue on a capturing stream returned %d (class %d), not "
                    "MPI_ERR_OTHER",
                    rc, cls);
        }
        /* a launch of the graph runs whatever was recorded: nothing may have been */
        if ((NULL == graph) || (ACCEL_OK != tu_accel->graph_launch(graph, stream)) ||
            (ACCEL_OK != tu_accel->stream_synchronize(stream))) {
            tu_fail("the graph's launch");
        }
        (void)tu_accel->graph_destroy(graph);
        tu_mem_read(TU_MEM_DEVICE, got, captured.drecv, 256 * 4);
        for (size_t i = 0; i < 256; ++i) {
            if (got[i] != st_input(rank, 400, i)) {
                tu_fail("the refused call recorded work: its receive buffer changed at element "
                        "%zu",
                        i);
                break;
            }
        }
        /* nothing counted either: the ranks are in step for the next call */
        rc = st_call_enqueue(&after, scomm, stream);
        if (MPI_SUCCESS != rc) {
            tu_fail("the call after the refused one returned %d", rc);
        }
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize");
        }
        st_call_check(&after, "the call after the refused one");
        st_call_discard(&captured);
        free(got);
        MPI_Comm_set_errhandler(scomm, MPI_ERRORS_ARE_FATAL);
        tu_case_end();
    } else if (NULL != tu_accel->stream_begin_capture) {
        st_call_t plain_call, in_place, after;
        accel_graph_h graph = NULL;
        int32_t *want = tn_malloc(1500 * 4), *filler = tn_malloc(1500 * 4);

        tu_case_begin("two calls captured into a CUDA graph, launched three times");
        st_call_init(&plain_call, 410, 256, false, false, false);
        st_call_init(&in_place, 411, 1500, false, true, false);
        st_call_init(&after, 412, 4099, true, false, false);
        memset(filler, 0xee, 1500 * 4);
        if (ACCEL_OK != tu_accel->stream_begin_capture(stream)) {
            tu_fail("stream_begin_capture");
        }
        if ((MPI_SUCCESS != st_call_enqueue(&plain_call, scomm, stream)) ||
            (MPI_SUCCESS != st_call_enqueue(&in_place, scomm, stream))) {
            tu_fail("MPIX_Allreduce_enqueue on a capturing stream failed");
        }
        if (ACCEL_OK != tu_accel->stream_end_capture(stream, &graph)) {
            tu_fail("stream_end_capture");
        }
        /* recorded, not run */
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize after the capture");
        }
        st_call_verify(&plain_call, filler, "the capture ran the call");
        /* one launch: the sums; then two back to back: the in-place call sums the sums */
        for (int launches = 1; launches <= 2; ++launches) {
            for (int k = 0; k < launches; ++k) {
                /* rank 0 late: a launch that did not wait for its input would read its half
                 * of the launch before */
                if (0 == rank) {
                    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
                }
                if ((NULL == graph) || (ACCEL_OK != tu_accel->graph_launch(graph, stream))) {
                    tu_fail("the graph's launch");
                }
            }
            /* a call queued normally behind the launches, no synchronization between */
            if ((2 == launches) && (MPI_SUCCESS != st_call_enqueue(&after, scomm, stream))) {
                tu_fail("the call after the graph's launches");
            }
            if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
                tu_fail("stream_synchronize after the graph's launches");
            }
            st_call_verify(&plain_call, plain_call.want,
                           (1 == launches) ? "one launch" : "two launches");
            for (size_t i = 0; i < 1500; ++i) {
                uint32_t v = (uint32_t)in_place.want[i]; /* after the first launch */

                for (int k = 1; k < ((1 == launches) ? 1 : 3); ++k) {
                    v *= (uint32_t)size;
                }
                want[i] = (int32_t)v;
            }
            st_call_verify(&in_place, want,
                           (1 == launches) ? "in place, one launch"
                                           : "in place, two launches back to back");
        }
        if (NULL != graph) {
            (void)tu_accel->graph_destroy(graph);
        }
        st_call_check(&after, "the call after the graph's launches");
        st_call_discard(&plain_call);
        st_call_discard(&in_place);
        free(want);
        free(filler);
        tu_case_end();
    }

    {
        tu_counters_t before, after;
        st_call_t calls[3];

        tu_case_begin("MPIX_Allreduce_enqueue_c: calls of at most %d elements, one synchronization",
                      COLL_GPU_EXT_ENQUEUE_PIECE);
        st_call_init(&calls[0], 500, 4099, false, false, false); /* 5 calls */
        st_call_init(&calls[1], 501, 2000, true, true, false);   /* 2, in place */
        st_call_init(&calls[2], 502, 7, false, false, true);     /* 1, host receive buffer */
        tu_counters_read(&before);
        for (int k = 0; k < 3; ++k) {
            if (MPI_SUCCESS != st_call_enqueue_as(&calls[k], scomm, stream, true)) {
                tu_fail("MPIX_Allreduce_enqueue_c of %zu elements", calls[k].n);
            }
            if (1 == k) {
                tu_counters_read(&after);
            }
        }
        if (ACCEL_OK != tu_accel->stream_synchronize(stream)) {
            tu_fail("stream_synchronize");
        }
        for (int k = 0; k < 3; ++k) {
            st_call_check(&calls[k], "MPIX_Allreduce_enqueue_c");
        }
        /* 5 + 2 calls queued on the stream, counted as native allreduce calls (the host receive
         * buffer's call may take MPI_Allreduce across nodes) */
        if (tu_counters_available() && !expect_fallback &&
            (7 != after.native[COLL_GPU_ALLREDUCE] - before.native[COLL_GPU_ALLREDUCE])) {
            tu_fail("MPIX_Allreduce_enqueue_c made %llu native calls, not 5 + 2",
                    (unsigned long long)(after.native[COLL_GPU_ALLREDUCE] -
                                         before.native[COLL_GPU_ALLREDUCE]));
        }
        if (MPI_ERR_COUNT !=
            MPIX_Allreduce_enqueue_c(MPI_IN_PLACE, NULL, -1, MPI_INT32_T, MPI_SUM, scomm)) {
            tu_fail("MPIX_Allreduce_enqueue_c of -1 elements did not give MPI_ERR_COUNT");
        }
        tu_case_end();
    }

    tu_case_begin("bad stream arguments: MPI_ERR_INFO_VALUE, MPI_ERR_ARG");
    {
        MPIX_Stream bad = MPIX_STREAM_NULL;
        MPI_Comm none = MPI_COMM_NULL;
        MPI_Info info;
        int rc;

        if (MPI_ERR_INFO_VALUE != MPIX_Stream_create(MPI_INFO_NULL, &bad)) {
            tu_fail("MPIX_Stream_create(MPI_INFO_NULL) did not give MPI_ERR_INFO_VALUE");
        }
        MPI_Info_create(&info);
        MPI_Info_set(info, "type", "hipStream_t");
        MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
        if (MPI_ERR_INFO_VALUE != MPIX_Stream_create(info, &bad) || MPIX_STREAM_NULL != bad) {
            tu_fail("a stream of type hipStream_t was accepted");
        }
        MPI_Info_set(info, "type", "cudaStream_t");
        MPI_Info_set(info, "value", "not hex at all!!");
        if (MPI_ERR_INFO_VALUE != MPIX_Stream_create(info, &bad)) {
            tu_fail("a value that is not hexadecimal was accepted");
        }
        MPI_Info_free(&info);
        if (MPI_ERR_ARG != MPIX_Info_set_hex(MPI_INFO_NULL, "value", &stream, 0)) {
            tu_fail("MPIX_Info_set_hex of 0 bytes was accepted");
        }
        rc = MPIX_Stream_comm_create(MPI_COMM_WORLD, MPIX_STREAM_NULL, &none);
        if ((MPI_ERR_ARG != rc) || (MPI_COMM_NULL != none)) {
            tu_fail("MPIX_Stream_comm_create of MPIX_STREAM_NULL: %d", rc);
        }
    }
    tu_case_end();

    tu_case_begin("not a stream communicator: MPI_ERR_COMM");
    MPI_Comm_dup(MPI_COMM_WORLD, &plain);
    MPI_Comm_set_errhandler(plain, MPI_ERRORS_RETURN);
    {
        int32_t one = 1, *d = tn_mem_copy_of(TU_MEM_DEVICE, &one, 4), cls = 0;
        int rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d, 1, MPI_INT32_T, MPI_SUM, plain);
        MPI_Error_class(rc, &cls);
        if (MPI_ERR_COMM != cls) {
            tu_fail("error class %d, expected MPI_ERR_COMM", cls);
        }
        tu_mem_free(TU_MEM_DEVICE, d);
    }
    MPI_Comm_free(&plain);
    tu_case_end();

    /* the stream communicators go before their streams */
    MPI_Comm_free(&scomm2);
    MPI_Comm_free(&scomm);
    MPIX_Stream_free(&mpix2);
    MPIX_Stream_free(&mpix);
    tu_accel->stream_destroy(stream2);
    tu_accel->stream_destroy(stream);
    if (0 == rank && enqueues > 0) {
        printf("MPIX_Allreduce_enqueue returned in %.2f us on average (%d calls, %s)\n",
               1e6 * enqueue_s / enqueues, enqueues,
               expect_fallback ? "stream synchronized, MPI_Allreduce" : "queued on the stream");
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
