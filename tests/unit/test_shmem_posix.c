/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport on one node, host memory (posix backend): symmetric segments, registered
 * buffers (in a segment: mapped; elsewhere: cross-memory attach), signals, the local barrier,
 * bad input (a handle of another team, a range past a region), the wait timeout, and no
 * /dev/shm entry left.  Processes: the arguments (default 1 2 4 8).  First, the launcher
 * itself: it forks only once another thread of the parent has let go of the lock it held
 * (test_oob_fork.c; a child would otherwise wait for that lock forever).
 */
#include "cgt_test.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_rwlock_t fork_lock = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int fork_lock_taken;

/* A thread that holds fork_lock for 200 ms, then ends. */
static void *fork_lock_holder(void *arg) {
    (void)arg;
    pthread_rwlock_rdlock(&fork_lock);
    atomic_store(&fork_lock_taken, 1);
    usleep(200 * 1000);
    pthread_rwlock_unlock(&fork_lock);
    return NULL;
}

static int fork_lock_main(test_oob_t *oob, int rank, int size, void *arg) {
    struct timespec deadline;
    int ret;

    (void)oob;
    (void)size;
    (void)arg;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    ret = pthread_rwlock_timedwrlock(&fork_lock, &deadline);
    CHECK(ret == 0, "[%d] the lock the parent's other thread held is free in the child (%s)", rank,
          strerror(ret));
    return test_failed;
}

/* The launcher forks after the parent's other thread has ended: the children can take the lock
 * it held. */
static int check_fork_waits_for_threads(void) {
    pthread_t holder;
    int nfail;

    if (pthread_create(&holder, NULL, fork_lock_holder, NULL) != 0) {
        printf("FAIL: pthread_create\n");
        return 1;
    }
    while (!atomic_load(&fork_lock_taken)) {
        usleep(1000);
    }
    nfail = test_oob_run(2, 30, fork_lock_main, NULL, NULL);
    pthread_join(holder, NULL);
    printf("%s: the launcher forks once the parent's other thread released its lock and ended\n",
           nfail == 0 ? "PASS" : "FAIL");
    return nfail == 0 ? 0 : 1;
}

static int posix_main(test_oob_t *oob, int rank, int size, void *arg) {
    st_opts_t o = {.timeout = 20};
    cgt_team_t *team, *team2, *team_short;
    st_packed_t *all = calloc((size_t)size, sizeof(*all));
    cgt_rmem_t *rmem;
    cgt_status_t status;
    cgt_mem_t *mem;
    cgt_reg_t *reg;
    uint64_t epoch = 0;
    double t0, dt;
    char buf[256];

    (void)arg;
    status = st_team_create(oob, rank, size, &o, &team);
    if (!CHECK(status == CGT_OK, "[%d] team create (%s)", rank, cgt_last_error())) {
        return test_failed;
    }
    CHECK(cgt_team_nnodes(team) == 1 && cgt_team_size(team) == size && cgt_team_rank(team) == rank,
          "[%d] team: 1 node, rank and size", rank);
    CHECK(cgt_team_peer_backend(team, (rank + 1) % size, ACCEL_MEM_HOST) == CGT_BACKEND_POSIX &&
              cgt_team_peer_backend(team, (rank + 1) % size, ACCEL_MEM_DEVICE) == 0,
          "[%d] host memory by posix, no device memory without an accelerator", rank);

    st_symmetric(oob, team, NULL, ACCEL_MEM_HOST, 8, ++epoch);
    st_symmetric(oob, team, NULL, ACCEL_MEM_HOST_PINNED, 1 << 20, ++epoch);
    st_registered(oob, team, NULL, ACCEL_MEM_HOST, NULL, 4096, ++epoch);
    st_registered(oob, team, NULL, ACCEL_MEM_HOST, NULL, 3 << 20, ++epoch);
    status = cgt_alloc(team, (size_t)(64 << 10) * (size_t)size + 512, ACCEL_MEM_HOST, &mem);
    if (CHECK(status == CGT_OK, "[%d] symmetric host memory for registration", rank)) {
        st_registered(oob, team, NULL, ACCEL_MEM_HOST, (char *)cgt_mem_local(mem) + 512, 64 << 10,
                      ++epoch);
        test_oob_barrier(oob);
        cgt_free(team, mem);
    }
    CHECK(cgt_alloc(team, 0, ACCEL_MEM_HOST, &mem) == CGT_ERR_INVALID,
          "[%d] cgt_alloc of 0 bytes fails", rank);
    CHECK(cgt_alloc(team, 4096, ACCEL_MEM_DEVICE, &mem) == CGT_ERR_UNSUPPORTED,
          "[%d] device memory without an accelerator fails: %s", rank, cgt_last_error());

    status = CGT_OK;
    for (int i = 0; i < 200 && status == CGT_OK; ++i) {
        status = cgt_barrier_local(team);
    }
    CHECK(status == CGT_OK, "[%d] 200 local barriers", rank);

    /* a handle of another team (communicator) */
    status = st_team_create(oob, rank, size, &o, &team2);
    if (CHECK(status == CGT_OK, "[%d] second team", rank)) {
        cgt_register(team2, buf, sizeof(buf), &reg);
        st_exchange(oob, team2, reg, all);
        status = cgt_peer_map(team, (rank + 1) % size, all[(rank + 1) % size].buf,
                              all[(rank + 1) % size].len, &rmem);
        CHECK(status == CGT_ERR_INVALID, "[%d] a handle of another team fails: %s", rank,
              cgt_last_error());
        cgt_deregister(team2, reg);
        cgt_team_destroy(team2);
    }
    status = cgt_peer_map(team, size, all[0].buf, all[0].len, &rmem);
    CHECK(status == CGT_ERR_INVALID, "[%d] mapping a rank out of range fails", rank);

    /* a team asks for more signal slots than the default (a communicator of many ranks): the
     * slots past the default work, the one past its count does not, the barrier's still do */
    CHECK(cgt_team_num_signals(team) == CGT_DEFAULT_SIGNALS &&
              cgt_signal(team, rank, CGT_DEFAULT_SIGNALS, 1) == CGT_ERR_INVALID,
          "[%d] the default team has %d signal slots", rank, CGT_DEFAULT_SIGNALS);
    o.num_signals = 3 * CGT_DEFAULT_SIGNALS + 5;
    status = st_team_create(oob, rank, size, &o, &team2);
    o.num_signals = 0;
    if (CHECK(status == CGT_OK && cgt_team_num_signals(team2) == 3 * CGT_DEFAULT_SIGNALS + 5,
              "[%d] team with %d signal slots", rank, 3 * CGT_DEFAULT_SIGNALS + 5)) {
        unsigned last = cgt_team_num_signals(team2) - 1;

        for (int i = 0; i < size; ++i) {
            status = cgt_signal(team2, i, last - (unsigned)rank, 10 + (uint64_t)rank);
        }
        for (int i = 0; i < size && status == CGT_OK; ++i) {
            status = cgt_wait(team2, last - (unsigned)i, 10 + (uint64_t)i);
        }
        CHECK(status == CGT_OK, "[%d] every rank signals its slot among the last ones", rank);
        CHECK(cgt_signal(team2, rank, last + 1, 1) == CGT_ERR_INVALID &&
                  cgt_wait(team2, last + 1, 1) == CGT_ERR_INVALID &&
                  cgt_signal_addr(team2, last + 1) == NULL,
              "[%d] slot %u is out of range", rank, last + 1);
        for (int i = 0; i < 20 && status == CGT_OK; ++i) {
            status = cgt_barrier_local(team2);
        }
        CHECK(status == CGT_OK &&
                  *cgt_signal_addr(team2, last - (unsigned)rank) == 10 + (uint64_t)rank,
              "[%d] the barrier's slots follow the signals and leave them alone", rank);
        test_oob_barrier(oob);
        cgt_team_destroy(team2);
    }

    /* a wait nobody answers ends with the timeout */
    o.timeout = 0.3;
    status = st_team_create(oob, rank, size, &o, &team_short);
    if (CHECK(status == CGT_OK, "[%d] team with a 0.3 s timeout", rank)) {
        t0 = st_now();
        status = cgt_wait(team_short, CGT_DEFAULT_SIGNALS - 1, 1);
        dt = st_now() - t0;
        CHECK(status == CGT_ERR_TIMEOUT && dt >= 0.3 && dt < 3,
              "[%d] unanswered wait times out after %.2f s: %s", rank, dt, cgt_last_error());
        *cgt_signal_addr(team_short, 5) = 7;
        CHECK(cgt_wait(team_short, 5, 7) == CGT_OK, "[%d] signal_addr is the waited slot", rank);
        test_oob_barrier(oob);
        cgt_team_destroy(team_short);
    }
    CHECK(st_shm_leftovers(getpid()) == 0, "[%d] nothing of this process in /dev/shm", rank);
    test_oob_barrier(oob);
    cgt_team_destroy(team);
    free(all);
    return test_failed;
}

int main(int argc, char **argv) {
    static const int defaults[] = {1, 2, 4, 8};

    int harness_failed = check_fork_waits_for_threads();
    int failed = st_main(argc, argv, defaults, 4, posix_main, NULL, 120);

    return (harness_failed || failed) ? 1 : 0;
}
