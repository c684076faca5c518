/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the accelerator's node collective kernels (accel.h: node_collective; the
 * allreduce's one-shot and two-shot, reduce-scatter, allgather, bcast, reduce;
 * accel_node_kernels.h), in one process: N "ranks", each with an area of device
 * memory and a stream of its own, every rank's plan naming every area (what IPC maps across
 * processes); each rank's part of a call queued on its stream, the streams synchronized at the
 * end.  Against a reference folded here, in rank order, in plain C:
 *
 *   shapes     both algorithms; 2, 3 and 5 ranks; 1 element to 16 lanes (65541 elements);
 *              int32 and float sums, double max, int8 sums that wrap; in place; source and
 *              result one element off their allocation's start (the unaligned paths)
 *   steps      two-shot calls of many steps (a 4 KiB half), on 3 and on 17 ranks (more
 *              inputs than one reduce() pass takes)
 *   burst      12 calls of both algorithms queued back to back on every stream before one
 *              synchronization (the halves' parities reused while earlier calls may run)
 *   no data    one rank queues a call without data (src NULL) in place of its part, of every
 *              kind (many steps): the others' streams get past it, and the next call is right
 *              everywhere
 *   kinds      reduce-scatter, allgather, bcast and reduce on 2, 3 and 5 ranks, of one element
 *              to many steps (a 1 MiB and a 4 KiB half), every root, in place where MPI allows
 *   errors     one rank, a one-shot call larger than a half, a pair the kernels do not take,
 *              no plan, no such algorithm
 *   apart      (the emulated backend reopened with ACCEL_EMULATED_LANES=apart) calls of every
 *              kind of many steps whose last step is shorter, and calls cut into lanes other
 *              ways after them, while the lower half of the lanes lags steps behind the upper:
 *              a lane must never write where another lane of a peer still reads
 *
 *   test_accel_node                  the emulated backend
 *   test_accel_node --backend cuda   the CUDA kernels (exit 77 without a GPU)
 *
 * One line per check, then "N passed, M failed"; exit 0, 1, or 77 (skipped).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "accel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_check.h"

#define MAX_RANKS 17
#define HALF ((size_t)1 << 20)

static const accel_ops_t *ops;

typedef struct {
    int nranks;
    size_t half;
    void *area_alloc[MAX_RANKS];
    accel_node_plan_t plan[MAX_RANKS];
    accel_stream_h stream[MAX_RANKS];
} node_t;

static bool node_create_half(node_t *node, int nranks, size_t half) {
    size_t head = accel_node_head_bytes(nranks);
    void *zeros = calloc(1, head);
    bool ok = (zeros != NULL);

    memset(node, 0, sizeof(*node));
    node->nranks = nranks;
    node->half = half;
    for (int r = 0; ok && (r < nranks); ++r) {
        ok =
            (ops->mem_alloc(ACCEL_MEM_DEVICE, head + 2 * half, &node->area_alloc[r]) == ACCEL_OK) &&
            (ops->memcpy(node->area_alloc[r], zeros, head) == ACCEL_OK) &&
            (ops->stream_create(&node->stream[r]) == ACCEL_OK);
    }
    for (int r = 0; ok && (r < nranks); ++r) {
        node->plan[r].nranks = nranks;
        node->plan[r].rank = r;
        node->plan[r].half = half;
        for (int p = 0; p < nranks; ++p) {
            node->plan[r].areas[p] = node->area_alloc[p];
        }
    }
    free(zeros);
    return ok;
}

static bool node_create(node_t *node, int nranks) { return node_create_half(node, nranks, HALF); }

static bool node_synchronize(node_t *node) {
    bool ok = true;

    for (int r = 0; r < node->nranks; ++r) {
        ok = (ops->stream_synchronize(node->stream[r]) == ACCEL_OK) && ok;
    }
    return ok;
}

static void node_destroy(node_t *node) {
    (void)node_synchronize(node);
    for (int r = 0; r < node->nranks; ++r) {
        if (node->stream[r] != NULL) {
            (void)ops->stream_destroy(node->stream[r]);
        }
        if (node->area_alloc[r] != NULL) {
            (void)ops->mem_free(node->area_alloc[r]);
        }
    }
}

/* The types and ops the shapes use, with their plain C reference. */
typedef enum { T_INT32_SUM, T_FLOAT_SUM, T_DOUBLE_MAX, T_INT8_SUM } kind_t;

static const struct {
    const char *name;
    accel_dtype_t dtype;
    accel_op_t op;
    size_t size;
} kinds[] = {
    [T_INT32_SUM] = {"int32 sum", ACCEL_DT_INT32, ACCEL_OP_SUM, 4},
    [T_FLOAT_SUM] = {"float sum", ACCEL_DT_FLOAT, ACCEL_OP_SUM, 4},
    [T_DOUBLE_MAX] = {"double max", ACCEL_DT_DOUBLE, ACCEL_OP_MAX, 8},
    [T_INT8_SUM] = {"int8 sum (wraps)", ACCEL_DT_INT8, ACCEL_OP_SUM, 1},
};

/* Rank r's element i of call c (small integers: float sums are exact in any order). */
static void input(kind_t kind, int r, int c, size_t i, void *out) {
    int v = (int)((r * 131 + c * 17 + (int)(i % 1031)) % 2000) - 700;

    switch (kind) {
    case T_INT32_SUM:
        *(int32_t *)out = (int32_t)v * 1000;
        break;
    case T_FLOAT_SUM:
        *(float *)out = (float)v;
        break;
    case T_DOUBLE_MAX:
        *(double *)out = (double)v + 0.25 * r;
        break;
    case T_INT8_SUM:
        *(int8_t *)out = (int8_t)(v & 0x7f);
        break;
    }
}

/* The fold of every rank's element i, left to right. */
static void reference(kind_t kind, int nranks, int c, size_t i, void *out) {
    int32_t i32 = 0;
    float f = 0;
    double d = 0;
    uint8_t u8 = 0;

    for (int r = 0; r < nranks; ++r) {
        union {
            int32_t i32;
            float f;
            double d;
            int8_t i8;
        } x;

        input(kind, r, c, i, &x);
        switch (kind) {
        case T_INT32_SUM:
            i32 = (int32_t)((uint32_t)i32 + (uint32_t)x.i32);
            break;
        case T_FLOAT_SUM:
            f = (r == 0) ? x.f : f + x.f;
            break;
        case T_DOUBLE_MAX:
            d = ((r == 0) || (x.d > d)) ? x.d : d;
            break;
        case T_INT8_SUM:
            u8 = (uint8_t)(u8 + (uint8_t)x.i8);
            break;
        }
    }
    switch (kind) {
    case T_INT32_SUM:
        memcpy(out, &i32, 4);
        break;
    case T_FLOAT_SUM:
        memcpy(out, &f, 4);
        break;
    case T_DOUBLE_MAX:
        memcpy(out, &d, 8);
        break;
    case T_INT8_SUM:
        memcpy(out, &u8, 1);
        break;
    }
}

/* One call's buffers on every rank: the source (and result, in place) at offset bytes into an
 * allocation of its own. */
typedef struct {
    kind_t kind;
    accel_node_kind_t alg;
    int call;
    size_t count, offset;
    bool in_place;
    void *src_alloc[MAX_RANKS], *dst_alloc[MAX_RANKS];
    char *src[MAX_RANKS], *dst[MAX_RANKS];
} call_t;

static bool call_init(call_t *cl, const node_t *node, kind_t kind, int call, size_t count,
                      bool in_place, bool unaligned) {
    size_t size = kinds[kind].size, len = count * size;
    char *host = malloc(len + 1);
    bool ok = (host != NULL);

    memset(cl, 0, sizeof(*cl));
    cl->kind = kind;
    cl->alg = ACCEL_NODE_ALLREDUCE_ONE_SHOT;
    cl->call = call;
    cl->count = count;
    cl->in_place = in_place;
    cl->offset = unaligned ? size : 0;
    for (int r = 0; ok && (r < node->nranks); ++r) {
        for (size_t i = 0; i < count; ++i) {
            input(kind, r, call, i, host + i * size);
        }
        ok = (ops->mem_alloc(ACCEL_MEM_DEVICE, len + cl->offset, &cl->src_alloc[r]) == ACCEL_OK);
        if (ok) {
            cl->src[r] = (char *)cl->src_alloc[r] + cl->offset;
            ok = (ops->memcpy(cl->src[r], host, len) == ACCEL_OK);
        }
        if (ok && !in_place) {
            ok =
                (ops->mem_alloc(ACCEL_MEM_DEVICE, len + cl->offset, &cl->dst_alloc[r]) == ACCEL_OK);
            cl->dst[r] = ok ? (char *)cl->dst_alloc[r] + cl->offset : NULL;
        } else {
            cl->dst[r] = cl->src[r];
        }
    }
    free(host);
    return ok;
}

static accel_status_t call_queue(call_t *cl, node_t *node, int r) {
    accel_node_call_t call = {
        cl->alg, cl->src[r], cl->dst[r], cl->count, kinds[cl->kind].dtype, kinds[cl->kind].op, 0};

    return ops->node_collective(&node->plan[r], &call, node->stream[r]);
}

/* One rank's part of a call of kind, queued as is. */
static accel_status_t queue_raw(const accel_node_plan_t *plan, accel_node_kind_t kind,
                                const void *src, void *dst, size_t count, accel_dtype_t dtype,
                                accel_op_t op, int root, accel_stream_h stream) {
    accel_node_call_t call = {kind, src, dst, count, dtype, op, root};

    return ops->node_collective(plan, &call, stream);
}

/* Whether every rank's result is the reference (after the streams' synchronization). */
static bool call_right(const call_t *cl, int nranks, size_t *bad_p, int *bad_rank_p) {
    size_t size = kinds[cl->kind].size, len = cl->count * size;
    char *got = malloc(len + 1), want[8];
    bool ok = (got != NULL);

    for (int r = 0; ok && (r < nranks); ++r) {
        ok = (ops->memcpy(got, cl->dst[r], len) == ACCEL_OK);
        for (size_t i = 0; ok && (i < cl->count); ++i) {
            reference(cl->kind, nranks, cl->call, i, want);
            if (memcmp(got + i * size, want, size) != 0) {
                *bad_p = i;
                *bad_rank_p = r;
                ok = false;
            }
        }
    }
    free(got);
    return ok;
}

static void call_free(call_t *cl, int nranks) {
    for (int r = 0; r < nranks; ++r) {
        if (cl->src_alloc[r] != NULL) {
            (void)ops->mem_free(cl->src_alloc[r]);
        }
        if (cl->dst_alloc[r] != NULL) {
            (void)ops->mem_free(cl->dst_alloc[r]);
        }
    }
}

static const char *alg_name(accel_node_kind_t alg) {
    return (alg == ACCEL_NODE_ALLREDUCE_TWO_SHOT) ? "two-shot" : "one-shot";
}

static int call_lanes(const call_t *cl) {
    return accel_node_lanes(cl->alg, cl->count, kinds[cl->kind].size, HALF);
}

static void test_shapes(accel_node_kind_t alg) {
    static const size_t counts[] = {1, 7, 1000, 8195, 65541};
    static const int sizes[] = {2, 3, 5};
    int call = 0;

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        node_t node;

        if (!CHECK(node_create(&node, sizes[s]), "%d ranks: areas and streams", sizes[s])) {
            node_destroy(&node);
            continue;
        }
        for (int kind = 0; kind < (int)(sizeof(kinds) / sizeof(kinds[0])); ++kind) {
            for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
                for (int shape = 0; shape < 3; ++shape) {
                    bool in_place = (shape == 1), unaligned = (shape == 2);
                    size_t bad = 0;
                    int bad_rank = -1;
                    bool ok;
                    call_t cl;

                    ok =
                        call_init(&cl, &node, (kind_t)kind, ++call, counts[k], in_place, unaligned);
                    cl.alg = alg;
                    for (int r = 0; ok && (r < node.nranks); ++r) {
                        ok = (call_queue(&cl, &node, r) == ACCEL_OK);
                    }
                    ok = node_synchronize(&node) && ok;
                    CHECK(ok && call_right(&cl, node.nranks, &bad, &bad_rank),
                          "%s, %d ranks, %s, %zu elements (%d lanes)%s: element %zu on rank %d",
                          alg_name(alg), node.nranks, kinds[kind].name, counts[k], call_lanes(&cl),
                          in_place    ? ", in place"
                          : unaligned ? ", one element off"
                                      : "",
                          bad, bad_rank);
                    call_free(&cl, node.nranks);
                }
            }
        }
        node_destroy(&node);
    }
}

/* The calls queued back to back, rank by rank (every rank's calls before the next rank's
 * first), the streams synchronized once, each call checked, all freed (the first ninit were
 * made). */
static void run_back_to_back(const char *what, node_t *node, call_t *calls, int ncalls, int ninit) {
    bool ok = (ninit == ncalls);

    for (int r = 0; ok && (r < node->nranks); ++r) {
        for (int c = 0; ok && (c < ncalls); ++c) {
            ok = (call_queue(&calls[c], node, r) == ACCEL_OK);
        }
    }
    ok = node_synchronize(node) && ok;
    CHECK(ok, "%s: %d calls queued back to back on %d ranks", what, ncalls, node->nranks);
    for (int c = 0; ok && (c < ncalls); ++c) {
        size_t bad = 0;
        int bad_rank = -1;

        CHECK(call_right(&calls[c], node->nranks, &bad, &bad_rank),
              "%s: call %d of %d, %s, %zu elements (%d lanes): element %zu on rank %d", what, c + 1,
              ncalls, alg_name(calls[c].alg), calls[c].count, call_lanes(&calls[c]), bad, bad_rank);
    }
    for (int c = 0; c < ninit; ++c) {
        call_free(&calls[c], node->nranks);
    }
    node_destroy(node);
}

static void test_burst(void) {
    enum { NCALLS = 12 };
    static const size_t counts[] = {3, 65541, 1000, 8195};
    call_t calls[NCALLS];
    node_t node;
    int ninit = 0;

    if (CHECK(node_create(&node, 3), "burst: 3 ranks")) {
        while ((ninit < NCALLS) &&
               call_init(&calls[ninit], &node, (ninit & 1) ? T_FLOAT_SUM : T_INT32_SUM, 100 + ninit,
                         counts[ninit % 4], (ninit % 3) == 0, false)) {
            calls[ninit].alg =
                ((ninit / 2) & 1) ? ACCEL_NODE_ALLREDUCE_TWO_SHOT : ACCEL_NODE_ALLREDUCE_ONE_SHOT;
            ++ninit;
        }
    }
    run_back_to_back("burst", &node, calls, NCALLS, ninit);
}

/* Calls of 2, 16 and 3 lanes in turn, back to back: their slices cut the halves at different
 * places, so lane 1 of one call writes where lane 2 of the call before read; every lane's call
 * number must be the call's (all lanes counted at every call), or a rank ahead overwrites a half
 * a rank behind still reads. */
static void test_lanes_mixed(void) {
    enum { NCALLS = 30 };
    static const size_t counts[] = {10000, 65536, 15000}; /* int32: 2, 16 and 3 lanes */
    call_t calls[NCALLS];
    node_t node;
    int ninit = 0;

    if (CHECK(node_create(&node, 3), "mixed lanes: 3 ranks")) {
        while ((ninit < NCALLS) && call_init(&calls[ninit], &node, T_INT32_SUM, 300 + ninit,
                                             counts[ninit % 3], false, false)) {
            ++ninit;
        }
    }
    run_back_to_back("mixed lanes", &node, calls, NCALLS, ninit);
}

/* Two-shot calls of many steps through a 4 KiB half (1024 int32 a step), one-shot calls between
 * them, back to back: on 3 ranks, and on 17 (the fold takes more inputs than one pass of
 * reduce()). */
static void test_steps(int nranks) {
    enum { NCALLS = 8 };
    static const size_t counts[NCALLS] = {65541, 1000, 1025, 1, 5000, 1024, 3000, 7};
    static const kind_t kinds_of[NCALLS] = {T_INT32_SUM, T_FLOAT_SUM, T_INT8_SUM, T_DOUBLE_MAX,
                                            T_FLOAT_SUM, T_INT32_SUM, T_INT8_SUM, T_INT32_SUM};
    call_t calls[NCALLS];
    node_t node;
    int ninit = 0;
    char what[32];

    snprintf(what, sizeof(what), "steps, %d ranks", nranks);
    if (CHECK(node_create_half(&node, nranks, 4096), "%s: areas and streams", what)) {
        while ((ninit < NCALLS) && call_init(&calls[ninit], &node, kinds_of[ninit], 400 + ninit,
                                             (nranks > 5) ? counts[ninit] / 4 + 1 : counts[ninit],
                                             (ninit % 3) == 2, (ninit % 4) == 3)) {
            /* one-shot where a call fits a half */
            calls[ninit].alg =
                ((ninit & 1) && (calls[ninit].count * kinds[kinds_of[ninit]].size <= node.half))
                    ? ACCEL_NODE_ALLREDUCE_ONE_SHOT
                    : ACCEL_NODE_ALLREDUCE_TWO_SHOT;
            ++ninit;
        }
    }
    run_back_to_back(what, &node, calls, NCALLS, ninit);
}

/* Rank 1's part of a call could not be queued: a call without data instead (half bytes a
 * half: a two-shot call of several steps). */
static void test_no_data(accel_node_kind_t alg, size_t half) {
    call_t failed, next;
    node_t node;
    size_t bad = 0;
    int bad_rank = -1;
    bool ok;

    ok = CHECK(node_create_half(&node, 3, half), "no data, %s: 3 ranks", alg_name(alg));
    ok = ok && call_init(&failed, &node, T_INT32_SUM, 200, 65541, false, false) &&
         call_init(&next, &node, T_INT32_SUM, 201, 65541, true, false);
    failed.alg = next.alg = alg;
    for (int r = 0; ok && (r < node.nranks); ++r) {
        ok = ((r == 1) ? queue_raw(&node.plan[r], alg, NULL, NULL, failed.count, ACCEL_DT_INT32,
                                   ACCEL_OP_SUM, 0, node.stream[r])
                       : call_queue(&failed, &node, r)) == ACCEL_OK;
    }
    for (int r = 0; ok && (r < node.nranks); ++r) {
        ok = (call_queue(&next, &node, r) == ACCEL_OK);
    }
    ok = node_synchronize(&node) && ok;
    CHECK(ok, "no data, %s: every stream got past the call rank 1 queued without data",
          alg_name(alg));
    CHECK(ok && call_right(&next, node.nranks, &bad, &bad_rank),
          "no data, %s: the next call is right (element %zu on rank %d)", alg_name(alg), bad,
          bad_rank);
    call_free(&failed, node.nranks);
    call_free(&next, node.nranks);
    node_destroy(&node);
}

static const char *kind_name(accel_node_kind_t kind) {
    static const char *const names[ACCEL_NODE_KIND_COUNT] = {"allreduce one-shot",
                                                             "allreduce two-shot",
                                                             "reduce-scatter",
                                                             "allgather",
                                                             "bcast",
                                                             "reduce",
                                                             "allreduce across nodes"};

    return names[kind];
}

/* One call of kind on every rank of node, int32 sums of input(), against the reference: the
 * buffers of each rank on the device (reduce-scatter's source and allgather's result hold a
 * block per rank; in_place: allgather's source is the rank's block of its result, reduce's the
 * root's result, reduce-scatter's result the start of its source). */
static bool kind_call(node_t *node, accel_node_kind_t kind, size_t count, int root, int c,
                      bool in_place, int nodata_rank, size_t *bad_p, int *bad_rank_p) {
    const int n = node->nranks;
    const size_t src_n = (kind == ACCEL_NODE_REDUCE_SCATTER) ? n * count : count;
    const size_t dst_n = (kind == ACCEL_NODE_ALLGATHER) ? n * count : count;
    int32_t *host = malloc((src_n > dst_n ? src_n : dst_n) * 4 + 4);
    void *src[MAX_RANKS] = {NULL}, *dst[MAX_RANKS] = {NULL};
    bool ok = (host != NULL);

    for (int r = 0; ok && (r < n); ++r) {
        ok = (ops->mem_alloc(ACCEL_MEM_DEVICE, src_n * 4 + 4, &src[r]) == ACCEL_OK) &&
             (ops->mem_alloc(ACCEL_MEM_DEVICE, dst_n * 4 + 4, &dst[r]) == ACCEL_OK);
        for (size_t i = 0; ok && (i < dst_n); ++i) {
            host[i] = -1; /* what a rank's result holds before the call */
        }
        ok = ok && (ops->memcpy(dst[r], host, dst_n * 4) == ACCEL_OK);
        for (size_t i = 0; ok && (i < src_n); ++i) {
            input(T_INT32_SUM, (kind == ACCEL_NODE_BCAST) ? root : r, c, i, &host[i]);
        }
        ok = ok && (ops->memcpy(src[r], host, src_n * 4) == ACCEL_OK);
    }
    for (int r = 0; ok && (r < n); ++r) {
        const char *s = src[r];
        char *d = dst[r];

        if (in_place && (kind == ACCEL_NODE_ALLGATHER)) {
            ok = (ops->memcpy(d + (size_t)r * count * 4, s, count * 4) == ACCEL_OK);
            s = d + (size_t)r * count * 4;
        } else if (in_place && (kind == ACCEL_NODE_REDUCE_SCATTER)) {
            d = src[r];
        } else if (in_place && (kind == ACCEL_NODE_REDUCE) && (r == root)) {
            d = src[r];
        } else if (kind == ACCEL_NODE_BCAST) {
            d = (r == root) ? src[r] : dst[r];
            s = d; /* the one buffer: read at the root, written at the others */
        }
        if (r == nodata_rank) {
            s = NULL; /* this rank's call could not be queued: the flags only */
            d = NULL;
        }
        ok = ok && (queue_raw(&node->plan[r], kind, s, d, count, ACCEL_DT_INT32, ACCEL_OP_SUM, root,
                              node->stream[r]) == ACCEL_OK);
        if (in_place &&
            ((kind == ACCEL_NODE_REDUCE_SCATTER) || ((kind == ACCEL_NODE_REDUCE) && (r == root)))) {
            dst[r] = src[r];
            src[r] = NULL; /* freed once, as dst */
        } else if (kind == ACCEL_NODE_BCAST && (r == root)) {
            void *t = dst[r];

            dst[r] = src[r];
            src[r] = t;
        }
    }
    ok = node_synchronize(node) && ok;
    for (int r = 0; ok && (nodata_rank < 0) && (r < n); ++r) {
        ok = (ops->memcpy(host, dst[r], dst_n * 4) == ACCEL_OK);
        for (size_t i = 0; ok && (i < dst_n); ++i) {
            int32_t want = -1;

            switch (kind) {
            case ACCEL_NODE_REDUCE_SCATTER:
                reference(T_INT32_SUM, n, c, (size_t)r * count + i, &want);
                break;
            case ACCEL_NODE_ALLGATHER:
                input(T_INT32_SUM, (int)(i / count), c, i % count, &want);
                break;
            case ACCEL_NODE_BCAST:
                input(T_INT32_SUM, root, c, i, &want);
                break;
            case ACCEL_NODE_REDUCE:
                if (r == root) {
                    reference(T_INT32_SUM, n, c, i, &want);
                }
                break;
            default:
                break;
            }
            if (host[i] != want) {
                *bad_p = i;
                *bad_rank_p = r;
                ok = false;
            }
        }
    }
    for (int r = 0; r < n; ++r) {
        if (src[r] != NULL) {
            (void)ops->mem_free(src[r]);
        }
        if (dst[r] != NULL) {
            (void)ops->mem_free(dst[r]);
        }
    }
    free(host);
    return ok;
}

static void test_kinds(void) {
    static const size_t counts[] = {1, 1000, 70000};
    static const int sizes[] = {2, 3, 5};
    static const size_t halves[] = {HALF, 4096};
    int c = 500;

    for (size_t h = 0; h < 2; ++h) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
            node_t node;

            if (!CHECK(node_create_half(&node, sizes[s], halves[h]), "kinds, %d ranks", sizes[s])) {
                node_destroy(&node);
                continue;
            }
            for (int kind = ACCEL_NODE_REDUCE_SCATTER; kind <= ACCEL_NODE_REDUCE; ++kind) {
                for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
                    for (int variant = 0; variant < 2; ++variant) {
                        int root = (variant == 0) ? sizes[s] - 1 : 0;
                        bool in_place = (variant == 1) && (kind != ACCEL_NODE_BCAST);
                        size_t bad = 0;
                        int bad_rank = -1;

                        CHECK(kind_call(&node, (accel_node_kind_t)kind, counts[k], root, ++c,
                                        in_place, -1, &bad, &bad_rank),
                              "%s, %d ranks, %zu-byte half, %zu elements, root %d%s: element %zu "
                              "on rank %d",
                              kind_name((accel_node_kind_t)kind), sizes[s], halves[h], counts[k],
                              root, in_place ? ", in place" : "", bad, bad_rank);
                    }
                }
            }
            node_destroy(&node);
        }
    }
}

/* Every kind: rank 1 queues its call without data (src NULL), of many steps (a 4 KiB half),
 * the others with theirs; every stream gets past it, and the next call is right everywhere. */
static void test_no_data_kinds(void) {
    for (int kind = ACCEL_NODE_REDUCE_SCATTER; kind <= ACCEL_NODE_REDUCE; ++kind) {
        size_t bad = 0;
        int bad_rank = -1;
        bool ok;
        call_t next;
        node_t node;

        ok = CHECK(node_create_half(&node, 3, 4096), "no data, %s: 3 ranks",
                   kind_name((accel_node_kind_t)kind));
        ok = ok && kind_call(&node, (accel_node_kind_t)kind, 5000, 1, 600 + kind, false, 1, &bad,
                             &bad_rank);
        CHECK(ok, "no data, %s: every stream got past the call rank 1 queued without data",
              kind_name((accel_node_kind_t)kind));
        if (ok && call_init(&next, &node, T_INT32_SUM, 700 + kind, 5000, false, false)) {
            next.alg = ACCEL_NODE_ALLREDUCE_TWO_SHOT;
            for (int r = 0; ok && (r < node.nranks); ++r) {
                ok = (call_queue(&next, &node, r) == ACCEL_OK);
            }
            ok = node_synchronize(&node) && ok;
            CHECK(ok && call_right(&next, node.nranks, &bad, &bad_rank),
                  "no data, %s: the next call is right (element %zu on rank %d)",
                  kind_name((accel_node_kind_t)kind), bad, bad_rank);
            call_free(&next, node.nranks);
        }
        node_destroy(&node);
    }
}

/* The blocks run apart (the emulated backend opened under ACCEL_EMULATED_LANES=apart): every
 * kind, calls of several steps whose last step is shorter than the others (so cut into lanes at
 * other offsets), each followed by calls of other sizes, on 3 ranks with a 4 KiB half. */
static void test_apart(void) {
    static const size_t counts[] = {2500, 1, 700, 5000, 1030};
    node_t node;
    int c = 900;

    if (!CHECK(node_create_half(&node, 3, 4096), "apart: 3 ranks")) {
        node_destroy(&node);
        return;
    }
    for (int round = 0; round < 2; ++round) {
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
            call_t cl;
            size_t bad = 0;
            int bad_rank = -1;
            bool ok = call_init(&cl, &node, T_INT32_SUM, ++c, counts[k], false, false);

            cl.alg = ACCEL_NODE_ALLREDUCE_TWO_SHOT;
            for (int r = 0; ok && (r < node.nranks); ++r) {
                ok = (call_queue(&cl, &node, r) == ACCEL_OK);
            }
            ok = node_synchronize(&node) && ok && call_right(&cl, node.nranks, &bad, &bad_rank);
            CHECK(ok, "apart: two-shot, %zu elements: element %zu on rank %d", counts[k], bad,
                  bad_rank);
            call_free(&cl, node.nranks);
        }
        for (int kind = ACCEL_NODE_REDUCE_SCATTER; kind <= ACCEL_NODE_REDUCE; ++kind) {
            for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
                size_t bad = 0;
                int bad_rank = -1;
                bool ok = kind_call(&node, (accel_node_kind_t)kind, counts[k], (int)(k % 3), ++c,
                                    false, -1, &bad, &bad_rank);

                /* (the arguments after the condition are evaluated before it) */
                CHECK(ok, "apart: %s, %zu elements: element %zu on rank %d",
                      kind_name((accel_node_kind_t)kind), counts[k], bad, bad_rank);
            }
        }
    }
    node_destroy(&node);
}

static void test_errors(void) {
    accel_node_plan_t plan;
    void *buf = NULL;
    node_t node;

    if (!CHECK(node_create(&node, 2) && (ops->mem_alloc(ACCEL_MEM_DEVICE, 64, &buf) == ACCEL_OK),
               "errors: 2 ranks")) {
        node_destroy(&node);
        return;
    }
    plan = node.plan[0];
    plan.nranks = 1;
    CHECK(queue_raw(&plan, ACCEL_NODE_ALLREDUCE_ONE_SHOT, buf, buf, 1, ACCEL_DT_INT32, ACCEL_OP_SUM,
                    0, node.stream[0]) == ACCEL_ERR_INVALID,
          "errors: one rank: ACCEL_ERR_INVALID");
    CHECK(queue_raw(&node.plan[0], ACCEL_NODE_ALLREDUCE_ONE_SHOT, buf, buf, HALF / 4 + 1,
                    ACCEL_DT_INT32, ACCEL_OP_SUM, 0, node.stream[0]) == ACCEL_ERR_INVALID,
          "errors: larger than a half: ACCEL_ERR_INVALID");
    CHECK(queue_raw(&node.plan[0], ACCEL_NODE_ALLREDUCE_ONE_SHOT, buf, buf, 1, ACCEL_DT_FLOAT,
                    ACCEL_OP_BXOR, 0, node.stream[0]) == ACCEL_ERR_UNSUPPORTED,
          "errors: float bxor: ACCEL_ERR_UNSUPPORTED");
    CHECK(queue_raw(NULL, ACCEL_NODE_ALLREDUCE_ONE_SHOT, buf, buf, 1, ACCEL_DT_INT32, ACCEL_OP_SUM,
                    0, node.stream[0]) == ACCEL_ERR_INVALID,
          "errors: no plan: ACCEL_ERR_INVALID");
    CHECK(queue_raw(&node.plan[0], ACCEL_NODE_KIND_COUNT, buf, buf, 1, ACCEL_DT_INT32, ACCEL_OP_SUM,
                    0, node.stream[0]) == ACCEL_ERR_INVALID,
          "errors: no such kind: ACCEL_ERR_INVALID");
    /* across nodes on a plan of one node (nnodes unset), and with no stage */
    plan = node.plan[0];
    plan.nnodes = 1;
    CHECK(queue_raw(&plan, ACCEL_NODE_ALLREDUCE_HIERARCHICAL, buf, buf, 1, ACCEL_DT_INT32,
                    ACCEL_OP_SUM, 0, node.stream[0]) == ACCEL_ERR_INVALID,
          "errors: across nodes on one node: ACCEL_ERR_INVALID");
    plan.nnodes = 2;
    plan.node = 0;
    plan.stage = NULL;
    CHECK(queue_raw(&plan, ACCEL_NODE_ALLREDUCE_HIERARCHICAL, buf, buf, 1, ACCEL_DT_INT32,
                    ACCEL_OP_SUM, 0, node.stream[0]) == ACCEL_ERR_INVALID,
          "errors: across nodes without a stage: ACCEL_ERR_INVALID");
    CHECK(queue_raw(&node.plan[0], ACCEL_NODE_BCAST, buf, buf, 1, ACCEL_DT_INT32, ACCEL_OP_SUM, 2,
                    node.stream[0]) == ACCEL_ERR_INVALID,
          "errors: a root outside the plan: ACCEL_ERR_INVALID");
    (void)ops->mem_free(buf);
    node_destroy(&node);
}

int main(int argc, char **argv) {
    accel_backend_kind_t kind = ACCEL_BACKEND_EMULATED;
    const char *reason = NULL;
    accel_status_t status;

    for (int i = 1; i < argc; ++i) {
        if ((strcmp(argv[i], "--backend") == 0) && (i + 1 < argc)) {
            ++i;
            kind = (strcmp(argv[i], "cuda") == 0) ? ACCEL_BACKEND_CUDA : ACCEL_BACKEND_EMULATED;
        } else {
            fprintf(stderr, "usage: %s [--backend emulated|cuda]\n", argv[0]);
            return 2;
        }
    }
    status = accel_init(kind, &ops, &reason);
    if (status != ACCEL_OK) {
        printf("SKIP: no %s backend: %s\n", (kind == ACCEL_BACKEND_CUDA) ? "cuda" : "emulated",
               (reason != NULL) ? reason : accel_status_string(status));
        return 77;
    }
    if (ops->node_collective == NULL) {
        printf("FAIL: the %s backend has no node_collective\n", ops->name);
        return 1;
    }
    test_shapes(ACCEL_NODE_ALLREDUCE_ONE_SHOT);
    test_shapes(ACCEL_NODE_ALLREDUCE_TWO_SHOT);
    test_steps(3);
    test_steps(17);
    test_burst();
    test_lanes_mixed();
    test_no_data(ACCEL_NODE_ALLREDUCE_ONE_SHOT, HALF);
    test_no_data(ACCEL_NODE_ALLREDUCE_TWO_SHOT, 16384);
    test_kinds();
    test_no_data_kinds();
    test_errors();
    if (kind == ACCEL_BACKEND_EMULATED) {
        /* the backend again, its blocks apart (a GPU runs them apart anyway) */
        accel_finalize();
        setenv("ACCEL_EMULATED_LANES", "apart", 1);
        status = accel_init(kind, &ops, &reason);
        CHECK(status == ACCEL_OK, "apart: the emulated backend opened again");
    }
    if (status == ACCEL_OK) {
        test_apart();
    }
    accel_finalize();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (test_failed == 0) ? 0 : 1;
}
