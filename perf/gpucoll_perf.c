/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpucoll_perf: an nccl-tests-style sweep of one MPI collective over message
 * sizes, on host or device buffers, with every result checked bit-exactly.
 *
 *   mpirun -np 4 perf/gpucoll_perf -o allreduce -b 8 -e 128M -f 2 -m device
 *   mpirun -np 4 perf/gpucoll_perf -o allgather -d int32 --json out.json --csv out.csv
 *   mpirun -np 4 perf/gpucoll_perf -o gather --root 1 -m device
 *
 * Per size it prints nccl-tests' columns: size (bytes of the largest buffer of
 * a rank: for allgather, gather and scatter the whole gathered or scattered
 * vector, n blocks of size / n), count (its elements), type, redop, root, then
 * for out-of-place and in-place: time (µs, the average over ranks of each
 * rank's average call time), algbw = size / time, busbw = algbw * the
 * collective's factor (allreduce 2(n-1)/n; reduce_scatter, allgather, alltoall(v),
 * gather, scatter (n-1)/n; bcast, reduce 1), and #wrong, the elements that
 * differ from the expected result, summed over ranks (gather: the root's
 * receive buffer only; scatter: every rank's block).  In-place is MPI_IN_PLACE
 * at the root only for reduce, gather (the root's send buffer) and scatter (the
 * root's receive buffer).
 *
 * Inputs are small integers (1..8 for sum, max, min; 1 or 2 for prod) so that
 * every reduction is exact in any order: the expected bits are known without
 * depending on the reduction order, and anything else is wrong.  Integer types
 * wrap as C unsigned arithmetic does, which is also order-independent.
 *
 * --inject-error corrupts one element of one rank's input in the checked call
 * (not in the expected values): a correct benchmark then reports #wrong > 0
 * and exits with status 1.  --self-test checks the bandwidth factors and the
 * verification against hand-computed values and exits (tests/perf).
 *
 * -F nonblocking|persistent times MPI_I* + MPI_Wait, or MPI_Start + MPI_Wait of a request
 * made once per size, and adds the host time of the posting call and the overlap (the share of
 * the collective a computation of equal length between post and wait hides, as
 * osu_iallreduce defines it).  -F stream (allreduce, device memory) times
 * MPIX_Allreduce_enqueue on a stream communicator (coll_gpu_ext.h) followed by a synchronize
 * of the stream; the post column is the enqueue's host time.  -F graph captures one such
 * enqueue into a CUDA graph per size and times the graph's launch and a synchronize (the post
 * column: the launch's host time).  No blocking call runs
 * first: coll/gpu sets a communicator's native context up at its first call, nonblocking or
 * not.
 *
 * Housekeeping (times, error counts) goes through point-to-point messages,
 * never through a collective (every rooted one is benchmarked too), so that
 * coll/gpu's MPI_T counters, printed at the end, count the benchmark's calls
 * only.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <sched.h>
#include <time.h>

#include "accel.h"
#include "coll_gpu_colls.h"
#include "coll_gpu_ext.h"

/* The persistent collectives: MPI-4's (Open MPI 5), or Open MPI 4.1's extension. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define PERF_INIT(name) MPI_##name##_init
#else
#include <mpi-ext.h>
#define PERF_INIT(name) MPIX_##name##_init
#endif

typedef enum {
    PERF_ALLREDUCE,
    PERF_REDUCE_SCATTER,
    PERF_ALLGATHER,
    PERF_BCAST,
    PERF_REDUCE,
    PERF_ALLTOALL,
    PERF_ALLTOALLV, /* alltoall's blocks through MPI_Alltoallv's counts and displacements */
    PERF_GATHER,
    PERF_SCATTER,
    PERF_NUM_COLLS
} perf_coll_t;

typedef struct {
    const char *name;
    bool reduces;       /* takes an op */
    bool split;         /* size is n blocks of count/n elements (one per rank) */
    bool has_in_place;  /* MPI defines an MPI_IN_PLACE form */
    coll_gpu_coll_t id; /* index in coll/gpu's per-collective counters */
} perf_coll_info_t;

static const perf_coll_info_t perf_colls[PERF_NUM_COLLS] = {
    [PERF_ALLREDUCE] = {.name = "allreduce",
                        .reduces = true,
                        .split = false,
                        .has_in_place = true,
                        .id = COLL_GPU_ALLREDUCE},
    [PERF_REDUCE_SCATTER] = {.name = "reduce_scatter",
                             .reduces = true,
                             .split = true,
                             .has_in_place = true,
                             .id = COLL_GPU_REDUCE_SCATTER_BLOCK},
    [PERF_ALLGATHER] = {.name = "allgather",
                        .reduces = false,
                        .split = true,
                        .has_in_place = true,
                        .id = COLL_GPU_ALLGATHER},
    [PERF_BCAST] = {.name = "bcast",
                    .reduces = false,
                    .split = false,
                    .has_in_place = false,
                    .id = COLL_GPU_BCAST},
    [PERF_REDUCE] = {.name = "reduce",
                     .reduces = true,
                     .split = false,
                     .has_in_place = true,
                     .id = COLL_GPU_REDUCE},
    [PERF_ALLTOALL] = {.name = "alltoall",
                       .reduces = false,
                       .split = true,
                       .has_in_place = true,
                       .id = COLL_GPU_ALLTOALL},
    [PERF_ALLTOALLV] = {.name = "alltoallv",
                        .reduces = false,
                        .split = true,
                        .has_in_place = true,
                        .id = COLL_GPU_ALLTOALLV},
    [PERF_GATHER] = {.name = "gather",
                     .reduces = false,
                     .split = true,
                     .has_in_place = true,
                     .id = COLL_GPU_GATHER},
    [PERF_SCATTER] = {.name = "scatter",
                      .reduces = false,
                      .split = true,
                      .has_in_place = true,
                      .id = COLL_GPU_SCATTER},
};

typedef enum {
    PERF_INT8,
    PERF_UINT8,
    PERF_INT32,
    PERF_UINT32,
    PERF_INT64,
    PERF_UINT64,
    PERF_FLOAT16,
    PERF_BFLOAT16,
    PERF_FLOAT,
    PERF_DOUBLE,
    PERF_NUM_TYPES
} perf_type_t;

static const struct {
    const char *name;
    size_t size;
} perf_types[PERF_NUM_TYPES] = {
    [PERF_INT8] = {"int8", 1},     [PERF_UINT8] = {"uint8", 1},       [PERF_INT32] = {"int32", 4},
    [PERF_UINT32] = {"uint32", 4}, [PERF_INT64] = {"int64", 8},       [PERF_UINT64] = {"uint64", 8},
    [PERF_FLOAT16] = {"half", 2},  [PERF_BFLOAT16] = {"bfloat16", 2}, [PERF_FLOAT] = {"float", 4},
    [PERF_DOUBLE] = {"double", 8},
};

typedef enum { PERF_SUM, PERF_PROD, PERF_MAX, PERF_MIN, PERF_NUM_OPS } perf_op_t;

static const char *const perf_op_names[PERF_NUM_OPS] = {"sum", "prod", "max", "min"};

typedef enum { PERF_BACKEND_AUTO, PERF_BACKEND_CUDA, PERF_BACKEND_EMULATED } perf_backend_t;

/* How the collective is called: MPI_Allreduce, MPI_Iallreduce + MPI_Wait, or MPI_Allreduce_init
 * once and MPI_Start + MPI_Wait per call (MPIX_Allreduce_init on Open MPI 4.1). */
typedef enum {
    PERF_BLOCKING,
    PERF_NONBLOCKING,
    PERF_PERSISTENT,
    PERF_STREAM,
    PERF_GRAPH,
    PERF_NUM_FORMS
} perf_form_t;
static const char *const perf_form_names[PERF_NUM_FORMS] = {"blocking", "nonblocking", "persistent",
                                                            "stream", "graph"};
/* The forms whose calls are queued on perf_stream. */
#define PERF_ON_STREAM(form) ((PERF_STREAM == (form)) || (PERF_GRAPH == (form)))

typedef struct {
    perf_coll_t coll;
    perf_type_t type;
    perf_op_t op;
    perf_form_t form;
    int overlap;         /* nonblocking and persistent forms: measure the overlap (default 1) */
    bool compute_sleeps; /* the compute phase sleeps (frees the core) instead of spinning */
    int root;
    bool on_device;
    perf_backend_t backend;
    size_t min_bytes, max_bytes, step_factor;
    int iterations, warmup;
    int check;
    int in_place; /* 0: out-of-place only; 1: both */
    double size_seconds;
    bool inject_error;
    bool self_test;
    const char *json_path, *csv_path;
} perf_options_t;

/* One measured placement (out-of-place or in-place) of one size. */
typedef struct {
    bool valid;
    double time_us, algbw, busbw;
    long long wrong; /* -1: not checked */
    /* nonblocking and persistent forms: the host time of the call that posts (MPI_I* or
     * MPI_Start), and the share of the collective's time a compute phase of equal length hides
     * (osu_iallreduce's overlap); -1: not measured */
    double post_us, overlap_pct;
    /* what one call asked of rank 0's host (coll/gpu's MPI_T counters over the timed calls,
     * perf_host_names); -1: not measured (the component is not loaded) */
    double host[5];
} perf_result_t;

/* coll/gpu's counters of what a call asks of the host beside the device's work, read around
 * the timed calls of every size (perf_time): device submissions, host waits on streams, signals
 * to peers and waits for them through the transport, call-board words. */
#define PERF_NUM_HOST 5
static const char *const perf_host_names[PERF_NUM_HOST] = {
    "coll_gpu_device_submissions", "coll_gpu_host_stream_waits", "coll_gpu_host_signals",
    "coll_gpu_host_peer_waits", "coll_gpu_board_arrivals"};
static const char *const perf_host_labels[PERF_NUM_HOST] = {"device submissions", "stream waits",
                                                            "signals", "peer waits", "board words"};
static struct {
    bool loaded;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[PERF_NUM_HOST];
} perf_host;

/* The host counters now (false: not loaded). */
static bool perf_host_read(unsigned long long values[PERF_NUM_HOST]) {
    for (int i = 0; perf_host.loaded && (i < PERF_NUM_HOST); ++i) {
        if (MPI_SUCCESS != MPI_T_pvar_read(perf_host.session, perf_host.handles[i], &values[i])) {
            return false;
        }
    }
    return perf_host.loaded;
}

typedef struct {
    size_t bytes, count;
    perf_result_t oop, ip;
} perf_row_t;

static int perf_rank, perf_nranks;
static const accel_ops_t *perf_accel;
/* -F stream: the stream the calls are ordered on, and its stream communicator */
static accel_stream_h perf_stream;
static MPIX_Stream perf_mpix_stream = MPIX_STREAM_NULL;
static MPI_Comm perf_stream_comm = MPI_COMM_NULL;
static const char *perf_backend_name = "none";

/* ---------------------------------------------------------------- arithmetic */

/* nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md there): how many times the
 * size each rank's link must carry, relative to size, in an optimal algorithm. */
static double perf_bus_factor(perf_coll_t coll, int n) {
    switch (coll) {
    case PERF_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case PERF_REDUCE_SCATTER:
    case PERF_ALLGATHER:
    case PERF_ALLTOALL:
    case PERF_ALLTOALLV:
    case PERF_GATHER:
    case PERF_SCATTER:
        return (double)(n - 1) / n;
    case PERF_BCAST:
    case PERF_REDUCE:
    default:
        return 1.0;
    }
}

/* algbw in GB/s (1e9 bytes per second, as nccl-tests) of size bytes in time_us. */
static double perf_algbw(size_t bytes, double time_us) {
    return time_us > 0 ? (double)bytes / time_us / 1e3 : 0.0;
}

/* Elements per rank block (split collectives) or per buffer, and the size printed. */
static void perf_size_count(perf_coll_t coll, perf_type_t type, int n, size_t bytes,
                            size_t *count_p, size_t *block_p) {
    size_t elems = bytes / perf_types[type].size;

    if (perf_colls[coll].split) {
        *block_p = elems / (size_t)n;
        *count_p = *block_p * (size_t)n;
    } else {
        *block_p = elems;
        *count_p = elems;
    }
}

/* The input of rank r at element i: small integers, exact in any order. */
static int64_t perf_input(const perf_options_t *opt, int r, size_t i) {
    if (!perf_colls[opt->coll].reduces) {
        /* data movement: depends on rank and position, fits every type's integers exactly
         * (below 2^8 for the 2-byte floats, which hold integers exactly up to 256) */
        return (int64_t)(((size_t)r * 37 + i * 13 + 1) % 251);
    }
    if (PERF_PROD == opt->op) {
        return 0 == (i + (size_t)r) % 3 ? 2 : 1;
    }
    return (int64_t)(1 + (i + 3 * (size_t)r) % 8);
}

/* Integer value of the reduction of every rank's input at element i (modulo 2^64 for the
 * integer types: truncated to the type's width when stored, as C wraps it). */
static int64_t perf_reduced(const perf_options_t *opt, int n, size_t i) {
    int64_t acc = perf_input(opt, 0, i);

    for (int r = 1; r < n; ++r) {
        int64_t v = perf_input(opt, r, i);
        switch (opt->op) {
        case PERF_SUM:
            acc = (int64_t)((uint64_t)acc + (uint64_t)v);
            break;
        case PERF_PROD:
            acc = (int64_t)((uint64_t)acc * (uint64_t)v);
            break;
        case PERF_MAX:
            acc = v > acc ? v : acc;
            break;
        case PERF_MIN:
        default:
            acc = v < acc ? v : acc;
            break;
        }
    }
    return acc;
}

/* Stores the integer v as element i of a buffer of the type (integers truncated to the
 * type's width, as C converts them; the small values used are exact in every float type). */
static void perf_store(perf_type_t type, void *buf, size_t i, int64_t v) {
    switch (type) {
    case PERF_INT8:
        ((int8_t *)buf)[i] = (int8_t)(uint8_t)(uint64_t)v;
        break;
    case PERF_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)(uint64_t)v;
        break;
    case PERF_INT32:
        ((int32_t *)buf)[i] = (int32_t)(uint32_t)(uint64_t)v;
        break;
    case PERF_UINT32:
        ((uint32_t *)buf)[i] = (uint32_t)(uint64_t)v;
        break;
    case PERF_INT64:
    case PERF_UINT64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case PERF_FLOAT16:
        ((uint16_t *)buf)[i] = coll_gpu_ext_float_to_fp16((float)v);
        break;
    case PERF_BFLOAT16:
        ((uint16_t *)buf)[i] = coll_gpu_ext_float_to_bf16((float)v);
        break;
    case PERF_FLOAT:
        ((float *)buf)[i] = (float)v;
        break;
    case PERF_DOUBLE:
    default:
        ((double *)buf)[i] = (double)v;
        break;
    }
}

/* Stores, as element j of buf, the reduction over the ranks of their inputs at element i.
 * A float product of 1s and 2s is a power of two, exact until it overflows to inf (which
 * every order reaches too): built from the exponent, not from the wrapped int64_t. */
static void perf_store_reduced(const perf_options_t *opt, int n, void *buf, size_t j, size_t i) {
    perf_type_t type = opt->type;

    if (type >= PERF_FLOAT16 && PERF_PROD == opt->op) {
        int twos = 0;
        for (int r = 0; r < n; ++r) {
            twos += 2 == perf_input(opt, r, i);
        }
        float f = (float)ldexp(1.0, twos);
        switch (type) {
        case PERF_FLOAT16:
            ((uint16_t *)buf)[j] = coll_gpu_ext_float_to_fp16(f);
            break;
        case PERF_BFLOAT16:
            ((uint16_t *)buf)[j] = coll_gpu_ext_float_to_bf16(f);
            break;
        case PERF_FLOAT:
            ((float *)buf)[j] = f;
            break;
        default:
            ((double *)buf)[j] = ldexp(1.0, twos);
            break;
        }
        return;
    }
    perf_store(type, buf, j, perf_reduced(opt, n, i));
}

/* Stores element j of rank me's expected result (count elements, blocks of block). */
static void perf_store_expected(const perf_options_t *opt, int n, int me, size_t block, void *buf,
                                size_t j) {
    switch (opt->coll) {
    case PERF_ALLREDUCE:
    case PERF_REDUCE:
        perf_store_reduced(opt, n, buf, j, j);
        break;
    case PERF_REDUCE_SCATTER: /* block me of the reduced vector */
        perf_store_reduced(opt, n, buf, j, (size_t)me * block + j);
        break;
    case PERF_ALLGATHER: /* block r is rank r's input */
    case PERF_GATHER:    /* the same, at the root */
        perf_store(opt->type, buf, j, perf_input(opt, (int)(j / block), j % block));
        break;
    case PERF_BCAST:
        perf_store(opt->type, buf, j, perf_input(opt, opt->root, j));
        break;
    case PERF_SCATTER: /* block me of the root's input */
        perf_store(opt->type, buf, j, perf_input(opt, opt->root, (size_t)me * block + j));
        break;
    case PERF_ALLTOALL: /* block r is block me of rank r's input */
    default:
        perf_store(opt->type, buf, j,
                   perf_input(opt, (int)(j / block), (size_t)me * block + j % block));
        break;
    }
}

/* The corrupted value of an input, guaranteed to change the result of the op. */
static int64_t perf_corrupt(const perf_options_t *opt, int64_t v) {
    if (!perf_colls[opt->coll].reduces) {
        return (v + 1) % 251;
    }
    switch (opt->op) {
    case PERF_PROD:
        return 3;
    case PERF_MAX:
        return 100;
    case PERF_MIN:
        return 0;
    case PERF_SUM:
    default:
        return v + 1;
    }
}

/* Elements of got that differ, bit for bit, from want (count elements of esize bytes). */
static long long perf_count_wrong(const void *got, const void *want, size_t count, size_t esize) {
    long long wrong = 0;

    if (0 == memcmp(got, want, count * esize)) {
        return 0;
    }
    for (size_t i = 0; i < count; ++i) {
        wrong += 0 != memcmp((const char *)got + i * esize, (const char *)want + i * esize, esize);
    }
    return wrong;
}

/* ------------------------------------------------------------------- options */

static size_t perf_parse_size(const char *arg) {
    char *end;
    unsigned long long value;

    errno = 0;
    value = strtoull(arg, &end, 10);
    if (0 != errno || end == arg) {
        goto err;
    }
    switch (*end) {
    case 'k':
    case 'K':
        value <<= 10;
        ++end;
        break;
    case 'm':
    case 'M':
        value <<= 20;
        ++end;
        break;
    case 'g':
    case 'G':
        value <<= 30;
        ++end;
        break;
    default:
        break;
    }
    if ('\0' == *end || (('B' == *end || 'b' == *end) && '\0' == end[1])) {
        return (size_t)value;
    }
err:
    if (0 == perf_rank) {
        fprintf(stderr, "gpucoll_perf: bad size '%s'\n", arg);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 0;
}

static int perf_find(const char *arg, const char *what, const char *(*name_of)(int), int n) {
    for (int i = 0; i < n; ++i) {
        if (0 == strcmp(arg, name_of(i))) {
            return i;
        }
    }
    if (0 == perf_rank) {
        fprintf(stderr, "gpucoll_perf: unknown %s '%s' (", what, arg);
        for (int i = 0; i < n; ++i) {
            fprintf(stderr, "%s%s", i ? ", " : "", name_of(i));
        }
        fprintf(stderr, ")\n");
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 0;
}

static const char *perf_coll_name(int i) { return perf_colls[i].name; }
static const char *perf_type_name(int i) { return perf_types[i].name; }
static const char *perf_op_name(int i) { return perf_op_names[i]; }
static const char *perf_form_name(int i) { return perf_form_names[i]; }

static void perf_usage(void) {
    if (0 != perf_rank) {
        return;
    }
    fprintf(
        stderr,
        "usage: gpucoll_perf [options]\n"
        "  -o, --coll NAME        allreduce (default), reduce_scatter, allgather, bcast,\n"
        "                         reduce, alltoall, alltoallv (alltoall's equal blocks),\n"
        "                         gather, scatter\n"
        "  -d, --datatype T       float (default), double, half, bfloat16, int8, uint8,\n"
        "                         int32, uint32, int64, uint64\n"
        "      --op OP            sum (default), prod, max, min\n"
        "  -r, --root R           root of bcast, reduce, gather, scatter (default 0)\n"
        "  -F, --form F           blocking (default), nonblocking (MPI_I*, MPI_Wait),\n"
        "                         persistent (MPI_*_init once, MPI_Start, MPI_Wait),\n"
        "                         stream (allreduce on device memory: MPIX_Allreduce_enqueue\n"
        "                         on a stream communicator, then the stream synchronized),\n"
        "                         graph (the same enqueue captured into a CUDA graph once per\n"
        "                         size, the graph launched, the stream synchronized)\n"
        "      --overlap 0|1      nonblocking/persistent/stream: measure the post time and the\n"
        "                         overlap with a compute phase of equal length (default 1)\n"
        "      --compute spin|sleep  the compute phase spins (default, as osu) or yields its core\n"
        "                         whenever another thread wants it (a host that sleeps: the\n"
        "                         emulated device's threads run meanwhile)\n"
        "  -b, --minbytes N       smallest size (default 8; K, M, G suffixes)\n"
        "  -e, --maxbytes N       largest size (default 32M)\n"
        "  -f, --stepfactor F     size multiplier between rows (default 2)\n"
        "  -n, --iters N          timed iterations per size (default 20)\n"
        "  -w, --warmup_iters N   untimed iterations before (default 5)\n"
        "  -c, --check 0|1        check results bit-exactly (default 1)\n"
        "  -m, --memory K         host (default) or device buffers\n"
        "  -a, --backend B        device memory: auto (default: cuda if present, else\n"
        "                         emulated), cuda, emulated\n"
        "  -i, --in-place 0|1     1 (default): out-of-place and in-place; 0: out-of-place\n"
        "  -T, --size-seconds S   fewer iterations where n would take over S seconds\n"
        "      --json FILE        results as JSON (rank 0)\n"
        "      --csv FILE         results as CSV (rank 0), one line per size and placement\n"
        "      --inject-error     corrupt one input element in the checked call (tests)\n"
        "      --self-test        check the benchmark's own arithmetic, then exit\n");
}

static void perf_parse_options(int argc, char **argv, perf_options_t *opt) {
    static const struct option long_options[] = {{"coll", required_argument, NULL, 'o'},
                                                 {"datatype", required_argument, NULL, 'd'},
                                                 {"op", required_argument, NULL, 'O'},
                                                 {"root", required_argument, NULL, 'r'},
                                                 {"form", required_argument, NULL, 'F'},
                                                 {"overlap", required_argument, NULL, 'V'},
                                                 {"compute", required_argument, NULL, 'K'},
                                                 {"minbytes", required_argument, NULL, 'b'},
                                                 {"maxbytes", required_argument, NULL, 'e'},
                                                 {"stepfactor", required_argument, NULL, 'f'},
                                                 {"iters", required_argument, NULL, 'n'},
                                                 {"warmup_iters", required_argument, NULL, 'w'},
                                                 {"check", required_argument, NULL, 'c'},
                                                 {"memory", required_argument, NULL, 'm'},
                                                 {"backend", required_argument, NULL, 'a'},
                                                 {"in-place", required_argument, NULL, 'i'},
                                                 {"size-seconds", required_argument, NULL, 'T'},
                                                 {"json", required_argument, NULL, 'J'},
                                                 {"csv", required_argument, NULL, 'C'},
                                                 {"inject-error", no_argument, NULL, 'E'},
                                                 {"self-test", no_argument, NULL, 'S'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
    int c;

    *opt = (perf_options_t){.coll = PERF_ALLREDUCE,
                            .type = PERF_FLOAT,
                            .op = PERF_SUM,
                            .min_bytes = 8,
                            .max_bytes = 32 << 20,
                            .step_factor = 2,
                            .iterations = 20,
                            .warmup = 5,
                            .check = 1,
                            .overlap = 1,
                            .in_place = 1};
    while (-1 !=
           (c = getopt_long(argc, argv, "o:d:r:F:b:e:f:n:w:c:m:a:i:T:h", long_options, NULL))) {
        switch (c) {
        case 'o':
            opt->coll = perf_find(optarg, "collective", perf_coll_name, PERF_NUM_COLLS);
            break;
        case 'd':
            opt->type = perf_find(optarg, "datatype", perf_type_name, PERF_NUM_TYPES);
            break;
        case 'O':
            opt->op = perf_find(optarg, "op", perf_op_name, PERF_NUM_OPS);
            break;
        case 'r':
            opt->root = atoi(optarg);
            break;
        case 'F':
            opt->form = perf_find(optarg, "form", perf_form_name, PERF_NUM_FORMS);
            break;
        case 'K':
            if ((0 != strcmp(optarg, "spin")) && (0 != strcmp(optarg, "sleep"))) {
                perf_usage();
            }
            opt->compute_sleeps = (0 == strcmp(optarg, "sleep"));
            break;
        case 'V':
            opt->overlap = atoi(optarg);
            break;
        case 'b':
            opt->min_bytes = perf_parse_size(optarg);
            break;
        case 'e':
            opt->max_bytes = perf_parse_size(optarg);
            break;
        case 'f':
            opt->step_factor = (size_t)atol(optarg);
            break;
        case 'n':
            opt->iterations = atoi(optarg);
            break;
        case 'w':
            opt->warmup = atoi(optarg);
            break;
        case 'c':
            opt->check = atoi(optarg);
            break;
        case 'm':
            if (0 == strcmp(optarg, "device")) {
                opt->on_device = true;
            } else if (0 != strcmp(optarg, "host")) {
                perf_usage();
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            break;
        case 'a':
            if (0 == strcmp(optarg, "cuda")) {
                opt->backend = PERF_BACKEND_CUDA;
            } else if (0 == strcmp(optarg, "emulated")) {
                opt->backend = PERF_BACKEND_EMULATED;
            } else if (0 == strcmp(optarg, "auto")) {
                opt->backend = PERF_BACKEND_AUTO;
            } else {
                perf_usage();
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            break;
        case 'i':
            opt->in_place = atoi(optarg);
            break;
        case 'T':
            opt->size_seconds = atof(optarg);
            break;
        case 'J':
            opt->json_path = optarg;
            break;
        case 'C':
            opt->csv_path = optarg;
            break;
        case 'E':
            opt->inject_error = true;
            break;
        case 'S':
            opt->self_test = true;
            break;
        default:
            perf_usage();
            MPI_Abort(MPI_COMM_WORLD, 'h' == c ? 0 : 2);
        }
    }
    if (opt->step_factor < 2 || opt->iterations < 1 || opt->warmup < 0 ||
        opt->min_bytes > opt->max_bytes || opt->root < 0 || opt->root >= perf_nranks) {
        if (0 == perf_rank) {
            fprintf(stderr, "gpucoll_perf: need -f >= 2, -n >= 1, -w >= 0, -b <= -e and "
                            "0 <= root < ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!perf_colls[opt->coll].reduces) {
        opt->op = PERF_SUM; /* unused */
    }
}

/* ---------------------------------------------------------------- MPI helpers */

static MPI_Datatype perf_mpi_type(perf_type_t type) {
    switch (type) {
    case PERF_INT8:
        return MPI_INT8_T;
    case PERF_UINT8:
        return MPI_UINT8_T;
    case PERF_INT32:
        return MPI_INT32_T;
    case PERF_UINT32:
        return MPI_UINT32_T;
    case PERF_INT64:
        return MPI_INT64_T;
    case PERF_UINT64:
        return MPI_UINT64_T;
    case PERF_FLOAT16:
        return coll_gpu_type_float16();
    case PERF_BFLOAT16:
        return coll_gpu_type_bfloat16();
    case PERF_FLOAT:
        return MPI_FLOAT;
    case PERF_DOUBLE:
    default:
        return MPI_DOUBLE;
    }
}

static MPI_Op perf_mpi_op(perf_op_t op, perf_type_t type) {
    MPI_Op base = PERF_PROD == op  ? MPI_PROD
                  : PERF_MAX == op ? MPI_MAX
                  : PERF_MIN == op ? MPI_MIN
                                   : MPI_SUM;

    if (PERF_FLOAT16 == type || PERF_BFLOAT16 == type) {
        return coll_gpu_op_half(base, perf_mpi_type(type));
    }
    return base;
}

/* Sum (or max) of one value over the ranks, known to every rank: sent to rank 0, combined
 * there in rank order and sent back, point to point: no collective, as every rooted one is
 * benchmarked too (see the header). */
#define PERF_COMBINE_TAG 4711
static double perf_combine(double value, bool max) {
    double result = 0, other;

    if (0 != perf_rank) {
        MPI_Send(&value, 1, MPI_DOUBLE, 0, PERF_COMBINE_TAG, MPI_COMM_WORLD);
        MPI_Recv(&result, 1, MPI_DOUBLE, 0, PERF_COMBINE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return result;
    }
    for (int r = 0; r < perf_nranks; ++r) {
        other = value;
        if (r > 0) {
            MPI_Recv(&other, 1, MPI_DOUBLE, r, PERF_COMBINE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        result = max ? (other > result ? other : result) : result + other;
    }
    for (int r = 1; r < perf_nranks; ++r) {
        MPI_Send(&result, 1, MPI_DOUBLE, r, PERF_COMBINE_TAG, MPI_COMM_WORLD);
    }
    return result;
}

/* ----------------------------------------------------------------- buffers */

typedef struct {
    void *sbuf, *rbuf; /* device or host, max_bytes each */
    void *host;        /* host, max_bytes: fill and read back device buffers */
    void *expect;      /* host, max_bytes: expected result */
    size_t bytes;
} perf_buffers_t;

static void *perf_alloc(const perf_options_t *opt, size_t bytes, bool device) {
    void *ptr = NULL;

    if (device && opt->on_device) {
        if (ACCEL_OK != perf_accel->mem_alloc(ACCEL_MEM_DEVICE, bytes, &ptr)) {
            fprintf(stderr, "[rank %d] gpucoll_perf: device allocation of %zu bytes failed\n",
                    perf_rank, bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        return ptr;
    }
    ptr = malloc(bytes);
    if (NULL == ptr) {
        fprintf(stderr, "[rank %d] gpucoll_perf: allocation of %zu bytes failed\n", perf_rank,
                bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(ptr, 0, bytes);
    return ptr;
}

static void perf_free(const perf_options_t *opt, void *ptr, bool device) {
    if (device && opt->on_device) {
        perf_accel->mem_free(ptr);
    } else {
        free(ptr);
    }
}

/* host -> buffer (device or host) and back */
static void perf_copy(const perf_options_t *opt, void *dst, const void *src, size_t len) {
    if (0 == len) {
        return;
    }
    if (opt->on_device) {
        if (ACCEL_OK != perf_accel->memcpy(dst, src, len)) {
            fprintf(stderr, "[rank %d] gpucoll_perf: copy of %zu bytes failed\n", perf_rank, len);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        memcpy(dst, src, len);
    }
}

/* ----------------------------------------------------------------- one call */

/* The call of the collective in the run's form: the blocking one, or the nonblocking or
 * persistent one setting *req (a persistent request is inactive: MPI_Start starts it). */
#define PERF_FORMS(form, req, blocking, nonblocking, persistent, ...)                              \
    ((PERF_NONBLOCKING == (form))  ? nonblocking(__VA_ARGS__, MPI_COMM_WORLD, req)                 \
     : (PERF_PERSISTENT == (form)) ? persistent(__VA_ARGS__, MPI_COMM_WORLD, MPI_INFO_NULL, req)   \
                                   : blocking(__VA_ARGS__, MPI_COMM_WORLD))

/* MPI_Alltoallv's counts and displacements: block elements to and from every rank, in rank
 * order (a persistent or nonblocking call keeps reading them: they live as long as the run). */
static int *perf_counts, *perf_displs;

static void perf_alltoallv_blocks(size_t block) {
    if (NULL == perf_counts) {
        perf_counts = calloc((size_t)perf_nranks, sizeof(int));
        perf_displs = calloc((size_t)perf_nranks, sizeof(int));
        if ((NULL == perf_counts) || (NULL == perf_displs)) {
            fprintf(stderr, "[rank %d] gpucoll_perf: out of memory\n", perf_rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    for (int r = 0; r < perf_nranks; ++r) {
        perf_counts[r] = (int)block;
        perf_displs[r] = (int)((size_t)r * block);
    }
}

static int perf_call(const perf_options_t *opt, void *sbuf, void *rbuf, size_t count, size_t block,
                     bool in_place, MPI_Request *req) {
    MPI_Datatype dt = perf_mpi_type(opt->type);
    MPI_Op op = perf_mpi_op(opt->op, opt->type);
    const void *send = in_place ? MPI_IN_PLACE : sbuf;
    perf_form_t form = opt->form;

    if (PERF_ON_STREAM(form)) {
        return MPIX_Allreduce_enqueue(send, rbuf, (int)count, dt, op, perf_stream_comm);
    }
    switch (opt->coll) {
    case PERF_ALLREDUCE:
        return PERF_FORMS(form, req, MPI_Allreduce, MPI_Iallreduce, PERF_INIT(Allreduce), send,
                          rbuf, (int)count, dt, op);
    case PERF_REDUCE_SCATTER:
        return PERF_FORMS(form, req, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                          PERF_INIT(Reduce_scatter_block), send, rbuf, (int)block, dt, op);
    case PERF_ALLGATHER:
        return PERF_FORMS(form, req, MPI_Allgather, MPI_Iallgather, PERF_INIT(Allgather), send,
                          (int)block, dt, rbuf, (int)block, dt);
    case PERF_BCAST:
        return PERF_FORMS(form, req, MPI_Bcast, MPI_Ibcast, PERF_INIT(Bcast),
                          perf_rank == opt->root ? sbuf : rbuf, (int)count, dt, opt->root);
    case PERF_REDUCE:
        if (in_place && perf_rank != opt->root) {
            send = rbuf; /* MPI_IN_PLACE at the root only: the others send their data */
        }
        return PERF_FORMS(form, req, MPI_Reduce, MPI_Ireduce, PERF_INIT(Reduce), send, rbuf,
                          (int)count, dt, op, opt->root);
    case PERF_GATHER:
        if (in_place && perf_rank != opt->root) {
            send = rbuf; /* MPI_IN_PLACE at the root only: the others send their block */
        }
        return PERF_FORMS(form, req, MPI_Gather, MPI_Igather, PERF_INIT(Gather), send, (int)block,
                          dt, rbuf, (int)block, dt, opt->root);
    case PERF_SCATTER: /* MPI_IN_PLACE at the root only, as its receive buffer */
        return PERF_FORMS(
            form, req, MPI_Scatter, MPI_Iscatter, PERF_INIT(Scatter), sbuf, (int)block, dt,
            (in_place && perf_rank == opt->root) ? MPI_IN_PLACE : rbuf, (int)block, dt, opt->root);
    case PERF_ALLTOALLV:
        perf_alltoallv_blocks(block);
        return PERF_FORMS(form, req, MPI_Alltoallv, MPI_Ialltoallv, PERF_INIT(Alltoallv), send,
                          perf_counts, perf_displs, dt, rbuf, perf_counts, perf_displs, dt);
    case PERF_ALLTOALL:
    default:
        return PERF_FORMS(form, req, MPI_Alltoall, MPI_Ialltoall, PERF_INIT(Alltoall), send,
                          (int)block, dt, rbuf, (int)block, dt);
    }
}

/* One whole call: a persistent request made, started, completed and freed. */
static void perf_run_once(const perf_options_t *opt, void *sbuf, void *rbuf, size_t count,
                          size_t block, bool in_place) {
    MPI_Request req = MPI_REQUEST_NULL;

    perf_call(opt, sbuf, rbuf, count, block, in_place, &req);
    if (PERF_PERSISTENT == opt->form) {
        MPI_Start(&req);
    }
    if (PERF_ON_STREAM(opt->form)) {
        perf_accel->stream_synchronize(perf_stream);
    } else if (PERF_BLOCKING != opt->form) {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (MPI_REQUEST_NULL != req) {
        MPI_Request_free(&req);
    }
}

/* Fills the inputs of the checked call (where the call reads them, in-place or not), the
 * receive buffer with a pattern no result has, and the expected result; returns the number
 * of result elements this rank checks (0 for a non-root of reduce and gather) and where they
 * are (scatter's root in place: its own block, left in its send buffer). */
static size_t perf_prepare_check(const perf_options_t *opt, perf_buffers_t *b, size_t count,
                                 size_t block, bool in_place, void **result_p) {
    const size_t es = perf_types[opt->type].size;
    const int n = perf_nranks, me = perf_rank;
    /* the root's input is the only one (bcast, scatter): read from the send buffer in place */
    const bool from_root = PERF_BCAST == opt->coll || PERF_SCATTER == opt->coll;
    size_t in_count = count, in_offset = 0, out_count = count;
    char *input, *result = b->rbuf;

    switch (opt->coll) {
    case PERF_ALLGATHER:
        in_count = block;
        in_offset = in_place ? (size_t)me * block : 0;
        break;
    case PERF_GATHER: /* in place, the root's block is already where it is gathered to */
        in_count = block;
        in_offset = (in_place && me == opt->root) ? (size_t)me * block : 0;
        out_count = me == opt->root ? count : 0;
        break;
    case PERF_REDUCE_SCATTER:
        out_count = block;
        break;
    case PERF_REDUCE:
        out_count = me == opt->root ? count : 0;
        break;
    case PERF_BCAST:
        in_count = me == opt->root ? count : 0;
        result = me == opt->root ? b->sbuf : b->rbuf;
        break;
    case PERF_SCATTER:
        in_count = me == opt->root ? count : 0;
        out_count = block;
        if (in_place && me == opt->root) {
            result = (char *)b->sbuf + (size_t)me * block * es;
        }
        break;
    default:
        break;
    }
    input = (char *)((in_place && !from_root) ? b->rbuf : b->sbuf) + in_offset * es;
    *result_p = result;

    memset(b->host, 0xa5, count * es);
    perf_copy(opt, b->rbuf, b->host, count * es);
    for (size_t i = 0; i < in_count; ++i) {
        perf_store(opt->type, b->host, i, perf_input(opt, me, i));
    }
    /* one rank's input (the root's for bcast and scatter) differs from what the expected
     * values assume: scatter's element count / 2 lies in block n / 2 (one rank's result) */
    if (opt->inject_error && in_count > 0 && me == (from_root ? opt->root : n - 1)) {
        size_t i = in_count / 2;
        perf_store(opt->type, b->host, i, perf_corrupt(opt, perf_input(opt, me, i)));
    }
    perf_copy(opt, input, b->host, in_count * es);

    for (size_t j = 0; j < out_count; ++j) {
        perf_store_expected(opt, n, me, block, b->expect, j);
    }
    return out_count;
}

/* The timed calls run on defined data: every rank's inputs in both buffers. */
static void perf_fill_inputs(const perf_options_t *opt, perf_buffers_t *b) {
    size_t count = b->bytes / perf_types[opt->type].size;

    for (size_t i = 0; i < count; ++i) {
        perf_store(opt->type, b->host, i, perf_input(opt, perf_rank, i));
    }
    perf_copy(opt, b->sbuf, b->host, count * perf_types[opt->type].size);
    perf_copy(opt, b->rbuf, b->host, count * perf_types[opt->type].size);
}

static long long perf_check(const perf_options_t *opt, perf_buffers_t *b, size_t count,
                            size_t block, bool in_place) {
    const size_t es = perf_types[opt->type].size;
    void *result;
    size_t out_count = perf_prepare_check(opt, b, count, block, in_place, &result);
    long long wrong = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    perf_run_once(opt, b->sbuf, b->rbuf, count, block, in_place);
    if (out_count > 0) {
        perf_copy(opt, b->host, result, out_count * es);
        wrong = perf_count_wrong(b->host, b->expect, out_count, es);
    }
    return (long long)perf_combine((double)wrong, false);
}

/* ------------------------------------------------------------------- timing */

/* A timed run of the collective in the run's form: the persistent request is made before. */
typedef struct {
    const perf_options_t *opt;
    perf_buffers_t *b;
    size_t count, block;
    bool in_place;
    MPI_Request persistent; /* PERF_PERSISTENT: made once, started by every call */
    double post_s;          /* time spent in the posting calls */
    accel_graph_h graph;    /* PERF_GRAPH: the call captured once, launched by every call */
} perf_loop_t;

static void perf_loop_init(perf_loop_t *l, const perf_options_t *opt, perf_buffers_t *b,
                           size_t count, size_t block, bool in_place) {
    *l = (perf_loop_t){opt, b, count, block, in_place, MPI_REQUEST_NULL, 0.0, NULL};
    if (PERF_PERSISTENT == opt->form) {
        perf_call(opt, b->sbuf, b->rbuf, count, block, in_place, &l->persistent);
    }
    if (PERF_GRAPH == opt->form) {
        int rc = MPI_ERR_OTHER;

        if (ACCEL_OK == perf_accel->stream_begin_capture(perf_stream)) {
            rc = perf_call(opt, b->sbuf, b->rbuf, count, block, in_place, NULL);
            if ((ACCEL_OK != perf_accel->stream_end_capture(perf_stream, &l->graph)) &&
                (MPI_SUCCESS == rc)) {
                rc = MPI_ERR_OTHER;
            }
        }
        if (MPI_SUCCESS != rc) {
            fprintf(stderr, "gpucoll_perf: rank %d: the call could not be captured (%d)\n",
                    perf_rank, rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static void perf_loop_fini(perf_loop_t *l) {
    if (MPI_REQUEST_NULL != l->persistent) {
        MPI_Request_free(&l->persistent);
    }
    if (NULL != l->graph) {
        (void)perf_accel->graph_destroy(l->graph);
    }
}

/* Waits for compute_s seconds without calling MPI: the application's work between post and
 * wait, during which only what progresses by itself progresses. */
static bool perf_compute_sleeps;

static void perf_compute(double compute_s) {
    struct timespec now, start;

    if (compute_s <= 0) {
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        if (perf_compute_sleeps) {
            sched_yield(); /* whatever else wants the core gets it (nanosleep oversleeps) */
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) <
             compute_s);
}

/* One call: post (timed), compute_s of computation, then wait. */
static void perf_loop_call(perf_loop_t *l, double compute_s) {
    const perf_options_t *opt = l->opt;
    MPI_Request req = l->persistent;
    double t0;

    if (PERF_BLOCKING == opt->form) {
        perf_call(opt, l->b->sbuf, l->b->rbuf, l->count, l->block, l->in_place, NULL);
        return;
    }
    t0 = MPI_Wtime();
    if (PERF_PERSISTENT == opt->form) {
        MPI_Start(&req);
    } else if (PERF_GRAPH == opt->form) {
        (void)perf_accel->graph_launch(l->graph, perf_stream);
    } else {
        perf_call(opt, l->b->sbuf, l->b->rbuf, l->count, l->block, l->in_place, &req);
    }
    l->post_s += MPI_Wtime() - t0;
    perf_compute(compute_s);
    if (PERF_ON_STREAM(opt->form)) {
        perf_accel->stream_synchronize(perf_stream);
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
}

/* Average time of one call in µs (over the ranks, as nccl-tests' default), after warm-up, with
 * compute_s of computation between post and wait; *post_us_p: the average posting time. */
static double perf_time(const perf_options_t *opt, perf_buffers_t *b, size_t count, size_t block,
                        bool in_place, double compute_s, double *post_us_p, double *host_p) {
    int iterations = opt->iterations;
    double t0, elapsed;
    perf_loop_t loop;

    unsigned long long before[PERF_NUM_HOST], after[PERF_NUM_HOST];
    bool counted;

    perf_loop_init(&loop, opt, b, count, block, in_place);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < opt->warmup; ++i) {
        perf_loop_call(&loop, compute_s);
    }
    if (opt->size_seconds > 0 && opt->warmup > 0) {
        /* the slowest rank's warm-up call: cap iterations so the loop takes about S s */
        double per_call = perf_combine((MPI_Wtime() - t0) / opt->warmup, true);
        if (per_call * iterations > opt->size_seconds) {
            iterations = (int)(opt->size_seconds / per_call);
            iterations = iterations < 1 ? 1 : iterations;
        }
    }
    counted = perf_host_read(before);
    MPI_Barrier(MPI_COMM_WORLD);
    loop.post_s = 0.0;
    t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) {
        perf_loop_call(&loop, compute_s);
    }
    elapsed = (MPI_Wtime() - t0) * 1e6 / iterations;
    counted = counted && perf_host_read(after);
    for (int i = 0; (NULL != host_p) && (i < PERF_NUM_HOST); ++i) {
        host_p[i] = counted ? (double)(after[i] - before[i]) / iterations : -1.0;
    }
    if (NULL != post_us_p) {
        *post_us_p = perf_combine(loop.post_s * 1e6 / iterations, false) / perf_nranks;
    }
    perf_loop_fini(&loop);
    return perf_combine(elapsed, false) / perf_nranks;
}

/* osu_iallreduce's overlap: the collective alone takes t_pure; with a computation of t_pure
 * between post and wait the whole takes t_total; the computation hid
 * 1 - (t_total - t_compute) / t_pure of the collective (0 when nothing progressed outside
 * MPI_Wait, 100 % when the wait found it done). */
static double perf_overlap(double t_pure_us, double t_total_us, double t_compute_us) {
    double hidden = 1.0 - (t_total_us - t_compute_us) / t_pure_us;
    hidden = hidden < 0 ? 0 : hidden > 1 ? 1 : hidden;
    return 100.0 * hidden;
}

static void perf_measure(const perf_options_t *opt, perf_buffers_t *b, size_t count, size_t block,
                         bool in_place, perf_result_t *res) {
    size_t bytes = count * perf_types[opt->type].size;

    res->valid = true;
    res->post_us = res->overlap_pct = -1;
    res->time_us =
        perf_time(opt, b, count, block, in_place, 0.0,
                  (PERF_BLOCKING != opt->form && opt->overlap) ? &res->post_us : NULL, res->host);
    res->algbw = perf_algbw(bytes, res->time_us);
    res->busbw = res->algbw * perf_bus_factor(opt->coll, perf_nranks);
    if (PERF_BLOCKING != opt->form && opt->overlap) {
        /* every rank computes as long as the collective took on average */
        double total = perf_time(opt, b, count, block, in_place, res->time_us * 1e-6, NULL, NULL);
        res->overlap_pct = perf_overlap(res->time_us, total, res->time_us);
    }
    res->wrong = opt->check ? perf_check(opt, b, count, block, in_place) : -1;
}

/* ------------------------------------------------------------------- output */

/* nccl-tests' time format: fewer decimals as the time grows. */
static void perf_format_time(char *buf, size_t len, double us) {
    snprintf(buf, len, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
}

static void perf_print_result(const perf_result_t *res) {
    char time[32], wrong[32];

    if (!res->valid) {
        printf("  %7s  %6s  %6s  %6s", "-", "-", "-", "-");
        return;
    }
    perf_format_time(time, sizeof(time), res->time_us);
    if (res->wrong < 0) {
        snprintf(wrong, sizeof(wrong), "N/A");
    } else {
        snprintf(wrong, sizeof(wrong), "%lld", res->wrong);
    }
    printf("  %7s  %6.2f  %6.2f  %6s", time, res->algbw, res->busbw, wrong);
    if (res->post_us >= 0) {
        printf("  %6.2f  %5.1f", res->post_us, res->overlap_pct);
    }
}

static const char *perf_memory_name(const perf_options_t *opt) {
    return opt->on_device ? "device" : "host";
}

static const char *perf_redop_name(const perf_options_t *opt) {
    return perf_colls[opt->coll].reduces ? perf_op_names[opt->op] : "none";
}

static int perf_root_shown(const perf_options_t *opt) {
    return (PERF_BCAST == opt->coll || PERF_REDUCE == opt->coll || PERF_GATHER == opt->coll ||
            PERF_SCATTER == opt->coll)
               ? opt->root
               : -1;
}

static void perf_print_header(const perf_options_t *opt, int argc, char **argv) {
    bool extra = PERF_BLOCKING != opt->form && opt->overlap;
    const char *w = extra ? "  %6s  %5s" : "%s%s"; /* the post and overlap columns */
    char host[256] = "";

    gethostname(host, sizeof(host) - 1);
    printf("# gpucoll_perf: %s (%s), %d ranks, %s buffers%s%s, %s %s, iterations %d, "
           "warm-up %d, check %d\n",
           perf_colls[opt->coll].name, perf_form_names[opt->form], perf_nranks,
           perf_memory_name(opt), opt->on_device ? " on " : "",
           opt->on_device ? perf_backend_name : "", perf_types[opt->type].name,
           perf_redop_name(opt), opt->iterations, opt->warmup, opt->check);
    printf("# host %s, command:", host);
    for (int i = 0; i < argc; ++i) {
        printf(" %s", argv[i]);
    }
    printf("\n#\n");
    if (extra) {
        printf("# post: host time of the posting call (MPI_I* or MPI_Start); overlap: share of "
               "the collective's time a computation of equal length hides (osu_iallreduce)\n");
    }
    printf("# %10s  %12s  %8s  %6s  %6s  %*s  %*s\n", "", "", "", "", "", extra ? 46 : 31,
           "out-of-place", extra ? 46 : 31, "in-place");
    for (int line = 0; line < 2; ++line) {
        static const char *const names[2][8] = {
            {"time", "algbw", "busbw", "#wrong", "post", "ovl%"},
            {"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(%)"}};
        const char *const *n = names[line];

        printf("# %10s  %12s  %8s  %6s  %6s", line ? "(B)" : "size", line ? "(elements)" : "count",
               line ? "" : "type", line ? "" : "redop", line ? "" : "root");
        for (int p = 0; p < 2; ++p) {
            printf("  %7s  %6s  %6s  %6s", n[0], n[1], n[2], n[3]);
            printf(w, extra ? n[4] : "", extra ? n[5] : "");
        }
        printf("\n");
    }
    fflush(stdout);
}

static void perf_print_row(const perf_options_t *opt, const perf_row_t *row) {
    printf("  %10zu  %12zu  %8s  %6s  %6d", row->bytes, row->count, perf_types[opt->type].name,
           perf_redop_name(opt), perf_root_shown(opt));
    perf_print_result(&row->oop);
    perf_print_result(&row->ip);
    printf("\n");
    if (row->oop.valid && (row->oop.host[0] >= 0)) {
        printf("#   per call on rank 0's host:");
        for (int i = 0; i < PERF_NUM_HOST; ++i) {
            printf("%s %.2f %s", i ? "," : "", row->oop.host[i], perf_host_labels[i]);
        }
        printf("\n");
    }
    fflush(stdout);
}

/* coll/gpu's per-collective counters through MPI_T (absent: the component is not loaded). */
#define PERF_NUM_COUNTERS 3
static const char *const perf_counter_names[PERF_NUM_COUNTERS] = {
    "coll_gpu_calls_passthrough", "coll_gpu_calls_staged", "coll_gpu_calls_native"};

typedef struct {
    bool mpit;
    MPI_T_pvar_session session;
    bool loaded[PERF_NUM_COUNTERS];
    MPI_T_pvar_handle handles[PERF_NUM_COUNTERS];
    unsigned long long values[PERF_NUM_COUNTERS]; /* of the benchmarked collective, rank 0 */
} perf_counters_t;

static void perf_counters_open(perf_counters_t *c) {
    int provided, index, count;

    memset(c, 0, sizeof(*c));
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return;
    }
    c->mpit = true;
    MPI_T_pvar_session_create(&c->session);
    for (int i = 0; i < PERF_NUM_COUNTERS; ++i) {
        c->loaded[i] = MPI_SUCCESS == MPI_T_pvar_get_index(perf_counter_names[i],
                                                           MPI_T_PVAR_CLASS_COUNTER, &index) &&
                       MPI_SUCCESS == MPI_T_pvar_handle_alloc(c->session, index, NULL,
                                                              &c->handles[i], &count) &&
                       COLL_GPU_NUM_COLLS == count;
    }
    perf_host.session = c->session;
    perf_host.loaded = true;
    for (int i = 0; i < PERF_NUM_HOST; ++i) {
        perf_host.loaded =
            perf_host.loaded &&
            (MPI_SUCCESS ==
             MPI_T_pvar_get_index(perf_host_names[i], MPI_T_PVAR_CLASS_COUNTER, &index)) &&
            (MPI_SUCCESS ==
             MPI_T_pvar_handle_alloc(c->session, index, NULL, &perf_host.handles[i], &count));
    }
}

static void perf_counters_close(perf_counters_t *c, coll_gpu_coll_t id) {
    unsigned long long values[COLL_GPU_NUM_COLLS];

    if (!c->mpit) {
        return;
    }
    for (int i = 0; i < PERF_NUM_COUNTERS; ++i) {
        if (c->loaded[i]) {
            c->loaded[i] = MPI_SUCCESS == MPI_T_pvar_read(c->session, c->handles[i], values);
            c->values[i] = values[id];
        }
    }
    perf_host.loaded = false;
    MPI_T_pvar_session_free(&c->session);
    MPI_T_finalize();
}

static void perf_counters_print(const perf_options_t *opt, const perf_counters_t *c) {
    if (!c->loaded[0]) {
        printf("# coll/gpu: not loaded (no coll_gpu_* MPI_T counters)\n");
        return;
    }
    printf("# coll/gpu on rank 0: %s calls: %llu passed through, %llu staged",
           perf_colls[opt->coll].name, c->values[0], c->loaded[1] ? c->values[1] : 0ULL);
    if (c->loaded[2]) {
        printf(", %llu native", c->values[2]);
    }
    printf("\n");
}

static void perf_json_result(FILE *f, const char *name, const perf_result_t *res) {
    if (!res->valid) {
        fprintf(f, "\"%s\": null", name);
        return;
    }
    fprintf(f, "\"%s\": {\"time_us\": %.10g, \"algbw\": %.10g, \"busbw\": %.10g, \"wrong\": %lld",
            name, res->time_us, res->algbw, res->busbw, res->wrong);
    if (res->host[0] >= 0) {
        fprintf(f, ", \"host_per_call\": {");
        for (int i = 0; i < PERF_NUM_HOST; ++i) {
            fprintf(f, "%s\"%s\": %.10g", i ? ", " : "", perf_host_names[i] + strlen("coll_gpu_"),
                    res->host[i]);
        }
        fprintf(f, "}");
    }
    if (res->post_us >= 0) {
        fprintf(f, ", \"post_us\": %.10g, \"overlap_pct\": %.10g", res->post_us, res->overlap_pct);
    }
    fprintf(f, "}");
}

static void perf_write_json(const perf_options_t *opt, const perf_row_t *rows, int nrows,
                            const perf_counters_t *c, long long wrong, double avg_busbw) {
    FILE *f = fopen(opt->json_path, "w");
    char host[256] = "";

    if (NULL == f) {
        fprintf(stderr, "gpucoll_perf: cannot write %s: %s\n", opt->json_path, strerror(errno));
        return;
    }
    gethostname(host, sizeof(host) - 1);
    fprintf(
        f,
        "{\n  \"benchmark\": \"gpucoll_perf\",\n  \"collective\": \"%s\",\n  \"form\": \"%s\",\n"
        "  \"datatype\": \"%s\",\n  \"op\": \"%s\",\n  \"root\": %d,\n  \"nranks\": %d,\n"
        "  \"memory\": \"%s\",\n  \"backend\": \"%s\",\n  \"iterations\": %d,\n"
        "  \"warmup\": %d,\n  \"check\": %d,\n  \"host\": \"%s\",\n",
        perf_colls[opt->coll].name, perf_form_names[opt->form], perf_types[opt->type].name,
        perf_redop_name(opt), perf_root_shown(opt), perf_nranks, perf_memory_name(opt),
        opt->on_device ? perf_backend_name : "none", opt->iterations, opt->warmup, opt->check,
        host);
    fprintf(f, "  \"bus_factor\": %.10g,\n  \"coll_gpu_loaded\": %s,\n  \"counters\": {",
            perf_bus_factor(opt->coll, perf_nranks), c->loaded[0] ? "true" : "false");
    for (int i = 0, first = 1; i < PERF_NUM_COUNTERS; ++i) {
        if (c->loaded[i]) {
            fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", perf_counter_names[i] + 9,
                    c->values[i]);
            first = 0;
        }
    }
    fprintf(f, "},\n  \"wrong\": %lld,\n  \"avg_busbw\": %.10g,\n  \"results\": [\n", wrong,
            avg_busbw);
    for (int r = 0; r < nrows; ++r) {
        fprintf(f, "    {\"size\": %zu, \"count\": %zu, ", rows[r].bytes, rows[r].count);
        perf_json_result(f, "out_of_place", &rows[r].oop);
        fprintf(f, ", ");
        perf_json_result(f, "in_place", &rows[r].ip);
        fprintf(f, "}%s\n", r + 1 < nrows ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
}

static void perf_write_csv(const perf_options_t *opt, const perf_row_t *rows, int nrows) {
    FILE *f = fopen(opt->csv_path, "w");

    if (NULL == f) {
        fprintf(stderr, "gpucoll_perf: cannot write %s: %s\n", opt->csv_path, strerror(errno));
        return;
    }
    fprintf(f, "collective,datatype,op,root,nranks,memory,size,count,placement,time_us,"
               "algbw_gbs,busbw_gbs,wrong,form,post_us,overlap_pct\n");
    for (int r = 0; r < nrows; ++r) {
        for (int p = 0; p < 2; ++p) {
            const perf_result_t *res = p ? &rows[r].ip : &rows[r].oop;
            if (res->valid) {
                fprintf(f, "%s,%s,%s,%d,%d,%s,%zu,%zu,%s,%.10g,%.10g,%.10g,%lld,%s,%.10g,%.10g\n",
                        perf_colls[opt->coll].name, perf_types[opt->type].name,
                        perf_redop_name(opt), perf_root_shown(opt), perf_nranks,
                        perf_memory_name(opt), rows[r].bytes, rows[r].count,
                        p ? "in_place" : "out_of_place", res->time_us, res->algbw, res->busbw,
                        res->wrong, perf_form_names[opt->form], res->post_us, res->overlap_pct);
            }
        }
    }
    fclose(f);
}

/* ----------------------------------------------------------------- self-test */

#define PERF_EXPECT(cond)                                                                          \
    do {                                                                                           \
        ++checks;                                                                                  \
        if (!(cond)) {                                                                             \
            printf("self-test FAILED: %s (line %d)\n", #cond, __LINE__);                           \
            ++failed;                                                                              \
        }                                                                                          \
    } while (0)

/* The arithmetic against values worked out by hand; the verification against buffers built
 * independently of perf_store_expected.  Rank 0 only, no communication. */
static int perf_self_test(void) {
    int checks = 0, failed = 0;
    perf_options_t opt = {.coll = PERF_ALLREDUCE, .type = PERF_FLOAT, .op = PERF_SUM};

    /* bus factors (nccl-tests' PERFORMANCE.md): n = 4 and n = 8 */
    PERF_EXPECT(1.5 == perf_bus_factor(PERF_ALLREDUCE, 4));
    PERF_EXPECT(1.75 == perf_bus_factor(PERF_ALLREDUCE, 8));
    PERF_EXPECT(0.75 == perf_bus_factor(PERF_REDUCE_SCATTER, 4));
    PERF_EXPECT(0.75 == perf_bus_factor(PERF_ALLGATHER, 4));
    PERF_EXPECT(0.875 == perf_bus_factor(PERF_ALLTOALL, 8));
    PERF_EXPECT(1.0 == perf_bus_factor(PERF_BCAST, 8));
    PERF_EXPECT(1.0 == perf_bus_factor(PERF_REDUCE, 8));
    PERF_EXPECT(0.75 == perf_bus_factor(PERF_GATHER, 4));
    PERF_EXPECT(0.875 == perf_bus_factor(PERF_SCATTER, 8));
    PERF_EXPECT(0.0 == perf_bus_factor(PERF_GATHER, 1));
    PERF_EXPECT(0.0 == perf_bus_factor(PERF_ALLREDUCE, 1));
    /* algbw: 1 GB in 1 s is 1 GB/s; 1 MiB in 100 µs is 10.48576 GB/s */
    PERF_EXPECT(fabs(perf_algbw(1000000000, 1e6) - 1.0) < 1e-12);
    PERF_EXPECT(fabs(perf_algbw(1 << 20, 100.0) - 10.48576) < 1e-9);

    /* sizes: allgather of 1000 bytes of float on 3 ranks is 3 blocks of 83 elements */
    size_t count, block;
    perf_size_count(PERF_ALLGATHER, PERF_FLOAT, 3, 1000, &count, &block);
    PERF_EXPECT(83 == block && 249 == count);
    /* gather and scatter size as allgather: the whole gathered or scattered vector */
    perf_size_count(PERF_GATHER, PERF_FLOAT, 3, 1000, &count, &block);
    PERF_EXPECT(83 == block && 249 == count);
    perf_size_count(PERF_SCATTER, PERF_INT8, 4, 10, &count, &block);
    PERF_EXPECT(2 == block && 8 == count);
    /* the root column: the rooted collectives only */
    opt.root = 2;
    opt.coll = PERF_GATHER;
    PERF_EXPECT(2 == perf_root_shown(&opt));
    opt.coll = PERF_SCATTER;
    PERF_EXPECT(2 == perf_root_shown(&opt));
    opt.coll = PERF_ALLGATHER;
    PERF_EXPECT(-1 == perf_root_shown(&opt));
    opt = (perf_options_t){.coll = PERF_ALLREDUCE, .type = PERF_FLOAT, .op = PERF_SUM};
    perf_size_count(PERF_ALLREDUCE, PERF_DOUBLE, 3, 1000, &count, &block);
    PERF_EXPECT(125 == count && 125 == block);

    /* inputs: sum of 4 ranks at element 0 is 1 + 4 + 7 + 2 = 14 (1 + (i + 3r) % 8) */
    PERF_EXPECT(14 == perf_reduced(&opt, 4, 0));
    opt.op = PERF_MAX;
    PERF_EXPECT(7 == perf_reduced(&opt, 4, 0));
    opt.op = PERF_MIN;
    PERF_EXPECT(1 == perf_reduced(&opt, 4, 0));
    opt.op = PERF_PROD; /* 2 where (i + r) % 3 == 0: i = 0, r = 0 and 3 */
    PERF_EXPECT(4 == perf_reduced(&opt, 4, 0));

    /* wrapping: the int8 sum over 40 ranks of element 0 is 180, stored as -76 */
    opt.op = PERF_SUM;
    opt.type = PERF_INT8;
    {
        int64_t sum = 0;
        for (int r = 0; r < 40; ++r) {
            sum += 1 + (3 * r) % 8;
        }
        int8_t got;
        perf_store_reduced(&opt, 40, &got, 0, 0);
        PERF_EXPECT((int8_t)(uint8_t)sum == got && sum > 127);
    }
    /* float product over 400 ranks (134 twos) overflows to inf, as every order does */
    opt.type = PERF_FLOAT;
    opt.op = PERF_PROD;
    {
        float got;
        perf_store_reduced(&opt, 400, &got, 0, 0);
        PERF_EXPECT(isinf(got) && got > 0);
    }

    /* verification is bit-exact: -0.0 is not 0.0, a NaN is wrong even against the same NaN
     * pattern only if the bits differ, and one flipped bit in one element is one error */
    {
        float want[4] = {1.0f, 0.0f, 2.0f, 3.0f}, got[4];
        memcpy(got, want, sizeof(got));
        PERF_EXPECT(0 == perf_count_wrong(got, want, 4, sizeof(float)));
        got[1] = -0.0f;
        PERF_EXPECT(1 == perf_count_wrong(got, want, 4, sizeof(float)));
        memcpy(got, want, sizeof(got));
        ((unsigned char *)got)[8] ^= 1; /* lowest mantissa bit of element 2 */
        got[3] = 4.0f;
        PERF_EXPECT(2 == perf_count_wrong(got, want, 4, sizeof(float)));
    }

    /* expected results of the data movement collectives, by hand for 2 ranks of 2 elements:
     * input(r, i) = (37 r + 13 i + 1) % 251 */
    opt = (perf_options_t){.coll = PERF_ALLTOALL, .type = PERF_INT32};
    {
        /* rank 1 receives block 1 of rank 0 (elements 2, 3: 27, 40), then block 1 of its
         * own input (elements 2, 3 of rank 1: 64, 77) */
        int32_t want_rank1[4] = {27, 40, 64, 77};
        int32_t got[4];
        for (size_t j = 0; j < 4; ++j) {
            perf_store_expected(&opt, 2, 1, 2, got, j);
        }
        PERF_EXPECT(0 == memcmp(got, want_rank1, sizeof(got)));
        opt.coll = PERF_ALLGATHER; /* rank 0's elements 0, 1 then rank 1's */
        int32_t want_ag[4] = {1, 14, 38, 51};
        for (size_t j = 0; j < 4; ++j) {
            perf_store_expected(&opt, 2, 1, 2, got, j);
        }
        PERF_EXPECT(0 == memcmp(got, want_ag, sizeof(got)));
        opt.coll = PERF_GATHER; /* at the root (1 here): the same as allgather */
        opt.root = 1;
        for (size_t j = 0; j < 4; ++j) {
            perf_store_expected(&opt, 2, 1, 2, got, j);
        }
        PERF_EXPECT(0 == memcmp(got, want_ag, sizeof(got)));
        /* scatter from root 1: rank 0 receives block 0 of rank 1 (38, 51), rank 1 its own
         * block 1 (64, 77); from root 0, rank 1 receives block 1 of rank 0 (27, 40) */
        opt.coll = PERF_SCATTER;
        int32_t want_sc[3][2] = {{38, 51}, {64, 77}, {27, 40}};
        for (int k = 0; k < 3; ++k) {
            opt.root = k < 2 ? 1 : 0;
            for (size_t j = 0; j < 2; ++j) {
                perf_store_expected(&opt, 2, k < 2 ? k : 1, 2, got, j);
            }
            PERF_EXPECT(0 == memcmp(got, want_sc[k], sizeof(want_sc[k])));
        }
    }
    /* gather and scatter's checked call, as rank 1 of 3 (host buffers, blocks of 2 int32):
     * where the inputs go and which elements are checked */
    {
        int saved_rank = perf_rank, saved_nranks = perf_nranks;
        int32_t sbuf[6], rbuf[6], host[6], expect[6];
        perf_buffers_t pb = {sbuf, rbuf, host, expect, sizeof(sbuf)};
        void *result;
        size_t checked;

        perf_rank = 1;
        perf_nranks = 3;
        opt = (perf_options_t){.coll = PERF_GATHER, .type = PERF_INT32, .root = 0};
        PERF_EXPECT(0 == perf_prepare_check(&opt, &pb, 6, 2, true, &result)); /* a non-root */
        PERF_EXPECT(38 == rbuf[0] && 51 == rbuf[1]); /* sends its block from rbuf in place */
        /* the root in place: its block already at block 1 of rbuf, the others' still the
         * pattern (4 wrong until they arrive) */
        opt.root = 1;
        checked = perf_prepare_check(&opt, &pb, 6, 2, true, &result);
        PERF_EXPECT(6 == checked && result == (void *)rbuf && 38 == rbuf[2] && 51 == rbuf[3]);
        PERF_EXPECT(4 == perf_count_wrong(result, expect, checked, sizeof(int32_t)));
        /* scatter's root in place: its block stays in sbuf, and is right */
        opt.coll = PERF_SCATTER;
        checked = perf_prepare_check(&opt, &pb, 6, 2, true, &result);
        PERF_EXPECT(2 == checked && result == (void *)&sbuf[2]);
        PERF_EXPECT(0 == perf_count_wrong(result, expect, checked, sizeof(int32_t)));
        /* --inject-error: the root's corrupted element (3 of 6) is in block 1, rank 1's */
        opt.inject_error = true;
        checked = perf_prepare_check(&opt, &pb, 6, 2, true, &result);
        PERF_EXPECT(1 == perf_count_wrong(result, expect, checked, sizeof(int32_t)));
        /* a non-root of scatter has no input and checks its block, received into rbuf */
        opt.root = 0;
        checked = perf_prepare_check(&opt, &pb, 6, 2, false, &result);
        PERF_EXPECT(2 == checked && result == (void *)rbuf);
        perf_rank = saved_rank;
        perf_nranks = saved_nranks;
    }
    /* reduce_scatter: rank 1 of 2, blocks of 2: sums of elements 2 and 3 of both ranks:
     * element 2: (1 + 2) + (1 + 5) = 9; element 3: (1 + 3) + (1 + 6) = 11 */
    opt = (perf_options_t){.coll = PERF_REDUCE_SCATTER, .type = PERF_DOUBLE, .op = PERF_SUM};
    {
        double got[2], want[2] = {9.0, 11.0};
        perf_store_expected(&opt, 2, 1, 2, got, 0);
        perf_store_expected(&opt, 2, 1, 2, got, 1);
        PERF_EXPECT(0 == memcmp(got, want, sizeof(got)));
    }
    /* the corruption always changes the result */
    opt.coll = PERF_ALLREDUCE;
    for (int op = 0; op < PERF_NUM_OPS; ++op) {
        opt.op = op;
        int64_t v = perf_input(&opt, 3, 5);
        PERF_EXPECT(perf_corrupt(&opt, v) != v);
    }

    printf("self-test: %d checks, %d failed\n", checks, failed);
    printf("%d passed, %d failed\n", checks - failed, failed);
    return failed ? 1 : 0;
}

/* --------------------------------------------------------------------- main */

static int perf_accel_init(perf_options_t *opt) {
    const char *reason = NULL;

    if (PERF_BACKEND_EMULATED != opt->backend &&
        ACCEL_OK == accel_init(ACCEL_BACKEND_CUDA, &perf_accel, &reason)) {
        perf_backend_name = "cuda";
        return 0;
    }
    if (PERF_BACKEND_CUDA != opt->backend &&
        ACCEL_OK == accel_init(ACCEL_BACKEND_EMULATED, &perf_accel, &reason)) {
        perf_backend_name = "emulated";
        return 0;
    }
    if (0 == perf_rank) {
        printf("SKIP: no %s device: %s\n", PERF_BACKEND_CUDA == opt->backend ? "cuda" : "emulated",
               reason ? reason : "?");
    }
    return 77;
}

int main(int argc, char **argv) {
    perf_options_t opt;
    perf_buffers_t b;
    perf_counters_t counters;
    perf_row_t *rows;
    int nrows = 0, maxrows = 0, rc = 0;
    long long wrong = 0;
    double busbw_sum = 0;
    size_t last_bytes = SIZE_MAX;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &perf_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &perf_nranks);
    perf_parse_options(argc, argv, &opt);
    perf_compute_sleeps = opt.compute_sleeps;

    if (opt.self_test) {
        rc = 0 == perf_rank ? perf_self_test() : 0;
        MPI_Finalize();
        return rc;
    }
    if (opt.on_device && 0 != (rc = perf_accel_init(&opt))) {
        MPI_Finalize();
        return rc;
    }

    for (size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= opt.step_factor) {
        ++maxrows;
        if (0 == bytes || bytes > SIZE_MAX / opt.step_factor) {
            break;
        }
    }
    rows = calloc((size_t)maxrows, sizeof(*rows));
    b.bytes = opt.max_bytes < 64 ? 64 : opt.max_bytes;
    b.sbuf = perf_alloc(&opt, b.bytes, true);
    b.rbuf = perf_alloc(&opt, b.bytes, true);
    b.host = perf_alloc(&opt, b.bytes, false);
    b.expect = perf_alloc(&opt, b.bytes, false);
    if (NULL == rows) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    perf_fill_inputs(&opt, &b);
    if (PERF_ON_STREAM(opt.form)) {
        MPI_Info info;
        int rc;

        if ((PERF_ALLREDUCE != opt.coll) || !opt.on_device ||
            ((PERF_GRAPH == opt.form) && (NULL == perf_accel->stream_begin_capture)) ||
            (ACCEL_OK != perf_accel->stream_create(&perf_stream))) {
            if (0 == perf_rank) {
                fprintf(stderr,
                        "gpucoll_perf: -F stream and -F graph take -o allreduce -m device\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        MPI_Info_create(&info);
        MPI_Info_set(info, "type", "cudaStream_t");
        MPIX_Info_set_hex(info, "value", &perf_stream, sizeof(perf_stream));
        rc = MPIX_Stream_create(info, &perf_mpix_stream);
        MPI_Info_free(&info);
        if ((MPI_SUCCESS != rc) ||
            (MPI_SUCCESS !=
             (rc = MPIX_Stream_comm_create(MPI_COMM_WORLD, perf_mpix_stream, &perf_stream_comm)))) {
            if (0 == perf_rank) {
                fprintf(stderr,
                        "gpucoll_perf: no stream communicator (error %d): is coll/gpu "
                        "loaded?\n",
                        rc);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    /* no blocking call first: the first nonblocking call on device memory sets coll/gpu's
     * native context up (the warmup's first), as in a program that never blocks */

    if (0 == perf_rank) {
        perf_print_header(&opt, argc, argv);
    }
    perf_counters_open(&counters);
    for (int r = 0; r < maxrows; ++r) {
        size_t bytes = opt.min_bytes, count, block;
        for (int k = 0; k < r; ++k) {
            bytes *= opt.step_factor;
        }
        perf_size_count(opt.coll, opt.type, perf_nranks, bytes, &count, &block);
        if (0 == count || count * perf_types[opt.type].size == last_bytes || count > INT32_MAX) {
            continue; /* empty, the same size as the last row after rounding, or beyond int */
        }
        perf_row_t *row = &rows[nrows++];
        row->count = count;
        row->bytes = last_bytes = count * perf_types[opt.type].size;
        perf_measure(&opt, &b, count, block, false, &row->oop);
        if (opt.in_place && perf_colls[opt.coll].has_in_place) {
            perf_measure(&opt, &b, count, block, true, &row->ip);
        }
        wrong +=
            (row->oop.wrong > 0 ? row->oop.wrong : 0) + (row->ip.wrong > 0 ? row->ip.wrong : 0);
        busbw_sum += row->oop.busbw;
        if (0 == perf_rank) {
            perf_print_row(&opt, row);
            if (opt.json_path) { /* rewritten after every row: a run cut short keeps its rows */
                perf_write_json(&opt, rows, nrows, &counters, wrong, busbw_sum / nrows);
            }
        }
    }
    /* the counters of the form run */
    perf_counters_close(&counters, (PERF_NONBLOCKING == opt.form)
                                       ? coll_gpu_coll_nonblocking(perf_colls[opt.coll].id)
                                   : (PERF_PERSISTENT == opt.form)
                                       ? coll_gpu_coll_persistent(perf_colls[opt.coll].id)
                                       : perf_colls[opt.coll].id);

    if (0 == perf_rank) {
        double avg_busbw = nrows ? busbw_sum / nrows : 0.0;
        printf("# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", avg_busbw);
        perf_counters_print(&opt, &counters);
        if (opt.json_path) {
            perf_write_json(&opt, rows, nrows, &counters, wrong, avg_busbw);
        }
        if (opt.csv_path) {
            perf_write_csv(&opt, rows, nrows);
        }
        if (wrong) {
            printf("# errors: the rows with #wrong > 0 are incorrect results\n");
        }
    }

    perf_free(&opt, b.sbuf, true);
    perf_free(&opt, b.rbuf, true);
    perf_free(&opt, b.host, false);
    perf_free(&opt, b.expect, false);
    free(rows);
    if (MPI_COMM_NULL != perf_stream_comm) {
        /* the stream communicator before its stream */
        MPI_Comm_free(&perf_stream_comm);
        MPIX_Stream_free(&perf_mpix_stream);
        perf_accel->stream_destroy(perf_stream);
    }
    if (opt.on_device) {
        accel_finalize();
    }
    MPI_Finalize();
    return wrong ? 1 : 0;
}
