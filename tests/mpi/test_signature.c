/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks passing different datatypes of one type signature (legal MPI for every data-movement
 * collective), with no parameter asking the ranks to agree: every call must move the right
 * bytes, leave the holes of every layout untouched and return MPI_SUCCESS on every rank, as on
 * plain Open MPI.  Each rank picks one of four layouts of a block of ints, by rank and case:
 *   int:   MPI_INT (dense)
 *   pair:  MPI_Type_contiguous(2, MPI_INT): dense, half the count
 *   gappy: MPI_INT resized to 2 ints: one int, then a hole
 *   vec:   2 ints 2 apart, resized to 4 ints: non-dense, half the count
 * Collectives: MPI_Bcast, MPI_Gather (also with MPI_IN_PLACE at the root, which passes count -1
 * and MPI_DATATYPE_NULL as MPI allows), MPI_Scatter (also in place), MPI_Allgather,
 * MPI_Alltoall, MPI_Allgatherv and MPI_Alltoallv (blocks of different lengths).  Device buffers,
 * or host ones with --kinds=host (under coll_gpu_host_buffers=1 they run natively too).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#include "test_native_util.h"
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K 1500 /* ints per block: 2K, divisible by every layout's ints per element */
#define N (2 * K)
#define HOLE (-7)

typedef struct {
    const char *name;
    MPI_Datatype type;
    int per;    /* ints of the signature per element */
    int extent; /* ints of memory per element */
    int offs[2];
} layout_t;

static layout_t layouts[4];
static tu_mem_t mem = TU_MEM_DEVICE;
static int my_rank, world_size;

static void layouts_create(void) {
    MPI_Datatype pair, vec;

    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    layouts[0] = (layout_t){"int", MPI_INT, 1, 1, {0, 0}};
    layouts[1] = (layout_t){"pair", pair, 2, 2, {0, 1}};
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &layouts[2].type);
    layouts[2] = (layout_t){"gappy", layouts[2].type, 1, 2, {0, 0}};
    MPI_Type_create_resized(vec, 0, 4 * sizeof(int), &layouts[3].type);
    layouts[3] = (layout_t){"vec", layouts[3].type, 2, 4, {0, 2}};
    MPI_Type_free(&vec);
    for (int l = 1; l < 4; ++l) {
        MPI_Type_commit(&layouts[l].type);
    }
}

/* Where int j of a run of ints laid out as l sits in memory (in ints). */
static size_t pos(const layout_t *l, size_t j) {
    return (j / (size_t)l->per) * (size_t)l->extent + (size_t)l->offs[j % (size_t)l->per];
}

static size_t mem_ints(const layout_t *l, size_t n) { return (n / (size_t)l->per) * l->extent; }

static int value(int a, int b, size_t j) { return a * 1000003 + b * 10007 + (int)j; }

/* A buffer of n ints in layout l, holes HOLE, data from fill(j) (NULL: HOLE too). */
typedef int (*fill_fn)(size_t j, void *ctx);
static void *make(const layout_t *l, size_t n, fill_fn fill, void *ctx) {
    size_t m = mem_ints(l, n) + 1;
    int *host = tn_malloc(m * sizeof(int));
    void *buf;

    for (size_t i = 0; i < m; ++i) {
        host[i] = HOLE;
    }
    for (size_t j = 0; (NULL != fill) && (j < n); ++j) {
        host[pos(l, j)] = fill(j, ctx);
    }
    buf = tn_mem_copy_of(mem, host, m * sizeof(int));
    free(host);
    return buf;
}

/* Checks buf (n ints in layout l): data want(j), holes still HOLE; frees it. */
static void check(const char *what, const layout_t *l, void *buf, size_t n, fill_fn want,
                  void *ctx) {
    size_t m = mem_ints(l, n) + 1, j = 0;
    int *host = tn_malloc(m * sizeof(int)), bad = 0;

    if (tu_mem_read(mem, host, buf, m * sizeof(int))) {
        tn_setup_failed();
    }
    for (size_t i = 0; i < m; ++i) {
        bool data = (j < n) && (pos(l, j) == i);
        int expect = data ? want(j, ctx) : HOLE;
        if ((host[i] != expect) && (bad++ < 3)) {
            tu_fail("%s (%s layout): int %zu of memory is %d, expected %d (%s)", what, l->name, i,
                    host[i], expect, data ? "data" : "a hole");
        }
        j += data ? 1 : 0;
    }
    free(host);
    tu_mem_free(mem, buf);
}

static void expect_success(int rc, const char *what) {
    if (MPI_SUCCESS != rc) {
        tu_fail("%s returned %d", what, rc);
    }
}

/* contents: block b (of `block` ints) of the whole run is from rank src_of(b) for rank dst */
typedef struct {
    size_t block;
    int fixed_src, fixed_dst; /* >= 0: instead of the block's */
    const size_t *firsts;     /* v: the first int of each block (world_size + 1 entries) */
    int only_block;           /* >= 0: the other blocks' data is -1 */
} ctx_t;
static int block_of(const ctx_t *c, size_t j) {
    if (NULL != c->firsts) {
        int b = 0;
        while (j >= c->firsts[b + 1]) {
            ++b;
        }
        return b;
    }
    return (int)(j / c->block);
}
static size_t index_in_block(const ctx_t *c, size_t j) {
    return (NULL != c->firsts) ? j - c->firsts[block_of(c, j)] : j % c->block;
}
static int fill_ctx(size_t j, void *p) {
    const ctx_t *c = p;
    int b = block_of(c, j);
    int src = (c->fixed_src >= 0) ? c->fixed_src : b, dst = (c->fixed_dst >= 0) ? c->fixed_dst : b;
    if ((c->only_block >= 0) && (b != c->only_block)) {
        return -1;
    }
    return value(src, dst, index_in_block(c, j));
}

static const layout_t *lay(int rank, int salt) { return &layouts[(rank + salt) % 4]; }

static void run_rooted(int root, int salt) {
    const layout_t *l = lay(my_rank, salt);
    int size = world_size, n_el = N / l->per, total_el = (N * size) / l->per;
    bool is_root = (my_rank == root);
    ctx_t mine = {N, my_rank, 0, NULL, -1}, rootv = {N, root, 0, NULL, -1},
          blocks = {N, -1, 0, NULL, -1};
    void *s, *r;

    tu_case_begin("root %d, %s layout here (layouts by rank, salt %d)", root, l->name, salt);
    /* bcast */
    r = is_root ? make(l, N, fill_ctx, &rootv) : make(l, N, NULL, NULL);
    expect_success(MPI_Bcast(r, n_el, l->type, root, MPI_COMM_WORLD), "MPI_Bcast");
    check("MPI_Bcast", l, r, N, fill_ctx, &rootv);

    /* gather, then gather in place (the root's send arguments: count -1, MPI_DATATYPE_NULL) */
    for (int in_place = 0; in_place < 2; ++in_place) {
        const char *what = in_place ? "MPI_Gather in place" : "MPI_Gather";
        bool skip_send = in_place && is_root;
        s = skip_send ? MPI_IN_PLACE : make(l, N, fill_ctx, &mine);
        if (is_root) {
            /* in place, only the root's own block holds data before the call */
            ctx_t pre = {N, -1, 0, NULL, root};
            r = make(l, (size_t)N * size, in_place ? fill_ctx : NULL, &pre);
        } else {
            r = NULL;
        }
        expect_success(MPI_Gather(s, skip_send ? -1 : n_el, skip_send ? MPI_DATATYPE_NULL : l->type,
                                  r, is_root ? n_el : -1, is_root ? l->type : MPI_DATATYPE_NULL,
                                  root, MPI_COMM_WORLD),
                       what);
        if (!skip_send) {
            tu_mem_free(mem, s);
        }
        if (is_root) {
            check(what, l, r, (size_t)N * size, fill_ctx, &blocks);
        }
    }

    /* scatter, then scatter in place */
    for (int in_place = 0; in_place < 2; ++in_place) {
        const char *what = in_place ? "MPI_Scatter in place" : "MPI_Scatter";
        ctx_t to_me = {N, -1, 0, NULL, -1};
        bool skip_recv = in_place && is_root;
        ctx_t got = {N, my_rank, 0, NULL, -1};
        s = is_root ? make(l, (size_t)N * size, fill_ctx, &to_me) : NULL;
        r = skip_recv ? MPI_IN_PLACE : make(l, N, NULL, NULL);
        expect_success(MPI_Scatter(s, is_root ? n_el : -1, is_root ? l->type : MPI_DATATYPE_NULL, r,
                                   skip_recv ? -1 : n_el, skip_recv ? MPI_DATATYPE_NULL : l->type,
                                   root, MPI_COMM_WORLD),
                       what);
        if (!skip_recv) {
            check(what, l, r, N, fill_ctx, &got);
        }
        if (is_root) {
            check(what, l, s, (size_t)N * size, fill_ctx, &to_me); /* the input, untouched */
        }
    }
    (void)total_el;
    tu_case_end();
}

static void run_all(int salt) {
    const layout_t *ls = lay(my_rank, salt), *lr = lay(my_rank, salt + 1);
    int size = world_size;
    ctx_t mine = {N, my_rank, 0, NULL, -1}, blocks = {N, -1, 0, NULL, -1};
    ctx_t to_all = {N, my_rank, -1, NULL, -1}, from_all = {N, -1, my_rank, NULL, -1};
    size_t *firsts = tn_malloc((size_t)(size + 1) * sizeof(size_t));
    int *rcounts = tn_malloc((size_t)size * sizeof(int)),
        *rdispls = tn_malloc((size_t)size * sizeof(int));
    int *scounts = tn_malloc((size_t)size * sizeof(int)),
        *sdispls = tn_malloc((size_t)size * sizeof(int));
    void *s, *r;

    tu_case_begin("send %s, receive %s layout here (salt %d)", ls->name, lr->name, salt);
    s = make(ls, N, fill_ctx, &mine);
    r = make(lr, (size_t)N * size, NULL, NULL);
    expect_success(
        MPI_Allgather(s, N / ls->per, ls->type, r, N / lr->per, lr->type, MPI_COMM_WORLD),
        "MPI_Allgather");
    tu_mem_free(mem, s);
    check("MPI_Allgather", lr, r, (size_t)N * size, fill_ctx, &blocks);

    /* alltoall: block d of my send buffer is value(me, d); block p received is value(p, me) */
    to_all.fixed_dst = -1;
    s = make(ls, (size_t)N * size, fill_ctx, &to_all);
    r = make(lr, (size_t)N * size, NULL, NULL);
    expect_success(MPI_Alltoall(s, N / ls->per, ls->type, r, N / lr->per, lr->type, MPI_COMM_WORLD),
                   "MPI_Alltoall");
    tu_mem_free(mem, s);
    check("MPI_Alltoall", lr, r, (size_t)N * size, fill_ctx, &from_all);

    /* allgatherv: block p holds (p + 1) * 2 elements of 2 ints' worth: lengths differ */
    firsts[0] = 0;
    for (int p = 0; p < size; ++p) {
        size_t ints = (size_t)(p + 1) * 4;
        firsts[p + 1] = firsts[p] + ints;
        rcounts[p] = (int)(ints / (size_t)lr->per);
        rdispls[p] = (int)(firsts[p] / (size_t)lr->per);
    }
    {
        ctx_t v = {0, -1, 0, firsts, -1}, me_v = {(size_t)(my_rank + 1) * 4, my_rank, 0, NULL, -1};
        size_t mine_ints = (size_t)(my_rank + 1) * 4;
        s = make(ls, mine_ints, fill_ctx, &me_v);
        r = make(lr, firsts[size], NULL, NULL);
        expect_success(MPI_Allgatherv(s, (int)(mine_ints / (size_t)ls->per), ls->type, r, rcounts,
                                      rdispls, lr->type, MPI_COMM_WORLD),
                       "MPI_Allgatherv");
        tu_mem_free(mem, s);
        check("MPI_Allgatherv", lr, r, firsts[size], fill_ctx, &v);
    }

    /* alltoallv: I send rank d (d + my_rank + 1) * 2 ints, receive (p + my_rank + 1) * 2 */
    {
        size_t *sfirsts = tn_malloc((size_t)(size + 1) * sizeof(size_t));
        ctx_t sv = {0, my_rank, -1, sfirsts, -1}, rv = {0, -1, my_rank, firsts, -1};
        sfirsts[0] = firsts[0] = 0;
        for (int p = 0; p < size; ++p) {
            size_t ints = (size_t)(p + my_rank + 1) * 2;
            sfirsts[p + 1] = sfirsts[p] + ints;
            firsts[p + 1] = firsts[p] + ints;
            scounts[p] = (int)(ints / (size_t)ls->per);
            sdispls[p] = (int)(sfirsts[p] / (size_t)ls->per);
            rcounts[p] = (int)(ints / (size_t)lr->per);
            rdispls[p] = (int)(firsts[p] / (size_t)lr->per);
        }
        s = make(ls, sfirsts[size], fill_ctx, &sv);
        r = make(lr, firsts[size], NULL, NULL);
        expect_success(MPI_Alltoallv(s, scounts, sdispls, ls->type, r, rcounts, rdispls, lr->type,
                                     MPI_COMM_WORLD),
                       "MPI_Alltoallv");
        tu_mem_free(mem, s);
        check("MPI_Alltoallv", lr, r, firsts[size], fill_ctx, &rv);
        free(sfirsts);
    }
    tu_case_end();
    free(firsts);
    free(rcounts);
    free(rdispls);
    free(scounts);
    free(sdispls);
}

int main(int argc, char **argv) {
    tu_options_t opts;
    bool host = false;
    const tu_arg_t args[] = {
        {"--kinds=host", TU_ARG_FLAG, &host},
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_signature", args, &opts);
    mem = host ? TU_MEM_HOST : TU_MEM_DEVICE;
    tn_setup(&opts, mem);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    layouts_create();

    for (int salt = 0; salt < 4; ++salt) {
        run_rooted(salt % world_size, salt);
        run_all(salt);
    }
    for (int l = 1; l < 4; ++l) {
        MPI_Type_free(&layouts[l].type);
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
