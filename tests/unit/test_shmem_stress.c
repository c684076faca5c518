/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport leaks: 1,000 team create/free cycles and 10,000 register / map / put /
 * unmap / deregister cycles (host buffers by cross-memory attach, emulated device buffers by
 * accelerator IPC, freed and reallocated every time), then nothing may have grown: file
 * descriptors, resident memory, /dev/shm entries, device allocations, the caches beyond their
 * bound; with UCX, fewer cycles between two emulated nodes and no endpoint left.
 *
 *   test_shmem_stress [--quick]
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cgt_internal.h"
#include "cgt_test.h"

#include <dirent.h>

typedef struct {
    int team_cycles;
    int reg_cycles;
    int ranks_per_node;
    const char *tls;
} stress_case_t;

static int stress_fd_count(void) {
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;

    while (dir != NULL && (de = readdir(dir)) != NULL) {
        n += de->d_name[0] != '.';
    }
    if (dir != NULL) {
        closedir(dir);
    }
    return n;
}

static long stress_rss_kib(void) {
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) {
            rss = 0;
        }
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* One register / exchange / map / put / unmap / deregister cycle with the next rank. */
static cgt_status_t stress_reg_cycle(test_oob_t *oob, cgt_team_t *team, const accel_ops_t *accel,
                                     bool device, int i, st_packed_t *all) {
    int rank = cgt_team_rank(team), size = cgt_team_size(team), to = (rank + 1) % size;
    size_t len = 4096 + (size_t)(i % 7) * 512;
    cgt_status_t status;
    cgt_reg_t *reg = NULL;
    cgt_rmem_t *rmem;
    uint64_t word = (uint64_t)i;
    void *buf;

    if (device) {
        accel->mem_alloc(ACCEL_MEM_DEVICE, len, &buf);
    } else {
        buf = malloc(len);
    }
    status = cgt_register(team, buf, len, &reg);
    if (st_exchange(oob, team, status == CGT_OK ? reg : NULL, all) != CGT_OK) {
        status = status != CGT_OK ? status : CGT_ERR_BOOTSTRAP;
    }
    if (status == CGT_OK) {
        status = cgt_peer_map(team, to, all[to].buf, all[to].len, &rmem);
        if (status == CGT_OK) {
            status = cgt_put(team, rmem, len - sizeof(word), &word, sizeof(word));
            if (status == CGT_OK) {
                status = cgt_quiet(team, to);
            }
            cgt_peer_unmap(team, rmem);
        }
    }
    /* the peer is done with this buffer before it is freed */
    if (test_oob_barrier(oob) != 0 && status == CGT_OK) {
        status = CGT_ERR_BOOTSTRAP;
    }
    if (reg != NULL) {
        cgt_deregister(team, reg);
    }
    if (device) {
        accel->mem_free(buf);
    } else {
        free(buf);
    }
    return status;
}

static int stress_main(test_oob_t *oob, int rank, int size, void *arg) {
    const stress_case_t *c = arg;
    st_opts_t o = {
        .timeout = 30, .ranks_per_node = c->ranks_per_node, .ucx_tls = c->tls, .cache_max = 16};
    st_packed_t *all = calloc((size_t)size, sizeof(*all));
    int fds0, fds1, shm1, i;
    long rss0, rss1;
    size_t dev0, dev1;
    const char *reason;
    cgt_team_t *team;
    cgt_status_t status = CGT_OK;
    cgt_mem_t *mem;
    double t0;

    if (accel_init(ACCEL_BACKEND_EMULATED, &o.accel, &reason) != ACCEL_OK) {
        printf("SKIP: [%d] emulated accelerator: %s\n", rank, reason);
        return 0;
    }
    /* one cycle first: what is allocated once per process (UCX's globals, the emulated
     * accelerator's header, stdio) is not a leak */
    status = st_team_create(oob, rank, size, &o, &team);
    if (!CHECK(status == CGT_OK, "[%d] first team (%s)", rank, cgt_last_error())) {
        return test_failed;
    }
    st_oob_progress(oob, team);
    stress_reg_cycle(oob, team, o.accel, false, 0, all);
    stress_reg_cycle(oob, team, o.accel, c->tls == NULL, 0, all);
    test_oob_barrier(oob);
    st_oob_progress(oob, NULL);
    cgt_team_destroy(team);
    fds0 = stress_fd_count();
    rss0 = stress_rss_kib();
    dev0 = accel_emulated_live_allocations(ACCEL_MEM_DEVICE);

    t0 = st_now();
    for (i = 0; i < c->team_cycles && status == CGT_OK; ++i) {
        status = st_team_create(oob, rank, size, &o, &team);
        if (status == CGT_OK) {
            status = cgt_alloc(team, 4096, i % 2 ? ACCEL_MEM_DEVICE : ACCEL_MEM_HOST, &mem);
            if (status == CGT_OK) {
                cgt_free(team, mem);
            }
            cgt_team_destroy(team);
        }
    }
    CHECK(status == CGT_OK, "[%d] %d team create / alloc / free / destroy cycles (%.2f s; %s)",
          rank, i, st_now() - t0, status ? cgt_last_error() : "ok");

    status = st_team_create(oob, rank, size, &o, &team);
    if (!CHECK(status == CGT_OK, "[%d] team (%s)", rank, cgt_last_error())) {
        return test_failed;
    }
    st_oob_progress(oob, team);
    t0 = st_now();
    for (i = 0; i < c->reg_cycles && status == CGT_OK; ++i) {
        status = stress_reg_cycle(oob, team, o.accel, i % 2 == 1 && c->tls == NULL, i, all);
    }
    CHECK(status == CGT_OK, "[%d] %d register / map / put / unmap / deregister cycles (%.2f s; %s)",
          rank, i, st_now() - t0, status ? cgt_last_error() : "ok");
    CHECK(team->nregs <= 16 && team->nmaps <= 16,
          "[%d] caches within their bound: %zu registrations, %zu mappings (max 16)", rank,
          team->nregs, team->nmaps);
#if COLL_GPU_HAVE_UCX
    if (team->ucx != NULL) {
        CHECK(cgt_ucx_endpoint_count(team->ucx) <= (size_t)size,
              "[%d] %zu UCX endpoints while the team lives", rank,
              cgt_ucx_endpoint_count(team->ucx));
    }
#endif
    test_oob_barrier(oob);
    st_oob_progress(oob, NULL);
    cgt_team_destroy(team);

    fds1 = stress_fd_count();
    rss1 = stress_rss_kib();
    dev1 = accel_emulated_live_allocations(ACCEL_MEM_DEVICE);
    shm1 = st_shm_leftovers(getpid());
    CHECK(fds1 == fds0, "[%d] file descriptors: %d before, %d after", rank, fds0, fds1);
    CHECK(rss1 - rss0 < 8192, "[%d] resident memory: %ld KiB before, %ld KiB after", rank, rss0,
          rss1);
    CHECK(dev1 == dev0, "[%d] device allocations: %zu before, %zu after", rank, dev0, dev1);
    CHECK(shm1 == 0, "[%d] /dev/shm entries of this process: %d", rank, shm1);
#if COLL_GPU_HAVE_UCX
    CHECK(cgt_ucx_endpoint_count(NULL) == 0, "[%d] UCX endpoints left in the process: %zu", rank,
          cgt_ucx_endpoint_count(NULL));
#endif
    free(all);
    accel_finalize();
    return test_failed;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    stress_case_t cases[2] = {
        {.team_cycles = quick ? 100 : 1000, .reg_cycles = quick ? 1000 : 10000},
        {.team_cycles = quick ? 10 : 50,
         .reg_cycles = quick ? 100 : 1000,
         .ranks_per_node = 1,
         .tls = "tcp"},
    };
    int ncases = COLL_GPU_HAVE_UCX ? 2 : 1, nfailed = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < ncases; ++i) {
        double t0 = st_now();
        int nfail = test_oob_run(2, 300, stress_main, &cases[i], NULL);

        printf("%s: 2 processes, %s (%.2f s)\n", nfail ? "FAIL" : "PASS",
               cases[i].tls ? "two nodes over UCX tcp" : "one node", st_now() - t0);
        nfailed += nfail != 0;
    }
    printf("%d passed, %d failed\n", ncases - nfailed, nfailed);
    return nfailed ? 1 : 0;
}
