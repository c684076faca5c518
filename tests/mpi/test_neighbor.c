/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoallw, MPI_Ialltoallw and every neighborhood collective (MPI_Neighbor_allgather(v),
 * MPI_Neighbor_alltoall(v,w), blocking, nonblocking and persistent) on host, device and mixed
 * memory.
 *
 * Topologies: a periodic 1-D and a non-periodic 2-D cartesian communicator, a periodic 2-D
 * one, a graph (ring with a self-loop on rank 0) and two distributed graphs (each rank sending
 * to the next two ranks; a star where every rank sends to rank 0 only, so that the others
 * receive nothing).  Every call's result is checked byte for byte against a reference this
 * program computes itself from the topology (MPI_Cart_shift, MPI_Graph_neighbors, the lists
 * given to MPI_Dist_graph_create_adjacent): every block lands where the receiver's counts,
 * displacements and datatypes say, holes between and inside blocks and the bytes after the
 * last one keep their contents, and the send buffer is not written.
 *
 * The v- and w-forms place their blocks in reverse order with gaps; a block of no data (a zero
 * count, or a zero-size type) has a displacement far outside the buffer, which nothing may
 * touch.  The w-forms express each block with a datatype of their own (MPI_INT, an int inside
 * an 8-byte extent, a contiguous pair, a strided pair, an empty type), chosen differently by
 * sender and receiver: the same signature, different types across ranks.  MPI_Alltoallw also
 * runs with MPI_IN_PLACE.
 *
 * A cartesian rank may be its own or its peer's neighbor in both directions of a dimension
 * (periodic, 1 or 2 ranks along it): which of the two blocks lands where is ambiguous in
 * MPI 3.1, so the data and counts of a block depend on the sender, the receiver and the
 * dimension only, never on the direction.
 *
 * The component's counters must show one staged call per call on a rank with a device buffer,
 * one passthrough call otherwise.  Closing line (rank 0): "N passed, M failed".
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- datatypes: where the ints of one element lie ---- */

enum { NT_INT, NT_SHIFTED, NT_PAIR, NT_STRIDED, NT_EMPTY, NT_NUM_TYPES };

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int nints;          /* ints per element */
    MPI_Aint offset[2]; /* byte offset of each from the element's address */
    MPI_Aint extent;
} nt_type_t;

static nt_type_t nt_types[NT_NUM_TYPES];

static void nt_types_create(void) {
    MPI_Datatype tmp;
    int one = 1;
    MPI_Aint four = 4;
    MPI_Datatype mpi_int = MPI_INT;

    nt_types[NT_INT] = (nt_type_t){"int", MPI_INT, 1, {0, 0}, 4};
    MPI_Type_create_struct(1, &one, &four, &mpi_int, &tmp);
    MPI_Type_create_resized(tmp, 0, 8, &nt_types[NT_SHIFTED].dt);
    MPI_Type_free(&tmp);
    nt_types[NT_SHIFTED] = (nt_type_t){"shifted", nt_types[NT_SHIFTED].dt, 1, {4, 0}, 8};
    MPI_Type_contiguous(2, MPI_INT, &nt_types[NT_PAIR].dt);
    nt_types[NT_PAIR] = (nt_type_t){"pair", nt_types[NT_PAIR].dt, 2, {0, 4}, 8};
    MPI_Type_vector(2, 1, 2, MPI_INT, &nt_types[NT_STRIDED].dt);
    nt_types[NT_STRIDED] = (nt_type_t){"strided", nt_types[NT_STRIDED].dt, 2, {0, 8}, 12};
    MPI_Type_contiguous(0, MPI_INT, &nt_types[NT_EMPTY].dt);
    nt_types[NT_EMPTY] = (nt_type_t){"empty", nt_types[NT_EMPTY].dt, 0, {0, 0}, 0};
    for (int t = NT_SHIFTED; t < NT_NUM_TYPES; ++t) {
        MPI_Type_commit(&nt_types[t].dt);
    }
}

static void nt_types_free(void) {
    for (int t = NT_SHIFTED; t < NT_NUM_TYPES; ++t) {
        MPI_Type_free(&nt_types[t].dt);
    }
}

/* ---- topologies ---- */

typedef struct {
    char name[32];
    MPI_Comm comm;
    int rank;
    int indeg, outdeg;
    int *in, *out;       /* neighbor ranks (MPI_PROC_NULL allowed) */
    int *inkey, *outkey; /* the cartesian dimension of each block, 0 for graphs */
} nt_topo_t;

static void nt_topo_alloc(nt_topo_t *t, int indeg, int outdeg) {
    t->indeg = indeg;
    t->outdeg = outdeg;
    t->in = calloc((size_t)indeg + 1, sizeof(int));
    t->inkey = calloc((size_t)indeg + 1, sizeof(int));
    t->out = calloc((size_t)outdeg + 1, sizeof(int));
    t->outkey = calloc((size_t)outdeg + 1, sizeof(int));
}

static void nt_topo_free(nt_topo_t *t) {
    if (MPI_COMM_WORLD != t->comm) {
        MPI_Comm_free(&t->comm);
    }
    free(t->in);
    free(t->inkey);
    free(t->out);
    free(t->outkey);
}

static void nt_topo_cart(nt_topo_t *t, const char *name, int ndims, bool periodic) {
    int dims[2] = {0, 0}, periods[2] = {periodic, periodic};

    snprintf(t->name, sizeof(t->name), "%s", name);
    MPI_Dims_create(tu_world_size, ndims, dims);
    MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &t->comm);
    nt_topo_alloc(t, 2 * ndims, 2 * ndims);
    for (int d = 0; d < ndims; ++d) {
        int src, dst;
        MPI_Cart_shift(t->comm, d, 1, &src, &dst);
        /* block 2d: the neighbor below in dimension d, block 2d + 1: the one above */
        t->in[2 * d] = t->out[2 * d] = src;
        t->in[2 * d + 1] = t->out[2 * d + 1] = dst;
        t->inkey[2 * d] = t->inkey[2 * d + 1] = t->outkey[2 * d] = t->outkey[2 * d + 1] = d;
    }
}

/* A ring, with a self-loop on rank 0 (symmetric, as graph neighborhoods must be). */
static void nt_topo_graph(nt_topo_t *t) {
    int n = tu_world_size, nedges = 0, nn;
    int *index = calloc((size_t)n, sizeof(int)), *edges = calloc((size_t)3 * n, sizeof(int));

    snprintf(t->name, sizeof(t->name), "graph");
    for (int r = 0; r < n; ++r) {
        int cand[3] = {(r + 1) % n, (r + n - 1) % n, 0 == r ? 0 : -1};
        for (int c = 0; c < 3; ++c) {
            bool dup = (cand[c] < 0) || (c < 2 && cand[c] == r);
            for (int e = (r > 0 ? index[r - 1] : 0); e < nedges && !dup; ++e) {
                dup = (edges[e] == cand[c]);
            }
            if (!dup) {
                edges[nedges++] = cand[c];
            }
        }
        index[r] = nedges;
    }
    MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &t->comm);
    MPI_Graph_neighbors_count(t->comm, tu_world_rank, &nn);
    nt_topo_alloc(t, nn, nn);
    MPI_Graph_neighbors(t->comm, tu_world_rank, nn, t->in);
    memcpy(t->out, t->in, (size_t)nn * sizeof(int));
    free(index);
    free(edges);
}

/* star: every rank sends to rank 0 only; else each sends to the next two ranks. */
static void nt_topo_dist_graph(nt_topo_t *t, bool star) {
    int n = tu_world_size, r = tu_world_rank;

    snprintf(t->name, sizeof(t->name), star ? "dist-graph-star" : "dist-graph");
    if (star) {
        nt_topo_alloc(t, 0 == r ? n : 0, 1);
        for (int i = 0; 0 == r && i < n; ++i) {
            t->in[i] = (n - 1 - i); /* in an order of our own */
        }
        t->out[0] = 0;
    } else {
        int outs = (n > 1 && (r + 1) % n != (r + 2) % n) ? 2 : 1;
        nt_topo_alloc(t, outs, outs);
        for (int i = 0; i < outs; ++i) {
            t->out[i] = (r + 1 + i) % n;
            t->in[i] = (r + 2 * n - 1 - i) % n;
        }
    }
    {
        /* weights of 1 (MPI_UNWEIGHTED trips gcc's -Wstringop-overread) */
        int *inw = calloc((size_t)t->indeg + 1, sizeof(int));
        int *outw = calloc((size_t)t->outdeg + 1, sizeof(int));
        for (int i = 0; i < t->indeg; ++i) {
            inw[i] = 1;
        }
        for (int i = 0; i < t->outdeg; ++i) {
            outw[i] = 1;
        }
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, t->indeg, t->in, inw, t->outdeg, t->out,
                                       outw, MPI_INFO_NULL, 0, &t->comm);
        free(inw);
        free(outw);
    }
}

/* ---- the data ---- */

static uint32_t nt_salt;

static int nt_val(int src, int dst, int key, int i) {
    uint64_t x = ((uint64_t)nt_salt << 40) ^ ((uint64_t)(src + 1) << 28) ^
                 ((uint64_t)(dst + 2) << 16) ^ ((uint64_t)key << 12) ^ (uint64_t)i;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    return (int)(uint32_t)x;
}

/* Elements (v-forms) or ints (w-forms) of the block src sends dst; dst < 0: allgatherv. */
static int nt_cnt(int src, int dst, int key) {
    if (MPI_PROC_NULL == src || MPI_PROC_NULL == dst) {
        return 2; /* a block no message fills or reads: it still has a place in the layout */
    }
    int c = (int)((unsigned)(src * 3 + (dst + 1) * 5 + key * 7 + nt_salt) % 5);
    return (src == dst && 0 == c) ? 1 : c;
}

/* For MPI_IN_PLACE: the same count both ways. */
static int nt_cnt_sym(int a, int b) { return 1 + (int)((unsigned)(a + b + nt_salt) % 4); }

static unsigned char nt_sentinel(size_t off) { return (unsigned char)(0xa5 ^ (off * 7)); }

#define NT_FAR ((MPI_Aint)1 << 22) /* displacement of a block of no data: outside any buffer */
#define NT_GUARD 16

/* One buffer argument: blocks and the bytes they may touch, plus the expected image. */
typedef struct {
    int n;
    int *counts;       /* per block, in elements of its type */
    int *types;        /* per block (nt_types index) */
    MPI_Aint *displs;  /* bytes */
    int *idispls;      /* the same, as MPI wants them: bytes (alltoallw) or extents (v) */
    MPI_Datatype *dts; /* per block (w-forms) */
    size_t bytes;
    unsigned char *image;
    tu_mem_t mem;
    void *buf;
} nt_side_t;

static void nt_side_init(nt_side_t *s, int n, tu_mem_t mem) {
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->mem = mem;
    s->counts = calloc((size_t)n + 1, sizeof(int));
    s->types = calloc((size_t)n + 1, sizeof(int));
    s->displs = calloc((size_t)n + 1, sizeof(MPI_Aint));
    s->idispls = calloc((size_t)n + 1, sizeof(int));
    s->dts = calloc((size_t)n + 1, sizeof(MPI_Datatype));
}

static void nt_side_free(nt_side_t *s) {
    free(s->counts);
    free(s->types);
    free(s->displs);
    free(s->idispls);
    free(s->dts);
    free(s->image);
    if (NULL != s->buf) {
        tu_mem_free(s->mem, s->buf);
    }
}

/* Block b of a w-form side: nints ints, in a type that `choice` picks (zero ints: a zero
 * count, or a few elements of the empty type). */
static void nt_pick_type(nt_side_t *s, int b, int nints, int choice) {
    int t = NT_INT;
    switch (choice % 4) {
    case 0:
        t = NT_INT;
        break;
    case 1:
        t = NT_SHIFTED;
        break;
    case 2:
        t = (0 == nints % 2) ? NT_PAIR : NT_SHIFTED;
        break;
    default:
        t = (0 == nints % 2) ? NT_STRIDED : NT_INT;
        break;
    }
    if (0 == nints) {
        t = (choice % 2) ? NT_EMPTY : NT_INT;
        s->counts[b] = (NT_EMPTY == t) ? 2 + choice % 3 : 0;
    } else {
        s->counts[b] = nints / nt_types[t].nints;
    }
    s->types[b] = t;
    s->dts[b] = nt_types[t].dt;
}

/* Places the blocks: contiguous in order (regular forms) or in reverse order with gaps;
 * blocks of no data far away.  Then the image: sentinel everywhere. */
static void nt_side_layout(nt_side_t *s, bool contiguous, bool in_extents) {
    MPI_Aint cursor = 0;
    for (int k = 0; k < s->n; ++k) {
        int b = contiguous ? k : s->n - 1 - k;
        const nt_type_t *t = &nt_types[s->types[b]];
        if (0 == s->counts[b] || 0 == t->nints) {
            s->displs[b] = contiguous ? cursor : NT_FAR;
        } else {
            s->displs[b] = cursor;
            cursor += (MPI_Aint)s->counts[b] * t->extent + (contiguous ? 0 : t->extent);
        }
        s->idispls[b] =
            (int)(in_extents && t->extent > 0 ? s->displs[b] / t->extent : s->displs[b]);
    }
    s->bytes = (size_t)cursor + NT_GUARD;
    s->image = malloc(s->bytes);
    for (size_t i = 0; i < s->bytes; ++i) {
        s->image[i] = nt_sentinel(i);
    }
}

/* Writes block b's ints: value(src, dst, key, i) for the i-th int. */
static void nt_side_put(nt_side_t *s, int b, int src, int dst, int key) {
    const nt_type_t *t = &nt_types[s->types[b]];
    int i = 0;
    for (int e = 0; e < s->counts[b]; ++e) {
        for (int j = 0; j < t->nints; ++j, ++i) {
            int v = nt_val(src, dst, key, i);
            memcpy(s->image + s->displs[b] + (MPI_Aint)e * t->extent + t->offset[j], &v, 4);
        }
    }
}

static int nt_side_upload(nt_side_t *s) {
    if (0 != tu_mem_alloc(s->mem, s->bytes, &s->buf)) {
        return -1;
    }
    return tu_mem_write(s->mem, s->buf, s->image, s->bytes);
}

static void nt_side_verify(nt_side_t *s, const char *what) {
    unsigned char *got = malloc(s->bytes);
    long bad = 0;
    if (0 != tu_mem_read(s->mem, got, s->buf, s->bytes)) {
        tu_fail("%s: cannot read it back", what);
        free(got);
        return;
    }
    for (size_t i = 0; i < s->bytes; ++i) {
        if (got[i] != s->image[i]) {
            if (bad++ < 3) {
                tu_fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, s->bytes, got[i],
                        s->image[i]);
            }
        }
    }
    if (bad > 3) {
        tu_fail("%s: %ld bytes wrong", what, bad);
    }
    free(got);
}

/* ---- the calls ---- */

typedef enum { F_ALLGATHER, F_ALLGATHERV, F_ALLTOALL, F_ALLTOALLV, F_ALLTOALLW, F_NUM } nt_form_t;
/* The forms each collective runs in: blocking, nonblocking, persistent (MPI_*_init). */
enum { NT_BLOCKING, NT_NONBLOCKING, NT_PERSISTENT, NT_NUM_MODES };

static const coll_gpu_coll_t nt_colls[NT_NUM_MODES][F_NUM] = {
    {COLL_GPU_NEIGHBOR_ALLGATHER, COLL_GPU_NEIGHBOR_ALLGATHERV, COLL_GPU_NEIGHBOR_ALLTOALL,
     COLL_GPU_NEIGHBOR_ALLTOALLV, COLL_GPU_NEIGHBOR_ALLTOALLW},
    {COLL_GPU_INEIGHBOR_ALLGATHER, COLL_GPU_INEIGHBOR_ALLGATHERV, COLL_GPU_INEIGHBOR_ALLTOALL,
     COLL_GPU_INEIGHBOR_ALLTOALLV, COLL_GPU_INEIGHBOR_ALLTOALLW},
    {COLL_GPU_NEIGHBOR_ALLGATHER_INIT, COLL_GPU_NEIGHBOR_ALLGATHERV_INIT,
     COLL_GPU_NEIGHBOR_ALLTOALL_INIT, COLL_GPU_NEIGHBOR_ALLTOALLV_INIT,
     COLL_GPU_NEIGHBOR_ALLTOALLW_INIT}};

typedef struct {
    const tu_options_t *opts;
    bool counters;
    int failures_at_start;
} nt_state_t;

static void nt_check_counters(const tu_counters_t *before, const tu_counters_t *after,
                              coll_gpu_coll_t coll, bool on_device) {
    uint64_t staged = after->staged[coll] - before->staged[coll];
    uint64_t pass = after->passthrough[coll] - before->passthrough[coll];
    if (staged != (on_device ? 1u : 0u) || pass != (on_device ? 0u : 1u)) {
        tu_fail("%s: %llu staged, %llu passthrough calls counted (expected %s)", tu_coll_name(coll),
                (unsigned long long)staged, (unsigned long long)pass,
                on_device ? "1 staged" : "1 passthrough");
    }
}

/* Completes a request, by MPI_Wait or by an MPI_Test loop; a persistent one is started
 * first and freed after. */
static int nt_complete(MPI_Request *req, int mode, bool test_loop) {
    int done = 0, rc = MPI_SUCCESS;

    if (NT_PERSISTENT == mode) {
        rc = MPI_Start(req);
    }
    if (MPI_SUCCESS == rc && !test_loop) {
        rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    }
    while (MPI_SUCCESS == rc && test_loop && !done) {
        rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    }
    if (NT_PERSISTENT == mode && MPI_REQUEST_NULL != *req) {
        int free_rc = MPI_Request_free(req);
        rc = (MPI_SUCCESS == rc) ? free_rc : rc;
    }
    return rc;
}

/* One neighborhood collective of `form` on topology t; tid picks the datatype (regular and
 * v-forms: MPI_INT or the strided pair; w-forms: how each rank varies its types). */
static void nt_run_neighbor(nt_state_t *st, const nt_topo_t *t, nt_form_t form, int mode, int tid,
                            const tu_kind_t *kind) {
    coll_gpu_coll_t coll = nt_colls[mode][form];
    bool nb = (NT_NONBLOCKING == mode), pers = (NT_PERSISTENT == mode);
    int me = tu_world_rank, type = (tid % 2) ? NT_STRIDED : NT_INT;
    int count = 3;
    nt_side_t snd, rcv;
    tu_counters_t before, after;
    MPI_Request req = MPI_REQUEST_NULL;
    bool on_device;
    int rc = MPI_SUCCESS;

    tu_case_begin("%s %s type=%s kind=%s np=%d", tu_coll_name(coll), t->name,
                  F_ALLTOALLW == form ? "mixed" : nt_types[type].name, kind->name, tu_world_size);
    nt_side_init(&snd, (F_ALLGATHER == form || F_ALLGATHERV == form) ? 1 : t->outdeg, kind->send);
    nt_side_init(&rcv, t->indeg, kind->recv);

    /* what this rank sends */
    for (int b = 0; b < snd.n; ++b) {
        bool gather = (F_ALLGATHER == form || F_ALLGATHERV == form);
        int dst = gather ? -1 : t->out[b], key = gather ? 0 : t->outkey[b];
        switch (form) {
        case F_ALLGATHER:
        case F_ALLTOALL:
            snd.counts[b] = count;
            snd.types[b] = type;
            break;
        case F_ALLGATHERV:
        case F_ALLTOALLV:
            snd.counts[b] = nt_cnt(me, dst, key);
            snd.types[b] = type;
            break;
        default:
            nt_pick_type(&snd, b, nt_cnt(me, dst, key), me + b + tid);
            break;
        }
    }
    nt_side_layout(&snd, F_ALLGATHER == form || F_ALLTOALL == form, F_ALLTOALLV == form);
    for (int b = 0; b < snd.n; ++b) {
        bool gather = (F_ALLGATHER == form || F_ALLGATHERV == form);
        nt_side_put(&snd, b, me, gather ? -1 : t->out[b], gather ? 0 : t->outkey[b]);
    }

    /* what it receives, and the reference */
    for (int b = 0; b < rcv.n; ++b) {
        bool gather = (F_ALLGATHER == form || F_ALLGATHERV == form);
        int src = t->in[b], key = gather ? 0 : t->inkey[b];
        switch (form) {
        case F_ALLGATHER:
        case F_ALLTOALL:
            rcv.counts[b] = count;
            rcv.types[b] = type;
            break;
        case F_ALLGATHERV:
        case F_ALLTOALLV:
            rcv.counts[b] = nt_cnt(src, gather ? -1 : me, key);
            rcv.types[b] = type;
            break;
        default:
            nt_pick_type(&rcv, b, nt_cnt(src, me, key), me + 2 * b + tid + 1);
            break;
        }
    }
    nt_side_layout(&rcv, F_ALLGATHER == form || F_ALLTOALL == form,
                   F_ALLGATHERV == form || F_ALLTOALLV == form);
    if (0 != nt_side_upload(&snd)) {
        tu_fail("cannot set up the send buffer");
    }
    if (0 != nt_side_upload(&rcv)) {
        tu_fail("cannot set up the receive buffer");
    }
    for (int b = 0; b < rcv.n; ++b) {
        bool gather = (F_ALLGATHER == form || F_ALLGATHERV == form);
        if (MPI_PROC_NULL != t->in[b]) {
            nt_side_put(&rcv, b, t->in[b], gather ? -1 : me, gather ? 0 : t->inkey[b]);
        }
    }

    on_device = (TU_MEM_DEVICE == kind->send) || (TU_MEM_DEVICE == kind->recv);
    if (st->counters) {
        tu_counters_read(&before);
    }
    {
        MPI_Datatype dt = nt_types[type].dt;
        switch (form) {
        case F_ALLGATHER:
            rc = pers ? TU_PERSISTENT(Neighbor_allgather_init)(snd.buf, count, dt, rcv.buf, count,
                                                               dt, t->comm, MPI_INFO_NULL, &req)
                 : nb ? MPI_Ineighbor_allgather(snd.buf, count, dt, rcv.buf, count, dt, t->comm,
                                                &req)
                      : MPI_Neighbor_allgather(snd.buf, count, dt, rcv.buf, count, dt, t->comm);
            break;
        case F_ALLGATHERV:
            rc = pers ? TU_PERSISTENT(Neighbor_allgatherv_init)(snd.buf, snd.counts[0], dt, rcv.buf,
                                                                rcv.counts, rcv.idispls, dt,
                                                                t->comm, MPI_INFO_NULL, &req)
                 : nb ? MPI_Ineighbor_allgatherv(snd.buf, snd.counts[0], dt, rcv.buf, rcv.counts,
                                                 rcv.idispls, dt, t->comm, &req)
                      : MPI_Neighbor_allgatherv(snd.buf, snd.counts[0], dt, rcv.buf, rcv.counts,
                                                rcv.idispls, dt, t->comm);
            break;
        case F_ALLTOALL:
            rc = pers ? TU_PERSISTENT(Neighbor_alltoall_init)(snd.buf, count, dt, rcv.buf, count,
                                                              dt, t->comm, MPI_INFO_NULL, &req)
                 : nb
                     ? MPI_Ineighbor_alltoall(snd.buf, count, dt, rcv.buf, count, dt, t->comm, &req)
                     : MPI_Neighbor_alltoall(snd.buf, count, dt, rcv.buf, count, dt, t->comm);
            break;
        case F_ALLTOALLV:
            rc = pers ? TU_PERSISTENT(Neighbor_alltoallv_init)(snd.buf, snd.counts, snd.idispls, dt,
                                                               rcv.buf, rcv.counts, rcv.idispls, dt,
                                                               t->comm, MPI_INFO_NULL, &req)
                 : nb ? MPI_Ineighbor_alltoallv(snd.buf, snd.counts, snd.idispls, dt, rcv.buf,
                                                rcv.counts, rcv.idispls, dt, t->comm, &req)
                      : MPI_Neighbor_alltoallv(snd.buf, snd.counts, snd.idispls, dt, rcv.buf,
                                               rcv.counts, rcv.idispls, dt, t->comm);
            break;
        default:
            rc = pers ? TU_PERSISTENT(Neighbor_alltoallw_init)(
                            snd.buf, snd.counts, snd.displs, snd.dts, rcv.buf, rcv.counts,
                            rcv.displs, rcv.dts, t->comm, MPI_INFO_NULL, &req)
                 : nb ? MPI_Ineighbor_alltoallw(snd.buf, snd.counts, snd.displs, snd.dts, rcv.buf,
                                                rcv.counts, rcv.displs, rcv.dts, t->comm, &req)
                      : MPI_Neighbor_alltoallw(snd.buf, snd.counts, snd.displs, snd.dts, rcv.buf,
                                               rcv.counts, rcv.displs, rcv.dts, t->comm);
            break;
        }
    }
    if (MPI_SUCCESS == rc && (nb || pers)) {
        rc = nt_complete(&req, mode, tid % 2);
    }
    if (MPI_SUCCESS != rc) {
        tu_fail("returned %d", rc);
    }
    if (st->counters) {
        tu_counters_read(&after);
        nt_check_counters(&before, &after, coll, on_device);
    }
    nt_side_verify(&rcv, "receive buffer");
    nt_side_verify(&snd, "send buffer");
    nt_side_free(&snd);
    nt_side_free(&rcv);
    tu_case_end();
}

/* MPI_Alltoallw / MPI_Ialltoallw on MPI_COMM_WORLD, with or without MPI_IN_PLACE. */
static void nt_run_alltoallw(nt_state_t *st, int mode, bool in_place, int tid,
                             const tu_kind_t *kind) {
    static const coll_gpu_coll_t colls[NT_NUM_MODES] = {COLL_GPU_ALLTOALLW, COLL_GPU_IALLTOALLW,
                                                        COLL_GPU_ALLTOALLW_INIT};
    coll_gpu_coll_t coll = colls[mode];
    bool nb = (NT_NONBLOCKING == mode), pers = (NT_PERSISTENT == mode);
    int me = tu_world_rank, n = tu_world_size;
    nt_side_t snd, rcv;
    tu_counters_t before, after;
    MPI_Request req = MPI_REQUEST_NULL;
    bool on_device;
    int rc;

    tu_case_begin("%s%s kind=%s np=%d variant=%d", tu_coll_name(coll), in_place ? " in-place" : "",
                  kind->name, n, tid);
    nt_side_init(&snd, n, kind->send);
    nt_side_init(&rcv, n, kind->recv);
    for (int p = 0; p < n; ++p) {
        nt_pick_type(&snd, p, in_place ? 0 : nt_cnt(me, p, 0), me + p + tid);
        nt_pick_type(&rcv, p, in_place ? nt_cnt_sym(me, p) : nt_cnt(p, me, 0),
                     me + 2 * p + tid + 1);
    }
    nt_side_layout(&snd, false, false);
    nt_side_layout(&rcv, false, false);
    for (int p = 0; p < n; ++p) {
        if (in_place) {
            nt_side_put(&rcv, p, me, p, 1); /* what this rank sends p, from its receive buffer */
        } else {
            nt_side_put(&snd, p, me, p, 0);
        }
    }
    if (0 != nt_side_upload(&snd) || 0 != nt_side_upload(&rcv)) {
        tu_fail("cannot set up the buffers");
    }
    for (int p = 0; p < n; ++p) {
        nt_side_put(&rcv, p, p, me, in_place ? 1 : 0);
    }

    on_device = (!in_place && TU_MEM_DEVICE == kind->send) || (TU_MEM_DEVICE == kind->recv);
    if (st->counters) {
        tu_counters_read(&before);
    }
    {
        const void *sbuf = in_place ? MPI_IN_PLACE : snd.buf;
        rc = pers ? TU_PERSISTENT(Alltoallw_init)(sbuf, snd.counts, snd.idispls, snd.dts, rcv.buf,
                                                  rcv.counts, rcv.idispls, rcv.dts, MPI_COMM_WORLD,
                                                  MPI_INFO_NULL, &req)
             : nb ? MPI_Ialltoallw(sbuf, snd.counts, snd.idispls, snd.dts, rcv.buf, rcv.counts,
                                   rcv.idispls, rcv.dts, MPI_COMM_WORLD, &req)
                  : MPI_Alltoallw(sbuf, snd.counts, snd.idispls, snd.dts, rcv.buf, rcv.counts,
                                  rcv.idispls, rcv.dts, MPI_COMM_WORLD);
    }
    if (MPI_SUCCESS == rc && (nb || pers)) {
        rc = nt_complete(&req, mode, tid % 2);
    }
    if (MPI_SUCCESS != rc) {
        tu_fail("returned %d", rc);
    }
    if (st->counters) {
        tu_counters_read(&after);
        nt_check_counters(&before, &after, coll, on_device);
    }
    nt_side_verify(&rcv, "receive buffer");
    if (!in_place) {
        nt_side_verify(&snd, "send buffer");
    }
    nt_side_free(&snd);
    nt_side_free(&rcv);
    tu_case_end();
}

int main(int argc, char **argv) {
    tu_options_t opts;
    nt_state_t st = {0};
    nt_topo_t topos[6];
    int ntopos = 0;
    bool neighbor_only = false;
    const tu_arg_t args[] = {
        {"--neighbor-only", TU_ARG_FLAG, &neighbor_only}, /* no MPI_Alltoallw cases */
        {NULL, TU_ARG_FLAG, NULL},
    };

    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_neighbor", args, &opts);
    if (0 == opts.num_kinds && 0 == opts.num_rank_kinds) {
        tu_options_parse_one(&opts, "--kinds=host,device,mixed");
    } else if (0 == opts.num_kinds) {
        tu_options_parse_one(&opts, "--kinds=host");
    }
    tu_setup_or_exit(&opts);
    st.opts = &opts;
    st.counters = opts.component && tu_counters_available();
    nt_types_create();

    nt_topo_cart(&topos[ntopos++], "cart-1d-periodic", 1, true);
    nt_topo_cart(&topos[ntopos++], "cart-2d", 2, false);
    nt_topo_cart(&topos[ntopos++], "cart-2d-periodic", 2, true);
    nt_topo_graph(&topos[ntopos++]);
    nt_topo_dist_graph(&topos[ntopos++], false);
    nt_topo_dist_graph(&topos[ntopos++], true);
    for (int i = 0; i < ntopos; ++i) {
        MPI_Comm_set_errhandler(topos[i].comm, MPI_ERRORS_RETURN);
    }

    for (int k = 0; k < opts.num_kinds; ++k) {
        tu_kind_t kind = tu_options_rank_kind(&opts, &opts.kinds[k], tu_world_rank);
        if (opts.num_rank_kinds > 0) {
            tu_kind_t own = kind;
            snprintf(kind.name, sizeof(kind.name), "per-rank(%.20s)", own.name);
        }
        for (int tid = 0; tid < 2; ++tid) {
            nt_salt = (uint32_t)(17 * k + tid + 1);
            for (int mode = 0; mode < NT_NUM_MODES; ++mode) {
                for (int ip = 0; ip < 2 && !neighbor_only; ++ip) {
                    nt_run_alltoallw(&st, mode, ip, tid, &kind);
                }
                for (int i = 0; i < ntopos; ++i) {
                    for (int f = 0; f < F_NUM; ++f) {
                        nt_run_neighbor(&st, &topos[i], (nt_form_t)f, mode, tid, &kind);
                    }
                }
            }
        }
    }

    for (int i = 0; i < ntopos; ++i) {
        nt_topo_free(&topos[i]);
    }
    nt_types_free();
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
