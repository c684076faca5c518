/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Communicator life cycles: coll/gpu creates per-communicator state (module, saved previous
 * functions, lazily a staging context) and must release it with the communicator.
 *
 *   phase "plain":  --cycles MPI_Comm_dup + MPI_Comm_free
 *   phase "device": the same, with a device collective (checked) on the dup'ed communicator
 *                   every --every cycles
 *   --idup:         MPI_Comm_idup + MPI_Wait instead of MPI_Comm_dup (Open MPI selects the
 *                   collective components inside the request's progress: a setup that blocks
 *                   there, coll_gpu_native_setup=create, must not hang)
 *   --nonblocking:  the device collective is MPI_Iallreduce + MPI_Wait (under
 *                   coll_gpu_native_setup=create native from the communicator's first call)
 *
 * After each phase, against a baseline taken after a warm-up (so that caches Open MPI and
 * the component keep for the life of the process already exist):
 *   - resident memory grew by no more than --rss-limit KiB;
 *   - the emulated backend's live allocations (device, managed, pinned) are back to the
 *     baseline: nothing allocated for a communicator survives it;
 *   - the process has the same number of open file descriptors;
 *   - no new coll/gpu segment of this job's processes in /dev/shm (cgshm-PID-...; checked by
 *     rank 0 between barriers: other jobs, which make check runs alongside, may create theirs).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
/* strdup, strtok_r, strcasecmp, alarm: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define MAX_SHM_ENTRIES 4096

typedef struct {
    tu_options_t opts;
    long cycles;
    long every;
    long rss_limit_kib;
    bool plain;
    bool device;
    bool idup;
    bool nonblocking;
} options_t;

typedef struct {
    long rss_kib;
    int fds;
    size_t live[ACCEL_MEM_DEVICE + 1];
    char **shm;
    int nshm;
} snapshot_t;

static void usage(void) {
    printf("usage: test_comm_cycles [options]\n"
           "  --cycles=N      dup/free cycles per phase (default 10000)\n"
           "  --every=N       a device collective every N cycles in the device phase (100)\n"
           "  --rss-limit=KIB allowed growth of resident memory per phase (default 2048)\n"
           "  --phase=plain|device|both (default both)\n"
           "  --idup          MPI_Comm_idup + MPI_Wait instead of MPI_Comm_dup\n"
           "  --nonblocking   the device collective is MPI_Iallreduce + MPI_Wait\n"
           "  the collective uses the first kind of --kinds (default device if the accelerator\n"
           "  is there, else host)\n");
    tu_options_usage();
}

static int parse_options(int argc, char **argv, options_t *o) {
    memset(o, 0, sizeof(*o));
    tu_options_default(&o->opts);
    o->cycles = 10000;
    o->every = 100;
    o->rss_limit_kib = 2048;
    o->plain = o->device = true;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int rc = tu_options_parse_one(&o->opts, arg);
        if (rc < 0) {
            return -1;
        } else if (rc > 0) {
            continue;
        }
        if (0 == strncmp(arg, "--cycles=", 9)) {
            o->cycles = atol(arg + 9);
        } else if (0 == strncmp(arg, "--every=", 8)) {
            o->every = atol(arg + 8);
        } else if (0 == strncmp(arg, "--rss-limit=", 12)) {
            o->rss_limit_kib = atol(arg + 12);
        } else if (0 == strcmp(arg, "--phase=plain")) {
            o->device = false;
        } else if (0 == strcmp(arg, "--phase=device")) {
            o->plain = false;
        } else if (0 == strcmp(arg, "--phase=both")) {
            o->plain = o->device = true;
        } else if (0 == strcmp(arg, "--idup")) {
            o->idup = true;
        } else if (0 == strcmp(arg, "--nonblocking")) {
            o->nonblocking = true;
        } else {
            return -1;
        }
    }
    if (o->every <= 0 || o->cycles < 0) {
        return -1;
    }
    if (0 == o->opts.num_kinds) {
        tu_options_parse_one(&o->opts, "--kinds=device");
    }
    return 0;
}

static long rss_kib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (NULL == f) {
        return -1;
    }
    if (2 != fscanf(f, "%ld %ld", &pages, &resident)) {
        resident = -1;
    }
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int count_entries(const char *path, char ***names_p) {
    DIR *dir = opendir(path);
    struct dirent *entry;
    int n = 0;
    if (NULL == dir) {
        return -1;
    }
    while (NULL != (entry = readdir(dir))) {
        if ('.' == entry->d_name[0]) {
            continue;
        }
        if (NULL != names_p && n < MAX_SHM_ENTRIES) {
            if (0 == n) {
                *names_p = calloc(MAX_SHM_ENTRIES, sizeof(char *));
            }
            (*names_p)[n] = strdup(entry->d_name);
        }
        n++;
    }
    closedir(dir);
    return n;
}

static void snapshot_free(snapshot_t *s) {
    for (int i = 0; i < s->nshm && i < MAX_SHM_ENTRIES; i++) {
        free(s->shm[i]);
    }
    free(s->shm);
    memset(s, 0, sizeof(*s));
}

/* Collective: the barriers put every rank's creations and releases inside the window. */
static void snapshot_take(snapshot_t *s) {
    memset(s, 0, sizeof(*s));
    tu_settle_retired_teams(); /* freed communicators' teams go once their peers are done */
#ifdef __GLIBC__
    /* give freed heap back so that RSS measures what is still in use */
    malloc_trim(0);
#endif
    s->rss_kib = rss_kib();
    s->fds = count_entries("/proc/self/fd", NULL);
    if (NULL != tu_accel && ACCEL_BACKEND_EMULATED == tu_accel_backend) {
        for (int t = 0; t <= ACCEL_MEM_DEVICE; t++) {
            s->live[t] = accel_emulated_live_allocations(t);
        }
    }
    if (0 == tu_world_rank) {
        s->nshm = count_entries("/dev/shm", &s->shm);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The pids of the job's processes (MPI_COMM_WORLD order), for telling its segments apart. */
static pid_t *job_pids;

static void job_pids_gather(void) {
    pid_t mine = getpid();

    job_pids = calloc((size_t)tu_world_size, sizeof(pid_t));
    if (NULL == job_pids) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, job_pids, (int)sizeof(mine), MPI_BYTE,
                  MPI_COMM_WORLD);
}

/* A segment of coll/gpu's shmem transport ("cgshm-PID-...") created by a process of this job. */
static bool shm_is_ours(const char *name) {
    const char *prefix = "cgshm-";
    long pid;

    if (0 != strncmp(name, prefix, strlen(prefix))) {
        return false;
    }
    pid = strtol(name + strlen(prefix), NULL, 10);
    for (int r = 0; r < tu_world_size; r++) {
        if ((pid_t)pid == job_pids[r]) {
            return true;
        }
    }
    return false;
}

static bool shm_has(const snapshot_t *s, const char *name) {
    for (int i = 0; i < s->nshm && i < MAX_SHM_ENTRIES; i++) {
        if (0 == strcmp(s->shm[i], name)) {
            return true;
        }
    }
    return false;
}

static void check_against(const options_t *o, const snapshot_t *base, const snapshot_t *now) {
    static const char *const type_names[] = {"host", "pinned", "managed", "device"};

    if (base->rss_kib < 0 || now->rss_kib < 0) {
        tu_fail("cannot read /proc/self/statm");
    } else if (now->rss_kib - base->rss_kib > o->rss_limit_kib) {
        tu_fail("resident memory grew by %ld KiB (%ld -> %ld), limit %ld KiB",
                now->rss_kib - base->rss_kib, base->rss_kib, now->rss_kib, o->rss_limit_kib);
    }
    if (now->fds != base->fds) {
        tu_fail("open file descriptors: %d -> %d", base->fds, now->fds);
    }
    for (int t = 0; t <= ACCEL_MEM_DEVICE; t++) {
        if (now->live[t] != base->live[t]) {
            tu_fail("live emulated %s allocations: %zu -> %zu", type_names[t], base->live[t],
                    now->live[t]);
        }
    }
    if (0 == tu_world_rank) {
        for (int i = 0; i < now->nshm && i < MAX_SHM_ENTRIES; i++) {
            /* Open MPI's and UCX's segments, and other jobs' (make check runs tests in
             * parallel), are not this test's business */
            if (shm_is_ours(now->shm[i]) && !shm_has(base, now->shm[i])) {
                tu_fail("new entry in /dev/shm: %s", now->shm[i]);
            }
        }
    }
    if (tu_verbose > 0) {
        printf("[rank %d] rss %ld -> %ld KiB, fds %d -> %d, device allocations %zu -> %zu\n",
               tu_world_rank, base->rss_kib, now->rss_kib, base->fds, now->fds,
               base->live[ACCEL_MEM_DEVICE], now->live[ACCEL_MEM_DEVICE]);
    }
}

/* A checked allreduce on `mpi_comm` (1001 int32) in memory `kind`; MPI_Iallreduce + MPI_Wait
 * with --nonblocking. */
static void device_collective(const options_t *o, MPI_Comm mpi_comm, const tu_kind_t *kind,
                              uint32_t salt, const tu_gpu_config_t *config, long *staged_expected) {
    coll_gpu_coll_t coll = o->nonblocking ? COLL_GPU_IALLREDUCE : COLL_GPU_ALLREDUCE;
    MPI_Request request = MPI_REQUEST_NULL;
    tu_comm_t comm;
    tu_coll_case_t *c;
    tu_expect_t expect;
    tu_counters_t before, after;
    tu_coll_params_t p = {
        .coll = coll,
        .type = TU_TYPE_INT32,
        .op = TU_OP_SUM,
        .count = 1001,
        .comm = &comm,
        .kind = *kind,
        .salt = salt,
    };
    int rc;

    tu_comm_wrap(mpi_comm, "dup", &comm);
    if (0 != tu_coll_case_create(&p, &c)) {
        fprintf(stderr, "[rank %d] cannot set up the collective: aborting\n", tu_world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    tu_coll_case_expect(c, config, NULL, &expect);
    tu_counters_read(&before);
    rc = tu_coll_case_start(c, &request);
    if ((MPI_SUCCESS == rc) && (MPI_REQUEST_NULL != request)) {
        rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    tu_counters_read(&after);
    if (MPI_SUCCESS != rc) {
        tu_fail("%s on a dup'ed communicator returned %d", tu_coll_name(coll), rc);
    }
    tu_coll_case_verify(c);
    tu_check_counters(&before, &after, coll, 1, &expect);
    if (TU_PATH_STAGED == expect.path) {
        (*staged_expected)++;
    }
    tu_coll_case_destroy(c);
    /* the communicator is freed by the caller: only forget the wrapper */
    free(comm.world_ranks);
}

/* MPI_Comm_dup, or MPI_Comm_idup + MPI_Wait */
static int comm_dup(const options_t *o, MPI_Comm *dup) {
    MPI_Request request;
    int rc;

    if (!o->idup) {
        return MPI_Comm_dup(MPI_COMM_WORLD, dup);
    }
    rc = MPI_Comm_idup(MPI_COMM_WORLD, dup, &request);
    return (MPI_SUCCESS == rc) ? MPI_Wait(&request, MPI_STATUS_IGNORE) : rc;
}

static void run_phase(const options_t *o, const tu_kind_t *kind, bool with_collective,
                      const tu_gpu_config_t *config) {
    snapshot_t base, now;
    tu_counters_t before, after;
    long staged_expected = 0;
    coll_gpu_coll_t coll = o->nonblocking ? COLL_GPU_IALLREDUCE : COLL_GPU_ALLREDUCE;
    double t0;

    /* warm-up outside the window: first-use caches of Open MPI and of the component */
    for (int i = 0; i < 100; i++) {
        MPI_Comm dup;
        comm_dup(o, &dup);
        if (with_collective && 0 == i % 50) {
            device_collective(o, dup, kind, 0xC0000000u + i, config, &staged_expected);
        }
        MPI_Comm_free(&dup);
    }
    staged_expected = 0;

    snapshot_take(&base);
    tu_case_begin(
        "%ld %s/MPI_Comm_free cycles%s%s", o->cycles, o->idup ? "MPI_Comm_idup" : "MPI_Comm_dup",
        with_collective ? ", a collective on kind " : "", with_collective ? kind->name : "");
    tu_counters_read(&before);
    t0 = MPI_Wtime();
    for (long i = 0; i < o->cycles; i++) {
        MPI_Comm dup;
        if (MPI_SUCCESS != comm_dup(o, &dup)) {
            tu_fail("%s failed at cycle %ld", o->idup ? "MPI_Comm_idup" : "MPI_Comm_dup", i);
            break;
        }
        MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        if (with_collective && 0 == (i + 1) % o->every) {
            device_collective(o, dup, kind, (uint32_t)i, config, &staged_expected);
        }
        if (MPI_SUCCESS != MPI_Comm_free(&dup)) {
            tu_fail("MPI_Comm_free failed at cycle %ld", i);
            break;
        }
    }
    tu_counters_read(&after);
    snapshot_take(&now);
    check_against(o, &base, &now);
    if (tu_counters_available() &&
        (long)(after.staged[coll] - before.staged[coll]) != staged_expected) {
        tu_fail("calls_staged[%s] +%llu over the phase, expected %ld", tu_coll_name(coll),
                (unsigned long long)(after.staged[coll] - before.staged[coll]), staged_expected);
    }
    if (0 == tu_world_rank) {
        printf("phase %s: %ld cycles in %.2f s\n", with_collective ? "device" : "plain", o->cycles,
               MPI_Wtime() - t0);
    }
    tu_case_end();
    snapshot_free(&base);
    snapshot_free(&now);
}

int main(int argc, char **argv) {
    options_t o;
    tu_gpu_config_t config;

    MPI_Init(&argc, &argv);
    if (0 != parse_options(argc, argv, &o)) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (0 == rank) {
            fprintf(stderr, "test_comm_cycles: bad arguments\n");
            usage();
        }
        tu_finish(TU_EXIT_FAIL);
    }
    tu_setup_or_exit(&o.opts);
    tu_gpu_config_read(&config);
    job_pids_gather();
    if (o.plain) {
        run_phase(&o, &o.opts.kinds[0], false, &config);
    }
    if (o.device) {
        run_phase(&o, &o.opts.kinds[0], true, &config);
    }
    free(job_pids);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
