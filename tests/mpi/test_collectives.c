/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every blocking collective coll/gpu intercepts, checked call by call:
 *
 *   collectives x types (int8, uint8, int32, int64, float, double, a vector type with holes,
 *   a resized type with a non-zero lower bound) x ops (sum, max, bxor, commutative and
 *   non-commutative user ops) x counts (0, 1, 1001) x MPI_IN_PLACE x communicators (dup of
 *   world, odd/even split, reversed key order) x roots (0, last) x buffer kinds,
 *   plus big cases (>= --big bytes, default 4 MiB) that pipeline through the staging buffer.
 *
 * Each call is checked three ways: the result against an independent reference (every
 * rank's input is generated locally), every byte the call must not touch (holes of
 * non-contiguous types, gaps between v-blocks, a guard after the buffer, send buffers), and
 * the component's MPI_T counters (passthrough for host memory, staged for device memory,
 * pipelined chunks for big device calls).  Arguments MPI says are ignored (non-root receive
 * buffers of reduce/gather, non-root send buffers of scatter) are garbage pointers.
 *
 * Without --full, the communicator and root of each case are picked by a hash of the case
 * number (the same on every rank), so every (type, op, count, in-place) meets every
 * communicator and root over the matrix without multiplying its size by six.
 *
 * Closing line (rank 0): "N passed, M failed".
 */
/* strdup, strtok_r, strcasecmp, alarm: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COUNTS 8

typedef struct {
    tu_options_t common;
    bool colls[COLL_GPU_NUM_COLLS];
    bool types[TU_NUM_TYPES];
    bool ops[TU_NUM_OPS];
    size_t counts[MAX_COUNTS];
    int num_counts;
    bool full;
    bool small;
    bool big;
} options_t;

typedef struct {
    const options_t *opts;
    tu_gpu_config_t config;
    tu_comm_t comms[TU_NUM_COMMS];
    tu_kind_t *kind_of_world_rank; /* this pass's memory for every world rank */
    unsigned case_index;
    long skipped;
} state_t;

/* Big cases: the collectives the component pipelines, each with a type/op that matters
 * (int8 sums overflow; user ops; a non-contiguous type that must not be pipelined), and one
 * call of every other collective to exercise staging larger than the staging buffer. */
typedef struct {
    coll_gpu_coll_t coll;
    tu_type_id_t type;
    tu_op_id_t op;
    bool in_place;
    bool root_last;
} big_case_t;

static const big_case_t big_cases[] = {
    {COLL_GPU_ALLREDUCE, TU_TYPE_FLOAT, TU_OP_SUM, false, false},
    {COLL_GPU_ALLREDUCE, TU_TYPE_INT8, TU_OP_SUM, false, false},
    {COLL_GPU_ALLREDUCE, TU_TYPE_INT32, TU_OP_USER_NONCOMM, false, false},
    {COLL_GPU_ALLREDUCE, TU_TYPE_DOUBLE, TU_OP_MAX, true, false},
    {COLL_GPU_ALLREDUCE, TU_TYPE_VECTOR, TU_OP_USER_NONCOMM, false, false},
    {COLL_GPU_REDUCE, TU_TYPE_DOUBLE, TU_OP_SUM, false, true},
    {COLL_GPU_REDUCE, TU_TYPE_UINT8, TU_OP_SUM, true, false},
    {COLL_GPU_BCAST, TU_TYPE_INT8, TU_OP_SUM, false, false},
    {COLL_GPU_BCAST, TU_TYPE_LB, TU_OP_SUM, false, true},
    {COLL_GPU_SCAN, TU_TYPE_INT32, TU_OP_SUM, false, false},
    {COLL_GPU_EXSCAN, TU_TYPE_INT64, TU_OP_BXOR, false, false},
    {COLL_GPU_EXSCAN, TU_TYPE_FLOAT, TU_OP_USER_NONCOMM, true, false},
    {COLL_GPU_REDUCE_LOCAL, TU_TYPE_FLOAT, TU_OP_SUM, false, false},
    {COLL_GPU_REDUCE_LOCAL, TU_TYPE_INT64, TU_OP_USER_NONCOMM, false, false},
    {COLL_GPU_ALLGATHER, TU_TYPE_UINT8, TU_OP_SUM, false, false},
    {COLL_GPU_ALLGATHERV, TU_TYPE_INT64, TU_OP_SUM, true, false},
    {COLL_GPU_ALLTOALL, TU_TYPE_INT32, TU_OP_SUM, false, false},
    {COLL_GPU_ALLTOALLV, TU_TYPE_DOUBLE, TU_OP_SUM, false, false},
    {COLL_GPU_GATHER, TU_TYPE_DOUBLE, TU_OP_SUM, false, true},
    {COLL_GPU_GATHERV, TU_TYPE_INT8, TU_OP_SUM, false, false},
    {COLL_GPU_SCATTER, TU_TYPE_FLOAT, TU_OP_SUM, false, false},
    {COLL_GPU_SCATTERV, TU_TYPE_INT32, TU_OP_SUM, true, true},
    {COLL_GPU_REDUCE_SCATTER, TU_TYPE_INT32, TU_OP_SUM, false, false},
    {COLL_GPU_REDUCE_SCATTER_BLOCK, TU_TYPE_INT32, TU_OP_MAX, false, false},
};

static uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static void usage(void) {
    printf("usage: test_collectives [options]\n"
           "  --colls=LIST   collectives (allreduce,bcast,...; default: all blocking)\n"
           "  --types=LIST   int8,uint8,int32,int64,float,double,vector,lb (default: all)\n"
           "  --ops=LIST     sum,max,bxor,user-comm,user-noncomm (default: all)\n"
           "  --counts=LIST  element counts of the small cases (default 0,1,1001)\n"
           "  --full         every communicator and root for every case (slow)\n"
           "  --big-only     only the big cases;  --small-only: no big cases\n");
    tu_options_usage();
}

/* Parses a comma-separated list of names into flags; lookup returns an index or -1. */
static int parse_list(const char *list, bool *flags, int nflags, int (*lookup)(const char *)) {
    char *copy = strdup(list), *save = NULL;
    int rc = 0;
    memset(flags, 0, sizeof(bool) * nflags);
    for (char *tok = strtok_r(copy, ",", &save); NULL != tok; tok = strtok_r(NULL, ",", &save)) {
        int i = lookup(tok);
        if (i < 0 || i >= nflags) {
            rc = -1;
            break;
        }
        flags[i] = true;
    }
    free(copy);
    return rc;
}

static int parse_options(int argc, char **argv, options_t *opts) {
    memset(opts, 0, sizeof(*opts));
    tu_options_default(&opts->common);
    for (int i = 0; i < COLL_GPU_NUM_COLLS; i++) {
        opts->colls[i] = tu_coll_is_blocking(i) && tu_coll_case_supported(i);
    }
    for (int i = 0; i < TU_NUM_TYPES; i++) {
        opts->types[i] = true;
    }
    for (int i = 0; i < TU_NUM_OPS; i++) {
        opts->ops[i] = true;
    }
    opts->counts[0] = 0;
    opts->counts[1] = 1;
    opts->counts[2] = 1001;
    opts->num_counts = 3;
    opts->small = opts->big = true;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int rc = tu_options_parse_one(&opts->common, arg);
        if (rc < 0) {
            return -1;
        } else if (rc > 0) {
            continue;
        }
        if (0 == strncmp(arg, "--colls=", 8)) {
            if (parse_list(arg + 8, opts->colls, COLL_GPU_NUM_COLLS, tu_coll_from_name)) {
                return -1;
            }
        } else if (0 == strncmp(arg, "--types=", 8)) {
            if (parse_list(arg + 8, opts->types, TU_NUM_TYPES, tu_type_from_name)) {
                return -1;
            }
        } else if (0 == strncmp(arg, "--ops=", 6)) {
            if (parse_list(arg + 6, opts->ops, TU_NUM_OPS, tu_op_from_name)) {
                return -1;
            }
        } else if (0 == strncmp(arg, "--counts=", 9)) {
            char *copy = strdup(arg + 9), *save = NULL;
            opts->num_counts = 0;
            for (char *tok = strtok_r(copy, ",", &save);
                 NULL != tok && opts->num_counts < MAX_COUNTS; tok = strtok_r(NULL, ",", &save)) {
                opts->counts[opts->num_counts++] = strtoul(tok, NULL, 0);
            }
            free(copy);
        } else if (0 == strcmp(arg, "--full")) {
            opts->full = true;
        } else if (0 == strcmp(arg, "--big-only")) {
            opts->small = false;
        } else if (0 == strcmp(arg, "--small-only")) {
            opts->big = false;
        } else {
            return -1;
        }
    }
    for (int i = 0; i < COLL_GPU_NUM_COLLS; i++) {
        if (opts->colls[i] && (!tu_coll_is_blocking(i) || !tu_coll_case_supported(i))) {
            return -1; /* test_nonblocking and test_neighbor cover those */
        }
    }
    if (0 == opts->common.num_kinds && 0 == opts->common.num_rank_kinds) {
        tu_options_parse_one(&opts->common, "--kinds=host");
    }
    if (0 == opts->common.big_bytes) {
        opts->big = false;
    }
    return 0;
}

static void run_case(state_t *st, const tu_coll_params_t *params) {
    tu_coll_case_t *c;
    tu_expect_t expect;
    tu_counters_t before, after;
    int rc;

    if (0 != tu_coll_case_create(params, &c)) {
        /* every rank must make every call: a rank that cannot would hang the others */
        fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!tu_coll_case_expect(c, &st->config, st->kind_of_world_rank, &expect)) {
        /* invalid under the contract (none today): the same decision on every rank */
        st->skipped++;
        tu_coll_case_destroy(c);
        return;
    }
    tu_case_begin("%s", tu_coll_case_desc(c));
    tu_counters_read(&before);
    rc = tu_coll_case_start(c, NULL);
    tu_counters_read(&after);
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len;
        MPI_Error_string(rc, msg, &len);
        tu_fail("returned %d (%s)", rc, msg);
    }
    tu_coll_case_verify(c);
    tu_check_counters(&before, &after, params->coll, 1, &expect);
    tu_case_end();
    tu_coll_case_destroy(c);
}

static void run_small(state_t *st, const tu_kind_t *my_kind) {
    const options_t *opts = st->opts;

    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        if (!opts->colls[coll]) {
            continue;
        }
        for (int type = 0; type < TU_NUM_TYPES; type++) {
            if (!opts->types[type]) {
                continue;
            }
            for (int op = 0; op < TU_NUM_OPS; op++) {
                bool reduction = tu_coll_is_reduction(coll);
                /* non-reductions run once per type (op SUM is only the input generator) */
                if (reduction ? (!opts->ops[op] || !tu_op_valid(op, type)) : op != TU_OP_SUM) {
                    continue;
                }
                for (int ci = 0; ci < opts->num_counts; ci++) {
                    for (int in_place = 0; in_place <= (tu_coll_allows_in_place(coll) ? 1 : 0);
                         in_place++) {
                        tu_coll_params_t p = {
                            .coll = coll,
                            .type = type,
                            .op = op,
                            .count = opts->counts[ci],
                            .in_place = in_place,
                            .kind = *my_kind,
                        };
                        int first_comm = 0, last_comm = TU_NUM_COMMS - 1;
                        uint32_t h = hash32(st->case_index);

                        if (COLL_GPU_REDUCE_LOCAL == coll) {
                            last_comm = 0; /* no communicator */
                        } else if (!opts->full) {
                            first_comm = last_comm = h % TU_NUM_COMMS;
                        }
                        for (int cm = first_comm; cm <= last_comm; cm++) {
                            const tu_comm_t *comm = &st->comms[cm];
                            int roots[2] = {0, comm->size - 1};
                            /* two roots even on a 1-rank communicator: every rank must count
                             * the same cases, the case number salts the data */
                            int nroots = tu_coll_has_root(coll) ? 2 : 1;
                            int r0 = 0;
                            if (!opts->full && nroots > 1) {
                                r0 = (h >> 8) & 1;
                                nroots = r0 + 1;
                            }
                            for (int ri = r0; ri < nroots; ri++) {
                                p.comm = comm;
                                p.root = roots[ri];
                                p.salt = st->case_index;
                                p.garbage = (h >> 16) % TU_NUM_GARBAGE;
                                run_case(st, &p);
                                st->case_index++;
                                h = hash32(st->case_index);
                            }
                        }
                    }
                }
            }
        }
    }
}

static void run_big(state_t *st, const tu_kind_t *my_kind) {
    const options_t *opts = st->opts;
    const tu_comm_t *world = &st->comms[TU_COMM_WORLD];

    for (size_t i = 0; i < sizeof(big_cases) / sizeof(big_cases[0]); i++) {
        const big_case_t *b = &big_cases[i];
        const tu_type_t *type = tu_type(b->type);
        size_t elem_bytes = type->nvals * type->base_size;
        size_t count = opts->common.big_bytes / elem_bytes;
        tu_coll_params_t p = {
            .coll = b->coll,
            .type = b->type,
            .op = b->op,
            .in_place = b->in_place,
            .comm = world,
            .root = b->root_last ? world->size - 1 : 0,
            .kind = *my_kind,
            .salt = 0x8000000u + (uint32_t)i,
            .garbage = i % TU_NUM_GARBAGE,
        };

        if (!opts->colls[b->coll] || !opts->types[b->type]) {
            continue;
        }
        /* the collectives that gather or scatter size blocks: the whole call ~ big bytes */
        switch (b->coll) {
        case COLL_GPU_ALLGATHER:
        case COLL_GPU_ALLGATHERV:
        case COLL_GPU_ALLTOALL:
        case COLL_GPU_ALLTOALLV:
        case COLL_GPU_GATHER:
        case COLL_GPU_GATHERV:
        case COLL_GPU_SCATTER:
        case COLL_GPU_SCATTERV:
        case COLL_GPU_REDUCE_SCATTER:
        case COLL_GPU_REDUCE_SCATTER_BLOCK:
            count /= (size_t)world->size;
            break;
        default:
            break;
        }
        p.count = count > 0 ? count : 1;
        run_case(st, &p);
    }
}

int main(int argc, char **argv) {
    options_t opts;
    state_t st;

    MPI_Init(&argc, &argv);
    memset(&st, 0, sizeof(st));
    if (0 != parse_options(argc, argv, &opts)) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (0 == rank) {
            fprintf(stderr, "test_collectives: bad arguments\n");
            usage();
        }
        tu_finish(TU_EXIT_FAIL);
    }
    st.opts = &opts;
    tu_setup_or_exit(&opts.common);
    if (0 == tu_world_rank && tu_op_avx_int8_bug_present()) {
        tu_note("this Open MPI's MPI_SUM saturates int8 (op/avx, open-mpi/ompi#8045): int8/uint8 "
                "sums will fail; run with --mca op ^avx");
    }
    tu_gpu_config_read(&st.config);
    if (0 == tu_world_rank && opts.common.verbose > 0) {
        printf("coll_gpu config: found=%d staging=%lld pipeline=%d check_memory_kinds=%d\n",
               st.config.found, st.config.staging_buffer_size, st.config.pipeline,
               st.config.check_memory_kinds);
    }
    if (!opts.common.component) {
        /* nothing to pipeline without the component: never skip a case for it */
        st.config.pipeline = false;
    }
    tu_comms_create_all(st.comms);

    st.kind_of_world_rank = calloc(tu_world_size, sizeof(tu_kind_t));
    {
        /* with --rank-kinds one pass in which every rank has its own memory */
        int passes = opts.common.num_rank_kinds > 0 ? 1 : opts.common.num_kinds;
        for (int k = 0; k < passes; k++) {
            tu_kind_t *kind = &opts.common.kinds[k];
            tu_kind_t mine;
            for (int r = 0; r < tu_world_size; r++) {
                st.kind_of_world_rank[r] = tu_options_rank_kind(&opts.common, kind, r);
            }
            mine = st.kind_of_world_rank[tu_world_rank];
            if (opts.small) {
                run_small(&st, &mine);
            }
            if (opts.big) {
                run_big(&st, &mine);
            }
        }
    }
    if (st.skipped > 0 && 0 == tu_world_rank) {
        tu_note("%ld cases skipped as invalid", st.skipped);
    }

    tu_comms_free_all(st.comms);
    free(st.kind_of_world_rank);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
