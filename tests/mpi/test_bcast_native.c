/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Native MPI_Bcast (pipelined: flat on one node, two-level across nodes), on device buffers or
 * (--kinds=host) host buffers under coll_gpu_host_buffers:
 *
 *   every root in turn (first, last, middle, a node's first rank and not) x communicators (dup
 *   of world, odd/even split, reversed rank order) x types of 1, 2, 4, 8 and 16 bytes x counts
 *   0, 1, odd, a few thousand bytes (many steps under a tiny scratch) and a few hundred KiB;
 *   --big-bytes=N adds N + 3 bytes (int8) and N bytes (double) from the last and a middle root.
 *
 * Every rank checks its whole buffer against the root's pattern, computed here, and that the
 * bytes after it were not touched; the coll_gpu_bcast_algorithm_calls pvar must count the path
 * the parameters select; the results' hashes must agree on every rank, and rank 0 prints
 * "digest int X fp Y" (the check script compares it across forms and topologies).
 *
 * --missing-rank=R: world rank R skips the second of two native calls from root 0 on a world
 * duplicate; every other rank must get an error (MPI_ERR_OTHER, no hang).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_ref.h"
#include "test_native_util.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_BYTES 64

static const struct {
    const char *name;
    size_t size;
} bcast_types[] = {
    {"int8", 1}, {"int16", 2}, {"float", 4}, {"double", 8}, {"double complex", 16},
};
#define NUM_TYPES (sizeof(bcast_types) / sizeof(bcast_types[0]))

static MPI_Datatype type_of(size_t t) {
    switch (t) {
    case 0:
        return MPI_INT8_T;
    case 1:
        return MPI_INT16_T;
    case 2:
        return MPI_FLOAT;
    case 3:
        return MPI_DOUBLE;
    default:
        return MPI_C_DOUBLE_COMPLEX;
    }
}

typedef struct {
    tu_gpu_config_t config;
    tu_pvar_t calls;
    tu_mem_t mem;
    uint32_t salt;
    tn_digest_t digest;
} state_t;

/* byte i of the root's buffer (its world rank, the case's salt); another salt off the root */
static unsigned char pattern(int world_root, uint32_t salt, size_t i) {
    return (unsigned char)mix(((uint64_t)salt << 40) ^ ((uint64_t)world_root << 32) ^ i);
}

static void run_case(state_t *st, const tu_comm_t *comm, size_t t, size_t count, int root) {
    size_t es = bcast_types[t].size, bytes = count * es, len = bytes + GUARD_BYTES;
    int me = comm->world_ranks[comm->rank], world_root = comm->world_ranks[root], rc;
    bool native =
        (count > 0) && (comm->size > 1) &&
        tu_coll_native_expected(&st->config, COLL_GPU_BCAST, comm->size) &&
        (TU_MEM_DEVICE == st->mem || st->config.host_buffers) &&
        !((TU_MEM_DEVICE == st->mem) && tu_staged_auto(&st->config, COLL_GPU_BCAST, comm, bytes));
    /* native: its row's (pipelined 2, binomial 3), 1: staged, -1: nothing counted (Open MPI
     * returns before any coll module on count 0 or one rank; host buffers handed to Open MPI) */
    int slot = native ? tu_native_alg_slot(&st->config, COLL_GPU_BCAST, comm->size, bytes)
               : ((TU_MEM_DEVICE == st->mem) && (count > 0) && (comm->size > 1)) ? 1
                                                                                 : -1;
    char *host = tn_malloc(len), *want = tn_malloc(len);
    uint64_t before[4] = {0}, after[4] = {0}, hash;
    uint64_t *hashes = tn_malloc((size_t)comm->size * sizeof(*hashes));
    void *dev = NULL;
    long bad = 0;

    tu_case_begin("bcast %s count=%zu root=%d comm=%s(%d/%d) expect %s", bcast_types[t].name, count,
                  root, comm->name, comm->rank, comm->size,
                  (2 == slot)   ? "native"
                  : (1 == slot) ? "staged"
                                : "nothing");
    for (size_t i = 0; i < len; ++i) {
        /* the root's data, then a guard every rank keeps */
        want[i] =
            (char)((i < bytes) ? pattern(world_root, st->salt, i) : pattern(me, ~st->salt, i));
        host[i] = (char)(((comm->rank == root) || (i >= bytes)) ? want[i]
                                                                : pattern(me, st->salt + 7777, i));
    }
    if (tu_mem_alloc(st->mem, len, &dev) || tu_mem_write(st->mem, dev, host, len)) {
        tn_setup_failed();
    }
    tu_pvar_read(&st->calls, before, 4);
    rc = MPI_Bcast(dev, (int)count, type_of(t), root, comm->comm);
    tu_pvar_read(&st->calls, after, 4);
    if (MPI_SUCCESS != rc) {
        tu_fail("MPI_Bcast returned %d", rc);
    }
    memset(host, 0x5a, len);
    if (tu_mem_read(st->mem, host, dev, len)) {
        tn_setup_failed();
    }
    for (size_t i = 0; i < len; ++i) {
        if ((host[i] != want[i]) && (bad++ < 3)) {
            tu_fail("byte %zu (%s) is 0x%02x, expected 0x%02x", i,
                    (i < bytes) ? "data" : "after the buffer", (unsigned char)host[i],
                    (unsigned char)want[i]);
        }
    }
    if (bad > 0) {
        tu_fail("%ld of %zu bytes wrong", bad, len);
    }
    tn_check_algorithm_calls("bcast", before, after, 4, slot, NULL);
    /* the same bits on every rank, and into the digest in rank order */
    hash = fnv(TN_HASH_BASIS, host, bytes);
    tn_gather_hashes(hash, comm, hashes);
    tn_check_same_hash(hash, comm, hashes);
    tn_digest_add(&st->digest, false, hashes, (size_t)comm->size * sizeof(*hashes));
    tu_case_end();
    tu_mem_free(st->mem, dev);
    free(host);
    free(want);
    free(hashes);
}

/* World rank missing skips the second call from root 0: the others must fail, not hang. */
static void run_missing(state_t *st, int missing) {
    MPI_Comm comm;
    void *buf = NULL;
    int rank, rc;

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    tu_case_begin("rank %d missing from a native MPI_Bcast", missing);
    if (tu_mem_alloc(st->mem, 4096 * 4, &buf) || tu_mem_write(st->mem, buf, &rank, sizeof(rank))) {
        tn_setup_failed();
    }
    rc = MPI_Bcast(buf, 4096, MPI_FLOAT, 0, comm);
    if (MPI_SUCCESS != rc) {
        tu_fail("the first call returned %d", rc);
    }
    if (rank != missing) {
        rc = MPI_Bcast(buf, 4096, MPI_FLOAT, 0, comm);
        if (MPI_SUCCESS == rc) {
            tu_fail("the call with rank %d missing succeeded", missing);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_case_end();
    tu_mem_free(st->mem, buf);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    state_t st;
    tu_comm_t comms[TU_NUM_COMMS];
    size_t big = 0;
    int missing = -1;
    bool host = false;
    /* elements 0, 1 and 7; then bytes: many 1 KiB steps, a few hundred KiB */
    const size_t counts[] = {0, 1, 7, 3001, 3 * 65536 + 5};
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},
        {"--missing-rank=", TU_ARG_INT, &missing},
        {"--big-bytes=", TU_ARG_SIZE, &big},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_bcast_native", args, &opts);
    memset(&st, 0, sizeof(st));
    st.mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
    tn_setup(&opts, st.mem);
    tn_algorithm_pvar_open("bcast", &st.calls);
    tu_gpu_config_read(&st.config);
    if (missing >= 0) {
        run_missing(&st, missing);
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }

    tn_digest_init(&st.digest);
    tu_comms_create_all(comms);
    for (int c = 0; c < TU_NUM_COMMS; ++c) {
        for (int root = 0; root < comms[c].size; ++root) {
            for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); ++i) {
                /* every type on the small counts, one per root on the large ones */
                size_t t0 = (counts[i] > 7) ? (size_t)(root + (int)i) % NUM_TYPES : 0;
                size_t t1 = (counts[i] > 7) ? t0 + 1 : NUM_TYPES;
                for (size_t t = t0; t < t1; ++t) {
                    size_t count =
                        (counts[i] > 7) ? counts[i] / bcast_types[t].size + 1 : counts[i];
                    /* the same on every rank of the communicator (not a running count: the
                     * odd/even split runs different cases on its two halves) */
                    st.salt = (uint32_t)(((c * 64 + root) * 8 + (int)i) * 8 + (int)t);
                    run_case(&st, &comms[c], t, count, root);
                }
            }
        }
    }
    if (big > 0) {
        tu_comm_t *w = &comms[TU_COMM_WORLD];
        st.salt = 0x7fffff00;
        run_case(&st, w, 0, big + 3, w->size - 1);
        st.salt = 0x7fffff01;
        run_case(&st, w, 3, big / 8, w->size / 2);
    }
    tn_digest_print(&st.digest);
    tu_comms_free_all(comms);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
