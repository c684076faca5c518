/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks given different values of a parameter they must agree on (check_param_mismatch.sh runs
 * it once per parameter, the odd local ranks given the other value with --odd-env before
 * MPI_Init): the collectives must neither hang nor compute anything wrong on any rank.
 *
 * On emulated device memory, on MPI_COMM_WORLD and on a duplicate of it, int32 MPI_SUM: blocking
 * MPI_Allreduce of 8 B and of 4 MiB, MPI_Bcast (root 1) and MPI_Reduce (root 2) of 256 KiB,
 * MPI_Allgather of 64 KiB per rank, MPI_Iallreduce + MPI_Wait of 256 KiB, and a persistent
 * MPI_Allreduce_init (MPIX_ on Open MPI 4.1) of 256 KiB started twice with new data; every result
 * compared with a reference computed here; then an MPI_Allreduce on host memory (the path of the
 * set-up's and the summary's own collectives).  A case (the set-up too) that does not end within
 * --case-timeout seconds ends the process with a line naming it (a hang).
 *
 * A value that keeps coll/gpu off a rank (coll_gpu_enable false, an accelerator the rank lacks, a
 * priority below another component's: a host MPI_Allreduce does not go through it there) leaves
 * that rank running Open MPI's own collectives on host buffers (where Open MPI is not CUDA-aware):
 * its peers must meet them (their modex records tell them, coll_gpu_presence.h).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#include "coll_gpu_colls.h"
#include "test_mpit.h"
#include "test_native_util.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1024)

static int32_t input(int rank, size_t i, int salt) {
    return (int32_t)((uint32_t)rank * 2654435761u + (uint32_t)(i % 4099) * 40503u +
                     (uint32_t)salt * 97u);
}

/* The sum over the ranks, wrapping as MPI_SUM on int32 must. */
static int32_t sum_of(int size, size_t i, int salt) {
    uint32_t sum = 0;

    for (int r = 0; r < size; ++r) {
        sum += (uint32_t)input(r, i, salt);
    }
    return (int32_t)sum;
}

/* Where this rank's buffers are: device memory, or host memory on a rank where coll/gpu is off
 * (Open MPI's own collectives read no device memory where it is not CUDA-aware, which the
 * emulated device memory stands for). */
static tu_mem_t buffer_mem = TU_MEM_DEVICE;

/* Device memory holding input(rank, i, salt) for i < count (or `fill` everywhere when not
 * `inputs`). */
static void *device_with(size_t count, int rank, int salt, bool inputs, int32_t fill) {
    int32_t *host = tn_malloc(count * sizeof(int32_t));
    void *dev;

    for (size_t i = 0; i < count; ++i) {
        host[i] = inputs ? input(rank, i, salt) : fill;
    }
    dev = tn_mem_copy_of(buffer_mem, host, count * sizeof(int32_t));
    free(host);
    return dev;
}

typedef int32_t (*expect_fn_t)(int size, int rank, size_t i, int salt);

static int32_t expect_sum(int size, int rank, size_t i, int salt) {
    (void)rank;
    return sum_of(size, i, salt);
}

/* Compares count elements of device memory with expect(); fails the case at the first
 * difference. */
static void check(const void *dev, size_t count, int size, int rank, int salt, expect_fn_t expect) {
    int32_t *got = tn_malloc(count * sizeof(int32_t));

    if (0 != tu_mem_read(buffer_mem, got, dev, count * sizeof(int32_t))) {
        tu_fail("cannot read the device buffer back");
    } else {
        for (size_t i = 0; i < count; ++i) {
            int32_t want = expect(size, rank, i, salt);

            if (got[i] != want) {
                tu_fail("element %zu of %zu is %d, not %d", i, count, got[i], want);
                break;
            }
        }
    }
    free(got);
}

static void check_rc(int rc, const char *what) {
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;

        MPI_Error_string(rc, msg, &len);
        tu_fail("%s returned %d (%s)", what, rc, msg);
    }
}

static void run_allreduce(MPI_Comm comm, const char *name, size_t bytes, int salt) {
    int rank, size;
    size_t count = bytes / sizeof(int32_t);
    void *sbuf, *rbuf;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    sbuf = device_with(count, rank, salt, true, 0);
    rbuf = device_with(count, rank, salt, false, -1);
    tu_case_begin("%s: MPI_Allreduce of %zu B", name, bytes);
    check_rc(MPI_Allreduce(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, comm), "MPI_Allreduce");
    check(rbuf, count, size, rank, salt, expect_sum);
    tu_case_end();
    tu_mem_free(buffer_mem, sbuf);
    tu_mem_free(buffer_mem, rbuf);
}

static int32_t expect_root1(int size, int rank, size_t i, int salt) {
    (void)size;
    (void)rank;
    return input(1, i, salt);
}

static void run_bcast(MPI_Comm comm, const char *name, size_t bytes, int salt) {
    int rank, size, root = 1;
    size_t count = bytes / sizeof(int32_t);
    void *buf;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    root %= size;
    buf = device_with(count, rank, salt, rank == root, -1);
    tu_case_begin("%s: MPI_Bcast of %zu B from rank %d", name, bytes, root);
    check_rc(MPI_Bcast(buf, (int)count, MPI_INT32_T, root, comm), "MPI_Bcast");
    check(buf, count, size, rank, salt, expect_root1);
    tu_case_end();
    tu_mem_free(buffer_mem, buf);
}

static void run_reduce(MPI_Comm comm, const char *name, size_t bytes, int salt) {
    int rank, size, root = 2;
    size_t count = bytes / sizeof(int32_t);
    void *sbuf, *rbuf;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    root %= size;
    sbuf = device_with(count, rank, salt, true, 0);
    rbuf = device_with(count, rank, salt, false, -1);
    tu_case_begin("%s: MPI_Reduce of %zu B to rank %d", name, bytes, root);
    check_rc(MPI_Reduce(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, root, comm), "MPI_Reduce");
    if (rank == root) {
        check(rbuf, count, size, rank, salt, expect_sum);
    }
    tu_case_end();
    tu_mem_free(buffer_mem, sbuf);
    tu_mem_free(buffer_mem, rbuf);
}

static void run_allgather(MPI_Comm comm, const char *name, size_t block_bytes, int salt) {
    int rank, size;
    size_t count = block_bytes / sizeof(int32_t);
    void *sbuf, *rbuf;
    int32_t *got;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    sbuf = device_with(count, rank, salt, true, 0);
    rbuf = device_with(count * (size_t)size, rank, salt, false, -1);
    tu_case_begin("%s: MPI_Allgather of %zu B per rank", name, block_bytes);
    check_rc(MPI_Allgather(sbuf, (int)count, MPI_INT32_T, rbuf, (int)count, MPI_INT32_T, comm),
             "MPI_Allgather");
    got = tn_malloc(count * (size_t)size * sizeof(int32_t));
    if (0 != tu_mem_read(buffer_mem, got, rbuf, count * (size_t)size * sizeof(int32_t))) {
        tu_fail("cannot read the device buffer back");
    } else {
        for (size_t j = 0; j < count * (size_t)size; ++j) {
            int32_t want = input((int)(j / count), j % count, salt);

            if (got[j] != want) {
                tu_fail("element %zu of rank %zu's block is %d, not %d", j % count, j / count,
                        got[j], want);
                break;
            }
        }
    }
    free(got);
    tu_case_end();
    tu_mem_free(buffer_mem, sbuf);
    tu_mem_free(buffer_mem, rbuf);
}

static void run_iallreduce(MPI_Comm comm, const char *name, size_t bytes, int salt) {
    int rank, size;
    size_t count = bytes / sizeof(int32_t);
    MPI_Request request = MPI_REQUEST_NULL;
    void *sbuf, *rbuf;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    sbuf = device_with(count, rank, salt, true, 0);
    rbuf = device_with(count, rank, salt, false, -1);
    tu_case_begin("%s: MPI_Iallreduce of %zu B + MPI_Wait", name, bytes);
    check_rc(MPI_Iallreduce(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, comm, &request),
             "MPI_Iallreduce");
    if (MPI_REQUEST_NULL != request) {
        check_rc(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
    }
    check(rbuf, count, size, rank, salt, expect_sum);
    tu_case_end();
    tu_mem_free(buffer_mem, sbuf);
    tu_mem_free(buffer_mem, rbuf);
}

/* Started twice, the second time on new inputs written into the same send buffer. */
static void run_persistent(MPI_Comm comm, const char *name, size_t bytes, int salt) {
    int rank, size;
    size_t count = bytes / sizeof(int32_t);
    MPI_Request request = MPI_REQUEST_NULL;
    void *sbuf, *rbuf;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    sbuf = device_with(count, rank, salt, true, 0);
    rbuf = device_with(count, rank, salt, false, -1);
    tu_case_begin("%s: persistent MPI_Allreduce_init of %zu B, two starts", name, bytes);
    check_rc(TU_PERSISTENT(Allreduce_init)(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, comm,
                                           MPI_INFO_NULL, &request),
             "MPI_Allreduce_init");
    for (int start = 0; (start < 2) && (MPI_REQUEST_NULL != request) && !tu_case_failed();
         ++start) {
        if (start > 0) {
            void *next = device_with(count, rank, salt + start, true, 0);
            int32_t *host = tn_malloc(bytes);

            /* the same buffer, new data */
            if ((0 != tu_mem_read(buffer_mem, host, next, bytes)) ||
                (0 != tu_mem_write(buffer_mem, sbuf, host, bytes))) {
                tu_fail("cannot write the second start's inputs");
            }
            free(host);
            tu_mem_free(buffer_mem, next);
        }
        check_rc(MPI_Start(&request), "MPI_Start");
        check_rc(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
        check(rbuf, count, size, rank, salt + start, expect_sum);
    }
    if (MPI_REQUEST_NULL != request) {
        MPI_Request_free(&request);
    }
    tu_case_end();
    tu_mem_free(buffer_mem, sbuf);
    tu_mem_free(buffer_mem, rbuf);
}

/* On host memory: the path of the tests' own collectives (tu_summary's). */
static void run_host_allreduce(void) {
    int rank, size;
    int32_t in[2], out[2] = {-1, -1};

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    in[0] = input(rank, 0, 8);
    in[1] = input(rank, 1, 8);
    tu_case_begin("MPI_COMM_WORLD: MPI_Allreduce of 8 B on host memory");
    check_rc(MPI_Allreduce(in, out, 2, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    for (size_t i = 0; i < 2; ++i) {
        if (out[i] != sum_of(size, i, 8)) {
            tu_fail("element %zu of 2 is %d, not %d", i, out[i], sum_of(size, i, 8));
        }
    }
    tu_case_end();
}

/* Whether coll/gpu takes this rank's collectives on MPI_COMM_WORLD: its host MPI_Allreduce goes
 * through the component (one of its allreduce counters grows).  Decided by the rank alone: a
 * check that compared the ranks would run on the very path a parameter may have split. */
static bool component_on_this_rank(void) {
    static const char *const names[] = {"coll_gpu_calls_passthrough", "coll_gpu_calls_staged",
                                        "coll_gpu_calls_native"};
    uint64_t before = 0, after = 0;
    tu_pvar_t pvars[3];
    bool have[3];
    int in = 1, out = 0;

    for (int k = 0; k < 3; ++k) {
        have[k] = (0 == tu_pvar_open(names[k], &pvars[k]));
        before += have[k] ? tu_pvar_read_element(&pvars[k], COLL_GPU_ALLREDUCE) : 0;
    }
    check_rc(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    for (int k = 0; k < 3; ++k) {
        after += have[k] ? tu_pvar_read_element(&pvars[k], COLL_GPU_ALLREDUCE) : 0;
    }
    return after > before;
}

static void run_all(MPI_Comm comm, const char *name) {
    run_allreduce(comm, name, 8, 1);
    run_allreduce(comm, name, 4096 * KIB, 2);
    run_bcast(comm, name, 256 * KIB, 3);
    run_reduce(comm, name, 256 * KIB, 4);
    run_allgather(comm, name, 64 * KIB, 5);
    run_iallreduce(comm, name, 256 * KIB, 6);
    run_persistent(comm, name, 256 * KIB, 7);
}

/* Whether --odd-env kept coll/gpu from loading on this rank (OMPI_MCA_coll=^...gpu...). */
static bool not_loaded_here(void) {
    const char *coll = getenv("OMPI_MCA_coll");

    return (NULL != coll) && ('^' == coll[0]) && (NULL != strstr(coll, "gpu"));
}

int main(int argc, char **argv) {
    tu_options_t opts;
    MPI_Comm dup = MPI_COMM_NULL;
    int rc, case_timeout;
    bool on;

    tu_odd_env_apply(argc, argv); /* --odd-env: before MPI_Init reads the parameters */
    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_param_mismatch", NULL, &opts);
    /* (its host collectives may hang too: under the watchdog, with room for a loaded machine's
     * first accelerator and MPI_T calls) */
    case_timeout = tu_case_timeout;
    tu_case_timeout = (case_timeout > 0) ? 2 * case_timeout : 0;
    if (not_loaded_here()) {
        tu_options_parse_one(&opts, "--no-component"); /* no counters to open here */
    }
    tu_case_begin("set-up");
    tn_setup(&opts, TU_MEM_DEVICE);
    on = component_on_this_rank();
    tu_case_end();
    tu_case_timeout = case_timeout;
    /* A value that keeps the component off this rank (coll_gpu_enable, an accelerator it lacks, a
     * priority below another's): the rank runs Open MPI's own collectives on host buffers, and
     * its peers, on device buffers, must meet them */
    if (!on) {
        buffer_mem = TU_MEM_HOST;
        printf("rank %d: coll/gpu is off here: Open MPI's own collectives on host memory\n",
               tu_world_rank);
        fflush(stdout);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    run_all(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    tu_case_begin("MPI_Comm_dup of MPI_COMM_WORLD");
    check_rc(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
    tu_case_end();
    if (MPI_COMM_NULL != dup) {
        MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        run_all(dup, "dup of MPI_COMM_WORLD");
        MPI_Comm_free(&dup);
    }
    run_host_allreduce(); /* before the counts are summed on host memory */
    rc = tu_summary(MPI_COMM_WORLD);
    tu_finish(rc);
}
