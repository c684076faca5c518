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

#include "test_native_ref.h"
#include "test_util.h"

#include <math.h>
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
    uint64_t digest_int, digest_fp;
    uint32_t salt;
    tu_mem_t mem;
} state_t;

/* 2: native, 1: staged, -1: nothing counted (host buffers handed to Open MPI).  Across
 * emulated nodes too: other nodes read emulated device scratch through host scratch. */
static int expected_slot(const state_t *st, coll_t c, const tu_comm_t *comm) {
    bool native = tu_coll_native_expected(&st->config, coll_ids[c], comm->size) &&
                  (TU_MEM_DEVICE == st->mem || st->config.host_buffers);
    return native ? 2 : (TU_MEM_DEVICE == st->mem) ? 1 : -1;
}

/* Block of rank r (allgatherv, reduce_scatter): uneven, empty every third rank from rank 1. */
static size_t vcount(int r, size_t count) { return (1 == r % 3) ? 0 : count + (size_t)(r * 7 % 5); }

/* Elements rank i sends to rank j (alltoallv); symmetric for MPI_IN_PLACE. */
static size_t a2a_count(int i, int j, size_t count, bool symmetric) {
    int key = symmetric ? i + j : i + 2 * j;
    return (1 == key % 3) ? 0 : count + (size_t)((symmetric ? key : 3 * i + j) % 4);
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

static bool fp_close(test_type_t t, const char *g, const char *w) {
    double gv = (4 == types[t].size) ? *(const float *)g : *(const double *)g;
    double wv = (4 == types[t].size) ? *(const float *)w : *(const double *)w;
    return fabs(gv - wv) <= ((4 == types[t].size) ? 1e-4 : 1e-12) * (fabs(wv) + 1.0);
}

static void setup_fail(void) {
    fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (NULL == p) {
        setup_fail();
    }
    return p;
}

static void *dev_copy(const state_t *st, const void *host, size_t bytes) {
    void *d = NULL;
    if (tu_mem_alloc(st->mem, bytes > 0 ? bytes : 8, &d) ||
        ((bytes > 0) && tu_mem_write(st->mem, d, host, bytes))) {
        setup_fail();
    }
    return d;
}

static void to_ints(const size_t *v, int n, int *out) {
    for (int i = 0; i < n; ++i) {
        out[i] = (int)v[i];
    }
}

/* A case's buffers: host images of the input and the receive buffer before the call (rbuf0)
 * and what the receive buffer must hold after it (want, rbytes). */
typedef struct {
    char *in, *rbuf0, *want;
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
    uint64_t before[3] = {0}, after[3] = {0}, hash, *hashes;
    int slot = expected_slot(st, c, comm), mrc = MPI_SUCCESS;
    bool exact = !types[t].fp || C_REDUCE_SCATTER != c || 2 == slot;
    void *d_in = NULL, *d_out = NULL;
    char *got, x[8];
    bufs_t b;
    long bad = 0;

    ++st->salt;
    memset(&b, 0, sizeof(b));
    tu_case_begin("%s %s count=%zu%s comm=%s(%d/%d) expect %s", coll_names[c], types[t].name, count,
                  in_place ? " in-place" : "", comm->name, r, n, (2 == slot) ? "native" : "staged");
    hashes = xmalloc((size_t)n * sizeof(*hashes));

    switch (c) {
    case C_ALLGATHERV: {
        size_t span;
        for (int p = 0; p < n; ++p) {
            rc[p] = vcount(p, count);
        }
        span = layout(rc, n, rd);
        b.rbytes = span * es;
        b.in_bytes = rc[r] * es;
        b.in = xmalloc(b.in_bytes);
        b.rbuf0 = xmalloc(b.rbytes);
        b.want = xmalloc(b.rbytes);
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
        b.in = xmalloc(b.in_bytes);
        for (size_t e = 0; e < b.total; ++e) {
            gen(t, me, st->salt, e, b.in + e * es);
        }
        /* in place: the input in the receive buffer, the result at its start */
        b.rbytes = rc[r] * es;
        b.rbuf0 = xmalloc(in_place ? b.in_bytes : b.rbytes);
        if (in_place) {
            memcpy(b.rbuf0, b.in, b.in_bytes);
        } else {
            memset(b.rbuf0, GAP_BYTE, b.rbytes);
        }
        b.want = xmalloc(b.rbytes);
        for (size_t i = 0; i < rc[r]; ++i) {
            gen(t, comm->world_ranks[0], st->salt, offset + i, b.want + i * es);
            for (int q = 1; q < n; ++q) {
                gen(t, comm->world_ranks[q], st->salt, offset + i, x);
                apply(t, b.want + i * es, x);
            }
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
        b.in = xmalloc(b.in_bytes);
        b.rbuf0 = xmalloc(b.rbytes);
        b.want = xmalloc(b.rbytes);
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
    d_in = in_place ? NULL : dev_copy(st, b.in, b.in_bytes);
    d_out = dev_copy(st, b.rbuf0, (C_REDUCE_SCATTER == c && in_place) ? b.in_bytes : b.rbytes);

    tu_pvar_read(&st->algs[c], before, 3);
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
        mrc = MPI_Alltoall(in_place ? MPI_IN_PLACE : d_in, in_place ? 0 : (int)count,
                           in_place ? MPI_DATATYPE_NULL : dt, d_out, (int)count, dt, comm->comm);
        break;
    default:
        mrc = MPI_Alltoallv(in_place ? MPI_IN_PLACE : d_in, in_place ? NULL : b.scounts,
                            in_place ? NULL : b.sdispls, in_place ? MPI_DATATYPE_NULL : dt, d_out,
                            b.rcounts, b.rdispls, dt, comm->comm);
        break;
    }
    tu_pvar_read(&st->algs[c], after, 3);
    if (MPI_SUCCESS != mrc) {
        tu_fail("MPI call returned %d", mrc);
    }
    got = xmalloc(b.rbytes);
    if ((b.rbytes > 0) && tu_mem_read(st->mem, got, d_out, b.rbytes)) {
        setup_fail();
    }
    for (size_t i = 0; i < b.rbytes / es; ++i) {
        bool same = 0 == memcmp(got + i * es, b.want + i * es, es);
        if (!same && !exact) {
            same = fp_close(t, got + i * es, b.want + i * es);
        }
        if (!same && bad++ < 3) {
            tu_fail("element %zu differs from the reference", i);
        }
    }
    if (bad > 0) {
        tu_fail("%ld of %zu elements wrong", bad, b.rbytes / es);
    }
    /* reduce_scatter = allreduce's elements, bit for bit, when both run natively in rank
     * order (across nodes allreduce runs ring or hierarchical: another order) */
    if ((C_REDUCE_SCATTER == c) && (2 == slot) && tu_allreduce_native_expected(&st->config, n) &&
        !tu_multi_node(&st->config, n)) {
        size_t offset = 0;
        char *ar = xmalloc(b.in_bytes);
        void *d_ar = NULL, *d_all = dev_copy(st, b.in, b.in_bytes);
        for (int p = 0; p < r; ++p) {
            offset += rc[p];
        }
        if (tu_mem_alloc(st->mem, b.in_bytes, &d_ar)) {
            setup_fail();
        }
        mrc = MPI_Allreduce(d_all, d_ar, (int)b.total, dt, op_handle(t), comm->comm);
        if ((MPI_SUCCESS != mrc) || tu_mem_read(st->mem, ar, d_ar, b.in_bytes) ||
            (0 != memcmp(ar + offset * es, got, b.rbytes))) {
            tu_fail("block %d differs from MPI_Allreduce's (rc %d)", r, mrc);
        }
        tu_mem_free(st->mem, d_ar);
        tu_mem_free(st->mem, d_all);
        free(ar);
    }
    for (int a = 0; a < 3; ++a) {
        uint64_t want_delta = (a == slot) ? 1 : 0;
        if (after[a] - before[a] != want_delta) {
            tu_fail("coll_gpu_%s_algorithm_calls[%d] +%llu, expected +%llu", coll_names[c], a,
                    (unsigned long long)(after[a] - before[a]), (unsigned long long)want_delta);
        }
    }
    /* the digest: every rank's result hash, in rank order */
    hash = fnv(14695981039346656037ULL, got, b.rbytes);
    MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, comm->comm);
    if (types[t].fp && C_REDUCE_SCATTER == c) {
        st->digest_fp = fnv(st->digest_fp, hashes, (size_t)n * sizeof(*hashes));
    } else {
        st->digest_int = fnv(st->digest_int, hashes, (size_t)n * sizeof(*hashes));
    }
    tu_case_end();
    if (NULL != d_in) {
        tu_mem_free(st->mem, d_in);
    }
    tu_mem_free(st->mem, d_out);
    free(b.in);
    free(b.rbuf0);
    free(b.want);
    free(got);
    free(hashes);
}

/* --peer-missing: the last rank of a world duplicate skips a native MPI_Alltoall; the others
 * must get an error (not hang) within coll_gpu_transport_timeout, with the help message naming
 * the call.  A first alltoall sets the native context up on every rank. */
static void run_peer_missing(state_t *st) {
    MPI_Comm comm;
    void *sbuf = NULL, *rbuf = NULL;
    int rank, size, rc;
    size_t bytes;

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    bytes = (size_t)size * 1024 * sizeof(float);
    tu_case_begin("a peer missing from a native MPI_Alltoall");
    if (tu_mem_alloc(st->mem, bytes, &sbuf) || tu_mem_alloc(st->mem, bytes, &rbuf)) {
        setup_fail();
    }
    rc = MPI_Alltoall(sbuf, 1024, MPI_FLOAT, rbuf, 1024, MPI_FLOAT, comm);
    if (MPI_SUCCESS != rc) {
        tu_fail("the first alltoall returned %d", rc);
    }
    if (rank != size - 1) {
        rc = MPI_Alltoall(sbuf, 1024, MPI_FLOAT, rbuf, 1024, MPI_FLOAT, comm);
        if (MPI_SUCCESS == rc) {
            tu_fail("MPI_Alltoall with a peer missing succeeded");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_case_end();
    tu_mem_free(st->mem, sbuf);
    tu_mem_free(st->mem, rbuf);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    state_t st;
    tu_comm_t comms[TU_NUM_COMMS];
    size_t big = 0, counts[4];
    int ncounts = 0, rc, world_size;
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
                fprintf(stderr, "test_native_vcolls: bad argument %s\n", argv[i]);
            }
            tu_finish(TU_EXIT_FAIL);
        }
    }
    tu_options_parse_one(&opts, (TU_MEM_HOST == st.mem) ? "--kinds=host" : "--kinds=device");
    rc = tu_setup(&opts);
    if (TU_EXIT_PASS != rc) {
        tu_finish(rc);
    }
    if (world_size > MAX_RANKS) {
        if (0 == tu_world_rank) {
            printf("SKIP: more than %d ranks\n", MAX_RANKS);
        }
        tu_finish(TU_EXIT_SKIP);
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
    if (0 == tu_world_rank) {
        printf("digest int %016llx fp %016llx\n", (unsigned long long)st.digest_int,
               (unsigned long long)st.digest_fp);
    }
    for (int c = 0; c < TU_NUM_COMMS; ++c) {
        tu_comm_free(&comms[c]);
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
