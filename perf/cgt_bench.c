/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shmem-transport put latency and bandwidth per backend, against a plain copy of the same
 * size in one process (the bound).  Two processes (forked: no MPI), rank 0 puts into rank 1.
 *
 *   cgt_bench [-b posix|cma|ipc|ucx] [-a emulated|cuda] [-t UCX_TLS] [-e MAX_BYTES]
 *     posix: symmetric host memory (shared segments), one node
 *     cma:   a registered malloc'ed buffer of the peer (process_vm_writev), one node
 *     ipc:   symmetric device memory through the accelerator's IPC, one node
 *     ucx:   symmetric host memory between two emulated nodes (UCX_TLS, default tcp)
 *
 * latency: half the round trip of put + signal, answered by the same; bandwidth: a burst of
 * puts, then quiet + signal, acknowledged; memcpy: the same burst as local copies (host
 * memcpy, or the accelerator's copy device to device for ipc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgt.h"
#include "test_oob_fork.h"

typedef struct {
    const char *backend;
    const char *tls;
    accel_backend_kind_t accel_kind;
    size_t max;
} bench_opts_t;

static double bench_now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench_iters(size_t len) {
    size_t n = ((size_t)256 << 20) / len;

    return n > 1000 ? 1000 : n < 5 ? 5 : (int)n;
}

static void bench_progress(void *team) { cgt_team_progress(team); }

static int bench_main(test_oob_t *oob, int rank, int size, void *arg) {
    const bench_opts_t *o = arg;
    bool device = strcmp(o->backend, "ipc") == 0, cma = strcmp(o->backend, "cma") == 0;
    int nodes[2] = {0, strcmp(o->backend, "ucx") == 0 ? 1 : 0}, peer = 1 - rank;
    const accel_ops_t *accel = NULL;
    const char *reason = NULL;
    cgt_team_params_t p;
    cgt_team_t *team;
    cgt_mem_t *mem;
    cgt_rmem_t *dst;
    cgt_reg_t *reg = NULL;
    void *src, *local, *copy_dst;
    uint64_t seq = 0;
    struct {
        uint32_t len;
        unsigned char buf[CGT_PACKED_MAX];
    } packed[3];
    size_t plen = 0;

    (void)size;
    if (device && accel_init(o->accel_kind, &accel, &reason) != ACCEL_OK) {
        fprintf(stderr, "accelerator: %s\n", reason);
        return 1;
    }
    memset(&p, 0, sizeof(p));
    p.rank = rank;
    p.size = 2;
    p.node_of_rank = nodes;
    p.oob_allgather = test_oob_allgather;
    p.oob_ctx = oob;
    p.accel = accel;
    p.timeout = 120;
    p.ucx_tls = o->tls;
    if (cgt_team_create(&p, &team) != CGT_OK ||
        cgt_alloc(team, o->max, device ? ACCEL_MEM_DEVICE : ACCEL_MEM_HOST, &mem) != CGT_OK) {
        fprintf(stderr, "[%d] setup: %s\n", rank, cgt_last_error());
        return 1;
    }
    test_oob_set_progress(oob, bench_progress, team);
    local = cgt_mem_local(mem);
    dst = cgt_mem_peer(mem, peer);
    if (device) {
        accel->mem_alloc(ACCEL_MEM_DEVICE, o->max, &src);
        accel->mem_alloc(ACCEL_MEM_DEVICE, o->max, &copy_dst);
    } else {
        src = malloc(o->max);
        copy_dst = malloc(o->max);
        memset(src, rank + 1, o->max);
        memset(copy_dst, 0, o->max);
    }
    if (cma) {
        /* the peer's malloc'ed buffer, registered: reached by cross-memory attach */
        local = malloc(o->max);
        memset(local, 0, o->max);
        cgt_register(team, local, o->max, &reg);
        cgt_reg_pack(team, reg, packed[0].buf, &plen);
        packed[0].len = (uint32_t)plen;
        test_oob_allgather(&packed[0], &packed[1], sizeof(packed[0]), oob);
        if (cgt_peer_map(team, peer, packed[1 + peer].buf, packed[1 + peer].len, &dst) != CGT_OK) {
            fprintf(stderr, "[%d] map: %s\n", rank, cgt_last_error());
            return 1;
        }
    }
    if (rank == 0) {
        printf("# cgt_bench: backend %s (%s), rank 0 puts into rank 1\n", o->backend,
               cgt_backend_string(
                   cgt_team_peer_backend(team, 1, device ? ACCEL_MEM_DEVICE : ACCEL_MEM_HOST)));
        printf("# %12s %12s %12s %14s %8s\n", "bytes", "lat_us", "put_GB/s", "memcpy_GB/s",
               "put/cpy");
    }
    test_oob_barrier(oob);
    for (size_t len = 8; len <= o->max; len *= 2) {
        int iters = bench_iters(len);
        double t0, lat, bw, cpy;
        cgt_status_t st = CGT_OK;

        /* latency: ping-pong of put + signal */
        t0 = bench_now();
        for (int i = 0; i < iters && st == CGT_OK; ++i) {
            ++seq;
            if (rank == 0) {
                st = cgt_put(team, dst, 0, src, len);
                st = st ? st : cgt_signal(team, peer, 0, seq);
                st = st ? st : cgt_quiet(team, peer);
                st = st ? st : cgt_wait(team, 0, seq);
            } else {
                st = cgt_wait(team, 0, seq);
                st = st ? st : cgt_put(team, dst, 0, src, len);
                st = st ? st : cgt_signal(team, peer, 0, seq);
                st = st ? st : cgt_quiet(team, peer);
            }
        }
        lat = (bench_now() - t0) / iters / 2 * 1e6;
        /* bandwidth: a burst of puts, one signal, an acknowledgement */
        ++seq;
        t0 = bench_now();
        if (rank == 0) {
            for (int i = 0; i < iters && st == CGT_OK; ++i) {
                st = cgt_put(team, dst, 0, src, len);
            }
            st = st ? st : cgt_quiet(team, peer);
            st = st ? st : cgt_signal(team, peer, 0, seq);
            st = st ? st : cgt_quiet(team, peer);
            st = st ? st : cgt_wait(team, 0, seq);
        } else {
            st = cgt_wait(team, 0, seq);
            st = st ? st : cgt_signal(team, peer, 0, seq);
            st = st ? st : cgt_quiet(team, peer);
        }
        bw = (double)len * iters / (bench_now() - t0) / 1e9;
        if (st != CGT_OK) {
            fprintf(stderr, "[%d] %zu bytes: %s\n", rank, len, cgt_last_error());
            return 1;
        }
        if (rank == 0) {
            t0 = bench_now();
            for (int i = 0; i < iters; ++i) {
                if (device) {
                    accel->memcpy(copy_dst, src, len);
                } else {
                    memcpy(copy_dst, src, len);
                    __asm__ __volatile__("" ::: "memory");
                }
            }
            cpy = (double)len * iters / (bench_now() - t0) / 1e9;
            printf("  %12zu %12.2f %12.3f %14.3f %7.0f%%\n", len, lat, bw, cpy, 100.0 * bw / cpy);
        }
    }
    test_oob_barrier(oob);
    test_oob_set_progress(oob, NULL, NULL);
    if (cma) {
        cgt_peer_unmap(team, dst);
        cgt_deregister(team, reg);
        free(local);
    }
    cgt_free(team, mem);
    cgt_team_destroy(team);
    if (device) {
        accel->mem_free(src);
        accel->mem_free(copy_dst);
        accel_finalize();
    } else {
        free(src);
        free(copy_dst);
    }
    return 0;
}

int main(int argc, char **argv) {
    bench_opts_t o = {.backend = "posix",
                      .tls = "tcp",
                      .accel_kind = ACCEL_BACKEND_EMULATED,
                      .max = (size_t)256 << 20};
    int opt;

    while ((opt = getopt(argc, argv, "b:a:t:e:")) != -1) {
        switch (opt) {
        case 'b':
            o.backend = optarg;
            break;
        case 'a':
            o.accel_kind =
                strcmp(optarg, "cuda") == 0 ? ACCEL_BACKEND_CUDA : ACCEL_BACKEND_EMULATED;
            break;
        case 't':
            o.tls = optarg;
            break;
        case 'e':
            o.max = strtoull(optarg, NULL, 0);
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-b posix|cma|ipc|ucx] [-a emulated|cuda] [-t TLS] "
                    "[-e MAX]\n",
                    argv[0]);
            return 2;
        }
    }
    return test_oob_run(2, 900, bench_main, &o, NULL) == 0 ? 0 : 1;
}
