/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One rank failing to allocate (emulated backend, whose fault plan this program's copy of the
 * backend shares with the component's): no rank may hang, no rank may get a wrong result
 * reported as success, and the communicator must work right after.  Each case runs on a fresh
 * duplicate of MPI_COMM_WORLD, the fault injected on the last rank only, right before the call:
 *   - stream: the first stream the component creates on that rank fails (the native algorithms'
 *     stream on one node; the UCX staging stream inside team creation across emulated nodes);
 *   - scratch: the first device allocation fails (the native scratch on one node): every rank
 *     must then take the same path;
 *   - pack: a non-dense receive type on the last rank, whose packing temporary cannot be had;
 *   - staging: with --staged (coll_gpu_native=0), the staging stream fails: temporaries serve;
 *   - at creation: with --at-create (coll_gpu_native_setup=create), the fault is armed from
 *     before MPI_Comm_dup, which starts the native setup, to the end of the communicator's
 *     first call, which completes it (the setup runs in the background between the two): the
 *     setup must fail on every rank alike (no hang), and that first call, MPI_Iallreduce or
 *     MPI_Allreduce, takes one path on every rank; with --expect-staged (one node, where the
 *     first device allocation is the scratch) that path is staged: a fault that did not fire
 *     fails the case.  Without coll_gpu_native_setup=create the setup starts at the first
 *     MPI_Iallreduce instead, which waits for it; --host-beside posts a host MPI_Iallreduce
 *     and an MPI_Ibarrier behind it, completed before it: right, whichever path it takes;
 *   - area: with --area (a device-driven row forced), the first device allocation (or IPC
 *     export) after the communicator's native context exists, the rows' area, made by the
 *     first call that runs one of them; across nodes the first pinned allocation too, the
 *     area's stage (device_hierarchical).
 * Outcome of the faulted call, checked on every rank: either every rank succeeded with the
 * right data (a fallback every rank took), or every rank returned an error of the same class
 * (an error reaches every rank of the call: none may return a result the fault made undefined
 * as MPI_SUCCESS).  The next call on the communicator must succeed everywhere, right.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#include "test_native_util.h"
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4097

static int my_rank, world_size;
static bool expect_staged; /* --expect-staged */
static bool host_beside;   /* --host-beside */
static bool area;          /* --area */

typedef enum { CALL_ALLREDUCE, CALL_IALLREDUCE, CALL_BCAST, CALL_BCAST_GAPPY } call_t;

static bool reduces(call_t kind) { return (CALL_ALLREDUCE == kind) || (CALL_IALLREDUCE == kind); }

static int value(int r, int i, int rep) { return rep * 1000003 + r * 10007 + i; }

/* Runs one call of kind on comm (rep: 0 the faulted one, 1 the next); returns the rc and sets
 * *right to whether this rank's result is right.  comm MPI_COMM_NULL: the call runs on a
 * duplicate of MPI_COMM_WORLD made here (*created) once the buffers are allocated, the fault
 * (inject_here) armed from before the duplication to the end of the call. */
static int run(MPI_Comm comm, call_t kind, int rep, bool inject_here, accel_emulated_fault_t fault,
               bool *right, MPI_Comm *created) {
    bool gappy = (CALL_BCAST_GAPPY == kind) && (my_rank == world_size - 1);
    size_t ints = gappy ? 2 * COUNT : COUNT, bytes = ints * sizeof(int);
    int *host = tn_malloc(bytes), *got = tn_malloc(bytes);
    MPI_Datatype type = MPI_INT;
    void *sbuf = NULL, *rbuf = NULL;
    int rc;

    for (size_t i = 0; i < ints; ++i) {
        host[i] = reduces(kind)    ? value(my_rank, (int)i, rep)
                  : (0 == my_rank) ? value(0, (int)i, rep)
                                   : -7;
    }
    if (tu_mem_alloc(TU_MEM_DEVICE, bytes, &rbuf) ||
        tu_mem_write(TU_MEM_DEVICE, rbuf, host, bytes) ||
        (reduces(kind) && (tu_mem_alloc(TU_MEM_DEVICE, bytes, &sbuf) ||
                           tu_mem_write(TU_MEM_DEVICE, sbuf, host, bytes)))) {
        tn_setup_failed();
    }
    if (gappy) {
        MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &type);
        MPI_Type_commit(&type);
    }
    if (inject_here) {
        accel_emulated_inject_fault(fault, 1, false);
    }
    if (MPI_COMM_NULL == comm) {
        MPI_Comm_dup(MPI_COMM_WORLD, created);
        MPI_Comm_set_errhandler(*created, MPI_ERRORS_RETURN);
        comm = *created;
    }
    if (CALL_IALLREDUCE == kind) {
        MPI_Request request, beside[2];
        int host_sum[4];

        rc = MPI_Iallreduce(sbuf, rbuf, COUNT, MPI_INT, MPI_SUM, comm, &request);
        if (host_beside) {
            /* Open MPI's own nonblocking collectives posted while the device call waits for
             * the setup (its messages numbered by libnbc's counter of the communicator, as
             * the device call's are where it is staged): queued behind it, so that a staged
             * call and they take their numbers in the same order on every rank */
            if (my_rank == world_size - 1) {
                /* this rank's setup completes first: its device call is posted before the
                 * host ones here, after them where they were not queued behind it */
                double start = MPI_Wtime();
                int done = 0;

                while (!done && (MPI_Wtime() - start < 0.2) && (MPI_SUCCESS == rc)) {
                    rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
                }
            }
            for (int i = 0; i < 4; ++i) {
                host_sum[i] = value(my_rank, i, rep + 5);
            }
            MPI_Iallreduce(MPI_IN_PLACE, host_sum, 4, MPI_INT, MPI_SUM, comm, &beside[0]);
            MPI_Ibarrier(comm, &beside[1]);
            MPI_Waitall(2, beside, MPI_STATUSES_IGNORE);
            for (int i = 0; i < 4; ++i) {
                unsigned want = 0;

                for (int r = 0; r < world_size; ++r) {
                    want += (unsigned)value(r, i, rep + 5);
                }
                if (host_sum[i] != (int)want) {
                    tu_fail("the host MPI_Iallreduce beside: element %d is %d, not %d", i,
                            host_sum[i], (int)want);
                    break;
                }
            }
        }
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        }
    } else {
        rc = (CALL_ALLREDUCE == kind) ? MPI_Allreduce(sbuf, rbuf, COUNT, MPI_INT, MPI_SUM, comm)
                                      : MPI_Bcast(rbuf, COUNT, type, 0, comm);
    }
    accel_emulated_inject_fault(fault, 0, false);
    if (tu_mem_read(TU_MEM_DEVICE, got, rbuf, bytes)) {
        tn_setup_failed();
    }
    *right = true;
    for (size_t i = 0; i < ints; ++i) {
        int want;
        if (reduces(kind)) {
            unsigned sum = 0;
            for (int r = 0; r < world_size; ++r) {
                sum += (unsigned)value(r, (int)i, rep);
            }
            want = (int)sum;
        } else {
            /* gappy: data at even ints, holes (-7) at odd ones */
            want = (gappy && (i & 1)) ? -7 : value(0, (int)(gappy ? i / 2 : i), rep);
        }
        *right = *right && (got[i] == want);
    }
    if (gappy) {
        MPI_Type_free(&type);
    }
    tu_mem_free(TU_MEM_DEVICE, rbuf);
    if (NULL != sbuf) {
        tu_mem_free(TU_MEM_DEVICE, sbuf);
    }
    free(host);
    free(got);
    return rc;
}

/* at_create: the fault armed on the last rank from before MPI_Comm_dup (which starts the native
 * setup of coll_gpu_native_setup=create) to the end of the first call on the communicator (which
 * completes it); that call arms no fault of its own */
static void run_case(const char *name, call_t kind, accel_emulated_fault_t fault, bool at_create) {
    coll_gpu_coll_t coll = (CALL_IALLREDUCE == kind)  ? COLL_GPU_IALLREDUCE
                           : (CALL_ALLREDUCE == kind) ? COLL_GPU_ALLREDUCE
                                                      : COLL_GPU_BCAST;
    tu_counters_t before, after;
    int staged[2]; /* staged here: its minimum and (negated) maximum over the ranks */
    MPI_Comm comm = MPI_COMM_NULL;
    int last = world_size - 1, *rcs = tn_malloc((size_t)world_size * sizeof(int)), failed = 0;
    int *rights = tn_malloc((size_t)world_size * sizeof(int)), rc, right_int, last_class;
    bool right;

    tu_case_begin("%s fails on rank %d", name, last);
    if (!at_create) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    if ((CALL_BCAST_GAPPY == kind) || area) {
        /* the communicator's native context first, so that the fault hits the packing (the
         * device-driven rows' area: a bcast's algorithm is not one of them) */
        rc = run(comm, CALL_BCAST, 2, false, fault, &right, NULL);
        if ((MPI_SUCCESS != rc) || !right) {
            tu_fail("the healthy bcast before: rc %d, result %s", rc, right ? "right" : "wrong");
        }
    }
    tu_counters_read(&before);
    rc = run(at_create ? MPI_COMM_NULL : comm, kind, 0, my_rank == last, fault, &right, &comm);
    tu_counters_read(&after);
    staged[0] = (after.staged[coll] - before.staged[coll] == 1);
    staged[1] = -staged[0];
    MPI_Allreduce(MPI_IN_PLACE, staged, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (at_create && tu_counters_available()) {
        if (staged[0] != -staged[1]) {
            tu_fail("%s after a setup that failed at creation: staged on some ranks only",
                    tu_coll_name(coll));
        } else if (expect_staged && !staged[0]) {
            tu_fail("%s after a setup that failed at creation: not staged (did the fault fire?)",
                    tu_coll_name(coll));
        }
    }
    right_int = right;
    MPI_Allgather(&rc, 1, MPI_INT, rcs, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(&right_int, 1, MPI_INT, rights, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < world_size; ++r) {
        failed += (MPI_SUCCESS != rcs[r]);
    }
    MPI_Error_class(rcs[last], &last_class);
    if ((failed > 0) && (failed < world_size)) {
        tu_fail("%d of %d ranks failed (the faulting rank's rc %d): an error must reach every "
                "rank of the call",
                failed, world_size, rcs[last]);
    } else if ((0 == failed) && !right) {
        tu_fail("every rank succeeded, but rank %d's result is wrong", my_rank);
    } else if (failed > 0) {
        for (int r = 0; r < world_size; ++r) {
            int error_class;

            MPI_Error_class(rcs[r], &error_class);
            if (error_class != last_class) {
                tu_fail("rank %d returned error class %d, the faulting rank %d", r, error_class,
                        last_class);
                break;
            }
        }
    }
    if ((0 == my_rank)) {
        printf("NOTE: %s: %s%s\n", name,
               failed ? "every rank returned the faulting rank's error"
                      : "every rank succeeded (a common fallback)",
               !at_create || !tu_counters_available() ? ""
               : staged[0]                            ? ", staged"
                                                      : ", native");
    }
    rc = run(comm, kind, 1, false, fault, &right, NULL);
    if ((MPI_SUCCESS != rc) || !right) {
        tu_fail("the next call on the communicator: rc %d, result %s", rc,
                right ? "right" : "wrong");
    }
    MPI_Comm_free(&comm);
    tu_case_end();
    free(rcs);
    free(rights);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    bool staged = false, at_create = false;
    const tu_arg_t args[] = {
        {"--staged", TU_ARG_FLAG, &staged},
        {"--at-create", TU_ARG_FLAG, &at_create},
        {"--expect-staged", TU_ARG_FLAG, &expect_staged},
        {"--host-beside", TU_ARG_FLAG, &host_beside},
        {"--area", TU_ARG_FLAG, &area},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_alloc_faults", args, &opts);
    tn_setup(&opts, TU_MEM_DEVICE);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    if (area) {
        run_case("the device-driven rows' area (allreduce)", CALL_ALLREDUCE,
                 ACCEL_EMULATED_FAULT_DEVICE_ALLOC, false);
        run_case("the device-driven rows' area's IPC export (allreduce)", CALL_ALLREDUCE,
                 ACCEL_EMULATED_FAULT_IPC_EXPORT, false);
        /* across nodes (device_hierarchical) the area's stage, pinned host memory; on one node
         * the fault fires at no allocation of the call, which must succeed */
        run_case("the device-driven rows' stage across nodes (allreduce)", CALL_ALLREDUCE,
                 ACCEL_EMULATED_FAULT_PINNED_ALLOC, false);
    } else if (staged) {
        run_case("the staging stream (allreduce)", CALL_ALLREDUCE,
                 ACCEL_EMULATED_FAULT_STREAM_CREATE, false);
        run_case("the staging stream (bcast)", CALL_BCAST, ACCEL_EMULATED_FAULT_STREAM_CREATE,
                 false);
    } else if (at_create) {
        run_case("the scratch at creation (iallreduce)", CALL_IALLREDUCE,
                 ACCEL_EMULATED_FAULT_DEVICE_ALLOC, true);
        run_case("the scratch at creation (allreduce)", CALL_ALLREDUCE,
                 ACCEL_EMULATED_FAULT_DEVICE_ALLOC, true);
        run_case("the scratch's IPC export at creation (iallreduce)", CALL_IALLREDUCE,
                 ACCEL_EMULATED_FAULT_IPC_EXPORT, true);
    } else {
        run_case("the first stream (allreduce)", CALL_ALLREDUCE, ACCEL_EMULATED_FAULT_STREAM_CREATE,
                 false);
        run_case("the first stream (bcast)", CALL_BCAST, ACCEL_EMULATED_FAULT_STREAM_CREATE, false);
        run_case("the first device allocation (allreduce)", CALL_ALLREDUCE,
                 ACCEL_EMULATED_FAULT_DEVICE_ALLOC, false);
        run_case("the first device allocation (bcast)", CALL_BCAST,
                 ACCEL_EMULATED_FAULT_DEVICE_ALLOC, false);
        run_case("the packing temporary (bcast, non-dense type)", CALL_BCAST_GAPPY,
                 ACCEL_EMULATED_FAULT_DEVICE_ALLOC, false);
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
