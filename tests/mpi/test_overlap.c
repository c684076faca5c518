/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking collectives on device memory progress while the application makes no MPI call.
 *
 * Each rank sets the communicator's native scratch up (one blocking MPI_Allreduce on device
 * memory), then, per collective and size: posts it, and without calling MPI again polls its
 * own device receive buffer (the emulated device memory is the test's to read) until the whole
 * result is there or --seconds pass; then MPI_Wait, and the buffer is checked once more.  A
 * collective that progresses only inside MPI_Test/MPI_Wait (the staged path: a host collective
 * of Open MPI's, results copied back at completion) leaves the buffer unwritten until the wait:
 * the case fails with "not there before MPI_Wait".  --expect-staged inverts the first check
 * (coll_gpu_native_nonblocking=0: the results must not be there before the wait, which shows
 * that the check can tell).
 *
 * Collectives: MPI_Iallreduce (sum), MPI_Ibcast (from the last rank), MPI_Iallgather,
 * MPI_Ialltoall and MPI_Ialltoallv (blocks of different lengths per pair of ranks, some empty:
 * its algorithm agrees on the longest in a step of its own), int32, 2 and 256 Ki elements per
 * rank, on MPI_COMM_WORLD.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_util.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OV_ALLREDUCE, OV_BCAST, OV_ALLGATHER, OV_ALLTOALL, OV_ALLTOALLV, OV_NUM };
static const char *const ov_names[OV_NUM] = {"MPI_Iallreduce", "MPI_Ibcast", "MPI_Iallgather",
                                             "MPI_Ialltoall", "MPI_Ialltoallv"};

/* alltoallv: rank r sends rank j the first ov_vcount(r, j) elements of block j: 0 to 2 fewer
 * than a block (some empty at 2 per block), a quarter of it to and from the last rank (its
 * blocks all shorter than the others': it runs the steps the others' need only if the ranks
 * agreed on them; at 2 per block it has none at all) */
static int ov_vcount(int r, int j, int size, size_t block) {
    if ((size > 1) && ((r == size - 1) || (j == size - 1))) {
        return (int)(block / 4);
    }
    return (int)block - (r * 7 + j) % 3;
}

/* rank's alltoallv counts and displacements: what it sends (s*) and receives (r*) */
static void ov_vblocks(int rank, int size, size_t block, int *scounts, int *sdispls, int *rcounts,
                       int *rdispls) {
    for (int p = 0, soff = 0, roff = 0; p < size; ++p) {
        scounts[p] = ov_vcount(rank, p, size, block);
        rcounts[p] = ov_vcount(p, rank, size, block);
        sdispls[p] = soff;
        rdispls[p] = roff;
        soff += scounts[p];
        roff += rcounts[p];
    }
}

static int32_t ov_input(int rank, size_t i) { return (int32_t)(rank * 1009 + (int)(i % 4099)); }

static double ov_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* This rank's send buffer (n elements) and expected receive buffer (rn elements). */
static void ov_expected(int which, int rank, int size, size_t n, int32_t *send, int32_t *want,
                        size_t *rn_p) {
    size_t block = n / (size_t)size;

    switch (which) {
    case OV_ALLREDUCE:
        for (size_t i = 0; i < n; ++i) {
            uint32_t sum = 0;
            send[i] = ov_input(rank, i);
            for (int r = 0; r < size; ++r) {
                sum += (uint32_t)ov_input(r, i);
            }
            want[i] = (int32_t)sum;
        }
        *rn_p = n;
        break;
    case OV_BCAST: /* one buffer: the root's input, everyone's result */
        for (size_t i = 0; i < n; ++i) {
            send[i] = (rank == size - 1) ? ov_input(size - 1, i) : -7;
            want[i] = ov_input(size - 1, i);
        }
        *rn_p = n;
        break;
    case OV_ALLGATHER: /* n elements per rank */
        for (size_t i = 0; i < n; ++i) {
            send[i] = ov_input(rank, i);
        }
        for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < n; ++i) {
                want[(size_t)r * n + i] = ov_input(r, i);
            }
        }
        *rn_p = n * (size_t)size;
        break;
    case OV_ALLTOALLV: { /* the first ov_vcount(r, j) elements of block j, packed */
        int *v = tn_malloc(4 * (size_t)size * sizeof(int));
        size_t rn = 0;

        ov_vblocks(rank, size, block, v, v + size, v + 2 * size, v + 3 * size);
        for (int j = 0; j < size; ++j) {
            for (int i = 0; i < v[j]; ++i) {
                send[v[size + j] + i] = ov_input(rank, (size_t)j * block + (size_t)i);
            }
        }
        for (int r = 0; r < size; ++r) {
            for (int i = 0; i < v[2 * size + r]; ++i) {
                want[v[3 * size + r] + i] = ov_input(r, (size_t)rank * block + (size_t)i);
            }
            rn += (size_t)v[2 * size + r];
        }
        free(v);
        *rn_p = rn;
        break;
    }
    default: /* alltoall: block j of rank r's input goes to rank j */
        for (size_t i = 0; i < block * (size_t)size; ++i) {
            send[i] = ov_input(rank, i);
        }
        for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < block; ++i) {
                want[(size_t)r * block + i] = ov_input(r, (size_t)rank * block + i);
            }
        }
        *rn_p = block * (size_t)size;
        break;
    }
}

int main(int argc, char **argv) {
    size_t counts[2] = {2, 256 * 1024};
    int seconds = 10, expect_staged = 0, rank, size;
    tu_options_t opts;
    const tu_arg_t args[] = {
        {"--seconds=", TU_ARG_INT, &seconds},
        {"--expect-staged", TU_ARG_FLAG, &expect_staged},
        {NULL, TU_ARG_FLAG, NULL},
    };
    void *one;

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_overlap", args, &opts);
    tn_setup(&opts, TU_MEM_DEVICE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* a blocking native collective sets the communicator's scratch up */
    one = tn_mem_copy_of(TU_MEM_DEVICE, &rank, sizeof(int));
    MPI_Allreduce(MPI_IN_PLACE, one, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    tu_mem_free(TU_MEM_DEVICE, one);

    for (int which = 0; which < OV_NUM; ++which) {
        for (int s = 0; s < 2; ++s) {
            size_t n = counts[s] * (size_t)size, rn = 0; /* alltoall: n / size per peer */
            size_t sn = (OV_ALLGATHER == which) ? counts[s] : n;
            int32_t *send = tn_malloc(n * (size_t)size * sizeof(int32_t));
            int32_t *want = tn_malloc(n * (size_t)size * sizeof(int32_t));
            int32_t *got = tn_malloc(n * (size_t)size * sizeof(int32_t));
            void *dsend, *drecv;
            int *v = tn_malloc(4 * (size_t)size * sizeof(int)); /* alltoallv's blocks */
            MPI_Request req;
            double deadline;
            bool early = false;
            size_t bad;

            ov_expected(which, rank, size, sn, send, want, &rn);
            memset(got, 0, rn * sizeof(int32_t));
            dsend = tn_mem_copy_of(TU_MEM_DEVICE, send, sn * sizeof(int32_t));
            drecv = (OV_BCAST == which) ? dsend : tn_mem_copy_of(TU_MEM_DEVICE, got, rn * 4);
            tu_case_begin("%s %zu int32 per rank, %d ranks", ov_names[which], counts[s], size);
            MPI_Barrier(MPI_COMM_WORLD);
            switch (which) {
            case OV_ALLREDUCE:
                MPI_Iallreduce(dsend, drecv, (int)sn, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, &req);
                break;
            case OV_BCAST:
                MPI_Ibcast(dsend, (int)sn, MPI_INT32_T, size - 1, MPI_COMM_WORLD, &req);
                break;
            case OV_ALLGATHER:
                MPI_Iallgather(dsend, (int)sn, MPI_INT32_T, drecv, (int)sn, MPI_INT32_T,
                               MPI_COMM_WORLD, &req);
                break;
            case OV_ALLTOALLV:
                ov_vblocks(rank, size, sn / (size_t)size, v, v + size, v + 2 * size, v + 3 * size);
                MPI_Ialltoallv(dsend, v, v + size, MPI_INT32_T, drecv, v + 2 * size, v + 3 * size,
                               MPI_INT32_T, MPI_COMM_WORLD, &req);
                break;
            default:
                MPI_Ialltoall(dsend, (int)(sn / (size_t)size), MPI_INT32_T, drecv,
                              (int)(sn / (size_t)size), MPI_INT32_T, MPI_COMM_WORLD, &req);
                break;
            }
            /* no MPI call: only what progresses by itself progresses */
            deadline = ov_now() + (expect_staged ? 0.5 : (double)seconds);
            while (!early && ov_now() < deadline) {
                struct timespec nap = {0, 200000};
                tu_mem_read(TU_MEM_DEVICE, got, drecv, rn * sizeof(int32_t));
                early = (0 == memcmp(got, want, rn * sizeof(int32_t)));
                nanosleep(&nap, NULL);
            }
            /* the root of a bcast has its result from the start: its buffer is the input; a
             * rank that receives nothing has it too */
            if (!(OV_BCAST == which && rank == size - 1) && (rn > 0) &&
                early == (bool)expect_staged) {
                tu_fail("the result was %s there before MPI_Wait (%s)", early ? "already" : "not",
                        expect_staged ? "staged: copied back at completion"
                                      : "it progressed only inside MPI");
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            tu_mem_read(TU_MEM_DEVICE, got, drecv, rn * sizeof(int32_t));
            for (bad = 0; bad < rn && got[bad] == want[bad]; ++bad) {
            }
            if (bad < rn) {
                tu_fail("after MPI_Wait: element %zu is %d, expected %d", bad, (int)got[bad],
                        (int)want[bad]);
            }
            tu_case_end();
            if (drecv != dsend) {
                tu_mem_free(TU_MEM_DEVICE, drecv);
            }
            tu_mem_free(TU_MEM_DEVICE, dsend);
            free(send);
            free(want);
            free(got);
            free(v);
        }
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
