/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's transport teams (coll_gpu_team.c), through coll_gpu_transport_check: the
 * first device-buffer collective of each communicator sets up its team and checks that every
 * rank reaches every other (host and device scratch, signals, local barrier).
 *
 * Every cycle creates communicators of several shapes (a dup of MPI_COMM_WORLD, halves by
 * parity, the world in reverse order), runs a device-buffer allreduce on each, checks its
 * result and frees them.  Checked:
 *   - coll_gpu_teams_created grows by one per communicator that ran a device collective, and
 *     not at all with --host (teams are lazy);
 *   - nothing leaks over the cycles: file descriptors, /dev/shm segments of this process
 *     (cgshm-<pid>-*), emulated device allocations.
 * check_team.sh checks the verbose lines ("transport check on ...: ok ... on N nodes").
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "accel_emulated.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int count_fds(void) {
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (NULL == dir) {
        return -1;
    }
    while (NULL != (e = readdir(dir))) {
        n += ('.' != e->d_name[0]);
    }
    closedir(dir);
    return n;
}

static int count_shm_segments(void) {
    char prefix[64];
    DIR *dir = opendir("/dev/shm");
    struct dirent *e;
    int n = 0;

    if (NULL == dir) {
        return 0;
    }
    snprintf(prefix, sizeof(prefix), "cgshm-%d-", (int)getpid());
    while (NULL != (e = readdir(dir))) {
        n += (0 == strncmp(e->d_name, prefix, strlen(prefix)));
    }
    closedir(dir);
    return n;
}

/* An allreduce of ints on one communicator: rank r contributes r + 1 + i at element i. */
static void allreduce_case(MPI_Comm comm, const char *name, tu_mem_t mem) {
    int rank, size, count = 1001, rc;
    void *buf = NULL;
    int *host = malloc(sizeof(int) * (size_t)count);

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    tu_case_begin("allreduce on %s (%s)", name, tu_mem_name(mem));
    if (NULL == host || 0 != tu_int_buffer_create(mem, (size_t)count, rank + 1, &buf)) {
        tu_fail("allocation failed");
        goto out;
    }
    rc = MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_INT, MPI_SUM, comm);
    if (MPI_SUCCESS != rc) {
        tu_fail("MPI_Allreduce returned %d", rc);
        goto out;
    }
    tu_mem_read(mem, host, buf, sizeof(int) * (size_t)count);
    for (int i = 0; i < count; ++i) {
        int want = size * (size + 1) / 2 + size * i;
        if (host[i] != want) {
            tu_fail("element %d: %d, expected %d", i, host[i], want);
            break;
        }
    }
out:
    if (NULL != buf) {
        tu_mem_free(mem, buf);
    }
    free(host);
    tu_case_end();
}

int main(int argc, char **argv) {
    tu_options_t opts;
    tu_pvar_t teams;
    int cycles = 10, fds0 = 0, world_rank, world_size;
    bool host_only = false;
    uint64_t teams0, expected = 0;
    size_t device0 = 0;
    const tu_arg_t args[] = {
        {"--cycles=", TU_ARG_INT, &cycles},
        {"--host", TU_ARG_FLAG, &host_only},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    tu_parse_args(argc, argv, "test_team", args, &opts);
    tu_setup_or_exit(&opts);
    tu_pvar_open_required("coll_gpu_teams_created", &teams);
    teams0 = tu_pvar_read_element(&teams, 0);

    for (int cycle = 0; cycle < cycles; ++cycle) {
        tu_mem_t mem = host_only ? TU_MEM_HOST : TU_MEM_DEVICE;
        MPI_Comm dup, half, reversed;

        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &reversed);
        allreduce_case(dup, "dup of world", mem);
        allreduce_case(half, "half by parity", mem);
        allreduce_case(reversed, "world reversed", mem);
        /* twice on one communicator: one team */
        allreduce_case(reversed, "world reversed, again", mem);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&half);
        MPI_Comm_free(&reversed);
        expected += host_only ? 0 : 3;
        /* freed communicators' teams go once their peers are done with them */
        tu_settle_retired_teams();
        if (0 == cycle) {
            /* after the first cycle: everything allocated once per process is there */
            fds0 = count_fds();
            device0 = (NULL != tu_accel && ACCEL_BACKEND_EMULATED == tu_accel_backend)
                          ? accel_emulated_live_allocations(ACCEL_MEM_DEVICE)
                          : 0;
        }
    }

    tu_case_begin("teams: lazy, one per communicator");
    if (tu_pvar_read_element(&teams, 0) - teams0 != expected) {
        tu_fail("coll_gpu_teams_created +%llu, expected +%llu",
                (unsigned long long)(tu_pvar_read_element(&teams, 0) - teams0),
                (unsigned long long)expected);
    }
    tu_case_end();

    tu_case_begin("nothing leaked over %d cycles", cycles);
    if (cycles > 1 && count_fds() != fds0) {
        tu_fail("open file descriptors: %d after the first cycle, %d at the end", fds0,
                count_fds());
    }
    if (0 != count_shm_segments()) {
        tu_fail("%d /dev/shm segments of this process left", count_shm_segments());
    }
    if (cycles > 1 && NULL != tu_accel && ACCEL_BACKEND_EMULATED == tu_accel_backend &&
        accel_emulated_live_allocations(ACCEL_MEM_DEVICE) != device0) {
        tu_fail("device allocations: %zu after the first cycle, %zu at the end", device0,
                accel_emulated_live_allocations(ACCEL_MEM_DEVICE));
    }
    tu_case_end();

    tu_finish(tu_summary(MPI_COMM_WORLD));
}
