/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport between emulated nodes: the processes of this machine split into nodes of
 * R ranks, so that every put between nodes crosses UCX (tcp or shared-memory transports), the
 * puts inside a node the posix backend.  Host symmetric memory and registered host buffers,
 * signals across nodes, the local barrier on each node; the traffic counters
 * (cgt_team_traffic, cgt_team_received_by_node): exactly the puts, gets and signals to the
 * other node, nothing of those inside the node.
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

/* What one put, get and signal to remote (on node remote_node) and a put to this rank's own
 * part add to the traffic counters: the first three only, to the byte, when remote is on another
 * node (the get's bytes under remote_node), nothing when it is on this one. */
static void st_traffic(test_oob_t *oob, cgt_team_t *team, int rank, int remote, int remote_node) {
    unsigned slot = cgt_team_num_signals(team) - 1; /* no other check uses it */
    cgt_traffic_t before, after;
    uint64_t by_node_before;
    char buf[256] = {0};
    cgt_mem_t *mem = NULL;
    cgt_status_t status;
    bool other = !cgt_team_peer_is_local(team, remote);

    status = cgt_alloc(team, 4096, ACCEL_MEM_HOST, &mem);
    if (!CHECK(status == CGT_OK, "[%d] traffic: cgt_alloc (%s)", rank, cgt_last_error())) {
        return;
    }
    cgt_team_traffic(team, &before);
    by_node_before = cgt_team_received_by_node(team)[remote_node];
    status = cgt_put(team, cgt_mem_peer(mem, remote), 1024 + 100 * (size_t)rank, buf, 100);
    if (status == CGT_OK) {
        status = cgt_get(team, buf, cgt_mem_peer(mem, remote), 0, 200);
    }
    if (status == CGT_OK) {
        status = cgt_put(team, cgt_mem_peer(mem, rank), 0, buf, 50); /* this node */
    }
    if (status == CGT_OK) {
        status = cgt_quiet(team, -1);
    }
    if (status == CGT_OK) {
        status = cgt_signal(team, remote, slot, 1);
    }
    CHECK(status == CGT_OK, "[%d] traffic: put, get, signal (%s)", rank, cgt_last_error());
    cgt_team_traffic(team, &after);
    CHECK(after.bytes_sent - before.bytes_sent == (other ? 108 : 0) &&
              after.bytes_received - before.bytes_received == (other ? 200 : 0) &&
              after.messages - before.messages == (other ? 3 : 0) &&
              after.signals - before.signals == (other ? 1 : 0),
          "[%d] traffic: sent %llu received %llu messages %llu signals %llu to rank %d, want %s",
          rank, (unsigned long long)(after.bytes_sent - before.bytes_sent),
          (unsigned long long)(after.bytes_received - before.bytes_received),
          (unsigned long long)(after.messages - before.messages),
          (unsigned long long)(after.signals - before.signals), remote,
          other ? "108 200 3 1 (another node)" : "0 0 0 0 (this node)");
    CHECK(cgt_team_received_by_node(team)[remote_node] - by_node_before == (other ? 200 : 0),
          "[%d] traffic: %llu bytes received from node %d, want %d", rank,
          (unsigned long long)(cgt_team_received_by_node(team)[remote_node] - by_node_before),
          remote_node, other ? 200 : 0);
    /* nobody frees memory a peer may still read */
    CHECK(test_oob_barrier(oob) == 0, "[%d] traffic: barrier before free", rank);
    cgt_free(team, mem);
}

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
    if (cgt_team_nnodes(team) > 1) { /* (collective: cgt_alloc) */
        st_traffic(oob, team, rank, remote, remote / c->rpn);
    }
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
