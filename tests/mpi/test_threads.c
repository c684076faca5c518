/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_THREAD_MULTIPLE: two threads, each running collectives on its own communicator at the
 * same time, and each creating and freeing a communicator (MPI_Comm_dup, a collective on it,
 * MPI_Comm_free) every iteration while the other thread runs collectives.
 *
 * Every iteration of thread t runs, on its communicator (a duplicate of MPI_COMM_WORLD made
 * before the threads start): MPI_Allreduce (int32 and double sums), MPI_Bcast from a root that
 * moves, MPI_Allgather, MPI_Alltoall and MPI_Reduce_scatter_block, counts changing from call to
 * call (one call in eight several steps of the native pipeline), then duplicates the
 * communicator, runs an MPI_Allreduce on the duplicate and frees it.  Buffers are host memory
 * (--kinds=host, for coll_gpu_host_buffers) or device memory of the accelerator.  Inputs are a
 * function of (rank, thread, iteration, element); every result is checked against a reference
 * each rank computes itself.  At the end the coll_gpu_calls_native pvar must have grown for
 * every collective of the mix (--expect-native): the calls ran through the component's own
 * algorithms and transport, not around them.
 *
 * Options: --kinds=host, --iterations=N (default 1000), --dup-every=K (the collective on the
 * duplicate every K-th iteration only; the duplicate and free stay every iteration),
 * --expect-native, --threads=1 (one thread only: the time without concurrency),
 * --odd-env=NAME=VALUE (the ranks of odd local rank put NAME=VALUE in their environment before
 * MPI_Init), --idle-ms=MS (after the first MPI_Allreduce of every iteration the even ranks stay
 * out of MPI for MS ms, and that call of the odd ranks, but the first, which sets up, must take
 * less than MS / 2: a peer that returned first still completes its part without an MPI call).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_native_util.h"

#define NTHREADS 2
#define SMALL_MAX 300    /* elements of a small call, at most */
#define BIG_COUNT 150000 /* elements (x 4 bytes) of a call in eight: several pipeline steps */

typedef struct {
    int id;
    MPI_Comm comm;
    tu_mem_t mem;
    int iterations;
    int dup_every;
    int idle_ms; /* --idle-ms */
    /* results */
    long failures;
    long calls;
    char first[512];
    double seconds;
} thread_state_t;

static int world_rank, world_size;

static void thread_fail(thread_state_t *ts, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void thread_fail(thread_state_t *ts, const char *fmt, ...) {
    va_list ap;

    if (0 == ts->failures++) {
        va_start(ap, fmt);
        vsnprintf(ts->first, sizeof(ts->first), fmt, ap);
        va_end(ap);
    }
}

/* The input element e of rank r in call k of thread t's iteration i: small, so every sum is
 * exact in int32 and double. */
static int32_t input(int t, int i, int k, int r, size_t e) {
    return (int32_t)(((unsigned)r + 1) * 1000u + ((unsigned)e * 7u + (unsigned)i * 13u +
                                                  (unsigned)k * 31u + (unsigned)t * 101u) %
                                                     997u);
}

/* A device (or host) buffer of n bytes holding host's bytes. */
static void *dev_copy(thread_state_t *ts, const void *host, size_t n) {
    void *p = NULL;

    if ((0 != tu_mem_alloc(ts->mem, n, &p)) || (0 != tu_mem_write(ts->mem, p, host, n))) {
        tn_setup_failed();
    }
    return p;
}

static void dev_read(thread_state_t *ts, void *host, const void *dev, size_t n) {
    if (0 != tu_mem_read(ts->mem, host, dev, n)) {
        tn_setup_failed();
    }
}

static size_t call_count(int i, int k) {
    /* one call in eight big; the others 1 .. SMALL_MAX elements, odd ones included */
    if (0 == (i * 5 + k) % 8) {
        return BIG_COUNT + (size_t)k;
    }
    return 1 + (size_t)((i * 37 + k * 11) % SMALL_MAX);
}

static void check_rc(thread_state_t *ts, int rc, const char *what, int i) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    ++ts->calls;
    if (MPI_SUCCESS != rc) {
        MPI_Error_string(rc, msg, &len);
        thread_fail(ts, "thread %d iteration %d: %s returned %s", ts->id, i, what, msg);
    }
}

static void check_int32(thread_state_t *ts, const char *what, int i, const int32_t *got,
                        const int32_t *want, size_t n) {
    for (size_t e = 0; e < n; ++e) {
        if (got[e] != want[e]) {
            thread_fail(ts, "thread %d iteration %d: %s element %zu of %zu: %d, expected %d",
                        ts->id, i, what, e, n, (int)got[e], (int)want[e]);
            return;
        }
    }
}

static void run_allreduce(thread_state_t *ts, MPI_Comm comm, int i, int k, bool fp) {
    size_t n = call_count(i, k), es = fp ? sizeof(double) : sizeof(int32_t);
    char *in = tn_malloc(n * es), *out = tn_malloc(n * es);
    void *din, *dout;
    int size;

    MPI_Comm_size(comm, &size);
    for (size_t e = 0; e < n; ++e) {
        int32_t v = input(ts->id, i, k, world_rank, e);
        if (fp) {
            ((double *)in)[e] = (double)v + 0.5;
        } else {
            ((int32_t *)in)[e] = v;
        }
    }
    din = dev_copy(ts, in, n * es);
    dout = dev_copy(ts, in, n * es); /* overwritten */
    check_rc(ts, MPI_Allreduce(din, dout, (int)n, fp ? MPI_DOUBLE : MPI_INT32_T, MPI_SUM, comm),
             fp ? "MPI_Allreduce(double)" : "MPI_Allreduce(int32)", i);
    dev_read(ts, out, dout, n * es);
    for (size_t e = 0; e < n; ++e) {
        int64_t want = 0;
        for (int r = 0; r < size; ++r) {
            want += input(ts->id, i, k, r, e);
        }
        if (fp ? (((double *)out)[e] != (double)want + 0.5 * size)
               : (((int32_t *)out)[e] != (int32_t)want)) {
            thread_fail(ts, "thread %d iteration %d: MPI_Allreduce(%s) element %zu of %zu wrong",
                        ts->id, i, fp ? "double" : "int32", e, n);
            break;
        }
    }
    tu_mem_free(ts->mem, din);
    tu_mem_free(ts->mem, dout);
    free(in);
    free(out);
}

static void run_bcast(thread_state_t *ts, MPI_Comm comm, int i, int k) {
    size_t n = call_count(i, k);
    int32_t *buf = tn_malloc(n * 4), *want = tn_malloc(n * 4);
    int size, rank, root;
    void *d;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    root = (i + ts->id) % size;
    for (size_t e = 0; e < n; ++e) {
        want[e] = input(ts->id, i, k, root, e);
        buf[e] = (rank == root) ? want[e] : -1;
    }
    d = dev_copy(ts, buf, n * 4);
    check_rc(ts, MPI_Bcast(d, (int)n, MPI_INT32_T, root, comm), "MPI_Bcast", i);
    dev_read(ts, buf, d, n * 4);
    check_int32(ts, "MPI_Bcast", i, buf, want, n);
    tu_mem_free(ts->mem, d);
    free(buf);
    free(want);
}

static void run_allgather(thread_state_t *ts, MPI_Comm comm, int i, int k) {
    size_t n = call_count(i, k) / 4 + 1;
    int size;

    MPI_Comm_size(comm, &size);
    int32_t *in = tn_malloc(n * 4), *out = tn_malloc(n * 4 * (size_t)size),
            *want = tn_malloc(n * 4 * (size_t)size);
    for (size_t e = 0; e < n; ++e) {
        in[e] = input(ts->id, i, k, world_rank, e);
    }
    for (int r = 0; r < size; ++r) {
        for (size_t e = 0; e < n; ++e) {
            want[(size_t)r * n + e] = input(ts->id, i, k, r, e);
        }
    }
    void *din = dev_copy(ts, in, n * 4), *dout = dev_copy(ts, want, n * 4 * (size_t)size);
    /* dout starts as the answer's shape only: clear it so a skipped block shows */
    memset(out, 0xff, n * 4 * (size_t)size);
    if (0 != tu_mem_write(ts->mem, dout, out, n * 4 * (size_t)size)) {
        tn_setup_failed();
    }
    check_rc(ts, MPI_Allgather(din, (int)n, MPI_INT32_T, dout, (int)n, MPI_INT32_T, comm),
             "MPI_Allgather", i);
    dev_read(ts, out, dout, n * 4 * (size_t)size);
    check_int32(ts, "MPI_Allgather", i, out, want, n * (size_t)size);
    tu_mem_free(ts->mem, din);
    tu_mem_free(ts->mem, dout);
    free(in);
    free(out);
    free(want);
}

static void run_alltoall(thread_state_t *ts, MPI_Comm comm, int i, int k) {
    size_t n = call_count(i, k) / 4 + 1;
    int size, rank;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    size_t total = n * (size_t)size;
    int32_t *in = tn_malloc(total * 4), *out = tn_malloc(total * 4), *want = tn_malloc(total * 4);
    /* block b of rank r's input: input(.., r, b * n + e); rank q receives block q of every r */
    for (size_t e = 0; e < total; ++e) {
        in[e] = input(ts->id, i, k, world_rank, e);
    }
    for (int r = 0; r < size; ++r) {
        for (size_t e = 0; e < n; ++e) {
            want[(size_t)r * n + e] = input(ts->id, i, k, r, (size_t)rank * n + e);
        }
    }
    memset(out, 0xff, total * 4);
    void *din = dev_copy(ts, in, total * 4), *dout = dev_copy(ts, out, total * 4);
    check_rc(ts, MPI_Alltoall(din, (int)n, MPI_INT32_T, dout, (int)n, MPI_INT32_T, comm),
             "MPI_Alltoall", i);
    dev_read(ts, out, dout, total * 4);
    check_int32(ts, "MPI_Alltoall", i, out, want, total);
    tu_mem_free(ts->mem, din);
    tu_mem_free(ts->mem, dout);
    free(in);
    free(out);
    free(want);
}

static void run_reduce_scatter_block(thread_state_t *ts, MPI_Comm comm, int i, int k) {
    size_t n = call_count(i, k) / 4 + 1;
    int size, rank;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    size_t total = n * (size_t)size;
    int32_t *in = tn_malloc(total * 4), *out = tn_malloc(n * 4), *want = tn_malloc(n * 4);
    for (size_t e = 0; e < total; ++e) {
        in[e] = input(ts->id, i, k, world_rank, e);
    }
    for (size_t e = 0; e < n; ++e) {
        int32_t sum = 0;
        for (int r = 0; r < size; ++r) {
            sum += input(ts->id, i, k, r, (size_t)rank * n + e);
        }
        want[e] = sum;
    }
    memset(out, 0xff, n * 4);
    void *din = dev_copy(ts, in, total * 4), *dout = dev_copy(ts, out, n * 4);
    check_rc(ts, MPI_Reduce_scatter_block(din, dout, (int)n, MPI_INT32_T, MPI_SUM, comm),
             "MPI_Reduce_scatter_block", i);
    dev_read(ts, out, dout, n * 4);
    check_int32(ts, "MPI_Reduce_scatter_block", i, out, want, n);
    tu_mem_free(ts->mem, din);
    tu_mem_free(ts->mem, dout);
    free(in);
    free(out);
    free(want);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The first MPI_Allreduce of iteration i, and --idle-ms's wait out of MPI (even ranks) or
 * bound on the call's time (odd ranks). */
static void run_first_allreduce(thread_state_t *ts, int i) {
    double start = now(), took;

    run_allreduce(ts, ts->comm, i, 0, false);
    took = now() - start;
    if (ts->idle_ms <= 0) {
        return;
    }
    if (0 == world_rank % 2) {
        struct timespec idle = {ts->idle_ms / 1000, (long)(ts->idle_ms % 1000) * 1000000L};

        nanosleep(&idle, NULL);
    } else if ((i > 0) && (took * 1000.0 >= ts->idle_ms / 2.0)) {
        thread_fail(ts,
                    "thread %d iteration %d: MPI_Allreduce took %.0f ms while a peer was out "
                    "of MPI for %d ms (its part waited for that peer's next MPI call)",
                    ts->id, i, took * 1000.0, ts->idle_ms);
    }
}

static void *thread_main(void *arg) {
    thread_state_t *ts = arg;
    double start = now();

    for (int i = 0; i < ts->iterations; ++i) {
        MPI_Comm dup;

        run_first_allreduce(ts, i);
        run_bcast(ts, ts->comm, i, 1);
        run_allgather(ts, ts->comm, i, 2);
        run_alltoall(ts, ts->comm, i, 3);
        run_reduce_scatter_block(ts, ts->comm, i, 4);
        run_allreduce(ts, ts->comm, i, 5, true);
        /* a communicator created and freed while the other thread runs collectives; the
         * collective on it sets up (and the free tears down) its own transport team */
        check_rc(ts, MPI_Comm_dup(ts->comm, &dup), "MPI_Comm_dup", i);
        if (MPI_COMM_NULL == dup) {
            continue;
        }
        MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        if (0 == i % ts->dup_every) {
            run_allreduce(ts, dup, i, 6, false);
        }
        check_rc(ts, MPI_Comm_free(&dup), "MPI_Comm_free", i);
    }
    ts->seconds = now() - start;
    return NULL;
}

int main(int argc, char **argv) {
    static const coll_gpu_coll_t mix[] = {COLL_GPU_ALLREDUCE, COLL_GPU_BCAST, COLL_GPU_ALLGATHER,
                                          COLL_GPU_ALLTOALL, COLL_GPU_REDUCE_SCATTER_BLOCK};
    thread_state_t ts[NTHREADS];
    pthread_t threads[NTHREADS];
    tu_counters_t before, after;
    tu_options_t opts;
    bool host = false, expect_native = false;
    const char *odd_env = NULL;
    int iterations = 1000, dup_every = 1, provided = MPI_THREAD_SINGLE, nthreads = NTHREADS;
    int idle_ms = 0;
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},     {"--iterations=", TU_ARG_INT, &iterations},
        {"--dup-every=", TU_ARG_INT, &dup_every}, {"--expect-native", TU_ARG_FLAG, &expect_native},
        {"--threads=", TU_ARG_INT, &nthreads},    {"--odd-env=", TU_ARG_STRING, &odd_env},
        {"--idle-ms=", TU_ARG_INT, &idle_ms},     {NULL, TU_ARG_FLAG, NULL},
    };
    double start;

    tu_odd_env_apply(argc, argv);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tu_parse_args(argc, argv, "test_threads", args, &opts);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (MPI_THREAD_MULTIPLE != provided) {
        if (0 == world_rank) {
            printf("SKIP: MPI_Init_thread gave thread level %d, not MPI_THREAD_MULTIPLE\n",
                   provided);
        }
        MPI_Finalize();
        return TU_EXIT_SKIP;
    }
    tn_setup(&opts, host ? TU_MEM_HOST : TU_MEM_DEVICE);
    iterations = (iterations < 1) ? 1 : iterations;
    dup_every = (dup_every < 1) ? 1 : dup_every;
    nthreads = (nthreads < 1) ? 1 : (nthreads > NTHREADS) ? NTHREADS : nthreads;
    /* the whole run is one case: its watchdog must outlast it */
    tu_case_timeout = 0;

    for (int t = 0; t < NTHREADS; ++t) {
        memset(&ts[t], 0, sizeof(ts[t]));
        ts[t].id = t;
        ts[t].mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
        ts[t].iterations = iterations;
        ts[t].dup_every = dup_every;
        ts[t].idle_ms = idle_ms;
        MPI_Comm_dup(MPI_COMM_WORLD, &ts[t].comm);
        MPI_Comm_set_errhandler(ts[t].comm, MPI_ERRORS_RETURN);
    }
    tu_counters_read(&before);
    start = MPI_Wtime();
    for (int t = 0; t < nthreads; ++t) {
        if (0 != pthread_create(&threads[t], NULL, thread_main, &ts[t])) {
            fprintf(stderr, "[rank %d] pthread_create failed\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    for (int t = 0; t < nthreads; ++t) {
        pthread_join(threads[t], NULL);
    }
    tu_counters_read(&after);

    for (int t = 0; t < nthreads; ++t) {
        tu_case_begin("thread %d: %d iterations of 6 collectives + dup/free on its communicator", t,
                      iterations);
        if (ts[t].failures > 0) {
            tu_fail("%ld failures of %ld calls; first: %s", ts[t].failures, ts[t].calls,
                    ts[t].first);
        }
        tu_case_end();
    }
    for (int t = 0; t < NTHREADS; ++t) {
        MPI_Comm_free(&ts[t].comm);
    }
    if (expect_native) {
        for (size_t c = 0; c < sizeof(mix) / sizeof(mix[0]); ++c) {
            tu_case_begin("%s ran natively from the threads", tu_coll_name(mix[c]));
            if (after.native[mix[c]] <= before.native[mix[c]]) {
                tu_fail("coll_gpu_calls_native[%s] did not grow (%llu -> %llu; staged %llu -> "
                        "%llu, passthrough %llu -> %llu)",
                        tu_coll_name(mix[c]), (unsigned long long)before.native[mix[c]],
                        (unsigned long long)after.native[mix[c]],
                        (unsigned long long)before.staged[mix[c]],
                        (unsigned long long)after.staged[mix[c]],
                        (unsigned long long)before.passthrough[mix[c]],
                        (unsigned long long)after.passthrough[mix[c]]);
            }
            tu_case_end();
        }
    }
    if (0 == world_rank) {
        printf("NOTE: %d ranks x %d threads x %d iterations (%s memory) in %.1f s\n", world_size,
               nthreads, iterations, host ? "host" : "device", MPI_Wtime() - start);
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
