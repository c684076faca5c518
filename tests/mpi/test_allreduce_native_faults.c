/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Failures inside a native MPI_Allreduce (device buffers, emulated backend, whose fault plan
 * this program's copy of the backend shares with the component's); --coll=reduce_scatter_block,
 * --coll=allgather, --coll=bcast, --coll=reduce, --coll=gather or --coll=scatter: the same for
 * that collective (allgather, bcast, gather and scatter reduce nothing: their copies fail; the
 * rooted ones with the last rank as the root, whose result alone reduce and gather check), count
 * elements per rank's block.
 *
 * Default mode: for each case an int32 sum runs once healthy, then with the n-th accelerator
 * copy (MEMCPY) or reduction (REDUCE) failing on one rank, then healthy again on the same
 * communicator.  Required:
 *   - the faulting rank's call returns an error of class MPI_ERR_OTHER (Open MPI prints the
 *     component's help message naming MPI_Allreduce and the failed call: the check script
 *     looks for it);
 *   - every rank returns from the call (the case watchdog turns a hang into a failure), and
 *     every other rank returns the same error class: an error reaches every rank of the call
 *     (the component's agreement step), none returns a result the fault made undefined as
 *     MPI_SUCCESS (their help message names the faulting rank: the check script looks for it);
 *   - the next allreduce on the communicator is correct and native again (the
 *     coll_gpu_allreduce_algorithm_calls pvar grows for a native algorithm): an accelerator
 *     error does not put the communicator out of step, unlike a transport error.
 *
 * --reduce-faults-only: the reduction's cases alone (a device-driven row copies nothing: its
 * one kernel's launch fails under the REDUCE plan, also where the collective reduces nothing).
 *
 * --kill: rank size-1 dies (SIGKILL) while the others are inside a native allreduce (after a
 * healthy one: team and scratch exist).  Each survivor prints
 * "survivor rank R returned error C (class K) after T s", also into the file
 * DIR/survivor.R with --report=DIR (mpirun's teardown may lose a dying job's output), and
 * exits without MPI_Finalize; SIGTERM is ignored so that the teardown does not kill
 * survivors before they report.
 * The check script requires the line and a job shorter than coll_gpu_transport_timeout.
 *
 * Closing line (rank 0, default mode): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    accel_emulated_fault_t kind;
    int nth;
    bool repeat;
    bool last_rank; /* else rank 0 */
} fault_case_t;

static const fault_case_t fault_cases[] = {
    {ACCEL_EMULATED_FAULT_MEMCPY, 1, false, false}, /* the first copy into the scratch */
    {ACCEL_EMULATED_FAULT_MEMCPY, 2, false, true},  /* a later copy (allgather or next step) */
    {ACCEL_EMULATED_FAULT_MEMCPY, 1, true, true},   /* every copy of the call */
    {ACCEL_EMULATED_FAULT_REDUCE, 1, false, false}, /* the first reduction */
    {ACCEL_EMULATED_FAULT_REDUCE, 1, true, true},   /* every reduction of the call */
};
#define NUM_FAULT_CASES (int)(sizeof(fault_cases) / sizeof(fault_cases[0]))

/* The collective under test (--coll=): allreduce, reduce_scatter_block, allgather, bcast,
 * reduce, gather or scatter (the rooted ones at the last rank), an int32 sum (or copy) of count
 * elements per rank's block. */
typedef enum {
    FC_ALLREDUCE,
    FC_REDUCE_SCATTER_BLOCK,
    FC_ALLGATHER,
    FC_BCAST,
    FC_REDUCE,
    FC_GATHER,
    FC_SCATTER
} fault_coll_t;
static const char *const fault_coll_names[] = {
    "allreduce", "reduce_scatter_block", "allgather", "bcast", "reduce", "gather", "scatter"};

typedef struct {
    MPI_Comm comm;
    int rank, size;
    fault_coll_t coll;
    size_t count, in_elems, out_elems;
    int32_t *h_in, *h_out, *h_expect;
    void *d_in, *d_out;
    tu_pvar_t algs;
    uint32_t salt;
} state_t;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int32_t gen(uint32_t salt, int r, size_t i) {
    return (int32_t)((salt * 2654435761u) ^ ((uint32_t)r * 40503u) ^ (uint32_t)(i * 97u));
}

/* Fills the inputs of this call and its expected result: the sum (wrapping, as MPI requires)
 * of every rank's element i (allreduce), of element rank * count + i (reduce_scatter_block),
 * rank i / count's element i % count (allgather), or the last rank's element i (bcast: its
 * input is the buffer, every other rank's buffer holds its own elements until the call). */
static void prepare(state_t *st) {
    ++st->salt;
    for (size_t i = 0; i < st->in_elems; ++i) {
        st->h_in[i] = gen(st->salt, st->rank, i);
    }
    for (size_t i = 0; i < st->out_elems; ++i) {
        uint32_t sum = 0;
        size_t at = (FC_REDUCE_SCATTER_BLOCK == st->coll) ? (size_t)st->rank * st->count + i : i;

        if ((FC_ALLGATHER == st->coll) || (FC_GATHER == st->coll)) {
            st->h_expect[i] = gen(st->salt, (int)(i / st->count), i % st->count);
            continue;
        }
        if (FC_SCATTER == st->coll) {
            st->h_expect[i] = gen(st->salt, st->size - 1, (size_t)st->rank * st->count + i);
            continue;
        }
        if (FC_BCAST == st->coll) {
            st->h_expect[i] = gen(st->salt, st->size - 1, i);
            continue;
        }
        for (int r = 0; r < st->size; ++r) {
            sum += (uint32_t)gen(st->salt, r, at);
        }
        st->h_expect[i] = (int32_t)sum;
    }
    tu_mem_write(TU_MEM_DEVICE, (FC_BCAST == st->coll) ? st->d_out : st->d_in, st->h_in,
                 st->in_elems * sizeof(int32_t));
}

/* The call under test. */
static int run(state_t *st) {
    int n = (int)st->count;

    switch (st->coll) {
    case FC_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(st->d_in, st->d_out, n, MPI_INT32_T, MPI_SUM, st->comm);
    case FC_ALLGATHER:
        return MPI_Allgather(st->d_in, n, MPI_INT32_T, st->d_out, n, MPI_INT32_T, st->comm);
    case FC_BCAST:
        return MPI_Bcast(st->d_out, n, MPI_INT32_T, st->size - 1, st->comm);
    case FC_REDUCE:
        return MPI_Reduce(st->d_in, st->d_out, n, MPI_INT32_T, MPI_SUM, st->size - 1, st->comm);
    case FC_GATHER:
        return MPI_Gather(st->d_in, n, MPI_INT32_T, st->d_out, n, MPI_INT32_T, st->size - 1,
                          st->comm);
    case FC_SCATTER:
        return MPI_Scatter(st->d_in, n, MPI_INT32_T, st->d_out, n, MPI_INT32_T, st->size - 1,
                           st->comm);
    default:
        return MPI_Allreduce(st->d_in, st->d_out, n, MPI_INT32_T, MPI_SUM, st->comm);
    }
}

static uint64_t native_calls(state_t *st) {
    uint64_t v[TU_NUM_ALGS] = {0}, sum = 0;
    int n = tu_pvar_read(&st->algs, v, TU_NUM_ALGS);
    /* elements: auto, staged, then the native algorithms */
    for (int a = 2; a < n && a < TU_NUM_ALGS; ++a) {
        sum += v[a];
    }
    return sum;
}

static void healthy(state_t *st, const char *when) {
    uint64_t before, after;
    int rc;

    prepare(st);
    tu_case_begin("%s: healthy %s of %zu int32", when, fault_coll_names[st->coll], st->count);
    before = native_calls(st);
    rc = run(st);
    after = native_calls(st);
    if (MPI_SUCCESS != rc) {
        tu_fail("returned %d", rc);
    } else if (((FC_REDUCE != st->coll) && (FC_GATHER != st->coll)) || (st->rank == st->size - 1)) {
        /* (reduce, gather: the root's result alone is defined) */
        tu_mem_read(TU_MEM_DEVICE, st->h_out, st->d_out, st->out_elems * sizeof(int32_t));
        for (size_t i = 0; i < st->out_elems; ++i) {
            if (st->h_out[i] != st->h_expect[i]) {
                tu_fail("element %zu: %d, expected %d", i, st->h_out[i], st->h_expect[i]);
                break;
            }
        }
    }
    if (after != before + 1) {
        tu_fail("not native: coll_gpu_%s_algorithm_calls of the native algorithms went from "
                "%llu to %llu",
                fault_coll_names[st->coll], (unsigned long long)before, (unsigned long long)after);
    }
    tu_case_end();
}

static void faulty(state_t *st, const fault_case_t *f) {
    int at = f->last_rank ? st->size - 1 : 0, rc, error_class = MPI_SUCCESS;
    bool me = at == st->rank;

    prepare(st);
    tu_case_begin("%s fault %d%s on rank %s",
                  f->kind == ACCEL_EMULATED_FAULT_MEMCPY ? "memcpy" : "reduce", f->nth,
                  f->repeat ? "+" : "", me ? "me" : "other");
    MPI_Barrier(st->comm);
    if (me) {
        accel_emulated_inject_fault(f->kind, f->nth, f->repeat);
    }
    rc = run(st);
    accel_emulated_inject_fault(f->kind, 0, false);
    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &error_class);
    }
    if (MPI_SUCCESS == rc) {
        tu_fail("the call succeeded although rank %d's %s %d failed", at,
                f->kind == ACCEL_EMULATED_FAULT_MEMCPY ? "copy" : "reduction", f->nth);
    } else if (MPI_ERR_OTHER != error_class) {
        tu_fail("error class %d, expected MPI_ERR_OTHER (%d)", error_class, MPI_ERR_OTHER);
    }
    tu_case_end();
}

static void kill_mode(state_t *st, const char *report_dir) {
    char line[160];
    double t0;
    int rc, error_class = MPI_SUCCESS;

    healthy(st, "before the kill");
    MPI_Barrier(st->comm);
    if (st->rank == st->size - 1) {
        /* let the others enter the call and wait for this rank */
        struct timespec nap = {0, 200000000};
        nanosleep(&nap, NULL);
        raise(SIGKILL);
    }
    signal(SIGTERM, SIG_IGN);
    prepare(st);
    t0 = now_s();
    rc = run(st);
    if (MPI_SUCCESS != rc) {
        MPI_Error_class(rc, &error_class);
    }
    snprintf(line, sizeof(line), "survivor rank %d returned %s %d (class %d) after %.3f s\n",
             st->rank, (MPI_SUCCESS == rc) ? "success" : "error", rc, error_class, now_s() - t0);
    fputs(line, stdout);
    fflush(stdout);
    if (NULL != report_dir) {
        char path[4096];
        FILE *f;
        snprintf(path, sizeof(path), "%s/survivor.%d", report_dir, st->rank);
        f = fopen(path, "w");
        if (NULL != f) {
            fputs(line, f);
            fclose(f);
        }
    }
    /* no MPI_Finalize: a peer is gone */
    _exit((MPI_SUCCESS != rc) ? 0 : 1);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    state_t st;
    bool kill = false, reduce_only = false;
    const char *report_dir = NULL, *coll = "allreduce";
    const tu_arg_t args[] = {
        {"--kill", TU_ARG_FLAG, &kill},
        {"--report=", TU_ARG_STRING, &report_dir},
        {"--count=", TU_ARG_COUNT, &st.count},
        {"--coll=", TU_ARG_STRING, &coll},
        {"--reduce-faults-only", TU_ARG_FLAG, &reduce_only},
        {NULL, TU_ARG_FLAG, NULL},
    };
    char pvar[64];

    MPI_Init(&argc, &argv);
    memset(&st, 0, sizeof(st));
    st.count = 100003;
    tu_parse_args(argc, argv, "test_allreduce_native_faults", args, &opts);
    tu_options_parse_one(&opts, "--kinds=device");
    if (ACCEL_BACKEND_EMULATED != opts.backend || !opts.component) {
        if (0 == tu_world_rank) {
            printf("SKIP: fault injection needs the component and the emulated backend\n");
        }
        tu_finish(TU_EXIT_SKIP);
    }
    tu_setup_or_exit(&opts);
    for (int c = FC_ALLREDUCE; c <= FC_SCATTER; ++c) {
        if (0 == strcmp(coll, fault_coll_names[c])) {
            st.coll = (fault_coll_t)c;
            break;
        }
        if (FC_SCATTER == c) {
            if (0 == tu_world_rank) {
                fprintf(stderr, "unknown --coll=%s\n", coll);
            }
            tu_finish(TU_EXIT_FAIL);
        }
    }
    snprintf(pvar, sizeof(pvar), "coll_gpu_%s_algorithm_calls", fault_coll_names[st.coll]);
    tu_pvar_open_required(pvar, &st.algs);
    MPI_Comm_dup(MPI_COMM_WORLD, &st.comm);
    MPI_Comm_set_errhandler(st.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(st.comm, &st.rank);
    MPI_Comm_size(st.comm, &st.size);
    st.in_elems =
        st.count *
        (((FC_REDUCE_SCATTER_BLOCK == st.coll) || (FC_SCATTER == st.coll)) ? (size_t)st.size : 1);
    st.out_elems =
        st.count * (((FC_ALLGATHER == st.coll) || (FC_GATHER == st.coll)) ? (size_t)st.size : 1);
    st.h_in = malloc(st.in_elems * sizeof(int32_t));
    st.h_out = malloc(st.out_elems * sizeof(int32_t));
    st.h_expect = malloc(st.out_elems * sizeof(int32_t));
    if (NULL == st.h_in || NULL == st.h_out || NULL == st.h_expect ||
        0 != tu_mem_alloc(TU_MEM_DEVICE, st.in_elems * sizeof(int32_t), &st.d_in) ||
        0 != tu_mem_alloc(TU_MEM_DEVICE, st.out_elems * sizeof(int32_t), &st.d_out)) {
        fprintf(stderr, "[rank %d] out of memory\n", tu_world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (kill) {
        kill_mode(&st, report_dir);
    }
    healthy(&st, "first");
    for (int i = 0; i < NUM_FAULT_CASES; ++i) {
        if (!reduce_only &&
            ((FC_ALLGATHER == st.coll) || (FC_BCAST == st.coll) || (FC_GATHER == st.coll) ||
             (FC_SCATTER == st.coll)) &&
            (ACCEL_EMULATED_FAULT_REDUCE == fault_cases[i].kind)) {
            continue; /* it reduces nothing (a device-driven row's launch fails all the same) */
        }
        if (reduce_only && (ACCEL_EMULATED_FAULT_REDUCE != fault_cases[i].kind)) {
            continue; /* a device-driven row: one kernel (a launch that fails), no copies */
        }
        faulty(&st, &fault_cases[i]);
        healthy(&st, "after the fault");
    }
    tu_mem_free(TU_MEM_DEVICE, st.d_in);
    tu_mem_free(TU_MEM_DEVICE, st.d_out);
    free(st.h_in);
    free(st.h_out);
    free(st.h_expect);
    MPI_Comm_free(&st.comm);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
