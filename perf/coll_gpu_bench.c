/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_gpu_bench: time one collective over a range of message sizes, on host
 * or device buffers, the way the OSU micro-benchmarks do (warm-up, then the
 * average over iterations of the slowest rank).
 *
 *   mpirun -np 4 perf/coll_gpu_bench -c allreduce -m device -a emulated -b 8 -e 64M
 *
 * -c dup_iallreduce times a fresh communicator's first nonblocking call: MPI_Comm_dup,
 * MPI_Iallreduce + MPI_Wait on it, MPI_Comm_free (coll_gpu_native_setup=first_call against
 * create: staged against native, and what the setup at creation costs).
 *
 * --loop N runs N 8-byte MPI_Allreduce calls in bench_allreduce_loop() and
 * nothing else, for counting instructions with callgrind (perf/overhead.sh).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "accel.h"
#include "coll_gpu_colls.h"

typedef enum {
    BENCH_ALLREDUCE,
    BENCH_BCAST,
    BENCH_REDUCE,
    BENCH_ALLGATHER,
    BENCH_ALLTOALL,
    BENCH_DUP_IALLREDUCE
} bench_coll_t;

typedef struct {
    bench_coll_t coll;
    const char *coll_name;
    bool on_device;
    accel_backend_kind_t backend;
    size_t min_bytes, max_bytes;
    int iterations, warmup;
    long loop;
} bench_options_t;

static const accel_ops_t *bench_accel;

static size_t parse_size(const char *arg) {
    char *end;
    unsigned long long value = strtoull(arg, &end, 10);

    switch (*end) {
    case 'k':
    case 'K':
        value <<= 10;
        break;
    case 'm':
    case 'M':
        value <<= 20;
        break;
    case 'g':
    case 'G':
        value <<= 30;
        break;
    case '\0':
        break;
    default:
        fprintf(stderr, "bad size '%s'\n", arg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (size_t)value;
}

static void usage(void) {
    fprintf(stderr,
            "usage: coll_gpu_bench [-c allreduce|bcast|reduce|allgather|alltoall|dup_iallreduce]\n"
            "       [-m host|device]\n"
            "       [-a emulated|cuda] [-b min_bytes] [-e max_bytes] [-n iterations] [-w warmup]\n"
            "       [--loop N] [--multiple]\n"
            "  --multiple  MPI_Init_thread(MPI_THREAD_MULTIPLE) instead of MPI_Init\n");
}

static void parse_options(int argc, char **argv, bench_options_t *opt) {
    static const struct option long_options[] = {{"loop", required_argument, NULL, 'L'},
                                                 {"multiple", no_argument, NULL, 'T'},
                                                 {NULL, 0, NULL, 0}};
    int c;

    *opt = (bench_options_t){.coll = BENCH_ALLREDUCE,
                             .coll_name = "allreduce",
                             .backend = ACCEL_BACKEND_EMULATED,
                             .min_bytes = 8,
                             .max_bytes = 1 << 20,
                             .iterations = 100,
                             .warmup = 10};
    while (-1 != (c = getopt_long(argc, argv, "c:m:a:b:e:n:w:h", long_options, NULL))) {
        switch (c) {
        case 'c':
            opt->coll_name = optarg;
            if (0 == strcmp(optarg, "allreduce"))
                opt->coll = BENCH_ALLREDUCE;
            else if (0 == strcmp(optarg, "bcast"))
                opt->coll = BENCH_BCAST;
            else if (0 == strcmp(optarg, "reduce"))
                opt->coll = BENCH_REDUCE;
            else if (0 == strcmp(optarg, "allgather"))
                opt->coll = BENCH_ALLGATHER;
            else if (0 == strcmp(optarg, "alltoall"))
                opt->coll = BENCH_ALLTOALL;
            else if (0 == strcmp(optarg, "dup_iallreduce"))
                opt->coll = BENCH_DUP_IALLREDUCE;
            else {
                usage();
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            break;
        case 'm':
            opt->on_device = (0 == strcmp(optarg, "device"));
            break;
        case 'a':
            opt->backend =
                (0 == strcmp(optarg, "cuda")) ? ACCEL_BACKEND_CUDA : ACCEL_BACKEND_EMULATED;
            break;
        case 'b':
            opt->min_bytes = parse_size(optarg);
            break;
        case 'e':
            opt->max_bytes = parse_size(optarg);
            break;
        case 'n':
            opt->iterations = atoi(optarg);
            break;
        case 'w':
            opt->warmup = atoi(optarg);
            break;
        case 'L':
            opt->loop = atol(optarg);
            break;
        case 'T': /* read before MPI_Init_thread (main) */
            break;
        default:
            usage();
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
}

static void *bench_alloc(const bench_options_t *opt, size_t bytes) {
    void *ptr = NULL;

    if (opt->on_device) {
        if (ACCEL_OK != bench_accel->mem_alloc(ACCEL_MEM_DEVICE, bytes, &ptr)) {
            fprintf(stderr, "device allocation of %zu bytes failed\n", bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        return ptr;
    }
    ptr = malloc(bytes);
    if (NULL == ptr) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(ptr, 1, bytes);
    return ptr;
}

static void bench_free(const bench_options_t *opt, void *ptr) {
    if (opt->on_device) {
        bench_accel->mem_free(ptr);
    } else {
        free(ptr);
    }
}

static void run_once(const bench_options_t *opt, void *sbuf, void *rbuf, size_t bytes, int size) {
    int count = (int)(bytes / sizeof(float));

    switch (opt->coll) {
    case BENCH_ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BENCH_REDUCE:
        MPI_Reduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case BENCH_BCAST:
        MPI_Bcast(sbuf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case BENCH_ALLGATHER:
        MPI_Allgather(sbuf, (int)(bytes / (size_t)size), MPI_BYTE, rbuf,
                      (int)(bytes / (size_t)size), MPI_BYTE, MPI_COMM_WORLD);
        break;
    case BENCH_ALLTOALL:
        MPI_Alltoall(sbuf, (int)(bytes / (size_t)size), MPI_BYTE, rbuf, (int)(bytes / (size_t)size),
                     MPI_BYTE, MPI_COMM_WORLD);
        break;
    case BENCH_DUP_IALLREDUCE: {
        MPI_Comm dup;
        MPI_Request request;

        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Iallreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, dup, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Comm_free(&dup);
        break;
    }
    }
}

/* coll/gpu's per-collective counters, read through MPI_T: they show whether
 * the calls really went through the component and which path they took.
 * Open MPI's counter handles count from when they are allocated, so they are
 * opened before the sweep and read after it. */
typedef struct {
    bool loaded;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[3]; /* calls_staged, calls_passthrough, calls_native */
} bench_counters_t;

static void bench_counters_open(bench_counters_t *counters) {
    static const char *const names[3] = {"coll_gpu_calls_staged", "coll_gpu_calls_passthrough",
                                         "coll_gpu_calls_native"};
    int provided, index, count;

    counters->loaded = false;
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return;
    }
    MPI_T_pvar_session_create(&counters->session);
    for (int i = 0; i < 3; ++i) {
        if (MPI_SUCCESS != MPI_T_pvar_get_index(names[i], MPI_T_PVAR_CLASS_COUNTER, &index) ||
            MPI_SUCCESS != MPI_T_pvar_handle_alloc(counters->session, index, NULL,
                                                   &counters->handles[i], &count) ||
            COLL_GPU_NUM_COLLS != count) {
            return;
        }
    }
    counters->loaded = true;
}

/* Prints rank 0's counts for one collective and closes the counters. */
static void bench_counters_report(bench_counters_t *counters, coll_gpu_coll_t coll,
                                  const char *coll_name) {
    unsigned long long staged[COLL_GPU_NUM_COLLS], passthrough[COLL_GPU_NUM_COLLS],
        native[COLL_GPU_NUM_COLLS];

    if (counters->loaded &&
        MPI_SUCCESS == MPI_T_pvar_read(counters->session, counters->handles[0], staged) &&
        MPI_SUCCESS == MPI_T_pvar_read(counters->session, counters->handles[1], passthrough) &&
        MPI_SUCCESS == MPI_T_pvar_read(counters->session, counters->handles[2], native)) {
        printf("# coll/gpu on rank 0: %llu %s calls staged, %llu passed through, %llu native\n",
               staged[coll], coll_name, passthrough[coll], native[coll]);
    } else {
        printf("# coll/gpu not loaded (no coll_gpu_* MPI_T counters)\n");
    }
    MPI_T_pvar_session_free(&counters->session);
    MPI_T_finalize();
}

/* What callgrind measures: nothing but the calls.  noinline keeps it a
 * function callgrind can toggle collection on. */
__attribute__((noinline)) void bench_allreduce_loop(const double *in, double *out, long n) {
    for (long i = 0; i < n; ++i) {
        MPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    bench_options_t opt;
    int rank, size, provided;
    bool multiple = false;

    /* the thread level is chosen before MPI starts (coll_gpu_native_setup=create runs its setup
     * on a thread of its own under MPI_THREAD_MULTIPLE) */
    for (int a = 1; a < argc; ++a) {
        multiple = multiple || (0 == strcmp(argv[a], "--multiple"));
    }
    if (multiple) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    parse_options(argc, argv, &opt);

    if (opt.loop > 0) {
        double in = 1.0, out = 0.0;
        bench_allreduce_loop(&in, &out, opt.loop);
        if (0 == rank) {
            printf("%ld calls of an 8-byte MPI_Allreduce, result %g\n", opt.loop, out);
        }
        MPI_Finalize();
        return 0;
    }

    if (opt.on_device) {
        const char *reason = NULL;
        if (ACCEL_OK != accel_init(opt.backend, &bench_accel, &reason)) {
            if (0 == rank) {
                fprintf(stderr, "SKIP: no %s device: %s\n",
                        ACCEL_BACKEND_CUDA == opt.backend ? "cuda" : "emulated", reason);
            }
            MPI_Finalize();
            return 77;
        }
    }

    /* Every collective here moves at most max_bytes per buffer per rank. */
    size_t alloc_bytes = opt.max_bytes < 8 ? 8 : opt.max_bytes;
    void *sbuf = bench_alloc(&opt, alloc_bytes);
    void *rbuf = bench_alloc(&opt, alloc_bytes);

    bench_counters_t counters = {.loaded = false};
    if (0 == rank) {
        bench_counters_open(&counters);
        printf("# coll_gpu_bench %s, %d ranks, %s buffers\n", opt.coll_name, size,
               opt.on_device
                   ? (ACCEL_BACKEND_CUDA == opt.backend ? "cuda device" : "emulated device")
                   : "host");
        printf("# %12s %12s %12s %12s\n", "bytes", "avg_us", "min_us", "max_us");
    }
    for (size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= 2) {
        double t0, elapsed, avg, min, max;

        for (int i = 0; i < opt.warmup; ++i) {
            run_once(&opt, sbuf, rbuf, bytes, size);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < opt.iterations; ++i) {
            run_once(&opt, sbuf, rbuf, bytes, size);
        }
        elapsed = (MPI_Wtime() - t0) * 1e6 / opt.iterations;
        MPI_Reduce(&elapsed, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&elapsed, &min, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&elapsed, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("  %12zu %12.2f %12.2f %12.2f\n", bytes, avg / size, min, max);
        }
    }
    if (0 == rank) {
        static const coll_gpu_coll_t ids[] = {
            [BENCH_ALLREDUCE] = COLL_GPU_ALLREDUCE, [BENCH_BCAST] = COLL_GPU_BCAST,
            [BENCH_REDUCE] = COLL_GPU_REDUCE,       [BENCH_ALLGATHER] = COLL_GPU_ALLGATHER,
            [BENCH_ALLTOALL] = COLL_GPU_ALLTOALL,   [BENCH_DUP_IALLREDUCE] = COLL_GPU_IALLREDUCE};
        bench_counters_report(&counters, ids[opt.coll], opt.coll_name);
    }
    bench_free(&opt, sbuf);
    bench_free(&opt, rbuf);
    if (opt.on_device) {
        accel_finalize();
    }
    MPI_Finalize();
    return 0;
}
