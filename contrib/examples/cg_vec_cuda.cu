/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cg_vec.h on a CUDA GPU: vectors and reduction buffers in cudaMalloc'ed memory, one kernel
 * per operation.  The dot product reduces in a fixed order (a tree per block of a fixed
 * grid, then one block over the partial sums), so every run gives the same bits; they differ
 * from the host builds' sequential sums in the last bits, as any GPU solver's do.
 */
#include "cg_vec.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CGV_THREADS 256
#define CGV_DOT_BLOCKS 256

#define CGV_CHECK(call)                                                                            \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (cudaSuccess != err_) {                                                                 \
            fprintf(stderr, "cg: %s: %s\n", #call, cudaGetErrorString(err_));                      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double *cgv_partials; /* CGV_DOT_BLOCKS partial sums of the dot products */

static unsigned cgv_blocks(size_t n) {
    size_t b = (n + CGV_THREADS - 1) / CGV_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

extern "C" int cgv_init(int local_rank) {
    int count = 0;
    if (cudaSuccess != cudaGetDeviceCount(&count) || count < 1) {
        fprintf(stderr, "cg: no CUDA device\n");
        return -1;
    }
    CGV_CHECK(cudaSetDevice(local_rank % count));
    CGV_CHECK(cudaMalloc((void **)&cgv_partials, CGV_DOT_BLOCKS * sizeof(double)));
    return 0;
}

extern "C" void cgv_finalize(void) { cudaFree(cgv_partials); }

extern "C" const char *cgv_name(void) { return "cuda (vectors and reduction buffers on the GPU)"; }

extern "C" double *cgv_alloc(size_t n) {
    double *v;
    CGV_CHECK(cudaMalloc((void **)&v, (n ? n : 1) * sizeof(double)));
    CGV_CHECK(cudaMemset(v, 0, (n ? n : 1) * sizeof(double)));
    return v;
}

extern "C" double *cgv_alloc_scalar(void) { return cgv_alloc(1); }
extern "C" void cgv_free(double *v) { cudaFree(v); }
extern "C" void cgv_free_scalar(double *s) { cudaFree(s); }

extern "C" void cgv_upload(double *dst, const double *src, size_t n) {
    CGV_CHECK(cudaMemcpy(dst, src, n * sizeof(double), cudaMemcpyHostToDevice));
}

extern "C" void cgv_download(double *dst, const double *src, size_t n) {
    CGV_CHECK(cudaMemcpy(dst, src, n * sizeof(double), cudaMemcpyDeviceToHost));
}

extern "C" double cgv_scalar_get(const double *s) {
    double value;
    CGV_CHECK(cudaMemcpy(&value, s, sizeof(value), cudaMemcpyDeviceToHost));
    return value;
}

__global__ void cgv_fill_kernel(double *x, double value, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        x[i] = value;
    }
}

extern "C" void cgv_fill(double *x, double value, size_t n) {
    cgv_fill_kernel<<<cgv_blocks(n), CGV_THREADS>>>(x, value, n);
}

__global__ void cgv_stencil_kernel(double *y, const double *x, int nx, int ny) {
    size_t n = (size_t)nx * ny;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(k % nx);
        const double *c = x + nx + k; /* row j + 1 of x, column i */
        double left = i > 0 ? c[-1] : 0.0, right = i < nx - 1 ? c[1] : 0.0;
        y[k] = 4.0 * c[0] - left - right - c[-nx] - c[nx];
    }
}

extern "C" void cgv_stencil(double *y, const double *x, int nx, int ny) {
    cgv_stencil_kernel<<<cgv_blocks((size_t)nx * ny), CGV_THREADS>>>(y, x, nx, ny);
}

__global__ void cgv_axpy_kernel(double *y, double a, const double *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        y[i] += a * x[i];
    }
}

extern "C" void cgv_axpy(double *y, double a, const double *x, size_t n) {
    cgv_axpy_kernel<<<cgv_blocks(n), CGV_THREADS>>>(y, a, x, n);
}

__global__ void cgv_xpay_kernel(double *y, const double *x, double a, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        y[i] = x[i] + a * y[i];
    }
}

extern "C" void cgv_xpay(double *y, const double *x, double a, size_t n) {
    cgv_xpay_kernel<<<cgv_blocks(n), CGV_THREADS>>>(y, x, a, n);
}

/* Block b sums elements b*T + t, b*T + t + G*T, ... per thread (fixed grid G, T threads),
 * then a tree in shared memory; y == NULL: the sum of x. */
__global__ void cgv_dot_kernel(double *partials, const double *x, const double *y, size_t n) {
    __shared__ double sh[CGV_THREADS];
    double sum = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        sum += y ? x[i] * y[i] : x[i];
    }
    sh[threadIdx.x] = sum;
    __syncthreads();
    for (int s = CGV_THREADS / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s) {
            sh[threadIdx.x] += sh[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (0 == threadIdx.x) {
        partials[blockIdx.x] = sh[0];
    }
}

__global__ void cgv_dot_final_kernel(double *s, const double *partials) {
    __shared__ double sh[CGV_DOT_BLOCKS];
    sh[threadIdx.x] = partials[threadIdx.x];
    __syncthreads();
    for (int k = CGV_DOT_BLOCKS / 2; k > 0; k /= 2) {
        if ((int)threadIdx.x < k) {
            sh[threadIdx.x] += sh[threadIdx.x + k];
        }
        __syncthreads();
    }
    if (0 == threadIdx.x) {
        *s = sh[0];
    }
}

/* The result is in *s when this returns: MPI may read it (a CUDA-aware MPI requires the
 * work that produced a send buffer to be complete). */
extern "C" void cgv_dot(double *s, const double *x, const double *y, size_t n) {
    cgv_dot_kernel<<<CGV_DOT_BLOCKS, CGV_THREADS>>>(cgv_partials, x, y, n);
    cgv_dot_final_kernel<<<1, CGV_DOT_BLOCKS>>>(s, cgv_partials);
    CGV_CHECK(cudaDeviceSynchronize());
}

extern "C" void cgv_sum(double *s, const double *x, size_t n) { cgv_dot(s, x, NULL, n); }
