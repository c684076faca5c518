/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The nonblocking collectives coll/gpu intercepts (MPI_Iallreduce ... MPI_Iscatterv).
 *
 * Device buffers are staged: send data copied at post, results copied back when the request
 * completes.  So every way a request can complete must deliver the result:
 *   - one request at a time, completed by MPI_Wait or by an MPI_Test loop;
 *   - every collective outstanding at once on three communicators, MPI_Waitall;
 *   - requests completed out of order: MPI_Wait in reverse order, MPI_Waitany, MPI_Testall
 *     loops, MPI_Waitsome;
 *   - host (passthrough) and device (staged) requests outstanding together;
 *   - big requests (more than the staging buffer) outstanding together.
 * Each request's buffers are checked byte for byte (holes, gaps, guards, send buffers) and the
 * counters must show one passthrough or staged call per request.
 *
 * --native: first one blocking MPI_Allreduce on device memory on every communicator, which sets
 * up coll/gpu's native scratch there: the nonblocking calls that can then run natively (the
 * blocking form's algorithm on the communicator's thread) must, and give the same results.
 *
 * --persistent: the same for the persistent collectives (MPI_*_init; MPIX_*_init on Open MPI
 * 4.1): every group is initialized, started with MPI_Startall and completed the chosen way,
 * then started again with new inputs in the same buffers (a request that kept the first
 * start's inputs, or results, fails), then freed.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
/* strdup, strtok_r, strcasecmp, alarm: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a request that does not complete within this time is a failure, not a hang */
#define TEST_LOOP_SECONDS 120.0
#define MAX_GROUP 32

typedef struct {
    coll_gpu_coll_t coll; /* nonblocking */
    tu_type_id_t type;
    tu_op_id_t op;
    size_t count;
    bool in_place;
    tu_comm_id_t comm;
    bool root_last;
} spec_t;

typedef enum {
    COMPLETE_WAIT_EACH,
    COMPLETE_TEST_EACH,
    COMPLETE_WAITALL,
    COMPLETE_WAIT_REVERSE,
    COMPLETE_WAITANY,
    COMPLETE_TESTALL,
    COMPLETE_WAITSOME,
} completion_t;

static const char *const completion_names[] = {
    "MPI_Wait",    "MPI_Test loop",    "MPI_Waitall",  "MPI_Wait in reverse order",
    "MPI_Waitany", "MPI_Testall loop", "MPI_Waitsome",
};

typedef struct {
    tu_options_t opts;
    bool colls[COLL_GPU_NUM_COLLS];
    tu_gpu_config_t config;
    tu_comm_t comms[TU_NUM_COMMS];
    tu_kind_t *kind_of_world_rank;
    uint32_t salt;
    bool persistent;
    bool native; /* set the communicators' native scratch up first */
} state_t;

/* Starts of each persistent request, new inputs each time. */
#define PERSISTENT_ROUNDS 2

static void usage(void) {
    printf("usage: test_nonblocking [--persistent|--native] [--colls=iallreduce,ibcast,...] "
           "[options]\n");
    tu_options_usage();
}

static int parse_options(int argc, char **argv, state_t *st) {
    tu_options_default(&st->opts);
    for (int i = 0; i < COLL_GPU_NUM_COLLS; i++) {
        st->colls[i] = tu_coll_is_nonblocking(i) && tu_coll_case_supported(i);
    }
    for (int i = 1; i < argc; i++) {
        int rc = tu_options_parse_one(&st->opts, argv[i]);
        if (rc < 0) {
            return -1;
        } else if (rc > 0) {
            continue;
        }
        if (0 == strcmp(argv[i], "--persistent")) {
            st->persistent = true;
        } else if (0 == strcmp(argv[i], "--native")) {
            st->native = true;
        } else if (0 == strncmp(argv[i], "--colls=", 8)) {
            char *copy = strdup(argv[i] + 8), *save = NULL;
            memset(st->colls, 0, sizeof(st->colls));
            for (char *tok = strtok_r(copy, ",", &save); NULL != tok;
                 tok = strtok_r(NULL, ",", &save)) {
                int coll = tu_coll_from_name(tok);
                if (coll < 0 || COLL_GPU_REDUCE_LOCAL == coll || !tu_coll_case_supported(coll)) {
                    free(copy);
                    return -1;
                }
                /* "allreduce" and "iallreduce" both mean the nonblocking one */
                st->colls[tu_coll_nonblocking(coll)] = true;
            }
            free(copy);
        } else {
            return -1;
        }
    }
    if (st->persistent) {
        /* the persistent form of every nonblocking collective chosen */
        for (int i = 0; i < COLL_GPU_NUM_COLLS; i++) {
            if (tu_coll_is_nonblocking(i)) {
                st->colls[tu_coll_persistent(i)] = st->colls[i];
                st->colls[i] = false;
            }
        }
    }
    if (0 == st->opts.num_kinds && 0 == st->opts.num_rank_kinds) {
        tu_options_parse_one(&st->opts, "--kinds=host");
    }
    return 0;
}

/* The form of a nonblocking collective this run tests. */
static coll_gpu_coll_t form_of(const state_t *st, coll_gpu_coll_t nonblocking) {
    return st->persistent ? tu_coll_persistent(nonblocking) : nonblocking;
}

/* Completes all requests the chosen way; returns false (after reporting) on an error or a
 * request that does not complete. */
static bool complete(MPI_Request *reqs, int n, completion_t how, bool persistent) {
    double deadline = MPI_Wtime() + TEST_LOOP_SECONDS;
    int rc = MPI_SUCCESS, flag = 0, done = 0;

    switch (how) {
    case COMPLETE_WAIT_EACH:
        for (int i = 0; i < n && MPI_SUCCESS == rc; i++) {
            rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        }
        break;
    case COMPLETE_TEST_EACH:
        for (int i = 0; i < n && MPI_SUCCESS == rc; i++) {
            flag = 0;
            while (!flag && MPI_SUCCESS == rc && MPI_Wtime() < deadline) {
                rc = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
            }
            if (!flag && MPI_SUCCESS == rc) {
                tu_fail("request %d did not complete in %.0f s of MPI_Test", i, TEST_LOOP_SECONDS);
                return false;
            }
        }
        break;
    case COMPLETE_WAITALL:
        rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        break;
    case COMPLETE_WAIT_REVERSE:
        for (int i = n - 1; i >= 0 && MPI_SUCCESS == rc; i--) {
            rc = MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        }
        break;
    case COMPLETE_WAITANY:
        for (int i = 0; i < n && MPI_SUCCESS == rc; i++) {
            int index;
            rc = MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
            if (MPI_SUCCESS == rc && MPI_UNDEFINED == index) {
                tu_fail("MPI_Waitany: no active request left after %d of %d", i, n);
                return false;
            }
        }
        break;
    case COMPLETE_TESTALL:
        while (!flag && MPI_SUCCESS == rc && MPI_Wtime() < deadline) {
            rc = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
        }
        if (!flag && MPI_SUCCESS == rc) {
            tu_fail("requests did not complete in %.0f s of MPI_Testall", TEST_LOOP_SECONDS);
            return false;
        }
        break;
    case COMPLETE_WAITSOME:
        while (done < n && MPI_SUCCESS == rc) {
            int outcount, indices[MAX_GROUP];
            rc = MPI_Waitsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
            if (MPI_SUCCESS == rc && MPI_UNDEFINED == outcount) {
                break;
            }
            done += outcount;
        }
        if (MPI_SUCCESS == rc && done != n) {
            tu_fail("MPI_Waitsome completed %d of %d requests", done, n);
            return false;
        }
        break;
    }
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len;
        MPI_Error_string(rc, msg, &len);
        tu_fail("%s returned %d (%s)", completion_names[how], rc, msg);
        return false;
    }
    for (int i = 0; i < n; i++) {
        /* a completed persistent request stays (inactive) until freed */
        if ((MPI_REQUEST_NULL == reqs[i]) == persistent) {
            tu_fail("request %d %s by %s", i, persistent ? "freed" : "not freed",
                    completion_names[how]);
            return false;
        }
    }
    return true;
}

/* Gives every case new inputs (and expected results) in the same buffers: the next start of a
 * persistent request must read them. */
static bool reload(state_t *st, tu_coll_case_t **cases, const tu_coll_params_t *params, int n) {
    for (int i = 0; i < n; i++) {
        tu_coll_params_t p = params[i];
        tu_coll_case_t *fresh;

        p.salt = st->salt++;
        if (0 != tu_coll_case_create(&p, &fresh)) {
            return false;
        }
        if (0 != tu_coll_case_reload(cases[i], fresh)) {
            tu_coll_case_destroy(fresh);
            return false;
        }
        tu_coll_case_destroy(fresh);
    }
    return true;
}

/* Posts every spec (with its own kind) in order, completes them, checks buffers and
 * counters; the group is one case. */
static void run_group(state_t *st, const char *name, const spec_t *specs, const tu_kind_t *kinds,
                      int n, completion_t how) {
    tu_coll_case_t *cases[MAX_GROUP];
    tu_coll_params_t params[MAX_GROUP];
    tu_expect_t expects[MAX_GROUP];
    coll_gpu_coll_t colls[MAX_GROUP];
    MPI_Request reqs[MAX_GROUP];
    tu_counters_t before, after;
    bool posted_all = true;
    int nposted = 0;

    for (int i = 0; i < n; i++) {
        const tu_comm_t *comm = &st->comms[specs[i].comm];
        tu_coll_params_t p = {
            .coll = specs[i].coll,
            .type = specs[i].type,
            .op = specs[i].op,
            .count = specs[i].count,
            .in_place = specs[i].in_place,
            .root = specs[i].root_last ? comm->size - 1 : 0,
            .comm = comm,
            .kind = kinds[i],
            .salt = st->salt++,
            .garbage = i % TU_NUM_GARBAGE,
        };
        params[i] = p;
        if (0 != tu_coll_case_create(&p, &cases[i])) {
            fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        /* nonblocking calls are never pipelined: every case is valid */
        tu_coll_case_expect(cases[i], &st->config, st->kind_of_world_rank, &expects[i]);
        colls[i] = specs[i].coll;
        reqs[i] = MPI_REQUEST_NULL;
    }

    tu_case_begin("%s (%d requests, %s)", name, n, completion_names[how]);
    tu_counters_read(&before);
    for (int i = 0; i < n; i++) {
        int rc = tu_coll_case_start(cases[i], &reqs[i]);
        if (MPI_SUCCESS != rc) {
            tu_fail("posting %s returned %d", tu_coll_case_desc(cases[i]), rc);
            posted_all = false;
            break;
        }
        nposted++;
    }
    for (int round = 0; posted_all && round < (st->persistent ? PERSISTENT_ROUNDS : 1); round++) {
        int rc = MPI_SUCCESS;

        if (st->persistent) {
            if (round > 0 && !reload(st, cases, params, n)) {
                fprintf(stderr, "[rank %d] cannot reload the cases: aborting\n", tu_world_rank);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            rc = MPI_Startall(n, reqs);
            if (MPI_SUCCESS != rc) {
                tu_fail("MPI_Startall (round %d) returned %d", round + 1, rc);
                break;
            }
        }
        if (!complete(reqs, n, how, st->persistent)) {
            posted_all = false;
            break;
        }
        if (0 == round) {
            tu_counters_read(&after);
        }
        for (int i = 0; i < n; i++) {
            tu_case_context("%s: request %d: %s%s", name, i, tu_coll_case_desc(cases[i]),
                            st->persistent ? (round ? " (start 2, new inputs)" : " (start 1)")
                                           : "");
            tu_coll_case_verify(cases[i]);
        }
        tu_case_context("%s (%d requests, %s)", name, n, completion_names[how]);
        if (0 == round) {
            /* persistent: counted once, at init */
            tu_check_counters_group(&before, &after, n, colls, expects);
        }
    }
    if (!posted_all) {
        /* complete what was posted so that buffers are not freed under a live request */
        MPI_Waitall(nposted, reqs, MPI_STATUSES_IGNORE);
    }
    for (int i = 0; i < nposted && st->persistent; i++) {
        if (MPI_REQUEST_NULL != reqs[i] && MPI_SUCCESS != MPI_Request_free(&reqs[i])) {
            tu_fail("MPI_Request_free of persistent request %d failed", i);
        }
    }
    tu_case_end();
    for (int i = 0; i < n; i++) {
        tu_coll_case_destroy(cases[i]);
    }
}

static void run_group_one_kind(state_t *st, const char *name, const spec_t *specs, int n,
                               const tu_kind_t *kind, completion_t how) {
    tu_kind_t kinds[MAX_GROUP];
    for (int i = 0; i < n; i++) {
        kinds[i] = *kind;
    }
    run_group(st, name, specs, kinds, n, how);
}

/* The four shapes every collective is tried with, one request at a time. */
static int single_specs(coll_gpu_coll_t coll, spec_t *out) {
    bool reduction = tu_coll_is_reduction(coll);
    bool in_place = tu_coll_allows_in_place(coll);
    spec_t specs[] = {
        {coll, TU_TYPE_INT32, TU_OP_SUM, 1001, false, TU_COMM_WORLD, false},
        {coll, TU_TYPE_VECTOR, reduction ? TU_OP_USER_NONCOMM : TU_OP_SUM, 7, in_place,
         TU_COMM_SPLIT_ODD_EVEN, true},
        {coll, TU_TYPE_DOUBLE, reduction ? TU_OP_MAX : TU_OP_SUM, 1, false, TU_COMM_SPLIT_REVERSED,
         true},
        {coll, TU_TYPE_INT8, TU_OP_SUM, 0, false, TU_COMM_WORLD, false},
        {coll, TU_TYPE_LB, reduction ? TU_OP_USER_COMM : TU_OP_SUM, 33, in_place,
         TU_COMM_SPLIT_REVERSED, false},
    };
    memcpy(out, specs, sizeof(specs));
    return (int)(sizeof(specs) / sizeof(specs[0]));
}

static void run_kind(state_t *st, const tu_kind_t *kind) {
    spec_t specs[MAX_GROUP];
    int n;
    char name[128];

    /* one request at a time, MPI_Wait and MPI_Test loops in turn */
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        spec_t shapes[8];
        int nshapes;
        if (!st->colls[coll]) {
            continue;
        }
        nshapes = single_specs(coll, shapes);
        for (int s = 0; s < nshapes; s++) {
            snprintf(name, sizeof(name), "%s %s count=%zu%s comm=%s kind=%s", tu_coll_name(coll),
                     tu_type(shapes[s].type)->name, shapes[s].count,
                     shapes[s].in_place ? " in-place" : "", st->comms[shapes[s].comm].name,
                     kind->name);
            run_group_one_kind(st, name, &shapes[s], 1, kind,
                               s % 2 ? COMPLETE_TEST_EACH : COMPLETE_WAIT_EACH);
        }
    }

    /* every collective outstanding at once, several on each communicator */
    n = 0;
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS && n < MAX_GROUP; coll++) {
        if (st->colls[coll]) {
            specs[n] = (spec_t){coll,
                                TU_TYPE_INT32,
                                TU_OP_SUM,
                                101,
                                n % 4 == 3 && tu_coll_allows_in_place(coll),
                                n % TU_NUM_COMMS,
                                n % 2 == 1};
            n++;
        }
    }
    if (n > 0) {
        snprintf(name, sizeof(name), "all outstanding kind=%s", kind->name);
        run_group_one_kind(st, name, specs, n, kind, COMPLETE_WAITALL);
    }

    /* out of order completion: the same six requests completed four ways */
    {
        static const spec_t six[] = {
            {COLL_GPU_IALLREDUCE, TU_TYPE_FLOAT, TU_OP_SUM, 1001, false, TU_COMM_WORLD, false},
            {COLL_GPU_IBCAST, TU_TYPE_INT64, TU_OP_SUM, 513, false, TU_COMM_SPLIT_ODD_EVEN, true},
            {COLL_GPU_IALLTOALL, TU_TYPE_UINT8, TU_OP_SUM, 77, false, TU_COMM_SPLIT_REVERSED,
             false},
            {COLL_GPU_IALLGATHER, TU_TYPE_VECTOR, TU_OP_SUM, 9, false, TU_COMM_WORLD, false},
            {COLL_GPU_IREDUCE, TU_TYPE_INT32, TU_OP_USER_NONCOMM, 300, false, TU_COMM_WORLD, true},
            {COLL_GPU_ISCAN, TU_TYPE_DOUBLE, TU_OP_SUM, 64, true, TU_COMM_SPLIT_ODD_EVEN, false},
        };
        static const completion_t ways[] = {COMPLETE_WAIT_REVERSE, COMPLETE_WAITANY,
                                            COMPLETE_TESTALL, COMPLETE_WAITSOME};
        n = 0;
        for (size_t i = 0; i < sizeof(six) / sizeof(six[0]); i++) {
            if (st->colls[form_of(st, six[i].coll)]) {
                specs[n] = six[i];
                specs[n++].coll = form_of(st, six[i].coll);
            }
        }
        for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]) && n > 0; w++) {
            snprintf(name, sizeof(name), "out of order kind=%s", kind->name);
            run_group_one_kind(st, name, specs, n, kind, ways[w]);
        }

        /* host and device requests outstanding together: passthrough and staged paths
         * interleaved, each call with one kind on every rank */
        if ((TU_MEM_HOST != kind->send || TU_MEM_HOST != kind->recv) &&
            0 == st->opts.num_rank_kinds && n > 0) {
            tu_kind_t kinds[MAX_GROUP], host = {"host", TU_MEM_HOST, TU_MEM_HOST};
            spec_t both[MAX_GROUP];
            int m = 0;
            for (int i = 0; i < n && m + 2 <= MAX_GROUP; i++) {
                both[m] = specs[i];
                kinds[m++] = host;
                both[m] = specs[i];
                kinds[m++] = *kind;
            }
            snprintf(name, sizeof(name), "host and %s requests interleaved", kind->name);
            run_group(st, name, both, kinds, m, COMPLETE_WAITALL);
        }
    }

    /* big requests outstanding together: each needs its own staging memory */
    if (st->opts.big_bytes > 0) {
        size_t big = st->opts.big_bytes;
        int size = st->comms[TU_COMM_WORLD].size;
        spec_t bigs[] = {
            {COLL_GPU_IALLREDUCE, TU_TYPE_FLOAT, TU_OP_SUM, big / 4, false, TU_COMM_WORLD, false},
            {COLL_GPU_IBCAST, TU_TYPE_INT8, TU_OP_SUM, big, false, TU_COMM_WORLD, true},
            {COLL_GPU_IALLTOALL, TU_TYPE_INT32, TU_OP_SUM, big / 4 / size, false, TU_COMM_WORLD,
             false},
            {COLL_GPU_IREDUCE, TU_TYPE_DOUBLE, TU_OP_SUM, big / 8, false, TU_COMM_WORLD, true},
            {COLL_GPU_IALLGATHER, TU_TYPE_UINT8, TU_OP_SUM, big / size, false, TU_COMM_WORLD,
             false},
        };
        n = 0;
        for (size_t i = 0; i < sizeof(bigs) / sizeof(bigs[0]); i++) {
            if (st->colls[form_of(st, bigs[i].coll)]) {
                specs[n] = bigs[i];
                specs[n++].coll = form_of(st, bigs[i].coll);
            }
        }
        if (n > 0) {
            snprintf(name, sizeof(name), "big (%zu bytes) kind=%s", big, kind->name);
            run_group_one_kind(st, name, specs, n, kind, COMPLETE_WAITALL);
        }
    }
}

int main(int argc, char **argv) {
    state_t st;

    MPI_Init(&argc, &argv);
    memset(&st, 0, sizeof(st));
    if (0 != parse_options(argc, argv, &st)) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (0 == rank) {
            fprintf(stderr, "test_nonblocking: bad arguments\n");
            usage();
        }
        tu_finish(TU_EXIT_FAIL);
    }
    tu_setup_or_exit(&st.opts);
    tu_gpu_config_read(&st.config);
    tu_comms_create_all(st.comms);
    if (st.native) {
        MPI_Comm comms[TU_NUM_COMMS];
        for (int c = 0; c < TU_NUM_COMMS; c++) {
            comms[c] = st.comms[c].comm;
        }
        tu_native_scratch_setup(comms, TU_NUM_COMMS, &st.config);
    }
    st.kind_of_world_rank = calloc(tu_world_size, sizeof(tu_kind_t));
    {
        int passes = st.opts.num_rank_kinds > 0 ? 1 : st.opts.num_kinds;
        for (int k = 0; k < passes; k++) {
            tu_kind_t mine;
            for (int r = 0; r < tu_world_size; r++) {
                st.kind_of_world_rank[r] = tu_options_rank_kind(&st.opts, &st.opts.kinds[k], r);
            }
            mine = st.kind_of_world_rank[tu_world_rank];
            run_kind(&st, &mine);
        }
    }
    tu_comms_free_all(st.comms);
    free(st.kind_of_world_rank);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
