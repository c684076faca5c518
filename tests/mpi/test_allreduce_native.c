/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allreduce on device buffers (or, with --kinds=host, host buffers under
 * coll_gpu_host_buffers) through coll/gpu's native algorithms, checked for correctness, path
 * and determinism:
 *
 *   types and ops (float and double sum and max on values whose sum depends on the order,
 *   int8 sum that wraps, int32 sum, int64 bxor) x counts (1, odd, not a multiple of the
 *   ranks, above the one-shot threshold, --big) x MPI_IN_PLACE x communicators (dup of world,
 *   odd/even split, reversed rank order); count 0 and a user op (staged) on the side.
 *
 * The reference is computed here in rank order, acc = in0 op in1 op ... op in(n-1), from
 * inputs every rank generates for every peer: a native call must match it BIT FOR BIT
 * (that is the order one_shot and two_shot promise; the ring's reference starts at the rank
 * of the element's segment, j, and goes round: ((in_j op in_j+1) op ...) op in_j-1); a staged
 * one (Open MPI's order) bit for bit on integers, within rounding on floating point.  Every result
 * is hashed, the hashes compared across the communicator (MPI_Allgather: the same bits on every
 * rank), and rank 0 prints a digest of all of them ("digest int 0x... fp 0x...") that the check
 * script compares between runs with each algorithm forced and between repeated runs.  The
 * coll_gpu_allreduce_algorithm_calls pvar must show the algorithm the parameters select
 * (--expect=ALG overrides, e.g. under a tuning file; --rules=FILE reads the tuning file's
 * allreduce rules itself, the first that matches a call naming what it runs, on one node): across
 * emulated nodes the ring (forced,
 * or auto with one rank per node) or hierarchical (forced, or auto), on host and device
 * buffers alike (other nodes read emulated device scratch through host scratch).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An allreduce rule of a tuning file: its ranges and the algorithm it names (TU_ALG_AUTO: one
 * the component does not know, which leaves the call to auto). */
typedef struct {
    char size[64], rpn[64], range[64];
    int alg;
} rule_t;

typedef struct {
    tu_gpu_config_t config;
    const char *expect; /* --expect: algorithm name, NULL: from the parameters */
    const char *rules;  /* --rules: a tuning file whose rules name the algorithm */
    rule_t *rule;       /* its allreduce rules, in order (num_rules) */
    int num_rules;
    tu_pvar_t algs;
    tn_digest_t digest;
    uint32_t salt;
    tu_mem_t mem; /* of the buffers: device, or host (--kinds=host) */
} state_t;

static const char *const alg_names[TU_NUM_ALGS] = {"auto",
                                                   "staged",
                                                   "one_shot",
                                                   "two_shot",
                                                   "ring",
                                                   "hierarchical",
                                                   "recursive_doubling",
                                                   "hierarchical_doubling",
                                                   "hierarchical_rabenseifner",
                                                   "device_one_shot",
                                                   "device_two_shot",
                                                   "device_hierarchical"};

static bool device_driven(int alg) {
    return (TU_ALG_DEVICE_ONE_SHOT == alg) || (TU_ALG_DEVICE_TWO_SHOT == alg) ||
           (TU_ALG_DEVICE_HIERARCHICAL == alg);
}

/* The device-driven rows take calls of device memory on a communicator of one node and 2 ranks
 * or more (device_one_shot up to 256 KiB, COLL_GPU_DEVICE_ONE_SHOT_MAX), device_hierarchical
 * on one of several nodes of as many ranks each: the others are staged. */
static int device_driven_fits(const state_t *st, const tu_comm_t *comm, size_t bytes, int alg) {
    bool across = (TU_ALG_DEVICE_HIERARCHICAL == alg);

    if (device_driven(alg) && ((TU_MEM_DEVICE != st->mem) || (comm->size < 2) ||
                               (across != tu_multi_node(&st->config, comm->size)) ||
                               (across && !tu_uniform_nodes(&st->config, comm->size)) ||
                               ((TU_ALG_DEVICE_ONE_SHOT == alg) && (bytes > 256 * 1024)))) {
        return TU_ALG_STAGED;
    }
    return alg;
}

/* A tuning rule's number at *s (a K, M or G suffix: binary units), *s moved past it. */
static unsigned long long rule_number(const char **s) {
    char *end;
    unsigned long long v = strtoull(*s, &end, 10);
    const char *units = "KMG", *u = ('\0' != *end) ? strchr(units, *end) : NULL;

    if (NULL != u) {
        v <<= 10 * (1 + (u - units));
        ++end;
    }
    *s = end;
    return v;
}

/* Whether a tuning rule's range ("*", "N", "N-", "N-M") holds v. */
static bool rule_range_has(const char *range, unsigned long long v) {
    const char *s = range;
    unsigned long long lo, hi;

    if (0 == strcmp(range, "*")) {
        return true;
    }
    lo = rule_number(&s);
    if ('\0' == *s) {
        return v == lo;
    }
    if ('-' != *s++) {
        return false;
    }
    hi = ('\0' == *s) ? ~0ULL : rule_number(&s);
    return ('\0' == *s) && (lo <= v) && (v <= hi);
}

/* The allreduce rules of the file --rules, read once. */
static void rules_load(state_t *st) {
    FILE *f = fopen(st->rules, "r");
    char line[256], coll[64], alg[64];
    rule_t r;

    if (NULL == f) {
        tn_setup_failed();
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        if ((5 != sscanf(line, "%63s %63s %63s %63s %63s", coll, r.size, r.rpn, r.range, alg)) ||
            (0 != strcmp(coll, "allreduce"))) {
            continue;
        }
        r.alg = TU_ALG_AUTO;
        for (int a = TU_ALG_STAGED; a < TU_NUM_ALGS; ++a) {
            r.alg = (0 == strcmp(alg, alg_names[a])) ? a : r.alg;
        }
        st->rule = realloc(st->rule, (size_t)(st->num_rules + 1) * sizeof(*st->rule));
        if (NULL == st->rule) {
            tn_setup_failed();
        }
        st->rule[st->num_rules++] = r;
    }
    fclose(f);
}

/* The algorithm the first rule that matches a call of bytes on comm_size ranks of one node
 * names (TU_ALG_AUTO where none matches, or it names none the component knows: auto decides,
 * as in the component). */
static int rules_alg(const state_t *st, int comm_size, size_t bytes) {
    for (int i = 0; i < st->num_rules; ++i) {
        const rule_t *r = &st->rule[i];

        if (rule_range_has(r->size, (unsigned)comm_size) &&
            rule_range_has(r->rpn, (unsigned)comm_size) && rule_range_has(r->range, bytes)) {
            return r->alg;
        }
    }
    return TU_ALG_AUTO;
}

static int expected_alg(const state_t *st, const tu_comm_t *comm, size_t bytes) {
    if ((NULL == st->expect) && device_driven(st->config.allreduce_algorithm)) {
        return device_driven_fits(st, comm, bytes, st->config.allreduce_algorithm);
    }
    if ((NULL != st->rules) && (TU_MEM_DEVICE == st->mem)) {
        int a = rules_alg(st, comm->size, bytes);

        if (TU_ALG_AUTO != a) {
            return device_driven_fits(st, comm, bytes, a);
        }
    }
    if (NULL != st->expect) {
        for (int a = 0; a < TU_NUM_ALGS; ++a) {
            if (0 == strcmp(st->expect, alg_names[a])) {
                return device_driven_fits(st, comm, bytes, a);
            }
        }
    }
    if (!tu_allreduce_native_expected(&st->config, comm->size) ||
        (TU_MEM_HOST == st->mem && !st->config.host_buffers)) {
        return TU_ALG_STAGED; /* host buffers: Open MPI's, counted nowhere */
    }
    if (TU_ALG_AUTO != st->config.allreduce_algorithm) {
        return st->config.allreduce_algorithm;
    }
    if ((TU_MEM_DEVICE == st->mem) &&
        tu_staged_auto(&st->config, COLL_GPU_ALLREDUCE, comm, bytes)) {
        return TU_ALG_STAGED; /* where the cost model has staging faster */
    }
    if (tu_multi_node(&st->config, comm->size)) {
        /* auto across nodes: hierarchical_doubling from coll_gpu_allreduce_doubling_min_nodes
         * nodes on up to coll_gpu_allreduce_doubling_max_bytes, hierarchical_rabenseifner from
         * coll_gpu_allreduce_rabenseifner_min_nodes nodes on, else the ring from
         * coll_gpu_allreduce_ring_min_bytes when every node has one rank, else hierarchical (whose
         * layout fits every size this test runs) */
        if (tu_allreduce_doubling_auto(&st->config, comm->size, bytes)) {
            return TU_ALG_HIERARCHICAL_DOUBLING;
        }
        if (tu_allreduce_rabenseifner_auto(&st->config, comm->size, bytes)) {
            return TU_ALG_HIERARCHICAL_RABENSEIFNER;
        }
        return ((1 == st->config.ranks_per_node) && ((long long)bytes >= st->config.ring_min_bytes))
                   ? TU_ALG_RING
                   : TU_ALG_HIERARCHICAL;
    }
    return ((long long)bytes <= st->config.one_shot_max_bytes) ? TU_ALG_ONE_SHOT : TU_ALG_TWO_SHOT;
}

/* The ring's segment of element i of count over size ranks: two-shot's shards of the whole
 * message, the first count % size one element longer. */
static int ring_segment(size_t count, int size, size_t i) {
    size_t base = count / (size_t)size, extra = count % (size_t)size;

    if (i < extra * (base + 1)) {
        return (int)(i / (base + 1));
    }
    return (int)(extra + (i - extra * (base + 1)) / base);
}

/* Recursive doubling's order over the values of m members (x[v], replaced): with p the largest
 * power of two <= m and rem = m - p, virtual member v starts from x_2v op x_2v+1 (v < rem) or
 * x_v+rem, then in round k takes lower op higher with partner v ^ 2^k; every v ends with the
 * same value, out.  halving: the partners in the other order, v ^ p/2 first (recursive
 * halving's, whichever segment the element is in). */
static void doubling_order(test_type_t t, char (*x)[8], int m, bool halving, char *out) {
    char partial[256][8], next[256][8];
    int p = 1, rem;

    while (2 * p <= m) {
        p *= 2;
    }
    rem = m - p;
    for (int v = 0; v < p; ++v) {
        int r = (v < rem) ? 2 * v : v + rem;
        memcpy(partial[v], x[r], types[t].size);
        if (v < rem) {
            apply(t, partial[v], x[r + 1]);
        }
    }
    for (int k = 1; k < p; k <<= 1) {
        int mask = halving ? p / (2 * k) : k;

        for (int v = 0; v < p; ++v) {
            int lo = (v < (v ^ mask)) ? v : v ^ mask;
            memcpy(next[v], partial[lo], types[t].size);
            apply(t, next[v], partial[lo ^ mask]);
        }
        memcpy(partial, next, sizeof(partial[0]) * (size_t)p);
    }
    memcpy(out, partial[0], types[t].size);
}

/* recursive_doubling: the doubling over the ranks' inputs; hierarchical_doubling (by_node): over
 * the nodes' partials, each its ranks' inputs in rank order; hierarchical_rabenseifner (by_node,
 * halving): the same in halving's order. */
static void reference_doubling(const state_t *st, const tu_comm_t *comm, test_type_t t, size_t i,
                               bool by_node, bool halving, char *out) {
    char x[256][8], v[8];
    int m = by_node ? tu_emulated_node(&st->config, comm->size - 1) + 1 : comm->size;

    if (comm->size > 256) {
        MPI_Abort(MPI_COMM_WORLD, 2); /* the test's limit, not the algorithm's */
    }
    for (int r = 0; r < comm->size; ++r) {
        int j = by_node ? tu_emulated_node(&st->config, r) : r;
        bool first = !by_node || (0 == r) || (tu_emulated_node(&st->config, r - 1) != j);

        gen(t, comm->world_ranks[r], st->salt, i, first ? x[j] : v);
        if (!first) {
            apply(t, x[j], v);
        }
    }
    doubling_order(t, x, m, halving, out);
}

/*
 * Element i of the result, in the order alg combines the inputs: rank order (one_shot,
 * two_shot, and staged within rounding); ring: starting at the rank of its segment,
 * ((x_j op x_j+1) op ...) op x_j-1; hierarchical: each node's ranks in rank order, then the
 * nodes' partial results in node order; recursive doubling: pairs, lower op higher;
 * hierarchical_doubling: recursive doubling over the nodes' partials (each in rank order);
 * hierarchical_rabenseifner: the same pairs in recursive halving's order.
 */
static void reference(const state_t *st, const tu_comm_t *comm, test_type_t t, int alg,
                      size_t count, size_t i, char *out) {
    char x[8], partial[8];
    int nodes = 1;

    if (TU_ALG_RING == alg) {
        int first = ring_segment(count, comm->size, i);
        gen(t, comm->world_ranks[first], st->salt, i, out);
        for (int m = 1; m < comm->size; ++m) {
            gen(t, comm->world_ranks[(first + m) % comm->size], st->salt, i, x);
            apply(t, out, x);
        }
        return;
    }
    if ((TU_ALG_RECURSIVE_DOUBLING == alg) || (TU_ALG_HIERARCHICAL_DOUBLING == alg) ||
        (TU_ALG_HIERARCHICAL_RABENSEIFNER == alg)) {
        reference_doubling(st, comm, t, i, TU_ALG_RECURSIVE_DOUBLING != alg,
                           TU_ALG_HIERARCHICAL_RABENSEIFNER == alg, out);
        return;
    }
    if ((TU_ALG_HIERARCHICAL == alg) || (TU_ALG_DEVICE_HIERARCHICAL == alg)) {
        nodes = tu_emulated_node(&st->config, comm->size - 1) + 1;
    }
    for (int node = 0; node < nodes; ++node) {
        bool first = true;
        for (int r = 0; r < comm->size; ++r) {
            if ((nodes > 1) && (tu_emulated_node(&st->config, r) != node)) {
                continue;
            }
            gen(t, comm->world_ranks[r], st->salt, i, first ? partial : x);
            if (!first) {
                apply(t, partial, x);
            }
            first = false;
        }
        if (0 == node) {
            memcpy(out, partial, types[t].size);
        } else {
            apply(t, out, partial);
        }
    }
}

static void run_case(state_t *st, const tu_comm_t *comm, test_type_t t, size_t count,
                     bool in_place) {
    size_t es = types[t].size, bytes = count * es;
    char *in = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    void *d_in = NULL, *d_out = NULL;
    uint64_t before[TU_NUM_ALGS] = {0}, after[TU_NUM_ALGS] = {0}, hash, *hashes;
    int alg = expected_alg(st, comm, bytes), rc;

    ++st->salt;
    tu_case_begin("%s count=%zu%s comm=%s(%d/%d) expect %s", types[t].name, count,
                  in_place ? " in-place" : "", comm->name, comm->rank, comm->size, alg_names[alg]);
    hashes = malloc((size_t)comm->size * sizeof(*hashes));
    for (size_t i = 0; i < count; ++i) {
        gen(t, comm->world_ranks[comm->rank], st->salt, i, in + i * es);
        reference(st, comm, t, alg, count, i, want + i * es);
    }
    if (tu_mem_alloc(st->mem, bytes, &d_out) || tu_mem_alloc(st->mem, bytes, &d_in) ||
        tu_mem_write(st->mem, in_place ? d_out : d_in, in, bytes)) {
        tn_setup_failed();
    }
    tu_pvar_read(&st->algs, before, TU_NUM_ALGS);
    rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : d_in, d_out, (int)count, type_handle(t),
                       op_handle(t), comm->comm);
    tu_pvar_read(&st->algs, after, TU_NUM_ALGS);
    if (MPI_SUCCESS != rc) {
        tu_fail("MPI_Allreduce returned %d", rc);
    }
    tu_mem_read(st->mem, got, d_out, bytes);
    /* staged: Open MPI's order, within rounding */
    tn_check_elements(t, got, want, count, !types[t].fp || TU_ALG_STAGED != alg, NULL, 0,
                      (TU_ALG_RING == alg)                    ? "the ring-order reference"
                      : (TU_ALG_RECURSIVE_DOUBLING == alg)    ? "the recursive-doubling reference"
                      : (TU_ALG_HIERARCHICAL_DOUBLING == alg) ? "the node-doubling reference"
                      : (TU_ALG_HIERARCHICAL_RABENSEIFNER == alg) ? "the node-halving reference"
                                                                  : "the rank-order reference");
    /* a host-buffer call not run natively is Open MPI's: no algorithm counted */
    tn_check_algorithm_calls("allreduce", before, after, TU_NUM_ALGS,
                             (TU_MEM_HOST == st->mem && TU_ALG_STAGED == alg) ? -1 : alg,
                             alg_names);
    /* the same bits on every rank */
    hash = fnv(TN_HASH_BASIS, got, bytes);
    tn_gather_hashes(hash, comm, hashes);
    tn_check_same_hash(hash, comm, hashes);
    tn_digest_add(&st->digest, types[t].fp, &hash, sizeof(hash));
    tu_case_end();
    tu_mem_free(st->mem, d_in);
    tu_mem_free(st->mem, d_out);
    free(in);
    free(want);
    free(got);
    free(hashes);
}

/* count 0 and a user op: staged or never reaching the component, and no hang */
static void run_side_cases(const tu_comm_t *comm, tu_mem_t mem) {
    void *d_in, *d_out;
    int rc;

    tu_case_begin("count 0 and a user op on %s", comm->name);
    tu_mem_alloc(mem, 64, &d_in);
    tu_mem_alloc(mem, 64, &d_out);
    rc = MPI_Allreduce(d_in, d_out, 0, MPI_FLOAT, MPI_SUM, comm->comm);
    if (MPI_SUCCESS != rc) {
        tu_fail("count 0 returned %d", rc);
    }
    rc = MPI_Allreduce(d_in, d_out, 4, MPI_INT32_T, tu_op_handle(TU_OP_USER_COMM), comm->comm);
    if (MPI_SUCCESS != rc) {
        tu_fail("user op returned %d", rc);
    }
    tu_case_end();
    tu_mem_free(mem, d_in);
    tu_mem_free(mem, d_out);
}

/* What one call asks of this rank's host (coll/gpu's counters, gpucoll_perf prints them per
 * call): a blocking call on device memory submits device work and waits for it (natively or
 * staged), gives one word on the call board when native (a staged call may give two: its
 * agreement on the copies in), and under device_one_shot is one kernel and
 * one wait, with no signal to a peer nor wait for one; a call on host memory passed to Open
 * MPI asks none of it. */
static void run_host_counts_of(const state_t *st, const tu_comm_t *comm, size_t count) {
    static const char *const names[] = {"coll_gpu_device_submissions", "coll_gpu_host_stream_waits",
                                        "coll_gpu_host_signals",       "coll_gpu_host_peer_waits",
                                        "coll_gpu_board_arrivals",     "coll_gpu_calls_native"};
    enum { SUBMISSIONS, STREAM_WAITS, SIGNALS, PEER_WAITS, BOARD, NATIVE, NUM };
    int alg = expected_alg(st, comm, count * sizeof(float));
    bool kernel = device_driven(alg);
    uint64_t proxy;
    tu_pvar_t pvars[NUM];
    uint64_t before[NUM], after[NUM];
    float host_in[2] = {1, 2}, host_out[2];
    void *d_in, *d_out;

    tu_case_begin("host counts of one call of %zu bytes on %s", count * sizeof(float), comm->name);
    for (int i = 0; i < NUM; ++i) {
        tu_pvar_open_required(names[i], &pvars[i]);
    }
    tu_mem_alloc(st->mem, count * sizeof(float), &d_in);
    tu_mem_alloc(st->mem, count * sizeof(float), &d_out);
    for (int pass = 0; pass < 2; ++pass) {
        bool device = (0 == pass) && (TU_MEM_DEVICE == st->mem);
        int el[NUM] = {0, 0, 0, 0, 0, COLL_GPU_ALLREDUCE};

        for (int i = 0; i < NUM; ++i) {
            before[i] = tu_pvar_read_element(&pvars[i], el[i]);
        }
        if (MPI_SUCCESS != MPI_Allreduce(device ? d_in : (void *)host_in,
                                         device ? d_out : (void *)host_out, device ? (int)count : 2,
                                         MPI_FLOAT, MPI_SUM, comm->comm)) {
            tu_fail("MPI_Allreduce failed");
        }
        for (int i = 0; i < NUM; ++i) {
            after[i] = tu_pvar_read_element(&pvars[i], el[i]) - before[i];
        }
        if (device && ((after[SUBMISSIONS] < 1) || (after[STREAM_WAITS] < 1) ||
                       ((comm->size > 1) && (after[BOARD] < 1)) ||
                       ((1 == after[NATIVE]) && (after[BOARD] != (comm->size > 1 ? 1u : 0u))))) {
            tu_fail("a call on device memory (%s): %llu submissions, %llu stream waits, %llu board "
                    "words",
                    after[NATIVE] ? "native" : "staged", (unsigned long long)after[SUBMISSIONS],
                    (unsigned long long)after[STREAM_WAITS], (unsigned long long)after[BOARD]);
        }
        /* across nodes the proxy (the communicator's thread) signals each other node's rank of
         * this rank's index once per lane (16) and step, and waits for theirs */
        proxy = (TU_ALG_DEVICE_HIERARCHICAL == alg)
                    ? (uint64_t)tu_emulated_node(&st->config, comm->size - 1) * 16
                    : 0;
        if (device && kernel && (comm->size > 1) &&
            ((1 != after[SUBMISSIONS]) || (1 != after[STREAM_WAITS]) ||
             ((0 == proxy) && ((0 != after[SIGNALS]) || (0 != after[PEER_WAITS]))) ||
             ((0 != proxy) && ((0 == after[SIGNALS]) || (0 != after[SIGNALS] % proxy) ||
                               (after[PEER_WAITS] != after[SIGNALS]) ||
                               ((count <= 2) && (after[SIGNALS] != proxy)))))) {
            tu_fail("%s: %llu submissions, %llu stream waits, %llu signals, %llu peer waits "
                    "(expected 1, 1, and %llu signals and peer waits a step)",
                    alg_names[alg], (unsigned long long)after[SUBMISSIONS],
                    (unsigned long long)after[STREAM_WAITS], (unsigned long long)after[SIGNALS],
                    (unsigned long long)after[PEER_WAITS], (unsigned long long)proxy);
        }
        if (!device && (TU_MEM_DEVICE == st->mem)) {
            for (int i = 0; i < NUM; ++i) {
                if ((NATIVE != i) && (0 != after[i])) {
                    tu_fail("a call on host memory: %s grew by %llu", names[i],
                            (unsigned long long)after[i]);
                }
            }
        }
    }
    tu_case_end();
    tu_mem_free(st->mem, d_in);
    tu_mem_free(st->mem, d_out);
}

/* 8 bytes; under device_two_shot also a call of several of its kernel's steps (1 MiB each),
 * still one launch and one wait. */
static void run_host_counts(const state_t *st, const tu_comm_t *comm) {
    run_host_counts_of(st, comm, 2);
    if ((TU_ALG_DEVICE_TWO_SHOT == st->config.allreduce_algorithm) ||
        (TU_ALG_DEVICE_HIERARCHICAL == st->config.allreduce_algorithm)) {
        run_host_counts_of(st, comm, (3u << 20) / sizeof(float) + 1);
    }
}

/* rc must be MPI_ERR_COUNT (a communicator of one rank cannot disagree with itself). */
static void expect_err_count(int rc, int world_size, const char *what) {
    int cls = MPI_SUCCESS;

    MPI_Error_class(rc, &cls);
    if ((world_size > 1) && (MPI_ERR_COUNT != cls)) {
        tu_fail("%s returned class %d, not MPI_ERR_COUNT", what, cls);
    }
}

/* The v-collectives: counts of 10 elements per block (in and out hold 10 * size + 1 each), the
 * last rank's first one 11.  Every rank must get MPI_ERR_COUNT. */
static void run_mismatch_blocks(int world_size, void *d_in, void *d_out) {
    int *counts = malloc(2 * (size_t)world_size * sizeof(int)), *displs, last = world_size - 1;

    if (NULL == counts) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    displs = counts + world_size;
    for (int p = 0; p < world_size; ++p) {
        counts[p] = 10;
        displs[p] = 10 * p + ((p > 0) ? 1 : 0);
    }
    if (tu_world_rank == last) {
        counts[0] = 11;
    }
    /* recvcounts differ between ranks */
    expect_err_count(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT32_T, d_out, counts, displs,
                                    MPI_INT32_T, MPI_COMM_WORLD),
                     world_size, "MPI_Allgatherv with mismatched recvcounts");
    expect_err_count(MPI_Reduce_scatter(d_in, d_out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                     world_size, "MPI_Reduce_scatter with mismatched recvcounts");
    /* the last rank sends rank 0 one element more than rank 0 receives from it */
    expect_err_count(MPI_Alltoallv(d_in, counts, displs, MPI_INT32_T, d_out, counts, displs,
                                   MPI_INT32_T, MPI_COMM_WORLD),
                     world_size, "MPI_Alltoallv with mismatched counts");
    /* equal counts, another op on the last rank */
    counts[0] = 10;
    expect_err_count(MPI_Reduce_scatter(d_in, d_out, counts, MPI_FLOAT,
                                        (tu_world_rank == last) ? MPI_MAX : MPI_SUM,
                                        MPI_COMM_WORLD),
                     world_size, "MPI_Reduce_scatter with mismatched ops");
    /* legal: the last rank counts its blocks in pairs of int32, the others in int32 (equal type
     * signatures): the check compares bytes of the signature, so every rank succeeds */
    {
        MPI_Datatype pair;
        int rc, all_ok = 0, ok;

        MPI_Type_contiguous(2, MPI_INT32_T, &pair);
        MPI_Type_commit(&pair);
        for (int p = 0; p < world_size; ++p) {
            counts[p] = (tu_world_rank == last) ? 5 : 10;
            displs[p] = (tu_world_rank == last) ? 5 * p : 10 * p;
        }
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT32_T, d_out, counts, displs,
                            (tu_world_rank == last) ? pair : MPI_INT32_T, MPI_COMM_WORLD);
        ok = (MPI_SUCCESS == rc);
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (!all_ok) {
            tu_fail("MPI_Allgatherv with equal signatures in other datatypes failed (rc %d here)",
                    rc);
        }
        MPI_Type_free(&pair);
    }
    free(counts);
}

/*
 * --mismatch (under coll_gpu_check_counts=1): the last rank passes one element more to
 * MPI_Allreduce and MPI_Allgather, and block counts of its own to MPI_Allgatherv,
 * MPI_Reduce_scatter and MPI_Alltoallv, another op to MPI_Reduce_scatter; every rank must get
 * MPI_ERR_COUNT, then a matching call must succeed.
 */
static void run_mismatch(const state_t *st, int world_size) {
    const size_t n = 1000;
    int count = (int)n + ((tu_world_rank == world_size - 1) ? 1 : 0), rc, cls;
    void *d_in, *d_out;

    tu_case_begin("mismatched counts (rank %d passes %d)", world_size - 1, (int)n + 1);
    if (tu_mem_alloc(st->mem, (n + 1) * 4 * (size_t)world_size, &d_in) ||
        tu_mem_alloc(st->mem, (n + 1) * 4 * (size_t)world_size, &d_out)) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rc = MPI_Allreduce(d_in, d_out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    if ((world_size > 1) && (MPI_ERR_COUNT != cls)) {
        tu_fail("MPI_Allreduce with mismatched counts returned class %d, not MPI_ERR_COUNT", cls);
    }
    rc = MPI_Allgather(d_in, count, MPI_INT32_T, d_out, count, MPI_INT32_T, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    if ((world_size > 1) && (MPI_ERR_COUNT != cls)) {
        tu_fail("MPI_Allgather with mismatched counts returned class %d, not MPI_ERR_COUNT", cls);
    }
    run_mismatch_blocks(world_size, d_in, d_out);
    rc = MPI_Allreduce(d_in, d_out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (MPI_SUCCESS != rc) {
        tu_fail("a matching MPI_Allreduce afterwards returned %d", rc);
    }
    tu_case_end();
    tu_mem_free(st->mem, d_in);
    tu_mem_free(st->mem, d_out);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    state_t st;
    tu_comm_t comms[TU_NUM_COMMS];
    size_t big = 0, counts[TN_MAX_COUNTS];
    int ncounts, reps = 1;
    bool host = false, mismatch = false;
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},
        {"--mismatch", TU_ARG_FLAG, &mismatch},
        {"--expect=", TU_ARG_STRING, &st.expect},
        {"--big-count=", TU_ARG_SIZE, &big},
        {"--reps=", TU_ARG_INT, &reps},
        {"--rules=", TU_ARG_STRING, &st.rules},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    memset(&st, 0, sizeof(st));
    tu_parse_args(argc, argv, "test_allreduce_native", args, &opts);
    st.mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
    tn_setup(&opts, st.mem);
    tn_algorithm_pvar_open("allreduce", &st.algs);
    tu_gpu_config_read(&st.config);
    if (NULL != st.rules) {
        rules_load(&st);
    }
    if (mismatch) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        run_mismatch(&st, tu_world_size);
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }

    ncounts = tn_counts(tu_world_size, false, counts);
    tu_comms_create_all(comms);
    for (int rep = 0; rep < reps; ++rep) {
        /* the same inputs every repetition, and the digest of the last one: the same */
        st.salt = 0;
        tn_digest_init(&st.digest);
        for (int c = 0; c < TU_NUM_COMMS; ++c) {
            for (int t = 0; t < T_NUM; ++t) {
                for (int k = 0; k < ncounts; ++k) {
                    run_case(&st, &comms[c], (test_type_t)t, counts[k], (k + t + c) % 2);
                }
            }
            run_side_cases(&comms[c], st.mem);
        }
        if (big > 0) {
            run_case(&st, &comms[TU_COMM_WORLD], T_FLOAT_SUM, big, false);
            run_case(&st, &comms[TU_COMM_SPLIT_REVERSED], T_INT32_SUM, big + 1, true);
        }
    }
    run_host_counts(&st, &comms[TU_COMM_WORLD]);
    tn_digest_print(&st.digest);
    tu_comms_free_all(comms);
    free(st.rule);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
