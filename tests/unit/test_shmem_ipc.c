/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport on one node, device memory (the cuda_ipc backend through the accelerator's
 * IPC): symmetric device memory, registered device buffers, the peer-mapping cache across a
 * free and reallocation at the same address (a new buffer id: a new mapping, the new data),
 * and host registrations next to an accelerator.
 *
 *   test_shmem_ipc [--accel=emulated|cuda] [NPROCS...]     (default: emulated, 2 3 4)
 * With CUDA, every process uses device 0: several processes on one GPU (contrib/gpu-check.sh).
 */
#include "cgt_test.h"

static accel_backend_kind_t ipc_accel_kind = ACCEL_BACKEND_EMULATED;

/* Rank (rank + 1) % size writes a pattern into rank's buffer; registers, frees and reallocates
 * it twice: the second time the peer must see the new allocation, never the old mapping. */
static void ipc_realloc(test_oob_t *oob, cgt_team_t *team, const accel_ops_t *accel,
                        uint64_t *epoch) {
    int rank = cgt_team_rank(team), size = cgt_team_size(team);
    int writer_to = (rank + 1) % size, from = (rank + size - 1) % size;
    st_packed_t *all = calloc((size_t)size, sizeof(*all));
    size_t len = 1 << 16;
    unsigned char *host = malloc(len);
    void *addrs[2] = {NULL, NULL};
    cgt_rmem_t *rmem;
    cgt_status_t status;
    cgt_reg_t *reg;
    void *buf;

    for (int round = 0; round < 2; ++round) {
        accel->mem_alloc(ACCEL_MEM_DEVICE, len, &buf);
        addrs[round] = buf;
        memset(host, 0, len);
        accel->memcpy(buf, host, len);
        status = cgt_register(team, buf, len, &reg);
        CHECK(status == CGT_OK, "[%d] realloc round %d: register (%s)", rank, round,
              cgt_last_error());
        st_exchange(oob, team, reg, all);
        status = cgt_peer_map(team, writer_to, all[writer_to].buf, all[writer_to].len, &rmem);
        CHECK(status == CGT_OK && cgt_rmem_ptr(rmem) != NULL,
              "[%d] realloc round %d: map rank %d's buffer (%s)", rank, round, writer_to,
              cgt_last_error());
        if (status == CGT_OK) {
            fill(host, len, st_seed(rank, writer_to, (unsigned)round + 50));
            status = cgt_put(team, rmem, 0, host, len);
            cgt_signal(team, writer_to, 0, ++*epoch);
            CHECK(status == CGT_OK, "[%d] realloc round %d: put", rank, round);
            cgt_peer_unmap(team, rmem);
        } else {
            cgt_signal(team, writer_to, 0, ++*epoch);
        }
        status = cgt_wait(team, 0, *epoch);
        accel->memcpy(host, buf, len);
        CHECK(status == CGT_OK && has_pattern(host, len, st_seed(from, rank, (unsigned)round + 50)),
              "[%d] realloc round %d: rank %d's data is in this allocation", rank, round, from);
        test_oob_barrier(oob);
        cgt_deregister(team, reg);
        accel->mem_free(buf);
    }
    if (addrs[0] != addrs[1]) {
        printf("NOTE: [%d] the allocator gave another address the second time\n", rank);
    }
    free(host);
    free(all);
}

static int ipc_main(test_oob_t *oob, int rank, int size, void *arg) {
    st_opts_t o = {.timeout = 30};
    const char *reason = NULL;
    cgt_team_t *team;
    cgt_status_t status;
    uint64_t epoch = 0;

    (void)arg;
    if (accel_init(ipc_accel_kind, &o.accel, &reason) != ACCEL_OK) {
        printf("SKIP: [%d] accelerator: %s\n", rank, reason ? reason : "?");
        return 0;
    }
    status = st_team_create(oob, rank, size, &o, &team);
    if (!CHECK(status == CGT_OK, "[%d] team create (%s)", rank, cgt_last_error())) {
        accel_finalize();
        return test_failed;
    }
    CHECK(size == 1 || cgt_team_peer_backend(team, (rank + 1) % size, ACCEL_MEM_DEVICE) ==
                           CGT_BACKEND_CUDA_IPC,
          "[%d] device memory of local peers by cuda_ipc", rank);
    st_symmetric(oob, team, o.accel, ACCEL_MEM_DEVICE, 8, ++epoch);
    st_symmetric(oob, team, o.accel, ACCEL_MEM_DEVICE, 1 << 20, ++epoch);
    st_registered(oob, team, o.accel, ACCEL_MEM_DEVICE, NULL, 4096, ++epoch);
    st_registered(oob, team, o.accel, ACCEL_MEM_DEVICE, NULL, 2 << 20, ++epoch);
    st_registered(oob, team, o.accel, ACCEL_MEM_HOST, NULL, 4096, ++epoch);
    if (size > 1) {
        /* slot 0 from here on: the last epoch used it with 2 * epoch */
        epoch = 2 * epoch;
        ipc_realloc(oob, team, o.accel, &epoch);
    }
    test_oob_barrier(oob);
    cgt_team_destroy(team);
    CHECK(ipc_accel_kind != ACCEL_BACKEND_EMULATED ||
              accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 0,
          "[%d] no device allocation left", rank);
    accel_finalize();
    return test_failed;
}

int main(int argc, char **argv) {
    static const int defaults[] = {2, 3, 4};

    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--accel=cuda") == 0) {
            ipc_accel_kind = ACCEL_BACKEND_CUDA;
        }
    }
    return st_main(argc, argv, defaults, 3, ipc_main, NULL, 120);
}
