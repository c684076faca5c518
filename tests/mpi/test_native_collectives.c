/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Native MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast, MPI_Reduce, MPI_Gather and
 * MPI_Scatter on device buffers (or, with
 * --kinds=host, host buffers under coll_gpu_host_buffers), checked for correctness, path and
 * determinism, as test_allreduce_native checks MPI_Allreduce:
 *
 *   types (float and double sum and max of order-dependent values, int8 sum that wraps, int32
 *   sum, int64 bxor) x counts (1, odd, not a multiple of the ranks, --big-count bytes per call
 *   in all) x MPI_IN_PLACE (all but bcast) x communicators (dup of world, odd/even split,
 *   reversed rank order) x roots (the rooted ones, every root in turn).  Arguments MPI says are
 *   not significant are NULL (a non-root's receive buffer in reduce and gather, its send buffer
 *   in scatter): the component must not touch them.
 *
 * Reduce_scatter_block and reduce: a native result must equal the rank-order reference and
 * the same elements of MPI_Allreduce's result on the same inputs BIT FOR BIT; a staged one
 * (Open MPI's order) bit for bit on integers, within rounding on floating point.  Allgather,
 * bcast, gather and scatter: exact.
 * The coll_gpu_<coll>_algorithm_calls pvar must count the path the parameters select.  Every
 * result is hashed, the hashes compared across the communicator, and rank 0 prints "digest int
 * 0x... fp 0x..." (fp: the floating-point reduce_scatter_block results) for the check script.
 *
 * --small: counts up to a few dozen elements only (--big-bytes still adds its cases).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { C_RSB, C_ALLGATHER, C_BCAST, C_REDUCE, C_GATHER, C_SCATTER, C_NUM } coll_t;

static const char *const coll_names[C_NUM] = {
    "reduce_scatter_block", "allgather", "bcast", "reduce", "gather", "scatter"};
static const int coll_ids[C_NUM] = {COLL_GPU_REDUCE_SCATTER_BLOCK,
                                    COLL_GPU_ALLGATHER,
                                    COLL_GPU_BCAST,
                                    COLL_GPU_REDUCE,
                                    COLL_GPU_GATHER,
                                    COLL_GPU_SCATTER};

/* the collectives whose result is a reduction (reference in rank order) */
static bool reduces(coll_t c) { return C_RSB == c || C_REDUCE == c; }

typedef struct {
    tu_gpu_config_t config;
    tu_pvar_t algs[C_NUM];
    tn_digest_t digest;
    uint32_t salt;
    tu_mem_t mem;
} state_t;

/* 2 and up: native (the algorithm's element), 1: staged, -1: nothing counted (host buffers handed
 * to Open MPI, or a bcast on one rank, which Open MPI's MPI layer returns before any coll module).
 */
static int expected_slot(const state_t *st, coll_t c, const tu_comm_t *comm, size_t bytes) {
    if (C_BCAST == c && 1 == comm->size) {
        return -1;
    }
    /* (auto stages small blocking device calls: tu_staged_auto) */
    bool native =
        tu_coll_native_expected(&st->config, coll_ids[c], comm->size) &&
        (TU_MEM_DEVICE == st->mem || st->config.host_buffers) &&
        !((TU_MEM_DEVICE == st->mem) && tu_staged_auto(&st->config, coll_ids[c], comm, bytes));
    return native ? tu_native_alg_slot(&st->config, coll_ids[c], comm->size, bytes)
           : (TU_MEM_DEVICE == st->mem) ? 1
                                        : -1;
}

static void run_case(state_t *st, const tu_comm_t *comm, coll_t c, test_type_t t, size_t count,
                     bool in_place, int root) {
    size_t es = types[t].size, n = (size_t)comm->size, blk = count * es;
    bool is_root = comm->rank == root;
    size_t in_elems = (C_RSB == c || C_SCATTER == c) ? n * count : count;
    size_t out_elems = (C_RSB == c)                          ? (in_place ? n * count : count)
                       : (C_ALLGATHER == c || C_GATHER == c) ? n * count
                                                             : count;
    /* the elements of the result this rank holds */
    size_t want_elems = (C_ALLGATHER == c) ? n * count
                        : (C_GATHER == c)  ? (is_root ? n * count : 0)
                        : (C_REDUCE == c)  ? (is_root ? count : 0)
                                           : count;
    char *in = malloc(in_elems * es), *want = malloc(want_elems * es + 1),
         *got = malloc(out_elems * es);
    /* the reductions' inputs' magnitudes per element: the rounding another order may differ by */
    double *abs_sums = calloc(want_elems + 1, sizeof(double));
    void *d_in = NULL, *d_out = NULL, *sarg, *rarg, *result;
    uint64_t before[TN_MAX_ALGS] = {0}, after[TN_MAX_ALGS] = {0}, hash, *hashes;
    int slot = expected_slot(st, c, comm, count * types[t].size), rc = MPI_SUCCESS,
        me = comm->world_ranks[comm->rank];
    /* (hierarchical reduces in another order than the reference: checked against hierarchical
     * MPI_Allreduce bit for bit below) */
    bool exact = !types[t].fp || !reduces(c) || 2 == slot;

    ++st->salt;
    tu_case_begin("%s %s count=%zu%s root=%d comm=%s(%d/%d) expect %s", coll_names[c],
                  types[t].name, count, in_place ? " in-place" : "", root, comm->name, comm->rank,
                  comm->size, (slot >= 2) ? "native" : "staged");
    hashes = malloc(n * sizeof(*hashes));
    /* inputs and references */
    if (C_RSB == c) {
        for (size_t i = 0; i < in_elems; ++i) {
            gen(t, me, st->salt, i, in + i * es);
        }
        for (size_t i = 0; i < count; ++i) {
            abs_sums[i] = reference_reduce(t, comm->world_ranks, comm->size, st->salt,
                                           (size_t)comm->rank * count + i, want + i * es);
        }
    } else if (C_REDUCE == c) {
        for (size_t i = 0; i < count; ++i) {
            gen(t, me, st->salt, i, in + i * es);
        }
        for (size_t i = 0; i < want_elems; ++i) {
            abs_sums[i] =
                reference_reduce(t, comm->world_ranks, comm->size, st->salt, i, want + i * es);
        }
    } else if (C_ALLGATHER == c || C_GATHER == c) {
        for (size_t i = 0; i < count; ++i) {
            gen(t, me, st->salt, i, in + i * es);
        }
        for (size_t e = 0; e < want_elems; ++e) {
            gen(t, comm->world_ranks[e / count], st->salt, e % count, want + e * es);
        }
    } else if (C_SCATTER == c) {
        /* the root's vector: block r for rank r; garbage off the root */
        for (size_t e = 0; e < in_elems; ++e) {
            gen(t, comm->world_ranks[root], st->salt + (is_root ? 0 : 1000000), e, in + e * es);
        }
        for (size_t i = 0; i < count; ++i) {
            gen(t, comm->world_ranks[root], st->salt, (size_t)comm->rank * count + i,
                want + i * es);
        }
    } else {
        for (size_t i = 0; i < count; ++i) {
            gen(t, comm->world_ranks[root], st->salt, i, want + i * es);
            gen(t, me, st->salt + 1000000, i, in + i * es); /* garbage off the root */
        }
        if (comm->rank == root) {
            memcpy(in, want, blk);
        }
    }
    if (tu_mem_alloc(st->mem, out_elems * es, &d_out) ||
        tu_mem_alloc(st->mem, in_elems * es, &d_in)) {
        tn_setup_failed();
    }
    /* the arguments of the call; in place, MPI_IN_PLACE only where MPI allows it */
    sarg = d_in;
    rarg = d_out;
    result = d_out;
    memset(got, 0xa5, out_elems * es);
    if (C_BCAST == c) {
        rc = tu_mem_write(st->mem, d_out, in, blk);
    } else if (C_RSB == c || (C_REDUCE == c && in_place && is_root)) {
        rc = tu_mem_write(st->mem, in_place ? d_out : d_in, in, in_elems * es);
        sarg = in_place ? MPI_IN_PLACE : d_in;
    } else if (C_SCATTER == c) {
        rc = tu_mem_write(st->mem, d_in, in, in_elems * es) ||
             tu_mem_write(st->mem, d_out, got, out_elems * es);
        if (in_place && is_root) {
            /* the root's block stays in its send buffer */
            rarg = MPI_IN_PLACE;
            result = (char *)d_in + (size_t)root * blk;
        }
    } else if (in_place && (C_ALLGATHER == c || is_root)) {
        /* the rank's block already in place, the others garbage */
        memcpy(got + (size_t)comm->rank * blk, in, blk);
        rc = tu_mem_write(st->mem, d_out, got, n * blk);
        sarg = MPI_IN_PLACE;
    } else {
        rc = tu_mem_write(st->mem, d_in, in, blk);
    }
    if (0 != rc) {
        tn_setup_failed();
    }
    /* not significant off the root: NULL, which the component must not look at */
    if (!is_root && (C_REDUCE == c || C_GATHER == c)) {
        rarg = NULL;
    } else if (!is_root && C_SCATTER == c) {
        sarg = NULL;
    }
    int nalgs = tu_pvar_read(&st->algs[c], before, TN_MAX_ALGS);
    switch (c) {
    case C_RSB:
        rc = MPI_Reduce_scatter_block(sarg, d_out, (int)count, type_handle(t), op_handle(t),
                                      comm->comm);
        break;
    case C_ALLGATHER:
        rc = MPI_Allgather(sarg, (int)count, type_handle(t), d_out, (int)count, type_handle(t),
                           comm->comm);
        break;
    case C_REDUCE:
        rc = MPI_Reduce(sarg, rarg, (int)count, type_handle(t), op_handle(t), root, comm->comm);
        break;
    case C_GATHER:
        rc = MPI_Gather(sarg, (int)count, type_handle(t), rarg, (int)count, type_handle(t), root,
                        comm->comm);
        break;
    case C_SCATTER:
        rc = MPI_Scatter(sarg, (int)count, type_handle(t), rarg, (int)count, type_handle(t), root,
                         comm->comm);
        break;
    default:
        rc = MPI_Bcast(d_out, (int)count, type_handle(t), root, comm->comm);
        break;
    }
    tu_pvar_read(&st->algs[c], after, TN_MAX_ALGS);
    if (MPI_SUCCESS != rc) {
        tu_fail("MPI call returned %d", rc);
    }
    tu_mem_read(st->mem, got, result, want_elems * es);
    tn_check_elements(t, got, want, want_elems, exact, reduces(c) ? abs_sums : NULL, comm->size,
                      "the reference");
    /* reduce_scatter_block and reduce = allreduce's elements, bit for bit, when both run
     * natively in the same order: rank order on one node (across nodes allreduce runs ring or
     * hierarchical), and hierarchical's node partials in node order across nodes */
    if (reduces(c) && tu_allreduce_native_expected(&st->config, comm->size) &&
        !((TU_MEM_DEVICE == st->mem) &&
          tu_staged_auto(&st->config, COLL_GPU_ALLREDUCE, comm, in_elems * es)) &&
        (((2 == slot) && !tu_multi_node(&st->config, comm->size)) ||
         ((3 == slot) &&
          tu_allreduce_hierarchical_expected(&st->config, comm->size, in_elems * es)))) {
        tn_check_allreduce_elements(st->mem, t, in, in_elems, got,
                                    (C_RSB == c) ? (size_t)comm->rank * count : 0, want_elems,
                                    comm);
    }
    tn_check_algorithm_calls(coll_names[c], before, after, nalgs, slot, NULL);
    /* the digest: every rank's result hash, in rank order */
    hash = fnv(TN_HASH_BASIS, got, want_elems * es);
    tn_gather_hashes(hash, comm, hashes);
    if (C_ALLGATHER == c || C_BCAST == c) {
        /* every rank holds the same data */
        tn_check_same_hash(hash, comm, hashes);
    }
    tn_digest_add(&st->digest, types[t].fp && reduces(c), hashes, n * sizeof(*hashes));
    tu_case_end();
    tu_mem_free(st->mem, d_in);
    tu_mem_free(st->mem, d_out);
    free(in);
    free(want);
    free(abs_sums);
    free(got);
    free(hashes);
}

/* --peer-missing[=reduce]: the last rank skips a native MPI_Bcast (or an MPI_Reduce to rank
 * 0, in place there; elsewhere the receive buffer is not significant). */
static int missing_bcast(MPI_Comm comm, int rank, void *sbuf, void *rbuf) {
    (void)rank;
    (void)rbuf;
    return MPI_Bcast(sbuf, 1024, MPI_FLOAT, 0, comm);
}

static int missing_reduce(MPI_Comm comm, int rank, void *sbuf, void *rbuf) {
    (void)rbuf;
    return MPI_Reduce((0 == rank) ? MPI_IN_PLACE : sbuf, (0 == rank) ? sbuf : NULL, 1024, MPI_FLOAT,
                      MPI_SUM, 0, comm);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    state_t st;
    tu_comm_t comms[TU_NUM_COMMS];
    size_t big = 0, counts[TN_MAX_COUNTS];
    int ncounts;
    bool host = false, peer_missing = false, missing_in_reduce = false, small = false;
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},
        {"--peer-missing", TU_ARG_FLAG, &peer_missing},
        {"--peer-missing=reduce", TU_ARG_FLAG, &missing_in_reduce},
        /* no count of a few hundred KiB: many-step runs across nodes */
        {"--small", TU_ARG_FLAG, &small},
        {"--big-bytes=", TU_ARG_SIZE, &big},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_native_collectives", args, &opts);
    memset(&st, 0, sizeof(st));
    st.mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
    tn_setup(&opts, st.mem);
    for (int c = 0; c < C_NUM; ++c) {
        tn_algorithm_pvar_open(coll_names[c], &st.algs[c]);
    }
    tu_gpu_config_read(&st.config);
    if (peer_missing || missing_in_reduce) {
        tn_run_peer_missing(st.mem, missing_in_reduce ? "MPI_Reduce" : "MPI_Bcast",
                            missing_in_reduce ? missing_reduce : missing_bcast);
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }

    ncounts = tn_counts(tu_world_size, small, counts);
    tn_digest_init(&st.digest);
    tu_comms_create_all(comms);
    for (int c = 0; c < TU_NUM_COMMS; ++c) {
        for (int k = 0; k < C_NUM; ++k) {
            for (int t = 0; t < T_NUM; ++t) {
                for (int i = 0; i < ncounts; ++i) {
                    bool in_place = (C_BCAST != k) && (i + t + c) % 2;
                    int root = (int)((st.salt + 1) % (uint32_t)comms[c].size);
                    run_case(&st, &comms[c], (coll_t)k, (test_type_t)t, counts[i], in_place, root);
                }
            }
        }
    }
    if (big > 0) {
        /* big bytes per call in all: the rsb input, the allgather output, the bcast buffer */
        tu_comm_t *w = &comms[TU_COMM_WORLD], *rev = &comms[TU_COMM_SPLIT_REVERSED];
        run_case(&st, w, C_RSB, T_FLOAT_SUM, big / 4 / (size_t)w->size, false, 0);
        run_case(&st, rev, C_RSB, T_INT32_SUM, big / 4 / (size_t)rev->size + 1, true, 0);
        run_case(&st, w, C_ALLGATHER, T_FLOAT_SUM, big / 4 / (size_t)w->size + 1, false, 0);
        run_case(&st, rev, C_ALLGATHER, T_INT8_SUM, big / (size_t)rev->size, true, 0);
        run_case(&st, w, C_BCAST, T_FLOAT_SUM, big / 4, false, 0);
        run_case(&st, rev, C_BCAST, T_INT8_SUM, big + 3, false, rev->size - 1);
        run_case(&st, w, C_REDUCE, T_FLOAT_SUM, big / 4, false, w->size - 1);
        run_case(&st, rev, C_REDUCE, T_INT32_SUM, big / 4 + 1, true, 0);
        run_case(&st, w, C_GATHER, T_DOUBLE_SUM, big / 8 / (size_t)w->size + 1, true, 1 % w->size);
        run_case(&st, rev, C_GATHER, T_INT8_SUM, big / (size_t)rev->size, false, 0);
        run_case(&st, w, C_SCATTER, T_FLOAT_SUM, big / 4 / (size_t)w->size + 1, false, 0);
        run_case(&st, rev, C_SCATTER, T_INT8_SUM, big / (size_t)rev->size, true, rev->size - 1);
    }
    tn_digest_print(&st.digest);
    tu_comms_free_all(comms);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
