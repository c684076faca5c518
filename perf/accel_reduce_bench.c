/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * accel_reduce_bench: bandwidth of the reduction kernels against a plain copy
 * of the same bytes on the same device.
 *
 *   perf/accel_reduce_bench                     CPU (accel_reduce_cpu, one core) vs memcpy
 *   perf/accel_reduce_bench --backend cuda      CUDA kernels vs a device-to-device copy
 *   perf/accel_reduce_bench -s 64M,1G -n 2,8 -t float -o sum -r 7
 *
 * Bandwidth counts the bytes read and written: (inputs + 1) * size for a
 * reduction of inputs buffers of size bytes, 2 * size for a copy of size
 * bytes.  Each figure is the median of the runs; a run times iters calls
 * (back to back on one stream for CUDA) after one untimed warm-up call.
 */
#define _GNU_SOURCE

#include "accel.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_LIST 16
#define BENCH_MAX_RUNS 101

typedef struct {
    const accel_ops_t *ops; /* NULL: the CPU */
    accel_stream_h stream;
    accel_dtype_t dtype;
    accel_op_t op;
    size_t sizes[BENCH_MAX_LIST];
    int nsizes;
    int inputs[BENCH_MAX_LIST];
    int ninputs;
    int runs;
    int iters;
} bench_t;

static double bench_now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t bench_parse_size(const char *arg) {
    char *end;
    size_t value = strtoull(arg, &end, 10);

    switch (*end) {
    case 'k':
    case 'K':
        return value << 10;
    case 'm':
    case 'M':
        return value << 20;
    case 'g':
    case 'G':
        return value << 30;
    default:
        return value;
    }
}

static int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int bench_find_name(const char *name, const char *(*to_string)(int), int count) {
    for (int i = 0; i < count; ++i) {
        if (strcmp(name, to_string(i)) == 0) {
            return i;
        }
    }
    return -1;
}

static const char *bench_dtype_name(int i) { return accel_dtype_string((accel_dtype_t)i); }
static const char *bench_op_name(int i) { return accel_op_string((accel_op_t)i); }

static int bench_fail(const char *what, accel_status_t status) {
    const accel_error_t *err = accel_last_error();

    fprintf(stderr, "accel_reduce_bench: %s: %s (%s %s)\n", what, accel_status_string(status),
            err->call ? err->call : "-", err->error ? err->error : "-");
    return 1;
}

/* Seconds per call of one reduction (copy when nsrcs == 0), median of the runs. */
static int bench_time(const bench_t *b, void *dst, const void *const *srcs, int nsrcs, size_t count,
                      size_t bytes, double *seconds_p) {
    double t[BENCH_MAX_RUNS];
    accel_status_t status = ACCEL_OK;

    for (int run = -1; run < b->runs; ++run) { /* run -1: warm-up */
        int iters = (run < 0) ? 1 : b->iters;
        double t0 = bench_now();

        for (int it = 0; (it < iters) && (status == ACCEL_OK); ++it) {
            if (b->ops == NULL) {
                if (nsrcs == 0) {
                    memcpy(dst, srcs[0], bytes);
                } else {
                    status = accel_reduce_cpu(dst, srcs, nsrcs, count, b->dtype, b->op);
                }
            } else if (nsrcs == 0) {
                status = b->ops->memcpy_async(dst, srcs[0], bytes, b->stream);
            } else {
                status = b->ops->reduce(dst, srcs, nsrcs, count, b->dtype, b->op, b->stream);
            }
        }
        if ((status == ACCEL_OK) && (b->ops != NULL)) {
            status = b->ops->stream_synchronize(b->stream);
        }
        if (status != ACCEL_OK) {
            return bench_fail((nsrcs == 0) ? "copy" : "reduce", status);
        }
        if (run >= 0) {
            t[run] = (bench_now() - t0) / iters;
        }
    }
    *seconds_p = bench_median(t, b->runs);
    return 0;
}

static void *bench_alloc(const bench_t *b, size_t bytes) {
    void *p = NULL;

    if (b->ops == NULL) {
        p = malloc(bytes);
    } else if (b->ops->mem_alloc(ACCEL_MEM_DEVICE, bytes, &p) != ACCEL_OK) {
        p = NULL;
    }
    return p;
}

static void bench_free(const bench_t *b, void *p) {
    if (p == NULL) {
        return;
    } else if (b->ops == NULL) {
        free(p);
    } else {
        b->ops->mem_free(p);
    }
}

/* Fill buf with copies of pattern; on a device, one upload, then doubling copies on the device. */
static int bench_fill(const bench_t *b, void *buf, size_t bytes, const void *pattern,
                      size_t pattern_len) {
    size_t filled = (bytes < pattern_len) ? bytes : pattern_len;

    if (b->ops == NULL) {
        for (size_t off = 0; off < bytes; off += pattern_len) {
            memcpy((char *)buf + off, pattern,
                   (bytes - off < pattern_len) ? bytes - off : pattern_len);
        }
        return 0;
    }
    if (b->ops->memcpy(buf, pattern, filled) != ACCEL_OK) {
        return -1;
    }
    while (filled < bytes) {
        size_t len = (bytes - filled < filled) ? bytes - filled : filled;

        if (b->ops->memcpy((char *)buf + filled, buf, len) != ACCEL_OK) {
            return -1;
        }
        filled += len;
    }
    return 0;
}

static int bench_one_size(const bench_t *b, size_t size, const void *pattern, size_t pattern_len) {
    void *bufs[ACCEL_REDUCE_MAX_INPUTS + 1] = {NULL};
    const size_t count = size / accel_dtype_size(b->dtype);
    const size_t bytes = count * accel_dtype_size(b->dtype);
    int max_inputs = 0, rc = 0;
    double copy_s;

    for (int i = 0; i < b->ninputs; ++i) {
        max_inputs = (b->inputs[i] > max_inputs) ? b->inputs[i] : max_inputs;
    }
    if (b->ops == NULL) {
        double avail = (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);

        if ((double)(max_inputs + 1) * (double)bytes > 0.8 * avail) {
            printf("%8zu MiB  skipped: needs %.1f GiB of memory, %.1f GiB free\n", bytes >> 20,
                   (double)(max_inputs + 1) * (double)bytes / (1 << 30), avail / (1 << 30));
            return 0;
        }
    }
    for (int i = 0; i <= max_inputs; ++i) {
        bufs[i] = bench_alloc(b, bytes);
        if ((bufs[i] == NULL) || (bench_fill(b, bufs[i], bytes, pattern, pattern_len) != 0)) {
            printf("%8zu MiB  skipped: cannot allocate or fill %d buffers\n", bytes >> 20,
                   max_inputs + 1);
            goto out;
        }
    }

    rc = bench_time(b, bufs[max_inputs], (const void *const *)bufs, 0, count, bytes, &copy_s);
    for (int i = 0; (rc == 0) && (i < b->ninputs); ++i) {
        const int n = b->inputs[i];
        double reduce_s;
        double reduce_gbs, copy_gbs;

        rc = bench_time(b, bufs[max_inputs], (const void *const *)bufs, n, count, bytes, &reduce_s);
        if (rc == 0) {
            reduce_gbs = (double)(n + 1) * (double)bytes / reduce_s / 1e9;
            copy_gbs = 2.0 * (double)bytes / copy_s / 1e9;
            printf("%8zu MiB %7d %11.3f %12.2f %12.2f %8.2f\n", bytes >> 20, n, reduce_s * 1e3,
                   reduce_gbs, copy_gbs, reduce_gbs / copy_gbs);
            fflush(stdout);
        }
    }
out:
    for (int i = 0; i <= max_inputs; ++i) {
        bench_free(b, bufs[i]);
    }
    return rc;
}

static void bench_usage(void) {
    fprintf(stderr,
            "usage: accel_reduce_bench [--backend cpu|cuda|emulated] [-s SIZES] [-n INPUTS]\n"
            "                          [-t DTYPE] [-o OP] [-r RUNS] [-i ITERS]\n"
            "  SIZES, INPUTS: comma-separated lists (default 64M,1G and 2,8); sizes in bytes\n"
            "  per buffer, K/M/G suffixes.  DTYPE, OP: accel names (default float, sum).\n"
            "  RUNS: median of (default 5); ITERS: calls per run (default 1 on the CPU,\n"
            "  20 on a device)\n");
}

static int bench_parse_list(const char *arg, bool sizes, bench_t *b) {
    char *copy = strdup(arg), *save = NULL;
    int n = 0;

    for (char *tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (n == BENCH_MAX_LIST) {
            break;
        }
        if (sizes) {
            b->sizes[n++] = bench_parse_size(tok);
        } else {
            b->inputs[n++] = atoi(tok);
        }
    }
    free(copy);
    if (sizes) {
        b->nsizes = n;
    } else {
        b->ninputs = n;
    }
    return n;
}

int main(int argc, char **argv) {
    static const struct option long_opts[] = {{"backend", required_argument, NULL, 'b'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    bench_t b = {.dtype = ACCEL_DT_FLOAT, .op = ACCEL_OP_SUM, .runs = 5, .iters = 0};
    accel_backend_kind_t kind = ACCEL_BACKEND_AUTO; /* AUTO here: the CPU */
    const char *backend = "cpu", *reason = "";
    unsigned char pattern[1 << 16];
    accel_status_t status;
    int opt, rc = 0, v;

    bench_parse_list("64M,1G", true, &b);
    bench_parse_list("2,8", false, &b);
    while ((opt = getopt_long(argc, argv, "s:n:t:o:r:i:h", long_opts, NULL)) != -1) {
        switch (opt) {
        case 'b':
            backend = optarg;
            break;
        case 's':
            bench_parse_list(optarg, true, &b);
            break;
        case 'n':
            bench_parse_list(optarg, false, &b);
            break;
        case 't':
            v = bench_find_name(optarg, bench_dtype_name, ACCEL_DT_COUNT);
            b.dtype = (accel_dtype_t)v;
            if (v < 0) {
                bench_usage();
                return 2;
            }
            break;
        case 'o':
            v = bench_find_name(optarg, bench_op_name, ACCEL_OP_COUNT);
            b.op = (accel_op_t)v;
            if (v < 0) {
                bench_usage();
                return 2;
            }
            break;
        case 'r':
            b.runs = atoi(optarg);
            break;
        case 'i':
            b.iters = atoi(optarg);
            break;
        default:
            bench_usage();
            return (opt == 'h') ? 0 : 2;
        }
    }
    if ((b.runs < 1) || (b.runs > BENCH_MAX_RUNS) || (b.iters < 0)) {
        bench_usage();
        return 2;
    }
    for (int i = 0; i < b.ninputs; ++i) {
        if ((b.inputs[i] < 2) || (b.inputs[i] > ACCEL_REDUCE_MAX_INPUTS)) {
            fprintf(stderr, "accel_reduce_bench: inputs must be 2..%d\n", ACCEL_REDUCE_MAX_INPUTS);
            return 2;
        }
    }
    if (!accel_reduce_supported(b.op, b.dtype)) {
        fprintf(stderr, "accel_reduce_bench: %s is not defined on %s\n", accel_op_string(b.op),
                accel_dtype_string(b.dtype));
        return 2;
    }
    if (strcmp(backend, "cuda") == 0) {
        kind = ACCEL_BACKEND_CUDA;
    } else if (strcmp(backend, "emulated") == 0) {
        kind = ACCEL_BACKEND_EMULATED;
    } else if (strcmp(backend, "cpu") != 0) {
        bench_usage();
        return 2;
    }
    if (kind != ACCEL_BACKEND_AUTO) {
        status = accel_init(kind, &b.ops, &reason);
        if (status != ACCEL_OK) {
            printf("accel_reduce_bench: no %s backend: %s\n", backend, reason);
            return 77;
        }
        status = b.ops->stream_create(&b.stream);
        if (status != ACCEL_OK) {
            rc = bench_fail("stream_create", status);
            goto out;
        }
    }
    if (b.iters == 0) {
        b.iters = (b.ops == NULL) ? 1 : 20;
    }

    /* 1.0 in every type the benchmark may run: small sums stay exact enough */
    memset(pattern, 0, sizeof(pattern));
    if (b.dtype == ACCEL_DT_FLOAT) {
        for (size_t i = 0; i < sizeof(pattern) / sizeof(float); ++i) {
            ((float *)pattern)[i] = 1.0f + (float)(i % 7) * 0.125f;
        }
    } else if (b.dtype == ACCEL_DT_DOUBLE) {
        for (size_t i = 0; i < sizeof(pattern) / sizeof(double); ++i) {
            ((double *)pattern)[i] = 1.0 + (double)(i % 7) * 0.125;
        }
    } else {
        for (size_t i = 0; i < sizeof(pattern); ++i) {
            pattern[i] = (unsigned char)(i % 3);
        }
    }

    printf("# accel_reduce_bench: %s %s on %s (%s), median of %d runs of %d call(s)\n",
           accel_op_string(b.op), accel_dtype_string(b.dtype), backend,
           (b.ops == NULL) ? "accel_reduce_cpu, one thread; copy: memcpy"
                           : "ops->reduce; copy: device-to-device memcpy_async",
           b.runs, b.iters);
    printf("# GB/s: bytes read + written per second (reduce: (inputs+1)*size, copy: 2*size)\n");
    printf("%12s %7s %11s %12s %12s %8s\n", "size", "inputs", "reduce ms", "reduce GB/s",
           "copy GB/s", "ratio");
    for (int i = 0; (rc == 0) && (i < b.nsizes); ++i) {
        rc = bench_one_size(&b, b.sizes[i], pattern, sizeof(pattern));
    }

out:
    if (b.ops != NULL) {
        if (b.stream != NULL) {
            b.ops->stream_destroy(b.stream);
        }
        accel_finalize();
    }
    return rc;
}
