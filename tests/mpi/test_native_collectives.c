/*
 * Native MPI_Reduce_scatter_block, MPI_Allgather and MPI_Bcast on device buffers (or, with
 * --kinds=host, host buffers under coll_gpu_host_buffers), checked for correctness, path and
 * determinism, as test_allreduce_native checks MPI_Allreduce:
 *
 *   types (float and double sum and max of order-dependent values, int8 sum that wraps, int32
 *   sum, int64 bxor) x counts (1, odd, not a multiple of the ranks, --big-count bytes per call
 *   in all) x MPI_IN_PLACE (reduce_scatter_block, allgather) x communicators (dup of world,
 *   odd/even split, reversed rank order) x roots (bcast).
 *
 * Reduce_scatter_block: a native block must equal the rank-order reference and the same block
 * of MPI_Allreduce's result on the same inputs BIT FOR BIT; a staged one (Open MPI's order)
 * bit for bit on integers, within rounding on floating point.  Allgather and bcast: exact.
 * The coll_gpu_<coll>_algorithm_calls pvar must count the path the parameters select.  Every
 * result is hashed, the hashes compared across the communicator, and rank 0 prints "digest int
 * 0x... fp 0x..." (fp: the floating-point reduce_scatter_block results) for the check script.
 *
 * --small: counts up to a few dozen elements only (--big-bytes still adds its cases).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_ref.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { C_RSB, C_ALLGATHER, C_BCAST, C_NUM } coll_t;

static const char *const coll_names[C_NUM] = {"reduce_scatter_block", "allgather", "bcast"};
static const int coll_ids[C_NUM] = {COLL_GPU_REDUCE_SCATTER_BLOCK, COLL_GPU_ALLGATHER,
                                    COLL_GPU_BCAST};

typedef struct {
    tu_gpu_config_t config;
    tu_pvar_t algs[C_NUM];
    uint64_t digest_int, digest_fp;
    uint32_t salt;
    tu_mem_t mem;
    bool emulated; /* coll_gpu_accelerator=emulated: no UCX path to its device scratch */
} state_t;

/* 2: native, 1: staged, -1: nothing counted (host buffers handed to Open MPI, or a bcast on
 * one rank, which Open MPI's MPI layer returns before any coll module).  Device calls spanning
 * emulated nodes are staged: UCX reaches no emulated device scratch. */
static int expected_slot(const state_t *st, coll_t c, const tu_comm_t *comm) {
    if (C_BCAST == c && 1 == comm->size) {
        return -1;
    }
    bool spans = st->config.ranks_per_node > 0 && comm->size > st->config.ranks_per_node;
    bool native = tu_coll_native_expected(&st->config, coll_ids[c], comm->size) &&
                  (TU_MEM_DEVICE == st->mem || st->config.host_buffers) &&
                  !(spans && TU_MEM_DEVICE == st->mem && st->emulated);
    return native ? 2 : (TU_MEM_DEVICE == st->mem) ? 1 : -1;
}

static bool fp_close(test_type_t t, const char *g, const char *w) {
    double gv = (4 == types[t].size) ? *(const float *)g : *(const double *)g;
    double wv = (4 == types[t].size) ? *(const float *)w : *(const double *)w;
    return fabs(gv - wv) <= ((4 == types[t].size) ? 1e-4 : 1e-12) * (fabs(wv) + 1.0);
}

static void setup_fail(void) {
    fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void run_case(state_t *st, const tu_comm_t *comm, coll_t c, test_type_t t, size_t count,
                     bool in_place, int root) {
    size_t es = types[t].size, n = (size_t)comm->size, blk = count * es;
    size_t in_elems = (C_RSB == c) ? n * count : count;
    size_t out_elems = (C_RSB == c)         ? (in_place ? n * count : count)
                       : (C_ALLGATHER == c) ? n * count
                                            : count;
    size_t want_elems = (C_ALLGATHER == c) ? n * count : count;
    char *in = malloc(in_elems * es), *want = malloc(want_elems * es),
         *got = malloc(want_elems * es);
    char *ar = NULL, x[8];
    void *d_in = NULL, *d_out = NULL, *d_ar = NULL;
    uint64_t before[3] = {0}, after[3] = {0}, hash, *hashes;
    int slot = expected_slot(st, c, comm), rc = MPI_SUCCESS, me = comm->world_ranks[comm->rank];
    bool exact = !types[t].fp || C_RSB != c || 2 == slot;
    long bad = 0;

    ++st->salt;
    tu_case_begin("%s %s count=%zu%s root=%d comm=%s(%d/%d) expect %s", coll_names[c],
                  types[t].name, count, in_place ? " in-place" : "", root, comm->name, comm->rank,
                  comm->size, (2 == slot) ? "native" : "staged");
    hashes = malloc(n * sizeof(*hashes));
    /* inputs and references */
    if (C_RSB == c) {
        for (size_t i = 0; i < in_elems; ++i) {
            gen(t, me, st->salt, i, in + i * es);
        }
        for (size_t i = 0; i < count; ++i) {
            size_t e = (size_t)comm->rank * count + i;
            gen(t, comm->world_ranks[0], st->salt, e, want + i * es);
            for (int r = 1; r < comm->size; ++r) {
                gen(t, comm->world_ranks[r], st->salt, e, x);
                apply(t, want + i * es, x);
            }
        }
    } else if (C_ALLGATHER == c) {
        for (size_t i = 0; i < count; ++i) {
            gen(t, me, st->salt, i, in + i * es);
        }
        for (int r = 0; r < comm->size; ++r) {
            for (size_t i = 0; i < count; ++i) {
                gen(t, comm->world_ranks[r], st->salt, i, want + ((size_t)r * count + i) * es);
            }
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
        setup_fail();
    }
    if (C_BCAST == c) {
        rc = tu_mem_write(st->mem, d_out, in, blk);
    } else if (C_RSB == c) {
        rc = tu_mem_write(st->mem, in_place ? d_out : d_in, in, in_elems * es);
    } else if (in_place) {
        /* the rank's block already in place, the others garbage */
        memset(got, 0xa5, n * blk);
        memcpy(got + (size_t)comm->rank * blk, in, blk);
        rc = tu_mem_write(st->mem, d_out, got, n * blk);
    } else {
        rc = tu_mem_write(st->mem, d_in, in, blk);
    }
    if (0 != rc) {
        setup_fail();
    }
    tu_pvar_read(&st->algs[c], before, 3);
    switch (c) {
    case C_RSB:
        rc = MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : d_in, d_out, (int)count,
                                      type_handle(t), op_handle(t), comm->comm);
        break;
    case C_ALLGATHER:
        rc = MPI_Allgather(in_place ? MPI_IN_PLACE : d_in, (int)count, type_handle(t), d_out,
                           (int)count, type_handle(t), comm->comm);
        break;
    default:
        rc = MPI_Bcast(d_out, (int)count, type_handle(t), root, comm->comm);
        break;
    }
    tu_pvar_read(&st->algs[c], after, 3);
    if (MPI_SUCCESS != rc) {
        tu_fail("MPI call returned %d", rc);
    }
    tu_mem_read(st->mem, got, d_out, want_elems * es);
    for (size_t i = 0; i < want_elems; ++i) {
        bool same = 0 == memcmp(got + i * es, want + i * es, es);
        if (!same && !exact) {
            same = fp_close(t, got + i * es, want + i * es);
        }
        if (!same && bad++ < 3) {
            tu_fail("element %zu differs from the reference", i);
        }
    }
    if (bad > 0) {
        tu_fail("%ld of %zu elements wrong", bad, want_elems);
    }
    /* reduce_scatter_block = allreduce's block, bit for bit, when both run natively */
    if ((C_RSB == c) && (2 == slot) && tu_allreduce_native_expected(&st->config, comm->size)) {
        ar = malloc(in_elems * es);
        if (tu_mem_alloc(st->mem, in_elems * es, &d_ar) ||
            tu_mem_write(st->mem, d_in, in, in_elems * es)) {
            setup_fail();
        }
        rc = MPI_Allreduce(d_in, d_ar, (int)in_elems, type_handle(t), op_handle(t), comm->comm);
        tu_mem_read(st->mem, ar, d_ar, in_elems * es);
        if ((MPI_SUCCESS != rc) || (0 != memcmp(ar + (size_t)comm->rank * blk, got, blk))) {
            tu_fail("block %d differs from MPI_Allreduce's (rc %d)", comm->rank, rc);
        }
        tu_mem_free(st->mem, d_ar);
        free(ar);
    }
    for (int a = 0; a < 3; ++a) {
        uint64_t want_delta = (a == slot) ? 1 : 0;
        if (after[a] - before[a] != want_delta) {
            tu_fail("coll_gpu_%s_algorithm_calls[%d] +%llu, expected +%llu", coll_names[c], a,
                    (unsigned long long)(after[a] - before[a]), (unsigned long long)want_delta);
        }
    }
    hash = fnv(14695981039346656037ULL, got, want_elems * es);
    if (C_RSB != c) {
        /* every rank holds the same data */
        MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, comm->comm);
        for (int r = 0; r < comm->size; ++r) {
            if (hashes[r] != hash) {
                tu_fail("rank %d of %s got other bits", r, comm->name);
                break;
            }
        }
    }
    /* the digest: every rank's result hash, in rank order */
    MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, comm->comm);
    if (types[t].fp && C_RSB == c) {
        st->digest_fp = fnv(st->digest_fp, hashes, n * sizeof(*hashes));
    } else {
        st->digest_int = fnv(st->digest_int, hashes, n * sizeof(*hashes));
    }
    tu_case_end();
    tu_mem_free(st->mem, d_in);
    tu_mem_free(st->mem, d_out);
    free(in);
    free(want);
    free(got);
    free(hashes);
}

/* --peer-missing: the last rank of a world duplicate skips a native MPI_Bcast; the others must
 * get an error (not hang) within coll_gpu_transport_timeout, with the help message naming the
 * call.  A first bcast sets the native context up on every rank. */
static void run_peer_missing(state_t *st) {
    MPI_Comm comm;
    void *buf = NULL;
    int rank, size, rc;

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    tu_case_begin("a peer missing from a native MPI_Bcast");
    if (tu_mem_alloc(st->mem, 4096, &buf) || tu_mem_write(st->mem, buf, &rank, sizeof(rank))) {
        setup_fail();
    }
    rc = MPI_Bcast(buf, 1024, MPI_FLOAT, 0, comm);
    if (MPI_SUCCESS != rc) {
        tu_fail("the first bcast returned %d", rc);
    }
    if (rank != size - 1) {
        rc = MPI_Bcast(buf, 1024, MPI_FLOAT, 0, comm);
        if (MPI_SUCCESS == rc) {
            tu_fail("MPI_Bcast with a peer missing succeeded");
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
    size_t big = 0, counts[4];
    int ncounts = 0, rc, world_size;
    long long accelerator = 0;
    bool peer_missing = false, small = false;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &tu_world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    memset(&st, 0, sizeof(st));
    st.mem = TU_MEM_DEVICE;
    tu_options_default(&opts);
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--kinds=host")) {
            st.mem = TU_MEM_HOST;
        } else if (0 == strcmp(argv[i], "--peer-missing")) {
            peer_missing = true;
        } else if (0 == strcmp(argv[i], "--small")) {
            small = true; /* no count of a few hundred KiB: many-step runs across nodes */
        } else if (0 == strncmp(argv[i], "--big-bytes=", 12)) {
            big = strtoull(argv[i] + 12, NULL, 0);
        } else if (1 != tu_options_parse_one(&opts, argv[i])) {
            if (0 == tu_world_rank) {
                fprintf(stderr, "test_native_collectives: bad argument %s\n", argv[i]);
            }
            tu_finish(TU_EXIT_FAIL);
        }
    }
    tu_options_parse_one(&opts, (TU_MEM_HOST == st.mem) ? "--kinds=host" : "--kinds=device");
    rc = tu_setup(&opts);
    if (TU_EXIT_PASS != rc) {
        tu_finish(rc);
    }
    for (int c = 0; c < C_NUM; ++c) {
        char name[64];
        snprintf(name, sizeof(name), "coll_gpu_%s_algorithm_calls", coll_names[c]);
        if (0 != tu_pvar_open(name, &st.algs[c])) {
            tu_case_begin("pvar");
            tu_fail("%s not found: component not loaded?", name);
            tu_case_end();
            tu_finish(tu_summary(MPI_COMM_WORLD));
        }
    }
    tu_gpu_config_read(&st.config);
    /* coll_gpu_accelerator: auto 0, cuda 1, emulated 2 */
    st.emulated = (0 == tu_cvar_read_int("coll_gpu_accelerator", &accelerator)) && 2 == accelerator;
    if (peer_missing) {
        run_peer_missing(&st);
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }

    counts[ncounts++] = 1;
    counts[ncounts++] = 7;
    counts[ncounts++] = (size_t)world_size * 5 + 3;
    if (!small) {
        counts[ncounts++] = 3 * 65536 / 8 + 1;
    }
    st.digest_int = st.digest_fp = 14695981039346656037ULL;
    for (int c = 0; c < TU_NUM_COMMS; ++c) {
        tu_comm_create((tu_comm_id_t)c, &comms[c]);
    }
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
    }
    if (0 == tu_world_rank) {
        printf("digest int %016llx fp %016llx\n", (unsigned long long)st.digest_int,
               (unsigned long long)st.digest_fp);
    }
    for (int c = 0; c < TU_NUM_COMMS; ++c) {
        tu_comm_free(&comms[c]);
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
