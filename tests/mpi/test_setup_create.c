/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_gpu_native_setup=create: a communicator's native setup starts inside its creation and
 * goes on in the background (opal_progress), complete at the communicator's first native
 * decision.  Legal programs the earlier setup, which waited for the peers inside Open MPI's
 * activation of the communicator, could hang or misorder; each case's watchdog fails a hang.
 *
 *   crossed idups:  two MPI_Comm_idup outstanding, of two parents, posted in opposite orders on
 *                   even and odd ranks (Open MPI activates a process's communicators one at a
 *                   time: a setup waiting inside one activation held off the other, which the
 *                   peer had activated first), then MPI_Iallreduce on both: native, right;
 *   first call ahead of a peer: rank r posts its first MPI_Iallreduce on a new communicator only
 *                   after a message from rank r - 1, which rank r - 1 sends after posting its
 *                   own: each rank's setup completes while its peers wait in MPI_Recv (the
 *                   setup progresses from opal_progress, not only inside the waiting call);
 *   host collectives beside the setup: right after MPI_Comm_dup, nonblocking host collectives
 *                   on the new communicator (Open MPI's libnbc, whose messages take numbers from
 *                   a counter of the communicator) while the setup's own messages are in
 *                   flight, one rank late; results right, then a native device call;
 *   never used:     a duplicate neither used nor freed: MPI_Finalize completes its setup.
 * --funneled, --serialized, --multiple: MPI_Init_thread(MPI_THREAD_FUNNELED, _SERIALIZED or
 * _MULTIPLE) instead of MPI_THREAD_SINGLE (under SERIALIZED the setup runs inside the creation,
 * under MULTIPLE on a thread of its own); --mixed-levels: odd ranks (Open MPI's
 * OMPI_COMM_WORLD_RANK) MPI_THREAD_SERIALIZED, even ones MPI_THREAD_SINGLE: every rank must
 * still set up at creation, or a rank's first nonblocking call waits for a peer's setup that
 * never comes.
 * --first-call (run without coll_gpu_native_setup=create): each communicator's setup starts at
 * its first nonblocking call instead (coll_gpu_deferral.h), MPI_COMM_WORLD's too (a case of
 * its own, run first: its first device MPI_Iallreduce posted after the left peer's, host
 * collectives queued behind it; then persistent requests made and started behind a first
 * MPI_Iallreduce's setup); staged on every rank where some rank runs
 * MPI_THREAD_SERIALIZED (no task there).
 *
 * Native calls are checked through the coll_gpu MPI_T counters (required).
 * Closing line (rank 0): "N passed, M failed".
 */
/* usleep: POSIX */
#define _DEFAULT_SOURCE

#include "test_native_util.h"
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT 1024

static int my_rank, world_size;

static int value(int r, int i, int rep) { return rep * 1000003 + r * 10007 + i; }

/* A device MPI_Iallreduce (sum of value(r, i, rep)) posted on comm: its buffers, to check. */
typedef struct {
    void *sbuf, *rbuf;
    int rep;
    MPI_Request request;
} device_call_t;

static void device_post(device_call_t *call, MPI_Comm comm, int rep) {
    int *host = tn_malloc(COUNT * sizeof(int));

    for (int i = 0; i < COUNT; ++i) {
        host[i] = value(my_rank, i, rep);
    }
    call->rep = rep;
    call->sbuf = tn_mem_copy_of(TU_MEM_DEVICE, host, COUNT * sizeof(int));
    if (tu_mem_alloc(TU_MEM_DEVICE, COUNT * sizeof(int), &call->rbuf)) {
        tn_setup_failed();
    }
    free(host);
    if (MPI_SUCCESS !=
        MPI_Iallreduce(call->sbuf, call->rbuf, COUNT, MPI_INT, MPI_SUM, comm, &call->request)) {
        tu_fail("MPI_Iallreduce failed");
        call->request = MPI_REQUEST_NULL;
    }
}

/* Checks a completed call's result. */
static void result_check(const device_call_t *call, const char *what) {
    int *got = tn_malloc(COUNT * sizeof(int));

    if (tu_mem_read(TU_MEM_DEVICE, got, call->rbuf, COUNT * sizeof(int))) {
        tn_setup_failed();
    }
    for (int i = 0; i < COUNT; ++i) {
        unsigned sum = 0;

        for (int r = 0; r < world_size; ++r) {
            sum += (unsigned)value(r, i, call->rep);
        }
        if (got[i] != (int)sum) {
            tu_fail("%s: element %d is %d, not %d", what, i, got[i], (int)sum);
            break;
        }
    }
    free(got);
}

/* Checks a completed call's result and frees its buffers. */
static void device_check(device_call_t *call, const char *what) {
    result_check(call, what);
    tu_mem_free(TU_MEM_DEVICE, call->sbuf);
    tu_mem_free(TU_MEM_DEVICE, call->rbuf);
}

/* --first-call where a rank cannot run the setup as a task (MPI_THREAD_SERIALIZED on some
 * rank): the calls are staged, on every rank */
static bool expect_staged;

/* The native MPI_Iallreduce calls since *before, against want (every rank the same). */
static void expect_native(const tu_counters_t *before, uint64_t want, const char *what) {
    tu_counters_t after;
    uint64_t native;

    want = expect_staged ? 0 : want;
    tu_counters_read(&after);
    native = after.native[COLL_GPU_IALLREDUCE] - before->native[COLL_GPU_IALLREDUCE];
    if (native != want) {
        tu_fail("%s: %llu of %llu MPI_Iallreduce calls native", what, (unsigned long long)native,
                (unsigned long long)want);
    }
}

static void case_crossed_idups(int rounds) {
    MPI_Comm parents[2], comms[2];
    MPI_Request requests[2];
    device_call_t calls[2];
    tu_counters_t before;

    tu_case_begin("%d rounds of two MPI_Comm_idup outstanding, posted in opposite orders", rounds);
    MPI_Comm_dup(MPI_COMM_WORLD, &parents[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &parents[1]);
    tu_counters_read(&before);
    for (int round = 0; round < rounds; ++round) {
        int first = (my_rank + round) % 2;

        MPI_Comm_idup(parents[first], &comms[first], &requests[0]);
        MPI_Comm_idup(parents[1 - first], &comms[1 - first], &requests[1]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        for (int k = 0; k < 2; ++k) {
            device_post(&calls[k], comms[k], round * 2 + k);
        }
        for (int k = 1; k >= 0; --k) {
            MPI_Wait(&calls[k].request, MPI_STATUS_IGNORE);
            device_check(&calls[k], "MPI_Iallreduce on an MPI_Comm_idup duplicate");
            MPI_Comm_free(&comms[k]);
        }
    }
    expect_native(&before, 2 * (uint64_t)rounds, "on the duplicates, from their first call");
    MPI_Comm_free(&parents[0]);
    MPI_Comm_free(&parents[1]);
    tu_case_end();
}

static void case_first_call_ahead(void) {
    device_call_t call;
    tu_counters_t before;
    MPI_Comm comm;
    int token = 0;

    tu_case_begin("each rank's first MPI_Iallreduce posted after its left peer's, peers in "
                  "MPI_Recv meanwhile");
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    tu_counters_read(&before);
    if (my_rank > 0) {
        MPI_Recv(&token, 1, MPI_INT, my_rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    device_post(&call, comm, 7);
    if (my_rank + 1 < world_size) {
        MPI_Send(&token, 1, MPI_INT, my_rank + 1, 0, MPI_COMM_WORLD);
    }
    MPI_Wait(&call.request, MPI_STATUS_IGNORE);
    device_check(&call, "the first MPI_Iallreduce");
    expect_native(&before, 1, "the first MPI_Iallreduce");
    MPI_Comm_free(&comm);
    tu_case_end();
}

/* --first-call: MPI_COMM_WORLD (never set up at its creation), whose first device call is
 * this MPI_Iallreduce, posted as in case_first_call_ahead, then host MPI_Iallreduce and
 * MPI_Ibarrier calls posted behind it while its setup runs */
static void case_world_first_call(void) {
    enum { NHOST = 4 };
    int host[NHOST][4], token = 0;
    MPI_Request requests[NHOST + 1];
    device_call_t call;
    tu_counters_t before;

    tu_case_begin("the first MPI_Iallreduce on MPI_COMM_WORLD, posted after the left peer's, "
                  "host collectives behind it");
    tu_counters_read(&before);
    if (my_rank > 0) {
        MPI_Recv(&token, 1, MPI_INT, my_rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    device_post(&call, MPI_COMM_WORLD, 5);
    for (int k = 0; k < NHOST; ++k) {
        for (int i = 0; i < 4; ++i) {
            host[k][i] = value(my_rank, i, k);
        }
        MPI_Iallreduce(MPI_IN_PLACE, host[k], 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &requests[k]);
    }
    MPI_Ibarrier(MPI_COMM_WORLD, &requests[NHOST]);
    if (my_rank + 1 < world_size) {
        MPI_Send(&token, 1, MPI_INT, my_rank + 1, 0, MPI_COMM_WORLD);
    }
    MPI_Waitall(NHOST + 1, requests, MPI_STATUSES_IGNORE);
    MPI_Wait(&call.request, MPI_STATUS_IGNORE);
    device_check(&call, "the first MPI_Iallreduce on MPI_COMM_WORLD");
    for (int k = 0; k < NHOST; ++k) {
        for (int i = 0; i < 4; ++i) {
            int want = 0;

            for (int r = 0; r < world_size; ++r) {
                want += value(r, i, k);
            }
            if (host[k][i] != want) {
                tu_fail("host MPI_Iallreduce %d behind it: element %d is %d, not %d", k, i,
                        host[k][i], want);
            }
        }
    }
    expect_native(&before, 1, "the first MPI_Iallreduce on MPI_COMM_WORLD");
    tu_case_end();
}

/* --first-call: persistent requests made and started while the first MPI_Iallreduce's setup
 * runs (queued behind it: the init posted, then the start, once the setup is done), started
 * again after, with new inputs */
static void case_persistent_behind(void) {
    int *host = tn_malloc(COUNT * sizeof(int));
    MPI_Request requests[3];
    device_call_t call;
    tu_counters_t before, after;
    void *sbuf, *rbuf;
    MPI_Comm comm;

    tu_case_begin("MPI_Allreduce_init and MPI_Barrier_init started behind the first "
                  "MPI_Iallreduce's setup");
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (tu_mem_alloc(TU_MEM_DEVICE, COUNT * sizeof(int), &sbuf) ||
        tu_mem_alloc(TU_MEM_DEVICE, COUNT * sizeof(int), &rbuf)) {
        tn_setup_failed();
    }
    tu_counters_read(&before);
    device_post(&call, comm, 13);
    TU_PERSISTENT(Allreduce_init)(sbuf, rbuf, COUNT, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                                  &requests[0]);
    TU_PERSISTENT(Barrier_init)(comm, MPI_INFO_NULL, &requests[1]);
    for (int round = 0; round < 2; ++round) {
        device_call_t started = {.sbuf = sbuf, .rbuf = rbuf, .rep = 17 + round};

        for (int i = 0; i < COUNT; ++i) {
            host[i] = value(my_rank, i, started.rep);
        }
        if (tu_mem_write(TU_MEM_DEVICE, sbuf, host, COUNT * sizeof(int))) {
            tn_setup_failed();
        }
        MPI_Startall(2, requests);
        requests[2] = call.request;
        MPI_Waitall(3, requests, MPI_STATUSES_IGNORE);
        call.request = MPI_REQUEST_NULL;
        result_check(&started, "the persistent MPI_Allreduce_init");
    }
    tu_counters_read(&after);
    if (!expect_staged &&
        (after.native[COLL_GPU_ALLREDUCE_INIT] - before.native[COLL_GPU_ALLREDUCE_INIT] != 2)) {
        tu_fail("%llu of 2 persistent starts native",
                (unsigned long long)(after.native[COLL_GPU_ALLREDUCE_INIT] -
                                     before.native[COLL_GPU_ALLREDUCE_INIT]));
    }
    device_check(&call, "the first MPI_Iallreduce");
    expect_native(&before, 1, "the first MPI_Iallreduce");
    MPI_Request_free(&requests[0]);
    MPI_Request_free(&requests[1]);
    MPI_Comm_free(&comm);
    tu_mem_free(TU_MEM_DEVICE, sbuf);
    tu_mem_free(TU_MEM_DEVICE, rbuf);
    free(host);
    tu_case_end();
}

static void case_host_beside_setup(void) {
    enum { NHOST = 8 };
    int host[NHOST][4], want[4] = {0, 0, 0, 0};
    MPI_Request requests[NHOST + 1];
    device_call_t call;
    tu_counters_t before;
    MPI_Comm comm;

    tu_case_begin("nonblocking host collectives on a new communicator while its setup runs");
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (my_rank == world_size - 1) {
        usleep(50000); /* the peers' setup messages arrive first */
    }
    for (int k = 0; k < NHOST; ++k) {
        for (int i = 0; i < 4; ++i) {
            host[k][i] = value(my_rank, i, k);
        }
        MPI_Iallreduce(MPI_IN_PLACE, host[k], 4, MPI_INT, MPI_SUM, comm, &requests[k]);
    }
    MPI_Ibarrier(comm, &requests[NHOST]);
    MPI_Waitall(NHOST + 1, requests, MPI_STATUSES_IGNORE);
    for (int k = 0; k < NHOST; ++k) {
        for (int i = 0; i < 4; ++i) {
            want[i] = 0;
            for (int r = 0; r < world_size; ++r) {
                want[i] += value(r, i, k);
            }
            if (host[k][i] != want[i]) {
                tu_fail("host MPI_Iallreduce %d: element %d is %d, not %d", k, i, host[k][i],
                        want[i]);
            }
        }
    }
    tu_counters_read(&before);
    device_post(&call, comm, 11);
    MPI_Wait(&call.request, MPI_STATUS_IGNORE);
    device_check(&call, "the device MPI_Iallreduce after them");
    expect_native(&before, 1, "the device MPI_Iallreduce after them");
    MPI_Comm_free(&comm);
    tu_case_end();
}

int main(int argc, char **argv) {
    tu_options_t opts;
    int rounds = 20, provided, level = MPI_THREAD_SINGLE;
    bool funneled = false, serialized = false, multiple = false, mixed = false, first = false;
    const char *world_rank = getenv("OMPI_COMM_WORLD_RANK");
    MPI_Comm unused;
    const tu_arg_t args[] = {
        {"--rounds=", TU_ARG_INT, &rounds},
        {"--funneled", TU_ARG_FLAG, &funneled},
        {"--serialized", TU_ARG_FLAG, &serialized},
        {"--multiple", TU_ARG_FLAG, &multiple},
        {"--mixed-levels", TU_ARG_FLAG, &mixed},
        {"--first-call", TU_ARG_FLAG, &first},
        {NULL, TU_ARG_FLAG, NULL},
    };

    /* the thread level decides how the setup runs: before MPI_Init_thread, as it must */
    for (int a = 1; a < argc; ++a) {
        level = (0 == strcmp(argv[a], "--funneled"))     ? MPI_THREAD_FUNNELED
                : (0 == strcmp(argv[a], "--serialized")) ? MPI_THREAD_SERIALIZED
                : (0 == strcmp(argv[a], "--multiple"))   ? MPI_THREAD_MULTIPLE
                : ((0 == strcmp(argv[a], "--mixed-levels")) && (NULL != world_rank) &&
                   (1 == atoi(world_rank) % 2))
                    ? MPI_THREAD_SERIALIZED
                    : level;
    }
    MPI_Init_thread(&argc, &argv, level, &provided);
    tu_parse_args(argc, argv, "test_setup_create", args, &opts);
    tn_setup(&opts, TU_MEM_DEVICE);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (provided < level) {
        if (0 == my_rank) {
            printf("SKIP: MPI_Init_thread gave thread level %d, not %d\n", provided, level);
        }
        MPI_Finalize();
        return TU_EXIT_SKIP;
    }
    if (!tu_counters_open(true)) {
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }

    /* the setup at the first nonblocking call runs as a task on every rank or on none */
    expect_staged = first && (serialized || mixed);
    if (first) {
        case_world_first_call();
        case_persistent_behind();
    }
    case_crossed_idups(rounds);
    case_first_call_ahead();
    case_host_beside_setup();
    /* never used, never freed: MPI_Finalize completes its setup (a hang fails the check) */
    MPI_Comm_dup(MPI_COMM_WORLD, &unused);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
