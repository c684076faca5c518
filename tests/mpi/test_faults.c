/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Accelerator failures inside coll/gpu (emulated backend, whose fault plan is shared by this
 * program's copy of the backend and the component's).
 *
 * Default mode, memcpy faults: for each case a device-memory collective runs once healthy,
 * then with the n-th copy failing on chosen rank(s), then healthy again on the same
 * communicator.  Required:
 *   - the faulting rank's call returns an error of class MPI_ERR_OTHER (for a nonblocking
 *     call: at post or at completion), and coll_gpu_accelerator_errors grows;
 *   - where the failed copy is one of a blocking call's inputs (its contribution, copied in
 *     before the host collective) or a copy of a pipeline, every other rank's call returns
 *     MPI_ERR_OTHER too (the "staged peer error": no rank takes an undefined contribution as a
 *     success); where it is a result's copy out, or the call is nonblocking (its peers are
 *     not told), the other ranks succeed;
 *   - every rank returns from the call (the case watchdog turns a hang into a failure);
 *   - the next collective on the communicator is correct;
 *   - no device or pinned allocation is left behind by the failed calls.
 * Open MPI prints the component's help message for each failure; check_faults.sh checks its
 * text ("coll/gpu", the MPI call, EMULATED_ERROR_INJECTED).
 *
 * --pinned-fault: every pinned allocation fails from before MPI_Init on, so the component's
 * staging buffers must fall back to pageable memory: results still correct, and
 * coll_gpu_pageable_fallbacks > 0.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
/* strdup, strtok_r, strcasecmp, alarm: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { AT_FIRST, AT_LAST, AT_ROOT, AT_NONROOT, AT_ALL } fault_at_t;

typedef struct {
    coll_gpu_coll_t coll;
    tu_type_id_t type;
    tu_op_id_t op;
    size_t count; /* 0: --big bytes worth of elements */
    bool in_place;
    bool root_last;
    fault_at_t at;
    int nth; /* the nth copy of the call fails */
    bool repeat;
    bool spreads; /* an input's copy or a pipeline's: every rank's call fails */
} fault_case_t;

static const fault_case_t fault_cases[] = {
    /* the send-side copy, the result copy */
    {COLL_GPU_ALLREDUCE, TU_TYPE_INT32, TU_OP_SUM, 1001, false, false, AT_FIRST, 1, false, true},
    {COLL_GPU_ALLREDUCE, TU_TYPE_INT32, TU_OP_SUM, 1001, false, false, AT_LAST, 2, false, false},
    /* in the middle of a pipeline; and every copy from the second on */
    {COLL_GPU_ALLREDUCE, TU_TYPE_FLOAT, TU_OP_SUM, 0, false, false, AT_LAST, 3, false, true},
    {COLL_GPU_ALLREDUCE, TU_TYPE_FLOAT, TU_OP_SUM, 0, false, false, AT_FIRST, 2, true, true},
    {COLL_GPU_ALLREDUCE, TU_TYPE_VECTOR, TU_OP_USER_NONCOMM, 101, true, false, AT_ALL, 1, false,
     false},
    {COLL_GPU_BCAST, TU_TYPE_INT64, TU_OP_SUM, 513, false, false, AT_ROOT, 1, false, true},
    {COLL_GPU_BCAST, TU_TYPE_INT64, TU_OP_SUM, 513, false, false, AT_NONROOT, 1, false, false},
    {COLL_GPU_BCAST, TU_TYPE_INT8, TU_OP_SUM, 0, false, true, AT_FIRST, 2, false, true},
    {COLL_GPU_REDUCE, TU_TYPE_DOUBLE, TU_OP_SUM, 1001, false, true, AT_ROOT, 2, false, false},
    {COLL_GPU_REDUCE, TU_TYPE_DOUBLE, TU_OP_SUM, 1001, false, false, AT_NONROOT, 1, false, true},
    {COLL_GPU_ALLGATHER, TU_TYPE_INT32, TU_OP_SUM, 101, false, false, AT_LAST, 1, false, true},
    {COLL_GPU_ALLTOALLV, TU_TYPE_INT32, TU_OP_SUM, 101, false, false, AT_FIRST, 2, false, true},
    {COLL_GPU_GATHER, TU_TYPE_VECTOR, TU_OP_SUM, 33, false, false, AT_ROOT, 1, false, true},
    {COLL_GPU_SCATTER, TU_TYPE_DOUBLE, TU_OP_SUM, 64, false, true, AT_ROOT, 1, false, true},
    {COLL_GPU_SCAN, TU_TYPE_INT32, TU_OP_SUM, 1001, false, false, AT_FIRST, 1, false, true},
    {COLL_GPU_REDUCE_SCATTER_BLOCK, TU_TYPE_INT32, TU_OP_SUM, 100, false, false, AT_LAST, 2, false,
     false},
    /* a user op: staged (predefined ops run the kernels: test_reduce_local) */
    {COLL_GPU_REDUCE_LOCAL, TU_TYPE_FLOAT, TU_OP_USER_COMM, 1001, false, false, AT_ALL, 1, false,
     false},
    /* nonblocking: a copy at post, the copy at completion */
    {COLL_GPU_IALLREDUCE, TU_TYPE_INT32, TU_OP_SUM, 1001, false, false, AT_FIRST, 1, false, false},
    {COLL_GPU_IALLREDUCE, TU_TYPE_INT32, TU_OP_SUM, 1001, false, false, AT_LAST, 2, false, false},
    {COLL_GPU_IBCAST, TU_TYPE_INT64, TU_OP_SUM, 513, false, false, AT_ROOT, 1, false, false},
};

#define NUM_FAULT_CASES (int)(sizeof(fault_cases) / sizeof(fault_cases[0]))

typedef struct {
    tu_options_t opts;
    bool pinned_fault;
    int repeat;
    tu_gpu_config_t config;
    tu_comm_t comm;
    uint32_t salt;
} state_t;

static void usage(void) {
    printf("usage: test_faults [--pinned-fault] [--repeat=N] [--big=BYTES] [options]\n"
           "  --repeat=N  run the memcpy faults N times (more help messages to check)\n"
           "  needs the component and the emulated backend (--kinds=device)\n");
    tu_options_usage();
}

static int parse_options(int argc, char **argv, state_t *st) {
    tu_options_default(&st->opts);
    st->opts.big_bytes = 1 << 20;
    st->repeat = 1;
    for (int i = 1; i < argc; i++) {
        int rc = tu_options_parse_one(&st->opts, argv[i]);
        if (rc < 0) {
            return -1;
        } else if (rc > 0) {
            continue;
        }
        if (0 == strcmp(argv[i], "--pinned-fault")) {
            st->pinned_fault = true;
        } else if (0 == strncmp(argv[i], "--repeat=", 9) && atoi(argv[i] + 9) > 0) {
            st->repeat = atoi(argv[i] + 9);
        } else {
            return -1;
        }
    }
    if (0 == st->opts.num_kinds) {
        tu_options_parse_one(&st->opts, "--kinds=device");
    }
    return 0;
}

static int fault_rank(const fault_case_t *f, int root, int size) {
    switch (f->at) {
    case AT_FIRST:
        return 0;
    case AT_LAST:
        return size - 1;
    case AT_ROOT:
        return root;
    case AT_NONROOT:
        return (root + 1) % size;
    default:
        return -1; /* all */
    }
}

static void make_params(state_t *st, const fault_case_t *f, tu_coll_params_t *p) {
    const tu_type_t *type = tu_type(f->type);
    size_t count = f->count;
    if (0 == count) {
        count = st->opts.big_bytes / (type->nvals * type->base_size);
    }
    memset(p, 0, sizeof(*p));
    p->coll = f->coll;
    p->type = f->type;
    p->op = f->op;
    p->count = count > 0 ? count : 1;
    p->in_place = f->in_place;
    p->comm = &st->comm;
    p->root = f->root_last ? st->comm.size - 1 : 0;
    p->kind = st->opts.kinds[0];
    p->salt = st->salt++;
    p->garbage = TU_GARBAGE_ONE;
}

/* Runs the call; for a nonblocking one waits for it.  Returns the first error code. */
static int run_call(tu_coll_case_t *c, coll_gpu_coll_t coll) {
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = tu_coll_case_start(c, tu_coll_is_nonblocking(coll) ? &req : NULL);
    if (MPI_SUCCESS == rc && MPI_REQUEST_NULL != req) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    /* an error at post leaves the request undefined (MPI): it is not touched */
    return rc;
}

/* A healthy, fully checked call. */
static void healthy(state_t *st, const fault_case_t *f, const char *when) {
    tu_coll_params_t p;
    tu_coll_case_t *c;
    tu_expect_t expect;
    tu_counters_t before, after;
    int rc;

    make_params(st, f, &p);
    if (0 != tu_coll_case_create(&p, &c)) {
        fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    tu_coll_case_expect(c, &st->config, NULL, &expect);
    tu_case_begin("%s: %s", when, tu_coll_case_desc(c));
    tu_counters_read(&before);
    rc = run_call(c, f->coll);
    tu_counters_read(&after);
    if (MPI_SUCCESS != rc) {
        tu_fail("returned %d", rc);
    }
    tu_coll_case_verify(c);
    tu_check_counters(&before, &after, f->coll, 1, &expect);
    tu_case_end();
    tu_coll_case_destroy(c);
}

static void faulty(state_t *st, const fault_case_t *f) {
    tu_coll_params_t p;
    tu_coll_case_t *c;
    tu_counters_t before, after;
    int rc, at, error_class = MPI_SUCCESS;
    bool me;

    if (COLL_GPU_BCAST == tu_coll_blocking(f->coll) && 1 == st->comm.size) {
        /* Open MPI returns from MPI_(I)bcast on one rank before any coll module: no copy to
         * fail */
        return;
    }
    make_params(st, f, &p);
    if (0 != tu_coll_case_create(&p, &c)) {
        fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    at = fault_rank(f, p.root, st->comm.size);
    me = at < 0 || at == st->comm.rank;
    tu_case_begin("fault in copy %d%s on rank %s: %s", f->nth, f->repeat ? "+" : "",
                  at < 0 ? "all" : (me ? "me" : "other"), tu_coll_case_desc(c));

    /* everyone is set up before the fault is armed: the test's own copies are done */
    MPI_Barrier(MPI_COMM_WORLD);
    tu_counters_read(&before);
    if (me) {
        accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_MEMCPY, f->nth, f->repeat);
    }
    rc = run_call(c, f->coll); /* a hang here is caught by the case watchdog */
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_MEMCPY, 0, false);
    tu_counters_read(&after);

    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &error_class);
    }
    if (me) {
        if (MPI_SUCCESS == rc) {
            tu_fail("the call succeeded although its copy %d failed", f->nth);
        } else if (MPI_ERR_OTHER != error_class) {
            tu_fail("error class %d, expected MPI_ERR_OTHER (%d)", error_class, MPI_ERR_OTHER);
        }
        if (tu_counters_available() && after.accelerator_errors == before.accelerator_errors) {
            tu_fail("coll_gpu_accelerator_errors did not grow");
        }
    } else {
        if (tu_counters_available() && after.accelerator_errors != before.accelerator_errors) {
            tu_fail("coll_gpu_accelerator_errors grew on a rank without a fault");
        }
        if (f->spreads && (MPI_ERR_OTHER != error_class)) {
            tu_fail("returned %d (class %d) where another rank's input copy failed: expected "
                    "MPI_ERR_OTHER",
                    rc, error_class);
        } else if (!f->spreads && (MPI_SUCCESS != rc)) {
            tu_fail("returned %d where only another rank's result copy failed", rc);
        }
    }
    if (tu_verbose > 0) {
        printf("[rank %d] %s: rc %d class %d\n", tu_world_rank, tu_coll_case_desc(c), rc,
               error_class);
    }
    tu_case_end();
    tu_coll_case_destroy(c);
}

static void live_allocations(size_t live[ACCEL_MEM_DEVICE + 1]) {
    for (int t = 0; t <= ACCEL_MEM_DEVICE; t++) {
        live[t] = accel_emulated_live_allocations(t);
    }
}

static void run_memcpy_faults(state_t *st) {
    size_t base[ACCEL_MEM_DEVICE + 1], now[ACCEL_MEM_DEVICE + 1];

    /* one healthy pass first: the component's per-communicator caches exist from here on */
    for (int i = 0; i < NUM_FAULT_CASES; i++) {
        healthy(st, &fault_cases[i], "before");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    live_allocations(base);
    for (int r = 0; r < st->repeat; r++) {
        for (int i = 0; i < NUM_FAULT_CASES; i++) {
            faulty(st, &fault_cases[i]);
            /* the communicator stays usable: the next collective on it is correct */
            healthy(st, &fault_cases[i], "after the fault");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    live_allocations(now);
    tu_case_begin("no allocation left behind by the failed calls");
    for (int t = ACCEL_MEM_HOST_PINNED; t <= ACCEL_MEM_DEVICE; t++) {
        if (now[t] != base[t]) {
            tu_fail("live %s allocations: %zu before the faults, %zu after",
                    accel_mem_type_string(t), base[t], now[t]);
        }
    }
    tu_case_end();
}

static void run_pinned_fault(state_t *st) {
    tu_counters_t counters;
    static const fault_case_t cases[] = {
        {COLL_GPU_ALLREDUCE, TU_TYPE_INT32, TU_OP_SUM, 1001, false, false, AT_ALL, 0, false, false},
        {COLL_GPU_ALLREDUCE, TU_TYPE_FLOAT, TU_OP_SUM, 0, false, false, AT_ALL, 0, false, false},
        {COLL_GPU_BCAST, TU_TYPE_INT8, TU_OP_SUM, 0, false, true, AT_ALL, 0, false, false},
        {COLL_GPU_ALLGATHERV, TU_TYPE_VECTOR, TU_OP_SUM, 77, false, false, AT_ALL, 0, false, false},
        {COLL_GPU_IALLREDUCE, TU_TYPE_DOUBLE, TU_OP_MAX, 1001, false, false, AT_ALL, 0, false,
         false},
        /* a user op: staged whatever the native algorithms can do, so a staging buffer is made */
        {COLL_GPU_ALLREDUCE, TU_TYPE_VECTOR, TU_OP_USER_NONCOMM, 101, false, false, AT_ALL, 0,
         false, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        healthy(st, &cases[i], "pinned allocations failing");
    }
    tu_case_begin("staging fell back to pageable memory");
    tu_counters_read(&counters);
    if (tu_counters_available() && 0 == counters.pageable_fallbacks) {
        tu_fail("coll_gpu_pageable_fallbacks is 0 although every pinned allocation failed");
    }
    if (tu_counters_available() && 0 != counters.accelerator_errors) {
        tu_fail("coll_gpu_accelerator_errors is %llu: a failed pinned allocation is no error",
                (unsigned long long)counters.accelerator_errors);
    }
    tu_case_end();
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_PINNED_ALLOC, 0, false);
}

int main(int argc, char **argv) {
    state_t st;
    MPI_Comm dup;

    memset(&st, 0, sizeof(st));
    /* options are parsed before MPI_Init: the pinned fault must be armed before the component
     * allocates anything */
    if (0 != parse_options(argc, argv, &st)) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &tu_world_rank);
        if (0 == tu_world_rank) {
            fprintf(stderr, "test_faults: bad arguments\n");
            usage();
        }
        tu_finish(TU_EXIT_FAIL);
    }
    if (st.pinned_fault && ACCEL_BACKEND_EMULATED == st.opts.backend) {
        const char *reason;
        if (0 == tu_accel_init(ACCEL_BACKEND_EMULATED, &reason)) {
            accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_PINNED_ALLOC, 1, true);
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &tu_world_rank);
    if (ACCEL_BACKEND_EMULATED != st.opts.backend || !st.opts.component ||
        TU_MEM_DEVICE != st.opts.kinds[0].send || TU_MEM_DEVICE != st.opts.kinds[0].recv) {
        if (0 == tu_world_rank) {
            printf("SKIP: fault injection needs the component, the emulated backend and device "
                   "memory\n");
        }
        tu_finish(TU_EXIT_SKIP);
    }
    tu_setup_or_exit(&st.opts);
    tu_gpu_config_read(&st.config);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    tu_comm_wrap(dup, "dup", &st.comm);

    if (st.pinned_fault) {
        run_pinned_fault(&st);
    } else {
        run_memcpy_faults(&st);
    }

    tu_comm_free(&st.comm);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
