/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cg: a distributed conjugate-gradient solver of the kind HPC codes run, as an example of
 * an application that uses coll/gpu without a change.
 *
 * Solves A x = b for the 5-point Laplacian on an N x N grid (zero boundary), b = 1, rows
 * split over the ranks.  Each iteration exchanges one halo row with each neighbour and does
 * two global dot products: MPI_Allreduce on the build's reduction buffers, which are device
 * memory in the device builds (cg_vec.h).  The halo exchange is point-to-point, which
 * coll/gpu does not intercept: it goes through host copies, as on any MPI that is not
 * CUDA-aware.
 *
 *   mpirun -np 4 ./cg_host [-n N] [-i max_iterations] [-t tolerance]
 *   mpirun -np 4 --mca coll_gpu_accelerator emulated ./cg_emulated ...   (coll/gpu loaded)
 *   mpirun -np 4 ./cg_cuda ...                                          (coll/gpu loaded)
 *
 * It prints the iterations, the final residual and the sum of x, with their bits (the
 * answer: the same from every build whose arithmetic is the same), then the time.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "cg_vec.h"

static uint64_t cg_bits(double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

/* The global dot product: the local part into a reduction buffer, MPI_Allreduce on it. */
static double cg_dot(double *local, double *global, const double *x, const double *y, size_t n) {
    if (NULL == y) {
        cgv_sum(local, x, n);
    } else {
        cgv_dot(local, x, y, n);
    }
    MPI_Allreduce(local, global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return cgv_scalar_get(global);
}

/* Fills p's halo rows (row 0 and row ny + 1 of nx) from the neighbouring ranks. */
static void cg_halo(double *p, double *send, double *recv, int nx, int ny, int rank, int size) {
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    cgv_download(send, p + nx, (size_t)nx);                   /* my first row, up */
    cgv_download(send + nx, p + (size_t)ny * nx, (size_t)nx); /* my last row, down */
    memset(recv, 0, 2 * (size_t)nx * sizeof(double));
    MPI_Sendrecv(send, nx, MPI_DOUBLE, up, 0, recv + nx, nx, MPI_DOUBLE, down, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(send + nx, nx, MPI_DOUBLE, down, 1, recv, nx, MPI_DOUBLE, up, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    cgv_upload(p, recv, (size_t)nx);                              /* from up */
    cgv_upload(p + (size_t)(ny + 1) * nx, recv + nx, (size_t)nx); /* from down */
}

int main(int argc, char **argv) {
    int rank, size, local_rank, n = 256, max_iter = 2000, opt;
    double tol = 1e-8;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while (-1 != (opt = getopt(argc, argv, "n:i:t:"))) {
        switch (opt) {
        case 'n':
            n = atoi(optarg);
            break;
        case 'i':
            max_iter = atoi(optarg);
            break;
        case 't':
            tol = atof(optarg);
            break;
        default:
            if (0 == rank) {
                fprintf(stderr, "usage: cg [-n N] [-i max_iterations] [-t tolerance]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (n < size) {
        if (0 == rank) {
            fprintf(stderr, "cg: N (%d) must be at least the number of ranks\n", n);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    if (0 != cgv_init(local_rank)) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* my rows: n / size, the first n % size ranks one more */
    const int nx = n, ny = n / size + (rank < n % size);
    const size_t len = (size_t)nx * ny;
    double *x = cgv_alloc(len), *r = cgv_alloc(len), *ap = cgv_alloc(len);
    double *p_halo = cgv_alloc(len + 2 * (size_t)nx), *p = p_halo + nx;
    double *local = cgv_alloc_scalar(), *global = cgv_alloc_scalar();
    double *send = malloc(2 * sizeof(double) * (size_t)nx),
           *recv = malloc(2 * sizeof(double) * (size_t)nx);

    /* x = 0, r = b - A x = b = 1, p = r */
    cgv_fill(r, 1.0, len);
    cgv_fill(p, 1.0, len);
    double rr = cg_dot(local, global, r, r, len), rr0 = rr;
    int iter = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    while (iter < max_iter && sqrt(rr / rr0) > tol) {
        cg_halo(p_halo, send, recv, nx, ny, rank, size);
        cgv_stencil(ap, p_halo, nx, ny);
        double alpha = rr / cg_dot(local, global, p, ap, len);
        cgv_axpy(x, alpha, p, len);
        cgv_axpy(r, -alpha, ap, len);
        double rr_new = cg_dot(local, global, r, r, len);
        cgv_xpay(p, r, rr_new / rr, len);
        rr = rr_new;
        ++iter;
    }
    double elapsed = MPI_Wtime() - t0, residual = sqrt(rr / rr0);
    double checksum = cg_dot(local, global, x, NULL, len);

    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("cg: %s, N=%d, %d ranks\n", cgv_name(), n, size);
        printf("cg answer: iterations %d, residual %.17e (0x%016llx), sum(x) %.17e "
               "(0x%016llx)\n",
               iter, residual, (unsigned long long)cg_bits(residual), checksum,
               (unsigned long long)cg_bits(checksum));
        printf("cg time: %.3f s, %.1f us per iteration\n", elapsed,
               iter ? elapsed * 1e6 / iter : 0.0);
    }

    free(send);
    free(recv);
    cgv_free(x);
    cgv_free(r);
    cgv_free(ap);
    cgv_free(p_halo);
    cgv_free_scalar(local);
    cgv_free_scalar(global);
    cgv_finalize();
    MPI_Finalize();
    return 0;
}
