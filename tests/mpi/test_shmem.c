/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport under mpirun: the OOB is the MPI communicator (MPI_Iallgather and
 * MPI_Ibarrier, the team progressed while they run), local peers come from
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), split further into emulated nodes of R ranks so
 * that the inter-node path crosses UCX.  Runs the exercises of the unit tests (symmetric and
 * registered memory, put/get to every rank, signals, barriers, bad input) on host memory, and
 * on device memory with an accelerator.
 *
 *   test_shmem [--rpn=R] [--tls=UCX_TLS] [--accel=emulated|cuda]
 */
#include <mpi.h>

#include "cgt_test.h"

struct test_oob {
    MPI_Comm comm;
    void (*progress)(void *);
    void *progress_arg;
};

static int oob_wait(test_oob_t *oob, MPI_Request *req) {
    int done = 0;

    while (!done) {
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            return -1;
        }
        if (!done && oob->progress != NULL) {
            oob->progress(oob->progress_arg);
        }
    }
    return 0;
}

int test_oob_allgather(const void *sbuf, void *rbuf, size_t len, void *ctx) {
    test_oob_t *oob = ctx;
    MPI_Request req;

    if (MPI_Iallgather(sbuf, (int)len, MPI_BYTE, rbuf, (int)len, MPI_BYTE, oob->comm, &req) !=
        MPI_SUCCESS) {
        return -1;
    }
    return oob_wait(oob, &req);
}

int test_oob_barrier(test_oob_t *oob) {
    MPI_Request req;

    if (MPI_Ibarrier(oob->comm, &req) != MPI_SUCCESS) {
        return -1;
    }
    return oob_wait(oob, &req);
}

void test_oob_set_progress(test_oob_t *oob, void (*fn)(void *), void *arg) {
    oob->progress = fn;
    oob->progress_arg = arg;
}

/* Node of every rank: the shared-memory node, cut into emulated nodes of rpn ranks. */
static void mpi_nodes(MPI_Comm comm, int rpn, int *nodes) {
    int rank, size, local_rank, leader, key[2], *keys;
    MPI_Comm shared;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    MPI_Comm_rank(shared, &local_rank);
    leader = rank;
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
    MPI_Comm_free(&shared);
    key[0] = leader;
    key[1] = rpn > 0 ? local_rank / rpn : 0;
    keys = malloc(sizeof(int) * 2 * (size_t)size);
    MPI_Allgather(key, 2, MPI_INT, keys, 2, MPI_INT, comm);
    /* number the (node, part) pairs in order of first appearance */
    for (int r = 0, next = 0; r < size; ++r) {
        nodes[r] = -1;
        for (int q = 0; q < r; ++q) {
            if (keys[2 * q] == keys[2 * r] && keys[2 * q + 1] == keys[2 * r + 1]) {
                nodes[r] = nodes[q];
                break;
            }
        }
        if (nodes[r] < 0) {
            nodes[r] = next++;
        }
    }
    free(keys);
}

int main(int argc, char **argv) {
    int rank, size, rpn = 0, nodes[TEST_OOB_MAX_PROCS], nfailed;
    accel_backend_kind_t accel_kind = ACCEL_BACKEND_AUTO;
    const char *tls = NULL, *reason = NULL;
    cgt_team_params_t p;
    test_oob_t oob;
    cgt_team_t *team;
    cgt_status_t status;
    uint64_t epoch = 0;
    bool use_accel = false;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; ++i) {
        if (strncmp(argv[i], "--rpn=", 6) == 0) {
            rpn = atoi(argv[i] + 6);
        } else if (strncmp(argv[i], "--tls=", 6) == 0) {
            tls = argv[i] + 6;
        } else if (strcmp(argv[i], "--accel=emulated") == 0) {
            accel_kind = ACCEL_BACKEND_EMULATED;
            use_accel = true;
        } else if (strcmp(argv[i], "--accel=cuda") == 0) {
            accel_kind = ACCEL_BACKEND_CUDA;
            use_accel = true;
        }
    }
    if (size > TEST_OOB_MAX_PROCS) {
        printf("SKIP: at most %d ranks\n", TEST_OOB_MAX_PROCS);
        MPI_Finalize();
        return 77;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &oob.comm);
    oob.progress = NULL;
    mpi_nodes(oob.comm, rpn, nodes);
    memset(&p, 0, sizeof(p));
    p.rank = rank;
    p.size = size;
    p.node_of_rank = nodes;
    p.oob_allgather = test_oob_allgather;
    p.oob_ctx = &oob;
    p.timeout = 60;
    p.ucx_tls = tls;
    p.log = st_log;
    if (use_accel && accel_init(accel_kind, &p.accel, &reason) != ACCEL_OK) {
        printf("SKIP: [%d] accelerator: %s\n", rank, reason ? reason : "?");
        MPI_Finalize();
        return 77;
    }
    status = cgt_team_create(&p, &team);
    if (CHECK(status == CGT_OK, "[%d] team create (%s)", rank, cgt_last_error())) {
        st_oob_progress(&oob, team);
        if (rank == 0) {
            printf("NOTE: %d ranks, %d nodes%s%s\n", size, cgt_team_nnodes(team),
                   tls ? ", UCX_TLS=" : "", tls ? tls : "");
        }
        st_symmetric(&oob, team, p.accel, ACCEL_MEM_HOST, 64, ++epoch);
        st_symmetric(&oob, team, p.accel, ACCEL_MEM_HOST, 1 << 20, ++epoch);
        st_registered(&oob, team, p.accel, ACCEL_MEM_HOST, NULL, 4096, ++epoch);
        if (p.accel != NULL) {
            /* device memory: every local peer by IPC; remote peers only if UCX reaches it */
            bool remote_ok =
                cgt_team_nnodes(team) == 1 ||
                cgt_team_peer_backend(team, (rank + size - 1) % size, ACCEL_MEM_DEVICE) != 0;
            int all_ok = remote_ok;

            MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_LAND, oob.comm);
            if (all_ok) {
                st_symmetric(&oob, team, p.accel, ACCEL_MEM_DEVICE, 1 << 16, ++epoch);
                st_registered(&oob, team, p.accel, ACCEL_MEM_DEVICE, NULL, 1 << 16, ++epoch);
            } else if (rank == 0) {
                printf("NOTE: UCX does not reach device memory here: device memory tested "
                       "inside nodes only (test_shmem_ipc)\n");
            }
        }
        test_oob_barrier(&oob);
        st_oob_progress(&oob, NULL);
        cgt_team_destroy(team);
    }
    if (p.accel != NULL) {
        accel_finalize();
    }
    nfailed = test_failed;
    MPI_Allreduce(MPI_IN_PLACE, &nfailed, 1, MPI_INT, MPI_SUM, oob.comm);
    MPI_Comm_free(&oob.comm);
    if (rank == 0) {
        printf("%d passed, %d failed\n", test_passed, nfailed);
    }
    MPI_Finalize();
    return nfailed ? 1 : 0;
}
