/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport between emulated nodes: the processes of this machine split into nodes of
 * R ranks, so that every put between nodes crosses UCX (tcp or shared-memory transports), the
 * puts inside a node the posix backend.  Host symmetric memory and registered host buffers,
 * signals across nodes, the local barrier on each node.
 *
 *   test_shmem_ucx [NPROCS:RANKS_PER_NODE:TLS ...]   (default 2:1:tcp 4:2:tcp 3:1:shm 8:4:tcp)
 * Skips (77) when coll/gpu was built without UCX.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cgt_test.h"

typedef struct {
    int nprocs;
    int rpn;
    char tls[32];
} ucx_case_t;

static int ucx_main(test_oob_t *oob, int rank, int size, void *arg) {
    const ucx_case_t *c = arg;
    st_opts_t o = {.timeout = 30, .ranks_per_node = c->rpn, .ucx_tls = c->tls};
    int remote = (rank + c->rpn) % size;
    cgt_team_t *team;
    cgt_status_t status;
    uint64_t epoch = 0;

    status = st_team_create(oob, rank, size, &o, &team);
    if (!CHECK(status == CGT_OK, "[%d] team create over %s (%s)", rank, c->tls, cgt_last_error())) {
        return test_failed;
    }
    st_oob_progress(oob, team);
    CHECK(cgt_team_nnodes(team) == (size + c->rpn - 1) / c->rpn, "[%d] %d nodes", rank,
          cgt_team_nnodes(team));
    CHECK(remote / c->rpn == rank / c->rpn ||
              (!cgt_team_peer_is_local(team, remote) &&
               cgt_team_peer_backend(team, remote, ACCEL_MEM_HOST) == CGT_BACKEND_UCX),
          "[%d] rank %d is remote, reached by ucx", rank, remote);
    st_symmetric(oob, team, NULL, ACCEL_MEM_HOST, 8, ++epoch);
    st_symmetric(oob, team, NULL, ACCEL_MEM_HOST, 1 << 20, ++epoch);
    st_registered(oob, team, NULL, ACCEL_MEM_HOST, NULL, 4096, ++epoch);
    st_registered(oob, team, NULL, ACCEL_MEM_HOST, NULL, 1 << 20, ++epoch);
    status = CGT_OK;
    for (int i = 0; i < 50 && status == CGT_OK; ++i) {
        status = cgt_barrier_local(team);
    }
    CHECK(status == CGT_OK, "[%d] 50 local barriers", rank);
    test_oob_barrier(oob);
    st_oob_progress(oob, NULL);
    cgt_team_destroy(team);
    return test_failed;
}

int main(int argc, char **argv) {
    static const char *defaults[] = {"2:1:tcp", "4:2:tcp", "3:1:shm", "8:4:tcp"};
    int nfailed = 0, npassed = 0, ncases = 0;
    ucx_case_t cases[16];

#if !COLL_GPU_HAVE_UCX
    printf("SKIP: built without UCX\n");
    return 77;
#endif
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc && ncases < 16; ++i, ++ncases) {
        sscanf(argv[i], "%d:%d:%31s", &cases[ncases].nprocs, &cases[ncases].rpn, cases[ncases].tls);
    }
    if (ncases == 0) {
        for (; ncases < 4; ++ncases) {
            sscanf(defaults[ncases], "%d:%d:%31s", &cases[ncases].nprocs, &cases[ncases].rpn,
                   cases[ncases].tls);
        }
    }
    for (int i = 0; i < ncases; ++i) {
        double t0 = st_now();
        int nfail = test_oob_run(cases[i].nprocs, 120, ucx_main, &cases[i], NULL);

        printf("%s: %d processes, %d per node, UCX_TLS=%s (%.2f s)\n", nfail ? "FAIL" : "PASS",
               cases[i].nprocs, cases[i].rpn, cases[i].tls, st_now() - t0);
        nfail ? ++nfailed : ++npassed;
    }
    printf("%d passed, %d failed\n", npassed, nfailed);
    return nfailed ? 1 : 0;
}
