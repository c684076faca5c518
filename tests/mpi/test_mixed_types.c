/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Legal MPI that makes the ranks' native decisions differ: in a data-movement collective a rank
 * may pass a derived type where another passes a predefined one of the same type signature
 * (here MPI_Type_contiguous(1, MPI_INT) against MPI_INT).  The rank with the derived type cannot
 * run the native algorithms; the others could.  Under coll_gpu_check_memory_kinds=1, where
 * the ranks agree per call, every call must complete with the right data on every rank, staged
 * everywhere: MPI_Gather, MPI_Scatter, MPI_Bcast (the derived type at the root), MPI_Allgather,
 * MPI_Allgatherv and MPI_Alltoallv (on rank 0).  Without it they would wait on each other in
 * different collectives.  Device buffers (or --kinds=host under coll_gpu_host_buffers=1).
 *
 * A reduction too: MPI_Allreduce (a user-defined sum) of BIG ints where rank 0 passes an int
 * resized to two ints' extent (every other int of its buffers; the holes keep their bytes) and the
 * others MPI_INT.  Staged with a small staging buffer, the others' dense data would be pipelined in
 * chunks, rank 0's cannot: every rank must run the same host collectives whatever its type.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#include "test_native_util.h"
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000 /* elements per block */

static tu_mem_t mem = TU_MEM_DEVICE;
static MPI_Datatype derived;

/* The value of element i of rank r's block. */
static int value(int r, int i, int salt) { return salt * 1000003 + r * 100003 + i; }

/* A device (or host) buffer of n ints: the values of rank r's blocks, or -1 when r < 0. */
static int *buffer(int n, int r, int salt) {
    int *host = tn_malloc((size_t)n * sizeof(int));
    int *buf;

    for (int i = 0; i < n; ++i) {
        host[i] = (r < 0) ? -1 : value(r, i % N, salt + i / N);
    }
    buf = tn_mem_copy_of(mem, host, (size_t)n * sizeof(int));
    free(host);
    return buf;
}

/* Checks n ints of buf: block b (N ints) must hold rank owner(b)'s values. */
static void check(const char *what, int *buf, int n, int (*owner)(int b), int salt_of_block) {
    int *host = tn_malloc((size_t)n * sizeof(int)), bad = 0;

    if (tu_mem_read(mem, host, buf, (size_t)n * sizeof(int))) {
        tn_setup_failed();
    }
    for (int i = 0; i < n; ++i) {
        int b = i / N, want = value(owner(b), i % N, salt_of_block ? b : 0);
        if ((host[i] != want) && (bad++ < 3)) {
            tu_fail("%s: element %d is %d, expected %d", what, i, host[i], want);
        }
    }
    free(host);
    tu_mem_free(mem, buf);
}

static int block_owner(int b) { return b; }
static int the_root;
static int root_owner(int b) {
    (void)b;
    return the_root;
}
static int my_rank;
static int me_owner(int b) {
    (void)b;
    return my_rank;
}

/* The type a rank passes: derived where `on` is this rank. */
static MPI_Datatype type_for(int on) { return (on == my_rank) ? derived : MPI_INT; }

static void expect_success(int rc, const char *what) {
    if (MPI_SUCCESS != rc) {
        tu_fail("%s returned %d", what, rc);
    }
}

static void run_rooted(int size, int root) {
    int *sbuf, *rbuf;

    the_root = root;
    tu_case_begin("MPI_Gather, root %d receives with a derived type", root);
    sbuf = buffer(N, my_rank, 0);
    rbuf = buffer((my_rank == root) ? N * size : 1, -1, 0);
    expect_success(MPI_Gather(sbuf, N, MPI_INT, rbuf, N, type_for(root), root, MPI_COMM_WORLD),
                   "MPI_Gather");
    tu_mem_free(mem, sbuf);
    if (my_rank == root) {
        check("MPI_Gather", rbuf, N * size, block_owner, 0);
    } else {
        tu_mem_free(mem, rbuf);
    }
    tu_case_end();

    tu_case_begin("MPI_Scatter, root %d sends with a derived type", root);
    sbuf = (my_rank == root) ? buffer(N * size, -1, 0) : buffer(1, -1, 0);
    if (my_rank == root) {
        int *host = tn_malloc((size_t)N * (size_t)size * sizeof(int));
        for (int i = 0; i < N * size; ++i) {
            host[i] = value(i / N, i % N, 0);
        }
        if (tu_mem_write(mem, sbuf, host, (size_t)N * (size_t)size * sizeof(int))) {
            tn_setup_failed();
        }
        free(host);
    }
    rbuf = buffer(N, -1, 0);
    expect_success(MPI_Scatter(sbuf, N, type_for(root), rbuf, N, MPI_INT, root, MPI_COMM_WORLD),
                   "MPI_Scatter");
    tu_mem_free(mem, sbuf);
    check("MPI_Scatter", rbuf, N, me_owner, 0);
    tu_case_end();

    tu_case_begin("MPI_Bcast, root %d with a derived type", root);
    rbuf = buffer(N, (my_rank == root) ? root : -1, 0);
    expect_success(MPI_Bcast(rbuf, N, type_for(root), root, MPI_COMM_WORLD), "MPI_Bcast");
    check("MPI_Bcast", rbuf, N, root_owner, 0);
    tu_case_end();
}

static void run_allgathers(int size) {
    int *sbuf = buffer(N, my_rank, 0), *rbuf = buffer(N * size, -1, 0);
    int *counts = tn_malloc((size_t)size * sizeof(int)),
        *displs = tn_malloc((size_t)size * sizeof(int));

    tu_case_begin("MPI_Allgather, rank 0 with a derived type");
    expect_success(MPI_Allgather(sbuf, N, type_for(0), rbuf, N, type_for(0), MPI_COMM_WORLD),
                   "MPI_Allgather");
    check("MPI_Allgather", rbuf, N * size, block_owner, 0);
    tu_case_end();

    tu_case_begin("MPI_Allgatherv, rank 0 with a derived type");
    for (int p = 0; p < size; ++p) {
        counts[p] = N;
        displs[p] = p * N;
    }
    rbuf = buffer(N * size, -1, 0);
    expect_success(
        MPI_Allgatherv(sbuf, N, type_for(0), rbuf, counts, displs, type_for(0), MPI_COMM_WORLD),
        "MPI_Allgatherv");
    check("MPI_Allgatherv", rbuf, N * size, block_owner, 0);
    tu_case_end();
    tu_mem_free(mem, sbuf);
    free(counts);
    free(displs);
}

/* Block b of rank r's send buffer goes to rank b: rank r receives block r of every rank. */
static int sender_of_block(int b) { return b; }

static void run_alltoallv(int size) {
    int *host = tn_malloc((size_t)N * (size_t)size * sizeof(int));
    int *counts = tn_malloc((size_t)size * sizeof(int)),
        *displs = tn_malloc((size_t)size * sizeof(int));
    int *sbuf, *rbuf, *got, bad = 0;

    tu_case_begin("MPI_Alltoallv, rank 0 with a derived type");
    for (int p = 0; p < size; ++p) {
        counts[p] = N;
        displs[p] = p * N;
        for (int i = 0; i < N; ++i) {
            host[p * N + i] = value(my_rank, i, p); /* for rank p */
        }
    }
    sbuf = tn_mem_copy_of(mem, host, (size_t)N * (size_t)size * sizeof(int));
    rbuf = buffer(N * size, -1, 0);
    expect_success(MPI_Alltoallv(sbuf, counts, displs, type_for(0), rbuf, counts, displs,
                                 type_for(0), MPI_COMM_WORLD),
                   "MPI_Alltoallv");
    got = host;
    if (tu_mem_read(mem, got, rbuf, (size_t)N * (size_t)size * sizeof(int))) {
        tn_setup_failed();
    }
    for (int i = 0; i < N * size; ++i) {
        int want = value(sender_of_block(i / N), i % N, my_rank);
        if ((got[i] != want) && (bad++ < 3)) {
            tu_fail("MPI_Alltoallv: element %d is %d, expected %d", i, got[i], want);
        }
    }
    tu_case_end();
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    free(host);
    free(counts);
    free(displs);
}

#define BIG (1 << 18) /* ints: 1 MiB, several chunks of a 64 KiB staging buffer */

/* A user-defined sum (Open MPI takes MPI_SUM on a resized type as MPI_ERR_OP): the element
 * stride is the datatype's extent. */
static void isum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    MPI_Aint lb, extent;
    size_t stride;

    MPI_Type_get_extent(*dt, &lb, &extent);
    stride = (size_t)extent / sizeof(int);
    for (size_t i = 0; i < (size_t)*len; ++i) {
        ((int *)inout)[i * stride] += ((const int *)in)[i * stride];
    }
}

static void run_allreduce_holes(int size) {
    MPI_Datatype holey;
    int stride = (0 == my_rank) ? 2 : 1, n = BIG * stride,
        *host = tn_malloc((size_t)n * sizeof(int));
    int *sbuf, *rbuf, *got, rc;
    MPI_Op op;

    MPI_Op_create(isum, 1, &op);
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &holey);
    MPI_Type_commit(&holey);
    tu_case_begin("MPI_Allreduce of %d ints, rank 0 with an int of two ints' extent", BIG);
    for (int i = 0; i < n; ++i) {
        host[i] = (0 == i % stride) ? value(my_rank, i / stride % N, 7) : -7;
    }
    sbuf = tn_mem_copy_of(mem, host, (size_t)n * sizeof(int));
    for (int i = 0; i < n; ++i) {
        host[i] = -9;
    }
    rbuf = tn_mem_copy_of(mem, host, (size_t)n * sizeof(int));
    rc = MPI_Allreduce(sbuf, rbuf, BIG, (0 == my_rank) ? holey : MPI_INT, op, MPI_COMM_WORLD);
    expect_success(rc, "MPI_Allreduce");
    got = tn_malloc((size_t)n * sizeof(int));
    if (tu_mem_read(mem, got, rbuf, (size_t)n * sizeof(int))) {
        tn_setup_failed();
    }
    for (int i = 0; i < n; ++i) {
        int want = -9;

        if (0 == i % stride) {
            want = 0;
            for (int r = 0; r < size; ++r) {
                want += value(r, i / stride % N, 7);
            }
        }
        if (got[i] != want) {
            tu_fail("MPI_Allreduce: element %d is %d, expected %d", i, got[i], want);
            break;
        }
    }
    tu_case_end();
    free(got);
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    free(host);
    MPI_Type_free(&holey);
    MPI_Op_free(&op);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    bool host = false;
    int size;
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_mixed_types", args, &opts);
    mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
    tn_setup(&opts, mem);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(1, MPI_INT, &derived);
    MPI_Type_commit(&derived);

    for (int rep = 0; rep < 2; ++rep) { /* twice: nothing of the first call may linger */
        run_alltoallv(size);
        run_rooted(size, 0);
        run_rooted(size, size - 1);
        run_allgathers(size);
        run_allreduce_holes(size);
    }
    MPI_Type_free(&derived);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
