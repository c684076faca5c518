/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Native MPI_Allgatherv, MPI_Reduce_scatter, MPI_Alltoall and MPI_Alltoallv on device buffers
 * (or, with --kinds=host, host buffers under coll_gpu_host_buffers), checked for correctness,
 * path and determinism as test_native_collectives checks the fixed-size collectives:
 *
 *   blocks that differ per rank (and per pair of ranks: alltoallv), zero-length blocks for some
 *   ranks, base counts 1, odd, not a multiple of the ranks, a few hundred KiB and --big-bytes
 *   per rank and call; receive blocks laid out in reverse rank order with a gap element between
 *   them, which must stay untouched; MPI_IN_PLACE; communicators: dup of world, odd/even split,
 *   reversed rank order; several types (and ops for reduce_scatter).
 *
 * The copies must be exact.  Reduce_scatter: a native block equals the rank-order reference
 * and the same elements of MPI_Allreduce's result on the same inputs BIT FOR BIT (where the
 * allreduce is native: one node); a staged one (Open MPI's order) bit for bit on integers,
 * within rounding on floating point.  The coll_gpu_<coll>_algorithm_calls pvar must count the
 * path the parameters select, so a call staged where it should be native fails.  Every result
 * is hashed and rank 0 prints "digest int 0x... fp 0x..." (fp: floating-point reduce_scatter)
 * for the check script.
 *
 * --small: counts up to a few dozen elements only (--big-bytes still adds its cases).
 * --peer-missing: the last rank skips a native MPI_Alltoall: the others must get an error
 * within coll_gpu_transport_timeout, never hang.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { C_ALLGATHERV, C_REDUCE_SCATTER, C_ALLTOALL, C_ALLTOALLV, C_NUM } coll_t;

static const char *const coll_names[C_NUM] = {"allgatherv", "reduce_scatter", "alltoall",
                                              "alltoallv"};
static const int coll_ids[C_NUM] = {COLL_GPU_ALLGATHERV, COLL_GPU_REDUCE_SCATTER, COLL_GPU_ALLTOALL,
                                    COLL_GPU_ALLTOALLV};

/* the types of the copies: one of each element size */
static const test_type_t copy_types[] = {T_INT8_SUM, T_FLOAT_SUM, T_INT64_BXOR};
#define NUM_COPY_TYPES (int)(sizeof(copy_types) / sizeof(copy_types[0]))

#define GAP_BYTE 0xa5
#define MAX_RANKS 64

typedef struct {
    tu_gpu_config_t config;
    tu_pvar_t algs[C_NUM];
    tn_digest_t digest;
    uint32_t salt;
    tu_mem_t mem;
} state_t;

/* 2 and up: native (the algorithm's element), 1: staged, -1: nothing counted (host buffers handed
 * to Open MPI).  Across emulated nodes too: other nodes read emulated device scratch through host
 * scratch. */
static int expected_slot(const state_t *st, coll_t c, const tu_comm_t *comm, size_t bytes) {
    /* (auto stages small blocking device calls: tu_staged_auto; the v-forms by their largest
     * block) */
    bool native =
        tu_coll_native_expected(&st->config, coll_ids[c], comm->size) &&
        (TU_MEM_DEVICE == st->mem || st->config.host_buffers) &&
        !((TU_MEM_DEVICE == st->mem) && tu_staged_auto(&st->config, coll_ids[c], comm, bytes));
    return native ? tu_native_alg_slot(&st->config, coll_ids[c], comm->size, bytes)
           : (TU_MEM_DEVICE == st->mem) ? 1
                                        : -1;
}

/* Block of rank r (allgatherv, reduce_scatter): uneven, empty every third rank from rank 1. */
static size_t vcount(int r, size_t count) { return (1 == r % 3) ? 0 : count + (size_t)(r * 7 % 5); }

/* The largest block of n ranks (what the component's rules see of an allgatherv and a
 * reduce_scatter). */
static size_t vcount_largest(int n, size_t count) {
    size_t largest = 0;

    for (int r = 0; r < n; ++r) {
        largest = (vcount(r, count) > largest) ? vcount(r, count) : largest;
    }
    return largest;
}

/* Elements rank i sends to rank j (alltoallv); symmetric for MPI_IN_PLACE. */
static size_t a2a_count(int i, int j, size_t count, bool symmetric) {
    int key = symmetric ? i + j : i + 2 * j;
    return (1 == key % 3) ? 0 : count + (size_t)((symmetric ? key : 3 * i + j) % 4);
}

/* The elements of the largest block of a call of n ranks, what auto's staging rule sees: of
 * any rank (allgatherv, reduce_scatter), of any pair of ranks (alltoallv), else count. */
static size_t largest_block(coll_t c, int n, size_t count, bool in_place) {
    size_t largest = 0;

    if (C_ALLGATHERV == c || C_REDUCE_SCATTER == c) {
        return vcount_largest(n, count);
    }
    if (C_ALLTOALLV != c) {
        return count;
    }
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            size_t pair = a2a_count(i, j, count, in_place);

            largest = (pair > largest) ? pair : largest;
        }
    }
    return largest;
}

/* Blocks in reverse rank order, one gap element after each; returns the elements spanned. */
static size_t layout(const size_t *counts, int n, size_t *displs) {
    size_t pos = 0;
    for (int j = n - 1; j >= 0; --j) {
        displs[j] = pos;
        pos += counts[j] + 1;
    }
    return pos;
}

/* The data world rank from sends to world rank to (alltoall(v)). */
static uint32_t pair_salt(uint32_t salt, int to) { return salt + 100003u * (uint32_t)(to + 1); }

static void to_ints(const size_t *v, int n, int *out) {
    for (int i = 0; i < n; ++i) {
        out[i] = (int)v[i];
    }
}

/* A case's buffers: host images of the input and the receive buffer before the call (rbuf0)
 * and what the receive buffer must hold after it (want, rbytes). */
typedef struct {
    char *in, *rbuf0, *want;
    double *abs_sums; /* reduce_scatter: its inputs' magnitudes per element (NULL: none) */
    size_t in_bytes, rbytes;
    int scounts[MAX_RANKS], sdispls[MAX_RANKS];
    int rcounts[MAX_RANKS], rdispls[MAX_RANKS];
    size_t total; /* reduce_scatter: elements of the input vector */
} bufs_t;

static void run_case(state_t *st, const tu_comm_t *comm, coll_t c, test_type_t t, size_t count,
                     bool in_place) {
    size_t es = types[t].size;
    int n = comm->size, r = comm->rank, me = comm->world_ranks[r];
    size_t sc[MAX_RANKS] = {0}, sd[MAX_RANKS] = {0}, rc[MAX_RANKS] = {0}, rd[MAX_RANKS] = {0};
    MPI_Datatype dt = type_handle(t);
    uint64_t before[TN_MAX_ALGS] = {0}, after[TN_MAX_ALGS] = {0}, hash, *hashes;
    int slot = expected_slot(st, c, comm, largest_block(c, n, count, in_place) * es),
        mrc = MPI_SUCCESS;
    /* (hierarchical reduces in another order than the reference: checked against hierarchical
     * MPI_Allreduce bit for bit below) */
    bool exact = !types[t].fp || C_REDUCE_SCATTER != c || 2 == slot;
    void *d_in = NULL, *d_out = NULL;
    char *got;
    tu_counters_t ctr_before, ctr_after;
    bufs_t b;

    ++st->salt;
    memset(&b, 0, sizeof(b));
    tu_case_begin("%s %s count=%zu%s comm=%s(%d/%d) expect %s", coll_names[c], types[t].name, count,
                  in_place ? " in-place" : "", comm->name, r, n, (slot >= 2) ? "native" : "staged");
    hashes = tn_malloc((size_t)n * sizeof(*hashes));

    switch (c) {
    case C_ALLGATHERV: {
        size_t span;
        for (int p = 0; p < n; ++p) {
            rc[p] = vcount(p, count);
        }
        span = layout(rc, n, rd);
        b.rbytes = span * es;
        b.in_bytes = rc[r] * es;
        b.in = tn_malloc(b.in_bytes);
        b.rbuf0 = tn_malloc(b.rbytes);
        b.want = tn_malloc(b.rbytes);
        memset(b.rbuf0, GAP_BYTE, b.rbytes);
        memset(b.want, GAP_BYTE, b.rbytes);
        for (size_t i = 0; i < rc[r]; ++i) {
            gen(t, me, st->salt, i, b.in + i * es);
        }
        for (int p = 0; p < n; ++p) {
            for (size_t i = 0; i < rc[p]; ++i) {
                gen(t, comm->world_ranks[p], st->salt, i, b.want + (rd[p] + i) * es);
            }
        }
        if (in_place) {
            memcpy(b.rbuf0 + rd[r] * es, b.in, b.in_bytes);
        }
        break;
    }
    case C_REDUCE_SCATTER: {
        size_t offset = 0;
        for (int p = 0; p < n; ++p) {
            rc[p] = vcount(p, count);
            offset += (p < r) ? rc[p] : 0;
            b.total += rc[p];
        }
        b.in_bytes = b.total * es;
        b.in = tn_malloc(b.in_bytes);
        for (size_t e = 0; e < b.total; ++e) {
            gen(t, me, st->salt, e, b.in + e * es);
        }
        /* in place: the input in the receive buffer, the result at its start */
        b.rbytes = rc[r] * es;
        b.rbuf0 = tn_malloc(in_place ? b.in_bytes : b.rbytes);
        if (in_place) {
            memcpy(b.rbuf0, b.in, b.in_bytes);
        } else {
            memset(b.rbuf0, GAP_BYTE, b.rbytes);
        }
        b.want = tn_malloc(b.rbytes);
        b.abs_sums = calloc(rc[r] + 1, sizeof(double));
        for (size_t i = 0; i < rc[r]; ++i) {
            b.abs_sums[i] =
                reference_reduce(t, comm->world_ranks, n, st->salt, offset + i, b.want + i * es);
        }
        break;
    }
    case C_ALLTOALL:
    case C_ALLTOALLV: {
        size_t sspan, rspan;
        for (int p = 0; p < n; ++p) {
            sc[p] = (C_ALLTOALL == c) ? count : a2a_count(r, p, count, in_place);
            rc[p] = (C_ALLTOALL == c) ? count : a2a_count(p, r, count, in_place);
        }
        if (C_ALLTOALL == c) {
            for (int p = 0; p < n; ++p) {
                sd[p] = rd[p] = (size_t)p * count;
            }
            sspan = rspan = (size_t)n * count;
        } else {
            sspan = layout(sc, n, sd);
            rspan = layout(rc, n, rd);
        }
        b.in_bytes = sspan * es;
        b.rbytes = rspan * es;
        b.in = tn_malloc(b.in_bytes);
        b.rbuf0 = tn_malloc(b.rbytes);
        b.want = tn_malloc(b.rbytes);
        memset(b.in, GAP_BYTE, b.in_bytes);
        memset(b.rbuf0, GAP_BYTE, b.rbytes);
        memset(b.want, GAP_BYTE, b.rbytes);
        for (int p = 0; p < n; ++p) {
            for (size_t i = 0; i < sc[p]; ++i) {
                gen(t, me, pair_salt(st->salt, comm->world_ranks[p]), i, b.in + (sd[p] + i) * es);
            }
            for (size_t i = 0; i < rc[p]; ++i) {
                gen(t, comm->world_ranks[p], pair_salt(st->salt, me), i, b.want + (rd[p] + i) * es);
                if (in_place) {
                    /* what goes to p is taken from where p's data arrives */
                    gen(t, me, pair_salt(st->salt, comm->world_ranks[p]), i,
                        b.rbuf0 + (rd[p] + i) * es);
                }
            }
        }
        break;
    }
    default:
        break;
    }
    to_ints(sc, n, b.scounts);
    to_ints(sd, n, b.sdispls);
    to_ints(rc, n, b.rcounts);
    to_ints(rd, n, b.rdispls);
    d_in = in_place ? NULL : tn_mem_copy_of(st->mem, b.in, b.in_bytes);
    d_out = tn_mem_copy_of(st->mem, b.rbuf0,
                           (C_REDUCE_SCATTER == c && in_place) ? b.in_bytes : b.rbytes);

    int nalgs = tu_pvar_read(&st->algs[c], before, TN_MAX_ALGS);
    switch (c) {
    case C_ALLGATHERV:
        mrc = MPI_Allgatherv(in_place ? MPI_IN_PLACE : d_in, b.rcounts[r], dt, d_out, b.rcounts,
                             b.rdispls, dt, comm->comm);
        break;
    case C_REDUCE_SCATTER:
        mrc = MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : d_in, d_out, b.rcounts, dt, op_handle(t),
                                 comm->comm);
        break;
    case C_ALLTOALL:
        tu_counters_read(&ctr_before);
        mrc = MPI_Alltoall(in_place ? MPI_IN_PLACE : d_in, in_place ? 0 : (int)count,
                           in_place ? MPI_DATATYPE_NULL : dt, d_out, (int)count, dt, comm->comm);
        tu_counters_read(&ctr_after);
        /* direct on one node: per step its blocks go into the scratch in one (strided) copy,
         * then its own block out and one fetch per peer, n + 1 copies a step (in place: n),
         * where a copy per block made it 2n - 1 (2n - 2); the steps: a block's bytes (data
         * movement is in bytes of the type signature) in areas of the scratch's half over n
         * (coll_gpu_native_ctx.c: max(one_shot_max, 2 chunk), 256-byte aligned) */
        if ((2 == slot) && (TU_MEM_DEVICE == st->mem) && !tu_multi_node(&st->config, n) &&
            (count > 0) && (ctr_after.emu_copies > ctr_before.emu_copies)) {
            size_t half = (size_t)st->config.one_shot_max_bytes;
            size_t two = 2 * (size_t)st->config.native_chunk_size, per_step, steps;
            uint64_t copies = ctr_after.emu_copies - ctr_before.emu_copies, want;

            half = (half > two) ? half : two;
            half = (half + 255) & ~(size_t)255;
            half = (half < 512) ? 512 : half;
            per_step = half / (size_t)n;
            steps = (count * es + per_step - 1) / per_step;
            want = (uint64_t)steps * (uint64_t)(n + (in_place ? 0 : 1));
            if (copies != want) {
                tu_fail("alltoall direct, %zu step(s) on %d ranks: %llu copies, want %llu (a "
                        "step: the blocks in one copy, %sa fetch per peer)",
                        steps, n, (unsigned long long)copies, (unsigned long long)want,
                        in_place ? "" : "its own block out, ");
            }
        }
        break;
    default:
        mrc = MPI_Alltoallv(in_place ? MPI_IN_PLACE : d_in, in_place ? NULL : b.scounts,
                            in_place ? NULL : b.sdispls, in_place ? MPI_DATATYPE_NULL : dt, d_out,
                            b.rcounts, b.rdispls, dt, comm->comm);
        break;
    }
    tu_pvar_read(&st->algs[c], after, TN_MAX_ALGS);
    if (MPI_SUCCESS != mrc) {
        tu_fail("MPI call returned %d", mrc);
    }
    got = tn_malloc(b.rbytes);
    if ((b.rbytes > 0) && tu_mem_read(st->mem, got, d_out, b.rbytes)) {
        tn_setup_failed();
    }
    tn_check_elements(t, got, b.want, b.rbytes / es, exact, b.abs_sums, n, "the reference");
    /* reduce_scatter = allreduce's elements, bit for bit, when both run natively in the same
     * order: rank order on one node (across nodes allreduce runs ring or hierarchical), and
     * hierarchical's node partials in node order across nodes */
    if ((C_REDUCE_SCATTER == c) && tu_allreduce_native_expected(&st->config, n) &&
        !((TU_MEM_DEVICE == st->mem) &&
          tu_staged_auto(&st->config, COLL_GPU_ALLREDUCE, comm, b.total * es)) &&
        (((2 == slot) && !tu_multi_node(&st->config, n)) ||
         ((3 == slot) && tu_allreduce_hierarchical_expected(&st->config, n, b.total * es)))) {
        size_t offset = 0;
        for (int p = 0; p < r; ++p) {
            offset += rc[p];
        }
        tn_check_allreduce_elements(st->mem, t, b.in, b.total, got, offset, rc[r], comm);
    }
    tn_check_algorithm_calls(coll_names[c], before, after, nalgs, slot, NULL);
    /* the digest: every rank's result hash, in rank order */
    hash = fnv(TN_HASH_BASIS, got, b.rbytes);
    tn_gather_hashes(hash, comm, hashes);
    tn_digest_add(&st->digest, types[t].fp && C_REDUCE_SCATTER == c, hashes,
                  (size_t)n * sizeof(*hashes));
    tu_case_end();
    if (NULL != d_in) {
        tu_mem_free(st->mem, d_in);
    }
    tu_mem_free(st->mem, d_out);
    free(b.in);
    free(b.rbuf0);
    free(b.want);
    free(b.abs_sums);
    free(got);
    free(hashes);
}

/* --peer-missing: the last rank skips a native MPI_Alltoall. */
static int missing_alltoall(MPI_Comm comm, int rank, void *sbuf, void *rbuf) {
    (void)rank;
    return MPI_Alltoall(sbuf, 1024, MPI_FLOAT, rbuf, 1024, MPI_FLOAT, comm);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    state_t st;
    tu_comm_t comms[TU_NUM_COMMS];
    size_t big = 0, counts[TN_MAX_COUNTS];
    int ncounts;
    bool host = false, peer_missing = false, small = false;
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},
        {"--peer-missing", TU_ARG_FLAG, &peer_missing},
        /* no count of a few hundred KiB: many-step runs across nodes */
        {"--small", TU_ARG_FLAG, &small},
        {"--big-bytes=", TU_ARG_SIZE, &big},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_native_vcolls", args, &opts);
    memset(&st, 0, sizeof(st));
    st.mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
    tn_setup(&opts, st.mem);
    if (tu_world_size > MAX_RANKS) {
        if (0 == tu_world_rank) {
            printf("SKIP: more than %d ranks\n", MAX_RANKS);
        }
        tu_finish(TU_EXIT_SKIP);
    }
    for (int c = 0; c < C_NUM; ++c) {
        tn_algorithm_pvar_open(coll_names[c], &st.algs[c]);
    }
    tu_gpu_config_read(&st.config);
    if (peer_missing) {
        tn_run_peer_missing(st.mem, "MPI_Alltoall", missing_alltoall);
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }

    ncounts = tn_counts(tu_world_size, small, counts);
    tn_digest_init(&st.digest);
    tu_comms_create_all(comms);
    for (int c = 0; c < TU_NUM_COMMS; ++c) {
        for (int k = 0; k < C_NUM; ++k) {
            int ntypes = (C_REDUCE_SCATTER == k) ? T_NUM : NUM_COPY_TYPES;
            for (int ti = 0; ti < ntypes; ++ti) {
                test_type_t t = (C_REDUCE_SCATTER == k) ? (test_type_t)ti : copy_types[ti];
                for (int i = 0; i < ncounts; ++i) {
                    run_case(&st, &comms[c], (coll_t)k, t, counts[i], (i + ti + c) % 2);
                }
            }
        }
    }
    if (big > 0) {
        /* big bytes per rank and call: the allgatherv output, the reduce_scatter input, the
         * alltoall(v) send buffer */
        tu_comm_t *w = &comms[TU_COMM_WORLD], *rev = &comms[TU_COMM_SPLIT_REVERSED];
        size_t nw = (size_t)w->size, nr = (size_t)rev->size;
        run_case(&st, w, C_ALLGATHERV, T_FLOAT_SUM, big / 4 / nw, false);
        run_case(&st, rev, C_ALLGATHERV, T_INT8_SUM, big / nr + 1, true);
        run_case(&st, w, C_REDUCE_SCATTER, T_FLOAT_SUM, big / 4 / nw, false);
        run_case(&st, rev, C_REDUCE_SCATTER, T_INT32_SUM, big / 4 / nr + 1, true);
        run_case(&st, w, C_ALLTOALL, T_INT64_BXOR, big / 8 / nw + 1, false);
        run_case(&st, rev, C_ALLTOALL, T_INT8_SUM, big / nr, true);
        run_case(&st, w, C_ALLTOALLV, T_FLOAT_SUM, big / 4 / nw, false);
        run_case(&st, rev, C_ALLTOALLV, T_INT8_SUM, big / nr + 3, true);
    }
    tn_digest_print(&st.digest);
    tu_comms_free_all(comms);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
