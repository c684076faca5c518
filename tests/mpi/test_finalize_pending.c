/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking collectives on device memory freed before they complete (MPI_Request_free), then
 * MPI_Finalize: MPI says such an operation still completes, and MPI_Finalize is where it must.
 * Each rank posts MPI_Iallreduce and MPI_Ibcast on emulated device buffers (several of each,
 * 1 MiB and 8 bytes), frees every request at once and calls MPI_Finalize; the last rank posts
 * late (--late-ms, default 500), so that its peers reach MPI_Finalize with their requests still
 * pending.  After MPI_Finalize each rank reads its device buffers back (the emulated device
 * memory is the test's own) and compares them with references computed here: every result must
 * have landed.  A component that dropped the pending requests at MPI_Finalize leaves the
 * buffers unwritten (or crashes or hangs there).
 *
 * --native: a blocking MPI_Allreduce on device memory first, which sets coll/gpu's native scratch
 * up: the nonblocking calls then run natively, on the communicator's thread.
 *
 * --persistent: the same with persistent requests (MPI_Allreduce_init, MPI_Bcast_init; MPIX_* on
 * Open MPI 4.1), each started once and freed while active.
 *
 * Closing line, every rank: "N passed, M failed" (MPI is gone: no reduction of the counts).
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_util.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NREQ 4

static int32_t input(int rank, size_t i, int k) { return (int32_t)(rank * 131 + (int)i % 977 + k); }

int main(int argc, char **argv) {
    size_t counts[2] = {2, 256 * 1024}; /* 8 bytes, 1 MiB of int32 */
    void *sbufs[2][NREQ], *rbufs[2][NREQ], *bbufs[2][NREQ];
    MPI_Request reqs[4 * NREQ];
    int late_ms = 500, rank, size, nreq = 0, passed = 0, failed = 0;
    bool persistent = false, native = false;
    tu_options_t opts;
    const tu_arg_t args[] = {
        {"--late-ms=", TU_ARG_INT, &late_ms},
        {"--persistent", TU_ARG_FLAG, &persistent},
        {"--native", TU_ARG_FLAG, &native},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_finalize_pending", args, &opts);
    tn_setup(&opts, TU_MEM_DEVICE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (int s = 0; s < 2; ++s) {
        size_t bytes = counts[s] * sizeof(int32_t);
        int32_t *host = tn_malloc(bytes);

        for (int k = 0; k < NREQ; ++k) {
            for (size_t i = 0; i < counts[s]; ++i) {
                host[i] = input(rank, i, k);
            }
            sbufs[s][k] = tn_mem_copy_of(TU_MEM_DEVICE, host, bytes);
            for (size_t i = 0; i < counts[s]; ++i) {
                host[i] = (0 == rank) ? input(0, i, k + 7) : -1;
            }
            bbufs[s][k] = tn_mem_copy_of(TU_MEM_DEVICE, host, bytes);
            memset(host, 0, bytes);
            rbufs[s][k] = tn_mem_copy_of(TU_MEM_DEVICE, host, bytes);
        }
        free(host);
    }
    if (native) {
        void *one = tn_mem_copy_of(TU_MEM_DEVICE, &rank, sizeof(int));
        MPI_Allreduce(MPI_IN_PLACE, one, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        tu_mem_free(TU_MEM_DEVICE, one);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        struct timespec ts = {late_ms / 1000, (long)(late_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (int k = 0; k < NREQ; ++k) {
        for (int s = 0; s < 2; ++s) {
            if (persistent) {
                TU_PERSISTENT(Allreduce_init)
                (sbufs[s][k], rbufs[s][k], (int)counts[s], MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD,
                 MPI_INFO_NULL, &reqs[nreq]);
                MPI_Start(&reqs[nreq++]);
                TU_PERSISTENT(Bcast_init)
                (bbufs[s][k], (int)counts[s], MPI_INT32_T, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                 &reqs[nreq]);
                MPI_Start(&reqs[nreq++]);
                continue;
            }
            MPI_Iallreduce(sbufs[s][k], rbufs[s][k], (int)counts[s], MPI_INT32_T, MPI_SUM,
                           MPI_COMM_WORLD, &reqs[nreq++]);
            MPI_Ibcast(bbufs[s][k], (int)counts[s], MPI_INT32_T, 0, MPI_COMM_WORLD, &reqs[nreq++]);
        }
    }
    for (int i = 0; i < nreq; ++i) {
        MPI_Request_free(&reqs[i]);
    }
    MPI_Finalize();

    for (int s = 0; s < 2; ++s) {
        size_t bytes = counts[s] * sizeof(int32_t);
        int32_t *got = tn_malloc(bytes), *bgot = tn_malloc(bytes);

        for (int k = 0; k < NREQ; ++k) {
            size_t bad = counts[s], bbad = counts[s];

            if (tu_mem_read(TU_MEM_DEVICE, got, rbufs[s][k], bytes) ||
                tu_mem_read(TU_MEM_DEVICE, bgot, bbufs[s][k], bytes)) {
                printf("rank %d: cannot read the device buffers back\n", rank);
                ++failed;
                continue;
            }
            for (size_t i = 0; (i < counts[s]) && (bad == counts[s] || bbad == counts[s]); ++i) {
                uint32_t sum = 0;

                for (int r = 0; r < size; ++r) {
                    sum += (uint32_t)input(r, i, k);
                }
                if ((bad == counts[s]) && (got[i] != (int32_t)sum)) {
                    bad = i;
                }
                if ((bbad == counts[s]) && (bgot[i] != input(0, i, k + 7))) {
                    bbad = i;
                }
            }
            if (bad < counts[s]) {
                printf("FAIL rank %d: freed %s %d of %zu int32: element %zu is %d after "
                       "MPI_Finalize\n",
                       rank, persistent ? "persistent allreduce" : "MPI_Iallreduce", k, counts[s],
                       bad, got[bad]);
                ++failed;
            } else {
                ++passed;
            }
            if (bbad < counts[s]) {
                printf("FAIL rank %d: freed %s %d of %zu int32: element %zu is %d after "
                       "MPI_Finalize\n",
                       rank, persistent ? "persistent bcast" : "MPI_Ibcast", k, counts[s], bbad,
                       bgot[bbad]);
                ++failed;
            } else {
                ++passed;
            }
            tu_mem_free(TU_MEM_DEVICE, sbufs[s][k]);
            tu_mem_free(TU_MEM_DEVICE, rbufs[s][k]);
            tu_mem_free(TU_MEM_DEVICE, bbufs[s][k]);
        }
        free(got);
        free(bgot);
    }
    printf("rank %d: %d passed, %d failed\n", rank, passed, failed);
    return (0 == failed) ? 0 : 1;
}
