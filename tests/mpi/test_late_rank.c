/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A slow rank is not a dead one.  One rank enters some collectives --late-ms later than the
 * others (a checkpoint, a long I/O phase, a debugger); every call must still return the right
 * data on every rank with MPI_SUCCESS, as on plain Open MPI.  Before coll/gpu's failure model,
 * the ranks that waited longer than coll_gpu_transport_timeout got an error and staged from
 * then on while the late rank stayed native: every later call paired call k of one rank with
 * call k + 1 of another, wrong data returned as success.
 *
 * Each iteration runs MPI_Allreduce (one small and one large message, so both one_shot and
 * two_shot run), MPI_Bcast and MPI_Reduce from rotating roots, MPI_Allgather, MPI_Gather and
 * MPI_Scatter from rotating roots, MPI_Alltoall (small
 * blocks: node-aggregated across nodes of several ranks) and MPI_Reduce_scatter_block, with
 * contents that depend on the iteration, checked against references computed here; even iterations
 * start with the alltoall, odd ones with the allreduce, iteration 7 with the reduce_scatter_block.
 * The late rank sleeps before the iterations listed by --late-at (by default 2, 5 and 7: it
 * enters an alltoall late, then an allreduce, then a reduce_scatter_block).  Run under a set
 * coll_gpu_transport_timeout shorter than the lateness, the job must abort (the timeout is a hang
 * detector): never print a wrong result.
 *
 * First, MPI_Comm_free must not wait for the peers either (Open MPI's own does not): rank 0
 * frees a communicator that ran native collectives, then receives from the last rank, which
 * sends synchronously (MPI_Ssend) before it frees its own.  A free that waits for the last
 * rank's free deadlocks there.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#include "test_native_util.h"
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ITERATIONS 8
#define SMALL 256          /* ints: one_shot */
#define LARGE (256 * 1024) /* ints: 1 MiB, two_shot */
#define A2A_BLOCK 64       /* ints per alltoall and reduce_scatter_block block: 256 bytes */
#define RS_FIRST 7         /* the iteration that starts with the reduce_scatter_block */

static tu_mem_t mem = TU_MEM_DEVICE;
static int my_rank, world_size;

static int value(int r, int i, int iter) { return (iter + 1) * 7919 + r * 104729 + (i % 977); }

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int *host_values(int n, int r, int iter) {
    int *host = tn_malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; ++i) {
        host[i] = (r < 0) ? -1 : value(r, i, iter);
    }
    return host;
}

static void check_ints(const char *what, int iter, const int *got, const int *want, int n) {
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        if ((got[i] != want[i]) && (bad++ < 3)) {
            tu_fail("iteration %d: %s: element %d is %d, expected %d", iter, what, i, got[i],
                    want[i]);
        }
    }
}

/* MPI_Allreduce of n ints (root < 0), or MPI_Reduce to root: the sum, at the root alone for a
 * reduce */
static void run_sum(int n, int iter, int root) {
    const char *what = (root < 0) ? "MPI_Allreduce" : "MPI_Reduce";
    int *host = host_values(n, my_rank, iter), *want = tn_malloc((size_t)n * sizeof(int));
    int *sbuf = tn_mem_copy_of(mem, host, (size_t)n * sizeof(int));
    int *rbuf = tn_mem_copy_of(mem, host, (size_t)n * sizeof(int));
    int rc;

    for (int i = 0; i < n; ++i) {
        unsigned sum = 0; /* wraps as MPI_SUM must */
        for (int r = 0; r < world_size; ++r) {
            sum += (unsigned)value(r, i, iter);
        }
        want[i] = (int)sum;
    }
    rc = (root < 0) ? MPI_Allreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
                    : MPI_Reduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    if (MPI_SUCCESS != rc) {
        tu_fail("iteration %d: %s of %d ints returned %d", iter, what, n, rc);
    } else if ((root >= 0) && (my_rank != root)) {
        /* only the root's result is defined */
    } else if (tu_mem_read(mem, host, rbuf, (size_t)n * sizeof(int))) {
        tn_setup_failed();
    } else {
        check_ints(what, iter, host, want, n);
    }
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    free(host);
    free(want);
}

static void run_bcast(int n, int iter) {
    int root = iter % world_size;
    int *host = host_values(n, (my_rank == root) ? root : -1, iter);
    int *want = host_values(n, root, iter);
    int *buf = tn_mem_copy_of(mem, host, (size_t)n * sizeof(int));
    int rc = MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD);

    if (MPI_SUCCESS != rc) {
        tu_fail("iteration %d: MPI_Bcast returned %d", iter, rc);
    } else if (tu_mem_read(mem, host, buf, (size_t)n * sizeof(int))) {
        tn_setup_failed();
    } else {
        check_ints("MPI_Bcast", iter, host, want, n);
    }
    tu_mem_free(mem, buf);
    free(host);
    free(want);
}

/* MPI_Allgather of n ints per rank (root < 0), or MPI_Gather to root: every block, at the root
 * alone for a gather */
static void run_gather(int n, int iter, int root) {
    const char *what = (root < 0) ? "MPI_Allgather" : "MPI_Gather";
    int total = n * world_size;
    int *mine = host_values(n, my_rank, iter), *want = tn_malloc((size_t)total * sizeof(int));
    int *got = tn_malloc((size_t)total * sizeof(int));
    int *sbuf = tn_mem_copy_of(mem, mine, (size_t)n * sizeof(int));
    int *rbuf = tn_mem_copy_of(mem, want, (size_t)total * sizeof(int)); /* contents: any */
    int rc;

    for (int r = 0; r < world_size; ++r) {
        for (int i = 0; i < n; ++i) {
            want[r * n + i] = value(r, i, iter);
        }
    }
    rc = (root < 0) ? MPI_Allgather(sbuf, n, MPI_INT, rbuf, n, MPI_INT, MPI_COMM_WORLD)
                    : MPI_Gather(sbuf, n, MPI_INT, rbuf, n, MPI_INT, root, MPI_COMM_WORLD);
    if (MPI_SUCCESS != rc) {
        tu_fail("iteration %d: %s returned %d", iter, what, rc);
    } else if ((root >= 0) && (my_rank != root)) {
        /* only the root's result is defined */
    } else if (tu_mem_read(mem, got, rbuf, (size_t)total * sizeof(int))) {
        tn_setup_failed();
    } else {
        check_ints(what, iter, got, want, total);
    }
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    free(mine);
    free(want);
    free(got);
}

/* MPI_Scatter of n ints per rank from root: block d of the root's is value(root, d * n + i) */
static void run_scatter(int n, int iter, int root) {
    int total = n * world_size;
    int *all = host_values(total, root, iter), *got = tn_malloc((size_t)n * sizeof(int));
    int *sbuf = tn_mem_copy_of(mem, all, (size_t)total * sizeof(int));
    int *rbuf = tn_mem_copy_of(mem, all, (size_t)n * sizeof(int)); /* contents: any */
    int rc = MPI_Scatter(sbuf, n, MPI_INT, rbuf, n, MPI_INT, root, MPI_COMM_WORLD);

    if (MPI_SUCCESS != rc) {
        tu_fail("iteration %d: MPI_Scatter returned %d", iter, rc);
    } else if (tu_mem_read(mem, got, rbuf, (size_t)n * sizeof(int))) {
        tn_setup_failed();
    } else {
        check_ints("MPI_Scatter", iter, got, all + (size_t)my_rank * (size_t)n, n);
    }
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    free(all);
    free(got);
}

static void run_alltoall(int n, int iter) {
    int total = n * world_size;
    int *mine = tn_malloc((size_t)total * sizeof(int)),
        *want = tn_malloc((size_t)total * sizeof(int));
    int *got = tn_malloc((size_t)total * sizeof(int));
    int *sbuf, *rbuf, rc;

    /* block d of rank r: value(r, d * n + i) */
    for (int i = 0; i < total; ++i) {
        mine[i] = value(my_rank, i, iter);
        want[i] = value(i / n, my_rank * n + i % n, iter);
    }
    sbuf = tn_mem_copy_of(mem, mine, (size_t)total * sizeof(int));
    rbuf = tn_mem_copy_of(mem, mine, (size_t)total * sizeof(int)); /* contents: any */
    rc = MPI_Alltoall(sbuf, n, MPI_INT, rbuf, n, MPI_INT, MPI_COMM_WORLD);
    if (MPI_SUCCESS != rc) {
        tu_fail("iteration %d: MPI_Alltoall returned %d", iter, rc);
    } else if (tu_mem_read(mem, got, rbuf, (size_t)total * sizeof(int))) {
        tn_setup_failed();
    } else {
        check_ints("MPI_Alltoall", iter, got, want, total);
    }
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    free(mine);
    free(want);
    free(got);
}

/* MPI_Reduce_scatter_block of n ints per rank: block d of rank r's input is value(r, d * n + i) */
static void run_reduce_scatter_block(int n, int iter) {
    int total = n * world_size;
    int *mine = host_values(total, my_rank, iter), *want = tn_malloc((size_t)n * sizeof(int));
    int *got = tn_malloc((size_t)n * sizeof(int));
    int *sbuf = tn_mem_copy_of(mem, mine, (size_t)total * sizeof(int));
    int *rbuf = tn_mem_copy_of(mem, mine, (size_t)n * sizeof(int)); /* contents: any */
    int rc;

    for (int i = 0; i < n; ++i) {
        unsigned sum = 0; /* wraps as MPI_SUM must */
        for (int r = 0; r < world_size; ++r) {
            sum += (unsigned)value(r, my_rank * n + i, iter);
        }
        want[i] = (int)sum;
    }
    rc = MPI_Reduce_scatter_block(sbuf, rbuf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (MPI_SUCCESS != rc) {
        tu_fail("iteration %d: MPI_Reduce_scatter_block returned %d", iter, rc);
    } else if (tu_mem_read(mem, got, rbuf, (size_t)n * sizeof(int))) {
        tn_setup_failed();
    } else {
        check_ints("MPI_Reduce_scatter_block", iter, got, want, n);
    }
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    free(mine);
    free(want);
    free(got);
}

static void run_comm_free_first(void) {
    MPI_Comm comm;
    int token = 42, last = world_size - 1;

    tu_case_begin("MPI_Comm_free on rank 0 while rank %d is still in MPI_Ssend", last);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int iter = 0; iter < 2; ++iter) {
        run_sum(SMALL, iter, -1); /* on world: sets up its native context */
    }
    {
        int *host = host_values(SMALL, my_rank, 0);
        int *buf = tn_mem_copy_of(mem, host, SMALL * sizeof(int));
        if (MPI_SUCCESS != MPI_Allreduce(MPI_IN_PLACE, buf, SMALL, MPI_INT, MPI_SUM, comm)) {
            tu_fail("MPI_Allreduce on the duplicate failed");
        }
        tu_mem_free(mem, buf);
        free(host);
    }
    if ((0 == my_rank) && (last > 0)) {
        MPI_Comm_free(&comm);
        MPI_Recv(&token, 1, MPI_INT, last, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (my_rank == last) {
        MPI_Ssend(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        MPI_Comm_free(&comm);
    } else {
        MPI_Comm_free(&comm);
    }
    if (42 != token) {
        tu_fail("the message carried %d", token);
    }
    tu_case_end();
}

int main(int argc, char **argv) {
    tu_options_t opts;
    bool host = false;
    int late_ms = 3000, late_rank = -1, late_mask = (1 << 2) | (1 << 5) | (1 << RS_FIRST);
    bool free_waits = false;
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},
        {"--late-ms", TU_ARG_INT, &late_ms},
        {"--late-rank", TU_ARG_INT, &late_rank},
        {"--late-at", TU_ARG_INT, &late_mask}, /* bit k: late before iteration k */
        /* the communicator spans nodes: its MPI_Comm_free waits for the peers' (a limit) */
        {"--free-waits", TU_ARG_FLAG, &free_waits},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_late_rank", args, &opts);
    mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
    tn_setup(&opts, mem);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (late_rank < 0) {
        late_rank = world_size - 1;
    }

    if (!free_waits) {
        run_comm_free_first();
    }
    tu_case_begin("%d iterations, rank %d late by %d ms before iterations 0x%x", ITERATIONS,
                  late_rank, late_ms, late_mask);
    for (int iter = 0; iter < ITERATIONS; ++iter) {
        if ((my_rank == late_rank) && (late_mask & (1 << iter))) {
            sleep_ms(late_ms);
        }
        if (RS_FIRST == iter) {
            run_reduce_scatter_block(A2A_BLOCK, iter);
        }
        if (0 == iter % 2) {
            run_alltoall(A2A_BLOCK, iter);
        }
        run_sum(SMALL, iter, -1);
        run_sum(LARGE, iter, -1);
        run_bcast(LARGE, iter);
        /* (a rotating root, the one before the bcast's) */
        run_sum(SMALL, iter, (iter + world_size - 1) % world_size);
        run_gather(SMALL, iter, -1);
        /* (rotating roots, those two before and after the bcast's) */
        run_gather(SMALL, iter, (iter + world_size - 2) % world_size);
        run_scatter(SMALL, iter, (iter + 1) % world_size);
        if (1 == iter % 2) {
            run_alltoall(A2A_BLOCK, iter);
        }
        if (RS_FIRST != iter) {
            run_reduce_scatter_block(A2A_BLOCK, iter);
        }
    }
    tu_case_end();
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
