/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport on one node, host memory (posix backend): symmetric segments, registered
 * buffers (in a segment: mapped; elsewhere: cross-memory attach), signals, the local barrier,
 * bad input (a handle of another team, a range past a region), the wait timeout, and no
 * /dev/shm entry left.  Processes: the arguments (default 1 2 4 8).
 */
#include "shmem_test.h"

static int posix_main(test_oob_t *oob, int rank, int size, void *arg) {
    st_opts_t o = {.timeout = 20};
    shmem_team_t *team, *team2, *team_short;
    st_packed_t *all = calloc((size_t)size, sizeof(*all));
    shmem_rmem_t *rmem;
    shmem_status_t status;
    shmem_mem_t *mem;
    shmem_reg_t *reg;
    uint64_t epoch = 0;
    double t0, dt;
    char buf[256];

    (void)arg;
    status = st_team_create(oob, rank, size, &o, &team);
    if (!CHECK(status == SHMEM_OK, "[%d] team create (%s)", rank, shmem_last_error())) {
        return test_failed;
    }
    CHECK(shmem_team_nnodes(team) == 1 && shmem_team_size(team) == size &&
              shmem_team_rank(team) == rank,
          "[%d] team: 1 node, rank and size", rank);
    CHECK(shmem_team_peer_backend(team, (rank + 1) % size, ACCEL_MEM_HOST) == SHMEM_BACKEND_POSIX &&
              shmem_team_peer_backend(team, (rank + 1) % size, ACCEL_MEM_DEVICE) == 0,
          "[%d] host memory by posix, no device memory without an accelerator", rank);

    st_symmetric(oob, team, NULL, ACCEL_MEM_HOST, 8, ++epoch);
    st_symmetric(oob, team, NULL, ACCEL_MEM_HOST_PINNED, 1 << 20, ++epoch);
    st_registered(oob, team, NULL, ACCEL_MEM_HOST, NULL, 4096, ++epoch);
    st_registered(oob, team, NULL, ACCEL_MEM_HOST, NULL, 3 << 20, ++epoch);
    status = shmem_alloc(team, (size_t)(64 << 10) * (size_t)size + 512, ACCEL_MEM_HOST, &mem);
    if (CHECK(status == SHMEM_OK, "[%d] symmetric host memory for registration", rank)) {
        st_registered(oob, team, NULL, ACCEL_MEM_HOST, (char *)shmem_mem_local(mem) + 512, 64 << 10,
                      ++epoch);
        test_oob_barrier(oob);
        shmem_free(team, mem);
    }
    CHECK(shmem_alloc(team, 0, ACCEL_MEM_HOST, &mem) == SHMEM_ERR_INVALID,
          "[%d] shmem_alloc of 0 bytes fails", rank);
    CHECK(shmem_alloc(team, 4096, ACCEL_MEM_DEVICE, &mem) == SHMEM_ERR_UNSUPPORTED,
          "[%d] device memory without an accelerator fails: %s", rank, shmem_last_error());

    status = SHMEM_OK;
    for (int i = 0; i < 200 && status == SHMEM_OK; ++i) {
        status = shmem_barrier_local(team);
    }
    CHECK(status == SHMEM_OK, "[%d] 200 local barriers", rank);

    /* a handle of another team (communicator) */
    status = st_team_create(oob, rank, size, &o, &team2);
    if (CHECK(status == SHMEM_OK, "[%d] second team", rank)) {
        shmem_register(team2, buf, sizeof(buf), &reg);
        st_exchange(oob, team2, reg, all);
        status = shmem_peer_map(team, (rank + 1) % size, all[(rank + 1) % size].buf,
                                all[(rank + 1) % size].len, &rmem);
        CHECK(status == SHMEM_ERR_INVALID, "[%d] a handle of another team fails: %s", rank,
              shmem_last_error());
        shmem_deregister(team2, reg);
        shmem_team_destroy(team2);
    }
    status = shmem_peer_map(team, size, all[0].buf, all[0].len, &rmem);
    CHECK(status == SHMEM_ERR_INVALID, "[%d] mapping a rank out of range fails", rank);

    /* a team asks for more signal slots than the default (a communicator of many ranks): the
     * slots past the default work, the one past its count does not, the barrier's still do */
    CHECK(shmem_team_num_signals(team) == SHMEM_DEFAULT_SIGNALS &&
              shmem_signal(team, rank, SHMEM_DEFAULT_SIGNALS, 1) == SHMEM_ERR_INVALID,
          "[%d] the default team has %d signal slots", rank, SHMEM_DEFAULT_SIGNALS);
    o.num_signals = 3 * SHMEM_DEFAULT_SIGNALS + 5;
    status = st_team_create(oob, rank, size, &o, &team2);
    o.num_signals = 0;
    if (CHECK(status == SHMEM_OK && shmem_team_num_signals(team2) == 3 * SHMEM_DEFAULT_SIGNALS + 5,
              "[%d] team with %d signal slots", rank, 3 * SHMEM_DEFAULT_SIGNALS + 5)) {
        unsigned last = shmem_team_num_signals(team2) - 1;

        for (int i = 0; i < size; ++i) {
            status = shmem_signal(team2, i, last - (unsigned)rank, 10 + (uint64_t)rank);
        }
        for (int i = 0; i < size && status == SHMEM_OK; ++i) {
            status = shmem_wait(team2, last - (unsigned)i, 10 + (uint64_t)i);
        }
        CHECK(status == SHMEM_OK, "[%d] every rank signals its slot among the last ones", rank);
        CHECK(shmem_signal(team2, rank, last + 1, 1) == SHMEM_ERR_INVALID &&
                  shmem_wait(team2, last + 1, 1) == SHMEM_ERR_INVALID &&
                  shmem_signal_addr(team2, last + 1) == NULL,
              "[%d] slot %u is out of range", rank, last + 1);
        for (int i = 0; i < 20 && status == SHMEM_OK; ++i) {
            status = shmem_barrier_local(team2);
        }
        CHECK(status == SHMEM_OK &&
                  *shmem_signal_addr(team2, last - (unsigned)rank) == 10 + (uint64_t)rank,
              "[%d] the barrier's slots follow the signals and leave them alone", rank);
        test_oob_barrier(oob);
        shmem_team_destroy(team2);
    }

    /* a wait nobody answers ends with the timeout */
    o.timeout = 0.3;
    status = st_team_create(oob, rank, size, &o, &team_short);
    if (CHECK(status == SHMEM_OK, "[%d] team with a 0.3 s timeout", rank)) {
        t0 = st_now();
        status = shmem_wait(team_short, SHMEM_DEFAULT_SIGNALS - 1, 1);
        dt = st_now() - t0;
        CHECK(status == SHMEM_ERR_TIMEOUT && dt >= 0.3 && dt < 3,
              "[%d] unanswered wait times out after %.2f s: %s", rank, dt, shmem_last_error());
        *shmem_signal_addr(team_short, 5) = 7;
        CHECK(shmem_wait(team_short, 5, 7) == SHMEM_OK, "[%d] signal_addr is the waited slot",
              rank);
        test_oob_barrier(oob);
        shmem_team_destroy(team_short);
    }
    CHECK(st_shm_leftovers(getpid()) == 0, "[%d] nothing of this process in /dev/shm", rank);
    test_oob_barrier(oob);
    shmem_team_destroy(team);
    free(all);
    return test_failed;
}

int main(int argc, char **argv) {
    static const int defaults[] = {1, 2, 4, 8};

    return st_main(argc, argv, defaults, 4, posix_main, NULL, 120);
}
