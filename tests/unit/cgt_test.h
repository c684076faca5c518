/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the shmem-transport tests share (header-only; each test is a program of its own): team
 * creation over the fork launcher with emulated nodes, and one exercise of the data path --
 * symmetric memory and registered buffers, put/get to every peer, signals, the local barrier,
 * and the bad inputs that must fail cleanly.
 */
#ifndef CGT_TEST_H
#define CGT_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accel_emulated.h"
#include "cgt.h"
#include "test_oob_fork.h"
#include "unit_check.h"

typedef struct {
    int ranks_per_node; /* emulated nodes of that many ranks; 0: all on one node */
    const accel_ops_t *accel;
    const char *ucx_tls;
    double timeout;
    size_t cache_max;
    unsigned backends;
    unsigned num_signals;
} st_opts_t;

static inline double st_now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void st_log(int level, const char *msg) { fprintf(stderr, "[%d] %s\n", level, msg); }

static void st_progress(void *team) { cgt_team_progress(team); }

/* The team progresses while this process waits in the OOB (see cgt_team_progress). */
static inline void st_oob_progress(test_oob_t *oob, cgt_team_t *team) {
    test_oob_set_progress(oob, team != NULL ? st_progress : NULL, team);
}

static inline cgt_status_t st_team_create(test_oob_t *oob, int rank, int size, const st_opts_t *o,
                                          cgt_team_t **team_p) {
    int nodes[TEST_OOB_MAX_PROCS];
    cgt_team_params_t p;
    const char *verbose = getenv("CGT_TEST_VERBOSE");

    for (int r = 0; r < size; ++r) {
        nodes[r] = o->ranks_per_node > 0 ? r / o->ranks_per_node : 0;
    }
    memset(&p, 0, sizeof(p));
    p.rank = rank;
    p.size = size;
    p.node_of_rank = nodes;
    p.oob_allgather = test_oob_allgather;
    p.oob_ctx = oob;
    p.accel = o->accel;
    p.backends = o->backends;
    p.reg_cache_max = o->cache_max;
    p.timeout = o->timeout;
    p.ucx_tls = o->ucx_tls;
    p.num_signals = o->num_signals;
    p.log = st_log;
    p.verbose = verbose ? atoi(verbose) : 0;
    return cgt_team_create(&p, team_p);
}

/* Host <-> memory of either kind. */
static inline void st_copy(const accel_ops_t *accel, void *dst, const void *src, size_t len) {
    if (accel != NULL) {
        accel->memcpy(dst, src, len);
    } else {
        memcpy(dst, src, len);
    }
}

static inline unsigned st_seed(int from, int to, unsigned round) {
    return (unsigned)(from * 31 + to * 7) + round * 101u;
}

/* Signal every rank's slot rank with value, push the signals out, wait for every rank's. */
static inline cgt_status_t st_signal_all(cgt_team_t *team, uint64_t value) {
    int rank = cgt_team_rank(team), size = cgt_team_size(team);
    cgt_status_t status = CGT_OK;

    for (int p = 0; p < size && status == CGT_OK; ++p) {
        status = cgt_signal(team, p, (unsigned)rank, value);
    }
    /* over UCX a signal may leave only from progress: quiet sends it on its way */
    if (status == CGT_OK) {
        status = cgt_quiet(team, -1);
    }
    for (int p = 0; p < size && status == CGT_OK; ++p) {
        status = cgt_wait(team, (unsigned)p, value);
    }
    return status;
}

/* Each rank writes a chunk into every peer's buffer (at offset rank * chunk), signals, checks
 * what every peer wrote; reads back from every peer what it put there; signals again (a peer's
 * memory is read only while that peer waits: over UCX's tcp and shared-memory transports a
 * get completes only while the target progresses).  rmems[p]: peer p's buffer. */
static inline int st_all_to_all(cgt_team_t *team, const accel_ops_t *accel, cgt_rmem_t **rmems,
                                void *local, bool device, size_t chunk, uint64_t epoch,
                                const char *what) {
    int rank = cgt_team_rank(team), size = cgt_team_size(team), bad = 0;
    /* a source of its own per put: it may be read until the quiet */
    unsigned char *src = malloc(chunk * (size_t)size), *chk = malloc(chunk);
    cgt_status_t status = CGT_OK;
    const accel_ops_t *copier = device ? accel : NULL;

    for (int p = 0; p < size && status == CGT_OK; ++p) {
        fill(src + (size_t)p * chunk, chunk, st_seed(rank, p, (unsigned)epoch));
        status = cgt_put(team, rmems[p], (size_t)rank * chunk, src + (size_t)p * chunk, chunk);
    }
    CHECK(status == CGT_OK, "[%d] %s: put to every rank (%s)", rank, what,
          status ? cgt_last_error() : "ok");
    if (status == CGT_OK) {
        status = st_signal_all(team, 2 * epoch - 1);
        CHECK(status == CGT_OK, "[%d] %s: signals of every rank (%s)", rank, what,
              status ? cgt_last_error() : "ok");
    }
    for (int p = 0; p < size && status == CGT_OK; ++p) {
        st_copy(copier, chk, (char *)local + (size_t)p * chunk, chunk);
        bad += !has_pattern(chk, chunk, st_seed(p, rank, (unsigned)epoch));
    }
    CHECK(status == CGT_OK && bad == 0, "[%d] %s: data of every rank arrived (%d bad)", rank, what,
          bad);
    bad = 0;
    for (int p = 0; p < size && status == CGT_OK; ++p) {
        memset(chk, 0, chunk);
        status = cgt_get(team, chk, rmems[p], (size_t)rank * chunk, chunk);
        if (status == CGT_OK) {
            status = cgt_quiet(team, p);
        }
        bad += status == CGT_OK && !has_pattern(chk, chunk, st_seed(rank, p, (unsigned)epoch));
    }
    CHECK(status == CGT_OK && bad == 0, "[%d] %s: get from every rank (%d bad, %s)", rank, what,
          bad, status ? cgt_last_error() : "ok");
    if (status == CGT_OK) {
        status = st_signal_all(team, 2 * epoch);
        CHECK(status == CGT_OK, "[%d] %s: closing signals (%s)", rank, what,
              status ? cgt_last_error() : "ok");
    }
    free(src);
    free(chk);
    return status == CGT_OK && bad == 0 ? 0 : 1;
}

/* Every rank's packed handle of reg: packed + r * CGT_PACKED_MAX, lengths in lens. */
typedef struct {
    uint32_t len;
    unsigned char buf[CGT_PACKED_MAX];
} st_packed_t;

static inline cgt_status_t st_exchange(test_oob_t *oob, cgt_team_t *team, const cgt_reg_t *reg,
                                       st_packed_t *all) {
    st_packed_t mine;
    size_t len = 0;
    cgt_status_t status;

    memset(&mine, 0, sizeof(mine));
    status = cgt_reg_pack(team, reg, mine.buf, &len);
    mine.len = (uint32_t)len;
    if (test_oob_allgather(&mine, all, sizeof(mine), oob) != 0) {
        return CGT_ERR_BOOTSTRAP;
    }
    return status;
}

/* Symmetric memory of that type, all-to-all through it. */
static inline void st_symmetric(test_oob_t *oob, cgt_team_t *team, const accel_ops_t *accel,
                                accel_mem_type_t type, size_t chunk, uint64_t epoch) {
    int rank = cgt_team_rank(team), size = cgt_team_size(team);
    cgt_rmem_t *rmems[TEST_OOB_MAX_PROCS];
    cgt_status_t status;
    cgt_mem_t *mem;
    char what[64];

    snprintf(what, sizeof(what), "symmetric %s, %zu B", accel_mem_type_string(type), chunk);
    status = cgt_alloc(team, chunk * (size_t)size, type, &mem);
    if (!CHECK(status == CGT_OK, "[%d] %s: cgt_alloc (%s)", rank, what,
               status ? cgt_last_error() : "ok")) {
        return;
    }
    for (int p = 0; p < size; ++p) {
        rmems[p] = cgt_mem_peer(mem, p);
    }
    CHECK(cgt_rmem_ptr(rmems[rank]) == cgt_mem_local(mem), "[%d] %s: own part is local", rank,
          what);
    st_all_to_all(team, accel, rmems, cgt_mem_local(mem), type == ACCEL_MEM_DEVICE, chunk, epoch,
                  what);
    /* bad input: past the region */
    status = cgt_put(team, rmems[(rank + 1) % size], chunk * (size_t)size - 4, what, 8);
    CHECK(status == CGT_ERR_INVALID, "[%d] %s: put past the end fails: %s", rank, what,
          cgt_last_error());
    status = cgt_get(team, what, rmems[(rank + 1) % size], SIZE_MAX - 2, 4);
    CHECK(status == CGT_ERR_INVALID, "[%d] %s: get at a huge offset fails: %s", rank, what,
          cgt_last_error());
    /* nobody frees memory a peer may still read */
    CHECK(test_oob_barrier(oob) == 0, "[%d] %s: barrier before free", rank, what);
    cgt_free(team, mem);
}

/* A buffer of this process registered (own memory: host or device), mapped by every peer,
 * all-to-all through it.  buf: NULL to allocate one. */
static inline void st_registered(test_oob_t *oob, cgt_team_t *team, const accel_ops_t *accel,
                                 accel_mem_type_t type, void *buf, size_t chunk, uint64_t epoch) {
    int rank = cgt_team_rank(team), size = cgt_team_size(team), bad = 0;
    cgt_rmem_t *rmems[TEST_OOB_MAX_PROCS];
    size_t len = chunk * (size_t)size;
    st_packed_t *all = calloc((size_t)size, sizeof(*all));
    cgt_reg_t *reg, *reg2;
    cgt_status_t status;
    bool own = buf == NULL;
    char what[64];

    snprintf(what, sizeof(what), "registered %s%s, %zu B", accel_mem_type_string(type),
             own ? "" : " in a segment", chunk);
    if (own) {
        if (type == ACCEL_MEM_DEVICE) {
            accel->mem_alloc(ACCEL_MEM_DEVICE, len, &buf);
        } else {
            buf = malloc(len);
        }
    }
    status = cgt_register(team, buf, len, &reg);
    if (!CHECK(status == CGT_OK, "[%d] %s: register (%s)", rank, what,
               status ? cgt_last_error() : "ok")) {
        /* the others' exchange and barrier */
        test_oob_allgather(all, all, sizeof(*all), oob);
        test_oob_barrier(oob);
        goto out_free;
    }
    status = cgt_register(team, buf, len, &reg2);
    CHECK(status == CGT_OK && reg2 == reg, "[%d] %s: registering again is a cache hit", rank, what);
    cgt_deregister(team, reg2);
    status = cgt_register(team, buf, len + (type == ACCEL_MEM_DEVICE ? 1 << 20 : 0), &reg2);
    if (type == ACCEL_MEM_DEVICE) {
        CHECK(status == CGT_ERR_INVALID, "[%d] %s: a length past the allocation fails: %s", rank,
              what, cgt_last_error());
    } else if (status == CGT_OK) {
        cgt_deregister(team, reg2);
    }
    status = st_exchange(oob, team, reg, all);
    CHECK(status == CGT_OK, "[%d] %s: pack and exchange", rank, what);
    for (int p = 0; p < size && status == CGT_OK; ++p) {
        status = cgt_peer_map(team, p, all[p].buf, all[p].len, &rmems[p]);
        if (status != CGT_OK) {
            CHECK(0, "[%d] %s: map rank %d's buffer: %s", rank, what, p, cgt_last_error());
        }
    }
    if (status == CGT_OK) {
        if (size > 1) {
            cgt_rmem_t *wrong;
            int owner = (rank + 1) % size;

            status = cgt_peer_map(team, (owner + 1) % size, all[owner].buf, all[owner].len, &wrong);
            CHECK(status == CGT_ERR_INVALID, "[%d] %s: a handle mapped as another rank's fails: %s",
                  rank, what, cgt_last_error());
        }
        status = cgt_peer_map(team, rank, all[rank].buf, 16, &rmems[rank]);
        CHECK(status == CGT_ERR_INVALID, "[%d] %s: a truncated handle fails: %s", rank, what,
              cgt_last_error());
        bad = st_all_to_all(team, accel, rmems, buf, type == ACCEL_MEM_DEVICE, chunk, epoch, what);
        status = cgt_put(team, rmems[(rank + 1) % size], len, what, 1);
        CHECK(status == CGT_ERR_INVALID, "[%d] %s: put past the registered length fails: %s", rank,
              what, cgt_last_error());
        for (int p = 0; p < size; ++p) {
            cgt_peer_unmap(team, rmems[p]);
        }
    }
    (void)bad;
    /* the peers are done with this buffer before it goes */
    test_oob_barrier(oob);
    cgt_deregister(team, reg);
out_free:
    if (own) {
        if (type == ACCEL_MEM_DEVICE) {
            accel->mem_free(buf);
        } else {
            free(buf);
        }
    }
    free(all);
}

/* Entries of /dev/shm that process pid made; pid 0: that processes no longer alive made
 * (leftovers: a live process's segments may be in the middle of their setup, e.g. those of
 * a test running in parallel under make -j). */
#include <dirent.h>
#include <signal.h>
static inline int st_shm_leftovers(pid_t pid) {
    char prefix[64];
    struct dirent *de;
    int n = 0;
    DIR *dir = opendir("/dev/shm");

    if (pid != 0) {
        snprintf(prefix, sizeof(prefix), "cgshm-%d-", (int)pid);
    } else {
        snprintf(prefix, sizeof(prefix), "cgshm-");
    }
    while (dir != NULL && (de = readdir(dir)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0) {
            continue;
        }
        if (pid == 0) {
            long owner = strtol(de->d_name + strlen(prefix), NULL, 10);
            if (owner > 0 && (kill((pid_t)owner, 0) == 0 || errno != ESRCH)) {
                continue; /* alive */
            }
        }
        ++n;
    }
    if (dir != NULL) {
        closedir(dir);
    }
    return n;
}

/* Run fn on each process count of the list (argv: counts, else the defaults); closing line. */
static inline int st_main(int argc, char **argv, const int *defaults, int ndefaults,
                          test_oob_main_fn_t fn, void *arg, double timeout) {
    int counts[16], n = 0, failed_runs = 0, ok_runs = 0;

    for (int i = 1; i < argc && n < 16; ++i) {
        if (argv[i][0] != '-') {
            counts[n++] = atoi(argv[i]);
        }
    }
    if (n == 0) {
        for (n = 0; n < ndefaults; ++n) {
            counts[n] = defaults[n];
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < n; ++i) {
        double t0 = st_now();
        int status[TEST_OOB_MAX_PROCS];
        int nfail = test_oob_run(counts[i], timeout, fn, arg, status);

        printf("%s: %d processes (%.2f s)", nfail == 0 ? "PASS" : "FAIL", counts[i], st_now() - t0);
        for (int r = 0; r < counts[i] && nfail != 0; ++r) {
            printf(" [rank %d: %d]", r, status[r]);
        }
        printf("\n");
        nfail == 0 ? ++ok_runs : ++failed_runs;
    }
    printf("%d passed, %d failed\n", ok_runs, failed_runs);
    return failed_runs == 0 ? 0 : 1;
}

#endif /* CGT_TEST_H */
