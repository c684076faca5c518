/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cg_vec.h on the host: plain loops.  Built twice: cg_host keeps its reduction buffers in
 * host memory; cg_emulated (CG_EMULATED) keeps them in emulated device memory, allocated and
 * copied through libcgaccel, so that MPI_Allreduce gets device pointers as it would from the
 * CUDA build, while the arithmetic (and so every bit of the answer) stays that of cg_host.
 */
#include "cg_vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CG_EMULATED
#include "accel.h"

static const accel_ops_t *cgv_accel;
#endif

int cgv_init(int local_rank) {
    (void)local_rank;
#ifdef CG_EMULATED
    const char *reason = NULL;
    if (ACCEL_OK != accel_init(ACCEL_BACKEND_EMULATED, &cgv_accel, &reason)) {
        fprintf(stderr, "cg: no emulated device: %s\n", reason);
        return -1;
    }
#endif
    return 0;
}

void cgv_finalize(void) {
#ifdef CG_EMULATED
    accel_finalize();
#endif
}

const char *cgv_name(void) {
#ifdef CG_EMULATED
    return "emulated device (host compute, reduction buffers in emulated device memory)";
#else
    return "host";
#endif
}

double *cgv_alloc(size_t n) {
    double *v = calloc(n ? n : 1, sizeof(double));
    if (NULL == v) {
        fprintf(stderr, "cg: out of memory\n");
        exit(1);
    }
    return v;
}

void cgv_free(double *v) { free(v); }

double *cgv_alloc_scalar(void) {
#ifdef CG_EMULATED
    void *s = NULL;
    if (ACCEL_OK != cgv_accel->mem_alloc(ACCEL_MEM_DEVICE, sizeof(double), &s)) {
        fprintf(stderr, "cg: device allocation failed\n");
        exit(1);
    }
    return s;
#else
    return cgv_alloc(1);
#endif
}

void cgv_free_scalar(double *s) {
#ifdef CG_EMULATED
    cgv_accel->mem_free(s);
#else
    free(s);
#endif
}

void cgv_upload(double *dst, const double *src, size_t n) { memcpy(dst, src, n * sizeof(*dst)); }

void cgv_download(double *dst, const double *src, size_t n) { memcpy(dst, src, n * sizeof(*dst)); }

/* the value a host kernel computed goes to (and comes from) the reduction buffer */
static void cgv_scalar_set(double *s, double value) {
#ifdef CG_EMULATED
    cgv_accel->memcpy(s, &value, sizeof(value));
#else
    *s = value;
#endif
}

double cgv_scalar_get(const double *s) {
    double value;
#ifdef CG_EMULATED
    cgv_accel->memcpy(&value, s, sizeof(value));
#else
    value = *s;
#endif
    return value;
}

void cgv_fill(double *x, double value, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        x[i] = value;
    }
}

void cgv_stencil(double *y, const double *x, int nx, int ny) {
    for (int j = 0; j < ny; ++j) {
        const double *row = x + (size_t)(j + 1) * nx;
        for (int i = 0; i < nx; ++i) {
            double left = i > 0 ? row[i - 1] : 0.0, right = i < nx - 1 ? row[i + 1] : 0.0;
            y[(size_t)j * nx + i] = 4.0 * row[i] - left - right - row[i - nx] - row[i + nx];
        }
    }
}

void cgv_axpy(double *y, double a, const double *x, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        y[i] += a * x[i];
    }
}

void cgv_xpay(double *y, const double *x, double a, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        y[i] = x[i] + a * y[i];
    }
}

void cgv_dot(double *s, const double *x, const double *y, size_t n) {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        sum += x[i] * y[i];
    }
    cgv_scalar_set(s, sum);
}

void cgv_sum(double *s, const double *x, size_t n) {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        sum += x[i];
    }
    cgv_scalar_set(s, sum);
}
