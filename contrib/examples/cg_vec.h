/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cg_vec.h: the few vector operations the conjugate-gradient example needs, on whichever
 * memory its build uses.  cg.c, the solver, is written once against this header; the build
 * chooses the implementation:
 *
 *   cg_host      cg_vec_host.c                  vectors and reduction buffers in host memory
 *   cg_emulated  cg_vec_host.c, CG_EMULATED     host vectors, reduction buffers in emulated
 *                                               device memory (libcgaccel): what coll/gpu sees
 *                                               is device memory, as on a GPU
 *   cg_cuda      cg_vec_cuda.cu (nvcc)          everything in cudaMalloc'ed memory, kernels
 *
 * A "vector" lives where the build computes; a "scalar" is a reduction buffer: the local
 * part of a dot product, written by the build's kernel, that cg.c hands to MPI_Allreduce.
 */
#ifndef CG_VEC_H
#define CG_VEC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Selects the device of this rank (local_rank among the ranks of its node); 0 on success. */
int cgv_init(int local_rank);
void cgv_finalize(void);
/* What this build computes on and where its reduction buffers are. */
const char *cgv_name(void);

double *cgv_alloc(size_t n);    /* a vector of n doubles, zeroed */
double *cgv_alloc_scalar(void); /* a reduction buffer of one double */
void cgv_free(double *v);
void cgv_free_scalar(double *s);

/* Host <-> vector copies (halo rows); the value of a reduction buffer. */
void cgv_upload(double *dst, const double *src, size_t n);
void cgv_download(double *dst, const double *src, size_t n);
double cgv_scalar_get(const double *s);

void cgv_fill(double *x, double value, size_t n);
/* y = A x for the 5-point Laplacian (4 on the diagonal, -1 off it) on nx columns and ny rows;
 * x has a halo row above and below (ny + 2 rows; zero where the domain ends). */
void cgv_stencil(double *y, const double *x, int nx, int ny);
void cgv_axpy(double *y, double a, const double *x, size_t n); /* y += a x */
void cgv_xpay(double *y, const double *x, double a, size_t n); /* y = x + a y */
/* *s = sum of x[i] y[i], i < n, in a fixed order (the same bits every run). */
void cgv_dot(double *s, const double *x, const double *y, size_t n);
void cgv_sum(double *s, const double *x, size_t n); /* *s = sum of x[i] */

#ifdef __cplusplus
}
#endif

#endif /* CG_VEC_H */
